//! OpenTelemetry (feature `otel`), every assertion on the SDK's in-memory exporter: the server's
//! span after the conventions with the parent it reads from `params._meta` (SEP-414), the
//! client's span tree of a two-round call (one call span, one client span per round), and the
//! server's spans as the children of the client's round spans, over the in-memory pipe and HTTP,
//! in both eras.
//!
//! One global subscriber (test-support's `otel::exporters`) serves every test of this binary;
//! each test finds its own spans by their trace id.

use modelctx::client::Client;
use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::client::{Recorder, answers, connect_in_memory, recording_builder};
use modelctx_test_support::otel::{
    assert_attributes, attribute, exporter, exporters, in_root, spans_of,
};
use modelctx_test_support::server::{
    HttpPeer, StdioPeer, fixture, fixture_with_failing_tool, request,
};
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};

/// A fresh trace id and span id for a remote parent (unique per call: a counter in the low
/// bits, the test's tag in the high ones).
fn remote_parent(tag: u64) -> (TraceId, SpanId) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (
        TraceId::from(u128::from(tag) << 64 | u128::from(n)),
        SpanId::from(0x00f0_0000_0000_0000 | n),
    )
}

/// A request with the standard 2026 envelope plus `entries` in its `_meta`.
fn request_with_meta(id: i64, method: &str, params: Value, entries: &[(&str, &str)]) -> Value {
    let mut message = request(id, method, params);
    let meta = message["params"]["_meta"].as_object_mut().unwrap();
    for (key, value) in entries {
        meta.insert((*key).to_owned(), json!(value));
    }
    message
}

fn traceparent(trace: TraceId, span: SpanId) -> String {
    format!("00-{trace}-{span}-01")
}

/// The one span of `trace` (a server span under a remote parent).
fn only_span(trace: TraceId) -> SpanData {
    let mut spans = spans_of(trace);
    assert_eq!(spans.len(), 1, "{spans:#?}");
    spans.remove(0)
}

/// Over the stdio path: the server span of a tool call is named `{method} {tool}`, kind SERVER,
/// with the conventions' attributes, and its parent is the `traceparent` in `_meta` (remote);
/// a JSON-RPC error and a tool error set the error status; a malformed `traceparent` is no
/// parent (the span starts a trace of its own).
#[tokio::test]
async fn server_spans_take_their_parent_from_meta() {
    exporter();
    let mut peer = StdioPeer::start(fixture_with_failing_tool());

    let (trace, parent) = remote_parent(1);
    let (reply, _) = peer
        .request(&request_with_meta(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
            &[
                ("traceparent", &traceparent(trace, parent)),
                ("tracestate", "vendor=opaque"),
            ],
        ))
        .await;
    assert_eq!(reply["result"]["content"][0]["text"], "hi");
    let span = only_span(trace);
    assert_eq!(span.name, "tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.parent_span_id, parent);
    assert!(span.parent_span_is_remote);
    assert_eq!(span.span_context.trace_state().header(), "vendor=opaque");
    assert_eq!(span.status, Status::Unset);
    assert_attributes(
        &span,
        &[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("mcp.protocol.version", "2026-07-28"),
            ("jsonrpc.request.id", "1"),
            ("network.transport", "pipe"),
        ],
    );

    let (trace, parent) = remote_parent(1);
    let (reply, _) = peer
        .request(&request_with_meta(
            2,
            "x/nope",
            json!({}),
            &[("traceparent", &traceparent(trace, parent))],
        ))
        .await;
    assert_eq!(reply["error"]["code"], -32601);
    // A method the server does not know is `_OTHER`, in the name too; what was sent is an
    // attribute of its own.
    let span = only_span(trace);
    assert_eq!(span.name, "_OTHER");
    assert!(matches!(span.status, Status::Error { .. }), "{span:#?}");
    assert_attributes(
        &span,
        &[
            ("error.type", "-32601"),
            ("rpc.response.status_code", "-32601"),
            ("rpc.method_original", "x/nope"),
        ],
    );

    let (trace, parent) = remote_parent(1);
    peer.request(&request_with_meta(
        3,
        "tools/call",
        json!({"name": "fail"}),
        &[("traceparent", &traceparent(trace, parent))],
    ))
    .await;
    let span = only_span(trace);
    assert!(matches!(span.status, Status::Error { .. }), "{span:#?}");
    assert_attributes(&span, &[("error.type", "tool_error")]);

    // A traceparent that is not W3C's (an upper-case id) is ignored: a root span.
    let (trace, parent) = remote_parent(1);
    let forged = traceparent(trace, parent).to_uppercase();
    peer.request(&request_with_meta(
        4,
        "prompts/get",
        json!({"name": "greet", "arguments": {"who": "Ada"}}),
        &[("traceparent", &forged)],
    ))
    .await;
    assert!(spans_of(trace).is_empty());
    let orphan = exporter()
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .find(|span| span.name == "prompts/get greet")
        .expect("the prompt's span");
    assert_eq!(orphan.parent_span_id, SpanId::INVALID);
    peer.close().await.unwrap();
}

/// Over HTTP the same: the parent from `_meta`, `network.transport` `tcp`.
#[tokio::test]
async fn an_http_server_span_takes_its_parent_from_meta() {
    exporter();
    let peer = HttpPeer::start(fixture()).await;
    let (trace, parent) = remote_parent(2);
    let (status, reply) = peer
        .call(&request_with_meta(
            7,
            "resources/read",
            json!({"uri": "test://doc"}),
            &[("traceparent", &traceparent(trace, parent))],
        ))
        .await;
    assert_eq!(status, 200, "{reply}");
    let span = only_span(trace);
    assert_eq!(span.name, "resources/read");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.parent_span_id, parent);
    assert_attributes(
        &span,
        &[
            ("mcp.resource.uri", "test://doc"),
            ("network.transport", "tcp"),
            ("jsonrpc.request.id", "7"),
        ],
    );
}

