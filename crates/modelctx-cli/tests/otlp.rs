//! `--otlp-endpoint` end to end: `mcp serve demo` and `mcp call` export to a real OTLP/HTTP
//! receiver started by the test (test-support's, decoding the protobuf bodies with the
//! OpenTelemetry definitions). The client's span and the server's span of one call arrive,
//! parent and child across the two processes, each under its service name, with both
//! operation-duration histograms; the server flushes when Ctrl-C stops it (HTTP) and when its
//! stdin closes (stdio).

use std::process::{Command, Stdio};
use std::time::Duration;

use modelctx_test_support::cli::{Running, assert_ok};
use modelctx_test_support::otlp::{OtlpReceiver, Span, SpanKind, attribute};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

const SERVER_DURATION: &str = "mcp.server.operation.duration";
const CLIENT_DURATION: &str = "mcp.client.operation.duration";

/// Runs a blocking step (a process to wait on) off the runtime that serves the receiver.
async fn blocking<T: Send + 'static>(step: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(step).await.unwrap()
}

/// Waits for the `tools/call echo` spans of `client_service` (CLIENT) and `server_service`
/// (SERVER) and both histograms, and checks that the server span is the child of the client's.
async fn assert_exported_call(
    receiver: &mut OtlpReceiver,
    client_service: &str,
    server_service: &str,
) {
    let of_kind = |r: &OtlpReceiver, service: &str, kind: SpanKind| -> Vec<Span> {
        r.spans_named(service, "tools/call echo")
            .into_iter()
            .filter(|span| span.kind == kind as i32)
            .cloned()
            .collect()
    };
    receiver
        .wait_until(Duration::from_secs(30), |r| {
            !of_kind(r, client_service, SpanKind::Client).is_empty()
                && !of_kind(r, server_service, SpanKind::Server).is_empty()
                && !r
                    .histogram_points(client_service, CLIENT_DURATION)
                    .is_empty()
                && !r
                    .histogram_points(server_service, SERVER_DURATION)
                    .is_empty()
        })
        .await;
    let clients = of_kind(receiver, client_service, SpanKind::Client);
    let servers = of_kind(receiver, server_service, SpanKind::Server);
    assert_eq!(
        (clients.len(), servers.len()),
        (1, 1),
        "{clients:#?} {servers:#?}"
    );
    let (client, server) = (&clients[0], &servers[0]);
    assert_eq!(server.trace_id, client.trace_id);
    assert_eq!(server.parent_span_id, client.span_id);
    for span in [client, server] {
        assert_eq!(
            attribute(&span.attributes, "gen_ai.tool.name"),
            Some("echo")
        );
    }
    for (service, metric) in [
        (client_service, CLIENT_DURATION),
        (server_service, SERVER_DURATION),
    ] {
        let points = receiver.histogram_points(service, metric);
        assert!(
            points.iter().any(
                |p| attribute(&p.attributes, "gen_ai.tool.name") == Some("echo") && p.count == 1
            ),
            "{metric} of {service}: {points:#?}"
        );
    }
}

/// Over HTTP: the server with `--otlp-endpoint`, the client with OTEL_EXPORTER_OTLP_ENDPOINT;
/// the default service names; the server's spans and metrics are sent when Ctrl-C stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_call_over_http_export_one_trace() {
    let mut receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint.clone();
    let (server, url) = blocking(move || {
        let mut server = Running::spawn(
            Command::new(MCP)
                .args(["serve", "demo", "--http", "0", "--otlp-endpoint", &endpoint])
                .env_remove("OTEL_SERVICE_NAME")
                .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
                .stdin(Stdio::null())
                .stdout(Stdio::null()),
        );
        let url = server.wait_for("listening on ");
        (server, url)
    })
    .await;
    let endpoint = receiver.endpoint.clone();
    let call = blocking(move || {
        Command::new(MCP)
            .args(["call", "--timeout", "60", &url, "echo", "text=traced"])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env_remove("OTEL_SERVICE_NAME")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await;
    assert_ok(&call);
    let pid = server.child.id().to_string();
    let (status, _, lines) = blocking(move || {
        let interrupt = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(interrupt.success());
        server.finish()
    })
    .await;
    assert!(status.success(), "{status:?} {lines:?}");
    assert_exported_call(&mut receiver, "mcp-client", "mcp-demo-server").await;
}

/// Over stdio: `mcp call … -- mcp serve demo`, both with `--otlp-endpoint`; OTEL_SERVICE_NAME
/// (inherited by the server) names both; the server sends when its stdin closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_over_stdio_exports_both_sides() {
    let mut receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint.clone();
    let call = blocking(move || {
        Command::new(MCP)
            .args(["call", "--timeout", "60", "--otlp-endpoint", &endpoint])
            .args(["echo", "text=traced", "--", MCP, "serve", "demo"])
            .args(["--otlp-endpoint", &endpoint])
            .env("OTEL_SERVICE_NAME", "stdio-pair")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await;
    assert_ok(&call);
    assert_exported_call(&mut receiver, "stdio-pair", "stdio-pair").await;
}

/// An endpoint that is no http(s) URL is a usage error (exit 2) naming the flag.
#[test]
fn an_invalid_otlp_endpoint_is_a_usage_error() {
    let output = Command::new(MCP)
        .args([
            "call",
            "--otlp-endpoint",
            "collector:4318",
            "echo",
            "--",
            MCP,
        ])
        .args(["serve", "demo"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--otlp-endpoint \"collector:4318\": not an http(s) URL"),
        "{stderr}"
    );
}
