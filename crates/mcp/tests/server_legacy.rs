//! The handshake era on the server: the stdio era lock, the back-channel with the same handler
//! code, results without `resultType`, methods without the 2026 envelope, and one HTTP endpoint
//! serving a legacy session and modern requests at the same time.

mod server_support;

use mcp::server::{RequestContext, Server};
use mcp::types::*;
use serde_json::{Value, json};
use server_support::{HttpPeer, StdioPeer, object, request};

/// A tool that asks in whichever way the request's era allows.
fn asker() -> Server {
    Server::builder("era-test", "1.0.0")
        .tool(
            Tool::new("provision", object(json!({"type":"object","properties":{"name":{"type":"string"}}}))),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let schema: ElicitationSchema = serde_json::from_value(json!({"type":"object","properties":{"region":{"type":"string"}},"required":["region"]})).unwrap();
                let question = ElicitRequestFormParams::new("Which region?", schema);
                let region = match ctx.era() {
                    Era::Handshake => {
                        let answer = ctx.elicit(question).await?;
                        answer.content.unwrap_or_default()["region"].as_str().unwrap_or_default().to_owned()
                    }
                    Era::Modern => match params.input_responses.as_ref().and_then(|r| r.get("region")).and_then(|r| r.as_elicit().ok()) {
                        Some(answer) => answer.content.unwrap_or_default()["region"].as_str().unwrap_or_default().to_owned(),
                        None => return Ok(Outcome::InputRequired(InputRequiredResult::new().with_request("region", InputRequest::elicit(question)))),
                    },
                };
                Ok::<_, ErrorObject>(Outcome::Complete(CallToolResult::text(format!("{} in {region} ({})", params.arguments.unwrap_or_default()["name"], ctx.protocol_version()))))
            },
        )
        .tool(Tool::new("manual_irr", Tool::empty_input_schema()), |_ctx, _p| async {
            InputRequiredResult::new().with_state("manual:7")
        })
        .method("x/version", |ctx: RequestContext, _params: Value| async move {
            json!({"version": ctx.protocol_version().as_str()})
        })
        .build()
        .unwrap()
}

/// Opens a handshake-era session on the in-memory stdio pipe.
async fn legacy_peer(server: Server, capabilities: &Value) -> StdioPeer {
    let mut peer = StdioPeer::start(server);
    let (init, _) = peer.request(&initialize(1, capabilities)).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    peer.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    peer
}