/// The form question the test tools ask: `{region: string}`.
fn region_question() -> ElicitRequestFormParams {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"region": {"type": "string"}},
        "required": ["region"],
    }))
    .unwrap();
    ElicitRequestFormParams::new("Which region?", schema)
}

/// A tool that asks for a region once (a second round) on 2026-07-28.
fn asker() -> Server {
    asker_named("provision")
}

/// [`asker`] with another name for the tool.
fn asker_named(tool: &str) -> Server {
    Server::builder("otel-test", "1.0.0")
        .tool(
            Tool::new(tool, Tool::empty_input_schema()),
            |_ctx: RequestContext, params: CallToolRequestParams| async move {
                let Some(answer) = params
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get("region"))
                else {
                    let question = region_question();
                    return Ok(Outcome::InputRequired(
                        InputRequiredResult::new()
                            .with_request("region", InputRequest::elicit(question)),
                    ));
                };
                let answer = answer
                    .as_elicit()
                    .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
                let region = answer.content.unwrap_or_default()["region"].clone();
                Ok::<_, ErrorObject>(Outcome::Complete(CallToolResult::text(format!(
                    "in {region}"
                ))))
            },
        )
        .build()
        .unwrap()
}

/// The spans of a two-round call: one call span (INTERNAL) under the test's root, two CLIENT
/// spans (one per round) under it, and each round's SERVER span under its client span.
fn assert_two_round_tree(trace: TraceId, transport: &str) {
    let spans = spans_of(trace);
    let of_kind = |kind: SpanKind| -> Vec<&SpanData> {
        spans.iter().filter(|span| span.span_kind == kind).collect()
    };
    let root = spans
        .iter()
        .find(|span| span.name == "test root")
        .expect("the root span");
    let calls = of_kind(SpanKind::Internal)
        .into_iter()
        .filter(|span| span.name != "test root")
        .collect::<Vec<_>>();
    assert_eq!(calls.len(), 1, "one call span: {spans:#?}");
    let call = calls[0];
    assert_eq!(call.name, "tools/call provision");
    assert_eq!(call.parent_span_id, root.span_context.span_id());
    assert_attributes(
        call,
        &[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "provision"),
        ],
    );

    let mut rounds = of_kind(SpanKind::Client);
    rounds.sort_by_key(|span| span.start_time);
    assert_eq!(rounds.len(), 2, "one client span per round: {spans:#?}");
    for round in &rounds {
        assert_eq!(round.name, "tools/call provision");
        assert_eq!(round.parent_span_id, call.span_context.span_id());
        assert_attributes(
            round,
            &[
                ("mcp.method.name", "tools/call"),
                ("gen_ai.tool.name", "provision"),
                ("mcp.protocol.version", "2026-07-28"),
                ("network.transport", transport),
            ],
        );
        assert!(
            attribute(round, "jsonrpc.request.id").is_some(),
            "{round:#?}"
        );
    }
    assert_ne!(
        attribute(rounds[0], "jsonrpc.request.id"),
        attribute(rounds[1], "jsonrpc.request.id")
    );

    let servers = of_kind(SpanKind::Server);
    assert_eq!(servers.len(), 2, "one server span per round: {spans:#?}");
    for round in &rounds {
        let served: Vec<_> = servers
            .iter()
            .filter(|span| span.parent_span_id == round.span_context.span_id())
            .collect();
        assert_eq!(
            served.len(),
            1,
            "the server span of {round:#?} in {spans:#?}"
        );
        assert!(served[0].parent_span_is_remote);
        assert_eq!(served[0].name, "tools/call provision");
        assert_attributes(
            served[0],
            &[
                ("network.transport", transport),
                (
                    "jsonrpc.request.id",
                    &attribute(round, "jsonrpc.request.id").unwrap(),
                ),
            ],
        );
    }
}

