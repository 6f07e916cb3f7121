//! Interop: our client against the Python SDK 2.3.0 reference peers of `tests/python`, over
//! stdio and over streamable HTTP (127.0.0.1), in every era mode.
//!
//! Needs the project venv (`scripts/python-env.sh`, created on first use).

use std::collections::BTreeMap;

use modelctx::client::{Client, ClientBuilder, ClientError, InputOrigin, Mode};
use modelctx::types::{Era, ErrorCode, ProtocolVersion, RequestId};
use modelctx_test_support::client::{HttpPeer, Recorder, answers, peer_command, recording_builder};
use serde_json::json;

#[derive(Clone, Copy, Debug)]
enum Via {
    Stdio,
    Http,
}

/// Connects `builder` to `script` over `via`; returns the client and the HTTP server handle.
async fn connect(
    builder: ClientBuilder,
    script: &str,
    args: &[&str],
    via: Via,
) -> (Client, Option<HttpPeer>) {
    match via {
        Via::Stdio => (
            builder
                .connect_stdio(peer_command(script, args))
                .await
                .expect("connect over stdio"),
            None,
        ),
        Via::Http => {
            let server = HttpPeer::start(script, args).await;
            let client = builder
                .connect_http(&server.url)
                .await
                .expect("connect over HTTP");
            (client, Some(server))
        }
    }
}

fn text(result: &modelctx::types::CallToolResult) -> String {
    result.first_text().unwrap_or_default().to_owned()
}

async fn provisioner(via: Via) {
    let recorder = Recorder::default();
    let (client, _server) = connect(
        recording_builder(&recorder, answers()),
        "provisioner.py",
        &[],
        via,
    )
    .await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().unwrap().name, "Provisioner");
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "Provisioned 'orders' in eu-west-1 (protocol 2026-07-28, state seen by handler: 'provision-v1')."
    );
    assert_eq!(recorder.keys(), ["region"]);
    let result = client
        .call_tool("state_only", json!({"n": 3}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "state_only completed after 3 state-only round(s)"
    );
    let result = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "hi");
    client.close().await.unwrap();
}

#[tokio::test]
async fn provisioner_stdio() {
    provisioner(Via::Stdio).await;
}

#[tokio::test]
async fn provisioner_http() {
    provisioner(Via::Http).await;
}