/// Issue 16 item 6: a handshake-era request has no 2026 envelope to check, so an unknown
/// method is `-32601` (not the envelope's `-32602`), and an extension method is served with the
/// session's version.
#[tokio::test]
async fn unknown_and_extension_methods_on_a_legacy_session() {
    let mut peer = legacy_peer(asker(), &json!({})).await;
    let (unknown, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":2,"method":"x/nope","params":{}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["error"]["message"], "Method not found");
    let (bare, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":3,"method":"x/nope"}))
        .await;
    assert_eq!(bare["error"]["code"], -32601, "{bare}");
    let (extension, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":4,"method":"x/version"}))
        .await;
    assert_eq!(extension["result"], json!({"version": "2025-11-25"}));
    peer.close().await.unwrap();
}

/// Issue 16 item 7: a `requestState` that is not a string gets the one uniform request-state
/// error on a handshake-era session too, never serde's message.
#[tokio::test]
async fn non_string_request_state_on_a_legacy_session() {
    let mut peer = legacy_peer(asker(), &json!({})).await;
    for (id, state) in [
        (2, json!(7)),
        (3, json!({"forged": true})),
        (4, json!(["x"])),
    ] {
        let (reply, _) = peer
            .request(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                "params":{"name":"manual_irr","arguments":{},"requestState":state}}))
            .await;
        assert_eq!(
            reply["error"],
            json!({"code":-32602,"message":"Invalid or expired requestState",
                   "data":{"reason":"invalid_request_state"}}),
            "{reply}"
        );
    }
    peer.close().await.unwrap();
}

fn initialize(id: i64, capabilities: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":capabilities,"clientInfo":{"name":"legacy","version":"0"}}})
}

fn legacy_call(id: i64, name: &str, arguments: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

#[tokio::test]
async fn stdio_legacy_session_uses_the_back_channel() {
    let mut peer = StdioPeer::start(asker());
    let (init, _) = peer
        .request(&initialize(1, &json!({"elicitation":{}})))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "era-test");
    assert!(
        init["result"].get("resultType").is_none(),
        "handshake-era results carry no resultType"
    );
    peer.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;

    // The tool asks through a server→client request on the same connection.
    peer.send(&legacy_call(2, "provision", &json!({"name":"orders"})))
        .await;
    let ask = peer.next().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Which region?");
    let server_id = ask["id"].clone();
    peer.send(&json!({"jsonrpc":"2.0","id":server_id,"result":{"action":"accept","content":{"region":"eu-west-1"}}})).await;
    let result = peer.next().await.unwrap();
    assert_eq!(result["id"], 2);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "\"orders\" in eu-west-1 (2025-11-25)"
    );
    assert!(result["result"].get("resultType").is_none());

    // A refusal from the client becomes the call's error.
    peer.send(&legacy_call(3, "provision", &json!({"name":"x"})))
        .await;
    let ask = peer.next().await.unwrap();
    peer.send(
        &json!({"jsonrpc":"2.0","id":ask["id"],"error":{"code":-32001,"message":"user is away"}}),
    )
    .await;
    let refused = peer.next().await.unwrap();
    assert_eq!(
        refused["error"],
        json!({"code":-32001,"message":"user is away"})
    );

    // (A handler that returns an InputRequiredResult instead is bridged: tests/server_bridge.rs.)

    // Handshake-era methods work; 2026-07-28 requests are refused on this connection.
    let (ping, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":5,"method":"ping"}))
        .await;
    assert_eq!(ping["result"], json!({}));
    let (level, _) = peer
        .request(
            &json!({"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"info"}}),
        )
        .await;
    assert_eq!(level["result"], json!({}));
    let (mixed, _) = peer.request(&request(7, "tools/list", json!({}))).await;
    assert_eq!(mixed["error"]["code"], -32600);
    let (list, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":8,"method":"tools/list"}))
        .await;
    assert!(list["result"].get("ttlMs").is_none() && list["result"]["tools"].is_array());
    peer.close().await.unwrap();
}

#[tokio::test]
async fn stdio_modern_connection_refuses_initialize() {
    let mut peer = StdioPeer::start(asker());
    let (first, _) = peer
        .request(&request(1, "tools/call", json!({"name":"manual_irr"})))
        .await;
    assert_eq!(first["result"]["resultType"], "input_required");
    let (init, _) = peer.request(&initialize(2, &json!({}))).await;
    assert_eq!(init["error"]["code"], -32022);
    assert_eq!(
        init["error"]["data"],
        json!({"supported":["2026-07-28"],"requested":"2025-11-25"})
    );
    peer.close().await.unwrap();
}

#[tokio::test]
async fn one_http_endpoint_serves_both_eras_at_once() {
    let peer = HttpPeer::start(asker()).await;
    let client = &peer.client;
    let post = |body: &Value, session: Option<&str>| {
        let mut builder = client
            .post(&peer.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(session) = session {
            builder = builder
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        builder.send()
    };
    // A legacy client opens a session (no MCP-Protocol-Version header on initialize).
    let response = post(&initialize(1, &json!({"elicitation":{}})), None)
        .await
        .unwrap();
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(session.len(), 32);
    let init: Value = response.json().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        post(
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            Some(&session)
        )
        .await
        .unwrap()
        .status(),
        202
    );

    // Its call asks through the back-channel on the response stream...
    let mut call = post(
        &legacy_call(2, "provision", &json!({"name":"orders"})),
        Some(&session),
    )
    .await
    .unwrap();
    assert_eq!(call.headers()["content-type"], "text/event-stream");
    let mut parser = mcp::http::sse::Parser::default();
    let mut events = Vec::new();
    while events.is_empty() {
        events = parser.feed(&call.chunk().await.unwrap().unwrap()).unwrap();
    }
    let ask: Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(ask["method"], "elicitation/create");

    // ...while a modern client is served on the same endpoint, statelessly.
    let mut modern_call = request(
        10,
        "tools/call",
        json!({"name":"provision","arguments":{"name":"b"}}),
    );
    modern_call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation":{}});
    let (status, modern) = peer.call(&modern_call).await;
    assert_eq!(status, 200);
    assert_eq!(modern["result"]["resultType"], "input_required");
    assert_eq!(
        modern["result"]["inputRequests"]["region"]["method"],
        "elicitation/create"
    );

    // The legacy client answers with a POST (202) and gets its result on the first stream.
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"region":"ap-south-1"}}});
    assert_eq!(post(&answer, Some(&session)).await.unwrap().status(), 202);
    let mut result = None;
    while result.is_none() {
        let chunk = call
            .chunk()
            .await
            .unwrap()
            .expect("the result before the end of the stream");
        result = parser
            .feed(&chunk)
            .unwrap()
            .into_iter()
            .map(|e| serde_json::from_str::<Value>(&e.data).unwrap())
            .find(|m| m["id"] == 2);
    }
    let result = result.unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"],
        "\"orders\" in ap-south-1 (2025-11-25)"
    );

    // Without a session, or with an unknown one, legacy requests are refused; DELETE ends it.
    assert_eq!(
        post(&legacy_call(3, "provision", &json!({})), None)
            .await
            .unwrap()
            .status(),
        400
    );
    assert_eq!(
        post(&legacy_call(3, "provision", &json!({})), Some("nope"))
            .await
            .unwrap()
            .status(),
        404
    );
    let deleted = client
        .delete(&peer.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    assert_eq!(
        post(
            &json!({"jsonrpc":"2.0","id":4,"method":"ping"}),
            Some(&session)
        )
        .await
        .unwrap()
        .status(),
        404
    );
}