async fn two_round_call(client: &Client) {
    let result = client.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("in \"eu-west-1\""));
}

/// In memory (the stdio path): the client's span tree of a two-round call and the server's spans
/// as the children of its rounds, joined through `params._meta`.
#[tokio::test]
async fn a_two_round_call_is_one_trace_in_memory() {
    exporter();
    let client =
        connect_in_memory(asker(), recording_builder(&Recorder::default(), answers())).await;
    let (trace, ()) = in_root(Box::pin(two_round_call(&client))).await;
    assert_two_round_tree(trace, "pipe");
    client.close().await.unwrap();
}

/// Over HTTP the same tree.
#[tokio::test]
async fn a_two_round_call_is_one_trace_over_http() {
    exporter();
    let peer = HttpPeer::start(asker()).await;
    let client = recording_builder(&Recorder::default(), answers())
        .connect_http(&peer.url)
        .await
        .unwrap();
    let (trace, ()) = in_root(Box::pin(two_round_call(&client))).await;
    assert_two_round_tree(trace, "tcp");
    client.close().await.unwrap();
}

/// The handshake era: the request's own `_meta` carries the context too, and the server span
/// of the call is the child of the client's; a tool error marks both the client span and the
/// call span.
#[tokio::test]
async fn handshake_era_requests_carry_the_context() {
    exporter();
    let client = connect_in_memory(
        fixture_with_failing_tool(),
        recording_builder(&Recorder::default(), answers()).mode(modelctx::client::Mode::Handshake),
    )
    .await;
    let (trace, result) = in_root(Box::pin(client.call_tool("fail", json!({})))).await;
    assert_eq!(result.unwrap().is_error, Some(true));
    let spans = spans_of(trace);
    let client_span = spans
        .iter()
        .find(|span| span.span_kind == SpanKind::Client)
        .expect("the client span");
    let server_span = spans
        .iter()
        .find(|span| span.span_kind == SpanKind::Server)
        .expect("the server span");
    assert_eq!(
        server_span.parent_span_id,
        client_span.span_context.span_id()
    );
    assert_eq!(server_span.name, "tools/call fail");
    for span in [client_span, server_span] {
        assert!(matches!(span.status, Status::Error { .. }), "{span:#?}");
        assert_attributes(
            span,
            &[
                ("error.type", "tool_error"),
                ("mcp.protocol.version", "2025-11-25"),
            ],
        );
    }
    let call = spans
        .iter()
        .find(|span| span.name == "tools/call fail" && span.span_kind == SpanKind::Internal)
        .expect("the call span");
    assert!(matches!(call.status, Status::Error { .. }), "{call:#?}");
    client.close().await.unwrap();
}

/// The data points of the histogram `name` so far (cumulative), after a flush.
fn histogram_points(name: &str) -> Vec<HistogramDataPoint<f64>> {
    let exporters = exporters();
    exporters.meters.force_flush().unwrap();
    let exported = exporters.metrics.get_finished_metrics().unwrap();
    let last = exported.last().expect("an export");
    let mut points = Vec::new();
    for scope in last.scope_metrics() {
        for metric in scope.metrics().filter(|metric| metric.name() == name) {
            assert_eq!(metric.unit(), "s");
            let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
                panic!("{name} is no f64 histogram: {metric:?}");
            };
            points.extend(histogram.data_points().cloned());
        }
    }
    points
}

