//! OTLP export (`otel::Telemetry`) to a real OTLP/HTTP receiver started by the test, which
//! decodes the protobuf bodies with the OpenTelemetry definitions (`opentelemetry-proto`):
//! a call over HTTP arrives as the client's and the server's spans, parent and child, under the
//! configured `service.name`, with both operation-duration histograms.
//!
//! Its own test binary: the subscriber is process-wide, and tests/otel.rs has the in-memory one.

use std::time::Duration;

use modelctx::otel::Telemetry;
use modelctx_test_support::client::{Recorder, answers, recording_builder};
use modelctx_test_support::otlp::{OtlpReceiver, SpanKind, attribute};
use modelctx_test_support::server::{HttpPeer, fixture};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

const SERVICE: &str = "otel-export-test";

/// Two worker threads: the receiver keeps serving while `shutdown` blocks one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_metrics_reach_an_otlp_receiver() {
    let mut receiver = OtlpReceiver::start().await;
    let telemetry = Telemetry::builder()
        .endpoint(&receiver.endpoint)
        .service_name(SERVICE)
        .build()
        .unwrap();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(telemetry.layer()))
        .unwrap();

    let peer = HttpPeer::start(fixture()).await;
    let client = recording_builder(&Recorder::default(), answers())
        .connect_http(&peer.url)
        .await
        .unwrap();
    let result = client
        .call_tool("echo", json!({"text": "exported"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("exported"));
    client.close().await.unwrap();

    // Everything still buffered goes out now (no export interval is waited for).
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();

    let server_duration = "mcp.server.operation.duration";
    let client_duration = "mcp.client.operation.duration";
    receiver
        .wait_until(Duration::from_secs(30), |r| {
            r.spans_named(SERVICE, "tools/call echo").len() >= 3
                && !r.histogram_points(SERVICE, server_duration).is_empty()
                && !r.histogram_points(SERVICE, client_duration).is_empty()
        })
        .await;

    let spans = receiver.spans_named(SERVICE, "tools/call echo");
    let of_kind = |kind: SpanKind| -> Vec<_> {
        spans
            .iter()
            .filter(|span| span.kind == kind as i32)
            .copied()
            .collect()
    };
    let (calls, clients, servers) = (
        of_kind(SpanKind::Internal),
        of_kind(SpanKind::Client),
        of_kind(SpanKind::Server),
    );
    assert_eq!(
        (calls.len(), clients.len(), servers.len()),
        (1, 1, 1),
        "{spans:#?}"
    );
    let (call, client, server) = (calls[0], clients[0], servers[0]);
    assert_eq!(client.trace_id, call.trace_id);
    assert_eq!(client.parent_span_id, call.span_id);
    assert_eq!(server.trace_id, client.trace_id);
    assert_eq!(
        server.parent_span_id, client.span_id,
        "joined through _meta"
    );
    for span in [client, server] {
        assert_eq!(
            attribute(&span.attributes, "mcp.method.name"),
            Some("tools/call")
        );
        assert_eq!(
            attribute(&span.attributes, "gen_ai.tool.name"),
            Some("echo")
        );
        assert_eq!(
            attribute(&span.attributes, "network.transport"),
            Some("tcp")
        );
    }

    for metric in [server_duration, client_duration] {
        let points = receiver.histogram_points(SERVICE, metric);
        let echo = points
            .iter()
            .find(|point| attribute(&point.attributes, "gen_ai.tool.name") == Some("echo"))
            .unwrap_or_else(|| panic!("{metric} of echo in {points:#?}"));
        assert_eq!(echo.count, 1, "{metric}");
        assert_eq!(echo.explicit_bounds.first(), Some(&0.01), "{metric}");
    }
}
