//! The `tracing` span of each request the server serves, after the OpenTelemetry semantic
//! conventions for MCP: its name (`otel.name`), kind and attributes, and the error status of
//! JSON-RPC errors and of tool results with `isError`, on the stdio path and on HTTP, in both
//! eras. The spans are captured by a subscriber layer (test-support's `capture_spans`).

use modelctx::server::Server;
use modelctx_test_support::server::{
    HttpPeer, SpanRecord, StdioPeer, capture_spans, fixture_with_failing_tool, request,
};
use serde_json::json;

const SPAN: &str = "mcp.server.request";

/// The fixture, plus a tool that reports a failure as a result.
fn server() -> Server {
    fixture_with_failing_tool()
}

fn assert_fields(span: &SpanRecord, expected: &[(&str, &str)]) {
    for (field, value) in expected {
        assert_eq!(span.field(field), Some(*value), "{field} of {span:#?}");
    }
}

/// A tool call, a prompt, a resource, a JSON-RPC error and a tool error over the stdio path:
/// one server span each, named and attributed after the conventions.
#[tokio::test]
async fn each_request_has_a_server_span_after_the_conventions() {
    let (captured, _guard) = capture_spans();
    let mut peer = StdioPeer::start(server());
    peer.request(&request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    ))
    .await;
    peer.request(&request(
        2,
        "prompts/get",
        json!({"name": "greet", "arguments": {"who": "Ada"}}),
    ))
    .await;
    peer.request(&request(3, "resources/read", json!({"uri": "test://doc"})))
        .await;
    let (unknown, _) = peer.request(&request(4, "x/nope", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let (failed, _) = peer
        .request(&request(5, "tools/call", json!({"name": "fail"})))
        .await;
    assert_eq!(failed["result"]["isError"], true);
    peer.close().await.unwrap();

    let spans = captured.named(SPAN);
    assert_eq!(spans.len(), 5, "{spans:#?}");
    let common = [
        ("otel.kind", "server"),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.transport", "pipe"),
    ];
    for span in &spans {
        assert_fields(span, &common);
    }
    // A method the server knows keeps its name and has no original beside it.
    assert!(
        spans
            .iter()
            .all(|span| span.field("jsonrpc.request.id") == Some("4")
                || span.field("rpc.method_original").is_none())
    );
    let by_id = |id: &str| {
        spans
            .iter()
            .find(|span| span.field("jsonrpc.request.id") == Some(id))
            .unwrap()
    };
    let tool = by_id("1");
    assert_fields(
        tool,
        &[
            ("otel.name", "tools/call echo"),
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
        ],
    );
    assert_eq!(tool.field("error.type"), None);
    assert_eq!(tool.field("otel.status_code"), None);

    let prompt = by_id("2");
    assert_fields(
        prompt,
        &[
            ("otel.name", "prompts/get greet"),
            ("gen_ai.prompt.name", "greet"),
        ],
    );
    assert_eq!(prompt.field("gen_ai.operation.name"), None);

    // The URI is an attribute, not part of the name (high cardinality).
    assert_fields(
        by_id("3"),
        &[
            ("otel.name", "resources/read"),
            ("mcp.resource.uri", "test://doc"),
        ],
    );
    assert_fields(
        by_id("4"),
        &[
            // A method the server does not know is neither an attribute value nor the span's
            // name (metrics, and span-derived metrics, group by them): an attribute of its own
            // keeps what was sent.
            ("otel.name", "_OTHER"),
            ("mcp.method.name", "_OTHER"),
            ("rpc.method_original", "x/nope"),
            ("error.type", "-32601"),
            ("rpc.response.status_code", "-32601"),
            ("otel.status_code", "ERROR"),
        ],
    );
    let failed = by_id("5");
    assert_fields(
        failed,
        &[
            ("otel.name", "tools/call fail"),
            ("error.type", "tool_error"),
            ("otel.status_code", "ERROR"),
        ],
    );
    assert_eq!(failed.field("rpc.response.status_code"), None);
}

/// On HTTP the transport is `tcp`; a handshake-era session's requests carry its version.
#[tokio::test]
async fn http_and_handshake_era_spans() {
    let (captured, _guard) = capture_spans();
    let peer = HttpPeer::start(server()).await;
    let (status, _) = peer
        .call(&request(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ))
        .await;
    assert_eq!(status, 200);
    let spans = captured.named(SPAN);
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_fields(
        &spans[0],
        &[
            ("otel.name", "tools/call echo"),
            ("network.transport", "tcp"),
            ("mcp.protocol.version", "2026-07-28"),
        ],
    );

    let mut handshake = StdioPeer::start(server());
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    handshake.request(&init).await;
    handshake
        .send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    let call =
        json!({"jsonrpc":"2.0","id":"call-2","method":"tools/call","params":{"name":"fail"}});
    handshake.request(&call).await;
    handshake.close().await.unwrap();
    let spans = captured.named(SPAN);
    let span = spans
        .iter()
        .find(|span| span.field("jsonrpc.request.id") == Some("call-2"))
        .unwrap();
    assert_fields(
        span,
        &[
            ("mcp.protocol.version", "2025-11-25"),
            ("network.transport", "pipe"),
            ("error.type", "tool_error"),
        ],
    );
}

/// What the peer chose is cut to 128 bytes in the span: a 64 KiB tool name (or made-up method)
/// with a newline does not make every log line of the request 64 KiB long.
#[tokio::test]
async fn peer_chosen_values_are_bounded_in_the_span() {
    let (captured, _guard) = capture_spans();
    let mut peer = StdioPeer::start(server());
    let name = format!("x\n{}", "y".repeat(65_536));
    let (refused, _) = peer
        .request(&request(1, "tools/call", json!({"name": name})))
        .await;
    assert!(refused.get("error").is_some());
    let (refused, _) = peer.request(&request(2, &name, json!({}))).await;
    assert!(refused.get("error").is_some());
    peer.close().await.unwrap();
    let spans = captured.named(SPAN);
    assert_eq!(spans.len(), 2);
    for span in &spans {
        for (field, value) in &span.fields {
            assert!(value.len() <= 160, "{field}: {} bytes", value.len());
        }
    }
    let by_id = |id: &str| {
        spans
            .iter()
            .find(|span| span.field("jsonrpc.request.id") == Some(id))
            .unwrap()
    };
    assert!(
        by_id("1")
            .field("gen_ai.tool.name")
            .unwrap()
            .starts_with("x\ny")
    );
    let made_up = by_id("2");
    assert!(
        made_up
            .field("rpc.method_original")
            .unwrap()
            .starts_with("x\ny")
    );
    assert_eq!(made_up.field("otel.name"), Some("_OTHER"));
}