fn point_attribute(point: &HistogramDataPoint<f64>, key: &str) -> Option<String> {
    point
        .attributes()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.to_string())
}

/// The one data point whose `key` is `value`.
fn point_with<'a>(
    points: &'a [HistogramDataPoint<f64>],
    key: &str,
    value: &str,
) -> &'a HistogramDataPoint<f64> {
    let matching: Vec<_> = points
        .iter()
        .filter(|point| point_attribute(point, key).as_deref() == Some(value))
        .collect();
    assert_eq!(matching.len(), 1, "{key} = {value} in {points:#?}");
    matching[0]
}

const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// `mcp.server.operation.duration` and `mcp.client.operation.duration`: one measurement per
/// round on each side, with the conventions' boundaries and attributes; an unknown tool and an
/// unknown method add no series named after them.
#[tokio::test]
async fn operation_durations_are_histograms_after_the_conventions() {
    exporters();
    let client = connect_in_memory(
        asker_named("metered"),
        recording_builder(&Recorder::default(), answers()),
    )
    .await;
    let result = client.call_tool("metered", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("in \"eu-west-1\""));
    let unknown = client.call_tool("metered-unknown", json!({})).await;
    let code = unknown
        .unwrap_err()
        .rpc_error()
        .expect("a JSON-RPC error")
        .code
        .0;
    client.close().await.unwrap();
    let mut peer = StdioPeer::start(fixture());
    let (reply, _) = peer.request(&request(1, "x/metered-nope", json!({}))).await;
    assert_eq!(reply["error"]["code"], -32601);
    peer.close().await.unwrap();

    for (name, side) in [
        ("mcp.server.operation.duration", "server"),
        ("mcp.client.operation.duration", "client"),
    ] {
        let points = histogram_points(name);
        let rounds = point_with(&points, "gen_ai.tool.name", "metered");
        assert_eq!(rounds.count(), 2, "two rounds on the {side}: {rounds:#?}");
        assert_eq!(rounds.bounds().collect::<Vec<_>>(), BOUNDARIES);
        for (key, value) in [
            ("mcp.method.name", "tools/call"),
            ("mcp.protocol.version", "2026-07-28"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "pipe"),
        ] {
            assert_eq!(
                point_attribute(rounds, key).as_deref(),
                Some(value),
                "{key} on the {side}"
            );
        }
        assert_eq!(point_attribute(rounds, "error.type"), None);
        assert_eq!(point_attribute(rounds, "jsonrpc.request.id"), None);
    }
    let server = histogram_points("mcp.server.operation.duration");
    assert!(
        server.iter().all(
            |point| point_attribute(point, "gen_ai.tool.name").as_deref()
                != Some("metered-unknown")
                && point_attribute(point, "mcp.method.name").as_deref() != Some("x/metered-nope")
        ),
        "{server:#?}"
    );
    assert!(server.iter().any(|point| {
        point_attribute(point, "mcp.method.name").as_deref() == Some("_OTHER")
            && point_attribute(point, "error.type").as_deref() == Some("-32601")
    }));
    // The client keeps the name it chose itself, with the server's code.
    let client_points = histogram_points("mcp.client.operation.duration");
    let failed = point_with(&client_points, "gen_ai.tool.name", "metered-unknown");
    assert_eq!(
        point_attribute(failed, "error.type"),
        Some(code.to_string())
    );
}