#[tokio::test]
async fn provisioner_sealed_state_stdio() {
    let recorder = Recorder::default();
    let mut command = peer_command("provisioner.py", &[]);
    command.env(
        "MCP_REQUEST_STATE_KEYS",
        "client-test-key-client-test-key-client-test-key",
    );
    let client = recording_builder(&recorder, answers())
        .connect_stdio(command)
        .await
        .unwrap();
    // The server binds the sealed token to method, tool and arguments: any drift in the retry
    // would be rejected with -32602.
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert!(text(&result).contains("state seen by handler: 'provision-v1'"));
    let result = client
        .call_tool("state_only", json!({"n": 2}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "state_only completed after 2 state-only round(s)"
    );
    client.close().await.unwrap();
}

async fn bookshop(via: Via) {
    let recorder = Recorder::default();
    let (client, _server) = connect(
        recording_builder(&recorder, answers()),
        "bookshop.py",
        &[],
        via,
    )
    .await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);

    // Two independent questions batched into one round, answered together.
    let result = client
        .call_tool("plan_trip", json!({"city": "Lisbon"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "Trip to Lisbon: seat aisle, budget 1200 EUR."
    );
    let mut keys = recorder.keys();
    keys.sort();
    assert_eq!(keys, ["__main__:ask_budget", "__main__:ask_prefs"]);

    let result = client
        .call_tool("summarize", json!({"text": "long text"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "summary[fake-llm-1]: A short summary.");

    let result = client.call_tool("where_am_i", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        "roots: file:///tmp/mcp-rust-root (rust-root)"
    );

    let result = client
        .call_tool("order_book", json!({"title": "Neuromancer"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "Backorder for 'Neuromancer': placed.");

    let result = client
        .call_tool("manual_irr", json!({"x": 7}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "manual_irr done: x=7, ok=True, state seen by handler: 'manual:7'"
    );

    let prompt = client
        .get_prompt(
            "briefing",
            Some(BTreeMap::from([("topic".to_owned(), "Q3".to_owned())])),
        )
        .await
        .unwrap();
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert_eq!(message["content"]["text"], "Brief the board on Q3.");

    let resource = client.read_resource("report://q3").await.unwrap();
    let contents = serde_json::to_value(&resource.contents).unwrap();
    assert_eq!(contents[0]["text"], "Report q3 (pdf)");

    let kinds: Vec<_> = recorder.calls().iter().map(|c| c.kind).collect();
    assert!(
        kinds.contains(&"sampling") && kinds.contains(&"roots"),
        "{kinds:?}"
    );
    assert!(
        recorder
            .calls()
            .iter()
            .all(|c| matches!(c.origin, InputOrigin::InputRequest { .. }))
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn bookshop_stdio() {
    bookshop(Via::Stdio).await;
}

#[tokio::test]
async fn bookshop_http() {
    bookshop(Via::Http).await;
}

/// Without an elicitation callback the capability is not declared: the high-level server
/// refuses with -32021 (a peer error), the low-level one asks anyway and the client fails
/// locally without sending anything back.
#[tokio::test]
async fn missing_elicitation_callback() {
    let client = Client::builder()
        .connect_stdio(peer_command("bookshop.py", &[]))
        .await
        .unwrap();
    let error = client
        .call_tool("order_book", json!({"title": "Neuromancer"}))
        .await
        .unwrap_err();
    let rpc = error.rpc_error().expect("a server error");
    assert_eq!(rpc.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert!(rpc.required_capabilities().unwrap().elicitation_form());
    client.close().await.unwrap();

    let client = Client::builder()
        .connect_stdio(peer_command("provisioner.py", &[]))
        .await
        .unwrap();
    let error = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::MissingCallback { method, key }
            if method == "elicitation/create" && key == "region"),
        "{error:?}"
    );
    assert!(!error.is_peer_error());
    client.close().await.unwrap();
}

async fn handshake_fallback(via: Via, args: &[&str]) {
    let recorder = Recorder::default();
    let (client, _server) = connect(
        recording_builder(&recorder, answers()),
        "handshake_only.py",
        args,
        via,
    )
    .await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.era(), Era::Handshake);
    assert_eq!(client.server_info().unwrap().name, "HandshakeOnly");
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "Provisioned 'orders' in eu-west-1 (protocol 2025-11-25, via back-channel elicitation)."
    );
    // Back-channel questions carry the server's JSON-RPC id, not a key.
    let calls = recorder.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].origin,
        InputOrigin::ServerRequest {
            id: RequestId::Number(1)
        }
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn auto_falls_back_to_initialize_over_stdio() {
    handshake_fallback(Via::Stdio, &[]).await;
}

#[tokio::test]
async fn auto_falls_back_to_initialize_over_http_404() {
    handshake_fallback(Via::Http, &["--discover-http", "404"]).await;
}

#[tokio::test]
async fn auto_falls_back_to_initialize_over_http_200() {
    handshake_fallback(Via::Http, &["--discover-http", "200"]).await;
}

#[tokio::test]
async fn auto_falls_back_to_initialize_over_http_400_session() {
    handshake_fallback(Via::Http, &["--discover-http", "400-session"]).await;
}

async fn handshake_mode(via: Via) {
    let recorder = Recorder::default();
    let (client, _server) = connect(
        recording_builder(&recorder, answers()).mode(Mode::Handshake),
        "bookshop.py",
        &[],
        via,
    )
    .await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let result = client
        .call_tool("plan_trip", json!({"city": "Porto"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "Trip to Porto: seat aisle, budget 1200 EUR.");
    let result = client
        .call_tool("summarize", json!({"text": "long text"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "summary[fake-llm-1]: A short summary.");
    let result = client.call_tool("where_am_i", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        "roots: file:///tmp/mcp-rust-root (rust-root)"
    );
    // A hand-made InputRequiredResult is refused by the Python SDK on a handshake session.
    let error = client
        .call_tool("manual_irr", json!({"x": 1}))
        .await
        .unwrap_err();
    assert_eq!(error.rpc_code(), Some(ErrorCode::INTERNAL_ERROR));
    let calls = recorder.calls();
    assert!(calls.len() >= 4, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|c| matches!(c.origin, InputOrigin::ServerRequest { .. })),
        "{calls:?}"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn handshake_mode_back_channel_stdio() {
    handshake_mode(Via::Stdio).await;
}

#[tokio::test]
async fn handshake_mode_back_channel_http() {
    handshake_mode(Via::Http).await;
}

/// A refusing callback on the handshake back-channel becomes the JSON-RPC error response, which
/// the handshake-only server turns into the tools/call error.
#[tokio::test]
async fn handshake_refusal_becomes_error_response() {
    let client = Client::builder()
        .mode(Mode::Handshake)
        .on_elicitation(|_, _| async {
            Err(modelctx::types::ErrorObject::new(
                ErrorCode(-32001),
                "user is away",
            ))
        })
        .connect_stdio(peer_command("handshake_only.py", &[]))
        .await
        .unwrap();
    let error = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap_err();
    let rpc = error.rpc_error().unwrap();
    assert_eq!(
        (rpc.code, rpc.message.as_str()),
        (ErrorCode(-32001), "user is away")
    );
    client.close().await.unwrap();
}

async fn fake_server(via: Via) {
    let recorder = Recorder::default();
    let (client, _server) = connect(
        recording_builder(&recorder, answers()),
        "fake_server.py",
        &[],
        via,
    )
    .await;
    let result = client.call_tool("irr-extra", json!({})).await.unwrap();
    assert!(
        text(&result).starts_with("irr-extra: answered")
            && text(&result).ends_with("requestState=extra-1"),
        "{}",
        text(&result)
    );
    let result = client.call_tool("irr-no-state", json!({})).await.unwrap();
    assert_eq!(text(&result), "irr-no-state: requestState absent");
    let result = client.call_tool("irr-url", json!({})).await.unwrap();
    assert_eq!(text(&result), "irr-url: action=accept");
    // An absent resultType is complete (older servers), not an error.
    let result = client.call_tool("no-result-type", json!({})).await.unwrap();
    assert_eq!(text(&result), "no-result-type");
    let error = client.call_tool("irr-empty", json!({})).await.unwrap_err();
    assert!(matches!(error, ClientError::InvalidResult(_)), "{error:?}");
    let error = client
        .call_tool("irr-unknown-method", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::InvalidResult(_)), "{error:?}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn fake_server_strictness_stdio() {
    fake_server(Via::Stdio).await;
}

#[tokio::test]
async fn fake_server_strictness_http() {
    fake_server(Via::Http).await;
}