/// Made-up methods mint no series, whatever error they get: without `_meta` the 2026 ladder
/// answers `-32602` before the method could be found unknown, with it `-32601`; both are recorded
/// as `_OTHER`, in the data points, the span's attribute and the span's name (which span-derived
/// metrics group by), while an extension method the server registered keeps its name; what was
/// sent is in `rpc.method_original`, which nothing groups by.
#[tokio::test]
async fn made_up_methods_mint_no_series_whatever_their_error() {
    exporters();
    let server = Server::builder("junk-metered", "1.0.0")
        .method(
            "x/metered-known",
            |_ctx: RequestContext, _params: Value| async { json!({}) },
        )
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    // The first request, with the envelope, fixes the connection's era: 2026-07-28.
    let (reply, _) = peer
        .request(&request(100, "x/junk-enveloped", json!({})))
        .await;
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    for n in 0..20 {
        let junk =
            json!({"jsonrpc": "2.0", "id": n, "method": format!("x/junk-{n}"), "params": {}});
        let (reply, _) = peer.request(&junk).await;
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }
    let (trace, parent) = remote_parent(7);
    let (reply, _) = peer
        .request(&request_with_meta(
            21,
            "x/junk-traced",
            json!({}),
            &[("traceparent", &traceparent(trace, parent))],
        ))
        .await;
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    let (reply, _) = peer
        .request(&request(22, "x/metered-known", json!({})))
        .await;
    assert!(reply["result"].is_object(), "{reply}");
    peer.close().await.unwrap();

    let points = histogram_points("mcp.server.operation.duration");
    let junk: Vec<_> = points
        .iter()
        .filter(|point| {
            point_attribute(point, "mcp.method.name").is_some_and(|name| name.contains("junk"))
        })
        .collect();
    assert!(junk.is_empty(), "series named by the peer: {junk:#?}");
    for code in ["-32602", "-32601"] {
        assert!(
            points.iter().any(|point| {
                point_attribute(point, "mcp.method.name").as_deref() == Some("_OTHER")
                    && point_attribute(point, "error.type").as_deref() == Some(code)
            }),
            "{code} as _OTHER: {points:#?}"
        );
    }
    let known = point_with(&points, "mcp.method.name", "x/metered-known");
    assert_eq!(known.count(), 1);
    // Nor a span name (span-derived metrics group by it): what was sent is an attribute only.
    let span = only_span(trace);
    assert_eq!(span.name, "_OTHER");
    assert_attributes(
        &span,
        &[
            ("mcp.method.name", "_OTHER"),
            ("rpc.method_original", "x/junk-traced"),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// One trace per logical multi-round call on the server: `mcp.request_state.round` and the link
// from every later round to the first round's span, carried in the sealed `requestState`.

/// The keys two instances of [`wizard`] share.
const WIZARD_KEY: &[u8; 32] = b"otel-rounds-shared-key-012345678";

/// A tool `wizard` that asks one question in each of its first two rounds and answers in the
/// third, counting its rounds in its own (sealed) state.
fn wizard() -> Server {
    wizard_builder().build().unwrap()
}

/// [`wizard`] whose every round may be redeemed once (a replay guard in memory).
fn single_use_wizard() -> Server {
    use modelctx::server::single_use::{MemoryReplayGuard, SingleUse};
    wizard_builder()
        .single_use(
            std::sync::Arc::new(MemoryReplayGuard::default()),
            SingleUse::All,
        )
        .build()
        .unwrap()
}

fn wizard_builder() -> modelctx::server::ServerBuilder {
    use modelctx::seal::RequestStateSecurity;
    Server::builder("otel-wizard", "1.0.0")
        .tool(
            Tool::new("wizard", Tool::empty_input_schema()),
            |_ctx: RequestContext, params: CallToolRequestParams| async move {
                let step: u32 = params
                    .request_state
                    .as_deref()
                    .and_then(|state| state.strip_prefix("step:"))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                if step == 2 {
                    return Ok(Outcome::Complete(CallToolResult::text("done")));
                }
                let question = region_question();
                Ok::<_, ErrorObject>(Outcome::InputRequired(
                    InputRequiredResult::new()
                        .with_request(format!("q{}", step + 1), InputRequest::elicit(question))
                        .with_state(format!("step:{}", step + 1)),
                ))
            },
        )
        .seal_request_state(RequestStateSecurity::with_keys([WIZARD_KEY]).unwrap())
}

/// The server spans of the `wizard` in `spans`, in the order they started.
fn wizard_rounds(spans: &[SpanData]) -> Vec<&SpanData> {
    let mut rounds: Vec<_> = spans
        .iter()
        .filter(|span| span.span_kind == SpanKind::Server && span.name == "tools/call wizard")
        .collect();
    rounds.sort_by_key(|span| span.start_time);
    rounds
}

/// The spans `span` links to.
fn links_of(span: &SpanData) -> Vec<(TraceId, SpanId)> {
    span.links
        .iter()
        .map(|link| (link.span_context.trace_id(), link.span_context.span_id()))
        .collect()
}

/// The trace and span id of `span`.
fn ids_of(span: &SpanData) -> (TraceId, SpanId) {
    (span.span_context.trace_id(), span.span_context.span_id())
}

/// A three-round call over the in-memory pipe: each server round records its number, and the
/// second and third link to the first round's span (the third through the state the second
/// sealed, which carries the first round's context on); all three stay children of the
/// client's round spans. The same when every round is single use (the state is opened through
/// the replay guard's path).
#[tokio::test]
async fn later_rounds_link_to_the_first_round_in_memory() {
    exporter();
    for server in [wizard(), single_use_wizard()] {
        let client =
            connect_in_memory(server, recording_builder(&Recorder::default(), answers())).await;
        let (trace, result) = in_root(Box::pin(client.call_tool("wizard", json!({})))).await;
        assert_eq!(result.unwrap().content[0].as_text(), Some("done"));
        let spans = spans_of(trace);
        let rounds = wizard_rounds(&spans);
        assert_eq!(rounds.len(), 3, "{spans:#?}");
        for (n, round) in rounds.iter().enumerate() {
            assert_attributes(round, &[("mcp.request_state.round", &(n + 1).to_string())]);
            assert!(round.parent_span_is_remote, "{round:#?}");
        }
        assert!(links_of(rounds[0]).is_empty(), "{:#?}", rounds[0]);
        for later in &rounds[1..] {
            assert_eq!(links_of(later), vec![ids_of(rounds[0])]);
        }
        client.close().await.unwrap();
    }
}

/// A `tools/call` of the wizard with `state` and an answer to `question`, traced under
/// `parent` when there is one.
fn wizard_call(id: i64, round: Option<(&str, &str)>, parent: Option<&str>) -> Value {
    let mut params = json!({"name": "wizard", "arguments": {}});
    if let Some((state, question)) = round {
        params["requestState"] = json!(state);
        params["inputResponses"] =
            json!({question: {"action": "accept", "content": {"region": "eu"}}});
    }
    let entries: Vec<(&str, &str)> = parent.map(|p| ("traceparent", p)).into_iter().collect();
    let mut message = request_with_meta(id, "tools/call", params, &entries);
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    message
}

/// The `requestState` of an input-required reply.
fn sealed_state(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned()
}

/// Two instances sharing the keys over HTTP: round 1 on A, round 2 on B, round 3 on A again.
/// B's span records round 2 and links to A's first-round span although B never saw round 1,
/// and round 3 links to it too. A round whose own request carries no `traceparent` (a client
/// without tracing) starts a trace of its own and still links to the first round.
#[tokio::test]
async fn the_link_holds_across_instances_sharing_the_keys() {
    exporter();
    let a = HttpPeer::start(wizard()).await;
    let b = HttpPeer::start(wizard()).await;

    let (trace, _) = remote_parent(3);
    let mut parents = Vec::new();
    let mut answering: Option<(String, String)> = None;
    for (n, peer) in [&a, &b, &a].into_iter().enumerate() {
        let (_, parent) = remote_parent(3);
        parents.push(parent);
        let round = answering.as_ref().map(|(s, q)| (s.as_str(), q.as_str()));
        let id = i64::try_from(n).unwrap() + 1;
        let (status, reply) = peer
            .call(&wizard_call(id, round, Some(&traceparent(trace, parent))))
            .await;
        assert_eq!(status, 200, "{reply}");
        answering = if n < 2 {
            Some((sealed_state(&reply), format!("q{}", n + 1)))
        } else {
            assert_eq!(reply["result"]["content"][0]["text"], "done");
            None
        };
    }

    let spans = spans_of(trace);
    let rounds = wizard_rounds(&spans);
    assert_eq!(rounds.len(), 3, "{spans:#?}");
    for (n, (round, parent)) in rounds.iter().zip(&parents).enumerate() {
        assert_eq!(round.parent_span_id, *parent);
        assert_attributes(
            round,
            &[
                ("mcp.request_state.round", &(n + 1).to_string()),
                ("network.transport", "tcp"),
            ],
        );
    }
    let first = ids_of(rounds[0]);
    assert!(links_of(rounds[0]).is_empty());
    assert_eq!(links_of(rounds[1]), vec![first]);
    assert_eq!(links_of(rounds[2]), vec![first]);

    // Another call: round 1 on A, round 2 on B without a traceparent of its own (a client
    // without tracing): a root span in a trace of its own, linked to that call's first round.
    let state = sealed_state(
        &a.call(&wizard_call(4, None, Some(&traceparent(trace, parents[0]))))
            .await
            .1,
    );
    let (status, reply) = b.call(&wizard_call(5, Some((&state, "q1")), None)).await;
    assert_eq!(status, 200, "{reply}");
    let first = wizard_rounds(&spans_of(trace))
        .into_iter()
        .find(|span| span.parent_span_id == parents[0] && ids_of(span) != first)
        .map(ids_of)
        .expect("the second first round");
    let untraced: Vec<_> = exporter()
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|span| links_of(span).contains(&first))
        .collect();
    assert_eq!(untraced.len(), 1, "{untraced:#?}");
    let untraced = &untraced[0];
    assert_ne!(untraced.span_context.trace_id(), trace);
    assert_eq!(untraced.parent_span_id, SpanId::INVALID);
    assert_attributes(untraced, &[("mcp.request_state.round", "2")]);
}

/// A durable flow (SQLite store) started under the application's span by one worker and
/// resumed by another (its own store connection, client and server instance, under a span of
/// its own): the record keeps the `traceparent` of the starting call span, and the resuming
/// call span is its child, so the rounds on both instances are one trace.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_flow_continues_the_trace_that_started_it() {
    use modelctx::client::flows::{FlowRunner, FlowStart, FlowStatus, SqliteFlowStore};
    use modelctx_test_support::flows as flow;
    exporter();
    let dir = modelctx_test_support::tempdir::TempDir::new("otel-flows");
    let path = dir.path().join("flows.db");
    let completions = flow::Completions::default();
    let (url_a, url_b) = (
        flow::serve(flow::KEY, &completions, None).await,
        flow::serve(flow::KEY, &completions, None).await,
    );

    let starter = FlowRunner::new(SqliteFlowStore::open(&path).unwrap());
    let client_a = flow::flow_client(&url_a).await;
    let params = flow::provision_params(json!({"name": "orders"}));
    let (trace, started) = in_root(Box::pin(starter.start(
        &client_a,
        flow::SERVER,
        None,
        params,
    )))
    .await;
    let Ok(FlowStart::Pending(record)) = started else {
        panic!("the flow waits for the user: {started:?}");
    };
    starter
        .answer(
            &record.id,
            flow::answers("region", "region", json!("eu-west-1")),
        )
        .await
        .unwrap();

    let worker = FlowRunner::new(SqliteFlowStore::open(&path).unwrap()).worker_id("other");
    let client_b = flow::flow_client(&url_b).await;
    let (elsewhere, resumed) = in_root(Box::pin(worker.resume(&client_b, &record.id))).await;
    let resumed = resumed.unwrap().expect("claimed");
    assert_eq!(resumed.status, FlowStatus::Done, "{resumed:#?}");
    assert_ne!(elsewhere, trace);

    let spans = spans_of(trace);
    let mut calls: Vec<_> = spans
        .iter()
        .filter(|span| span.span_kind == SpanKind::Internal && span.name == "tools/call provision")
        .collect();
    calls.sort_by_key(|span| span.start_time);
    assert_eq!(
        calls.len(),
        2,
        "the start's and the resumption's: {spans:#?}"
    );
    let (start, resumption) = (calls[0], calls[1]);
    assert_eq!(
        record.trace_context.as_deref(),
        Some(traceparent(trace, start.span_context.span_id()).as_str())
    );
    assert_eq!(resumption.parent_span_id, start.span_context.span_id());
    // Each call's round went out under it and was served (on A, then B) in the same trace.
    for call in [start, resumption] {
        let round = spans
            .iter()
            .find(|span| {
                span.span_kind == SpanKind::Client
                    && span.parent_span_id == call.span_context.span_id()
            })
            .expect("the call's round");
        assert!(
            spans.iter().any(|span| span.span_kind == SpanKind::Server
                && span.parent_span_id == round.span_context.span_id()),
            "{spans:#?}"
        );
    }
    assert!(
        spans_of(elsewhere)
            .iter()
            .all(|span| span.name == "test root"),
        "nothing of the flow in the worker's own trace"
    );
    client_a.close().await.unwrap();
    client_b.close().await.unwrap();
}
