//! `notifications/cancelled` on a 2025-11-25 streamable HTTP session (issue 32, item 13): the
//! TypeScript SDK v1 client cancels a call with a POST of its own, and the request must stop as
//! it does over stdio (`server_bridge::cancelling_the_call_cancels_the_question_in_flight`): the
//! handler sees the cancellation, a question it is waiting on is withdrawn, it asks nothing more,
//! and the call's stream ends with `-32800` rather than its result.
//!
//! Each test bounds its wait for the stream (a timeout, never a sleep): before the fix the
//! cancellation was ignored and the stream stayed open.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::server::{HttpPeer, SseEvents};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// What the handler went through.
#[derive(Debug, Default)]
struct Seen {
    /// It saw its request cancelled.
    cancelled: AtomicBool,
    /// Its second question failed without being asked.
    second_refused: AtomicBool,
}

fn question(message: &str) -> ElicitRequestFormParams {
    let schema: ElicitationSchema = serde_json::from_value(json!({"type": "object",
        "properties": {"region": {"type": "string"}}, "required": ["region"]}))
    .unwrap();
    ElicitRequestFormParams::new(message, schema)
}

/// A tool shaped like the demo's `provision`: it asks a question, then works until it is
/// cancelled (`working` tells the test it has started), then asks a second question anyway, as
/// a handler that does not check for cancellation would.
fn server(seen: Arc<Seen>, working: Arc<Notify>) -> Server {
    Server::builder("cancel-test", "1.0.0")
        .tool(
            Tool::new("provision", Tool::empty_input_schema()),
            move |ctx: RequestContext, _params: CallToolRequestParams| {
                let (seen, working) = (Arc::clone(&seen), Arc::clone(&working));
                async move {
                    let first = ctx.elicit(question("Which region?")).await;
                    if first.is_ok() {
                        working.notify_one();
                        ctx.cancelled().await;
                    }
                    seen.cancelled.store(ctx.is_cancelled(), Ordering::SeqCst);
                    let second = ctx.elicit(question("Which zone?")).await;
                    seen.second_refused.store(second.is_err(), Ordering::SeqCst);
                    Ok::<_, ErrorObject>(CallToolResult::text("provisioned"))
                }
            },
        )
        .build()
        .unwrap()
}

/// A 2025-11-25 session on a server, as its client sees it.
struct Session {
    peer: HttpPeer,
    id: String,
}

impl Session {
    /// Serves `server` and opens a session whose client can answer form questions.
    async fn open(server: Server) -> Self {
        let peer = HttpPeer::start(server).await;
        let id = peer
            .open_handshake_session(&json!({"elicitation": {"form": {}}}))
            .await;
        Self { peer, id }
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        self.peer.handshake_post(body, Some(&self.id)).await
    }

    /// POSTs a notification or an answer; the status.
    async fn send(&self, body: &Value) -> u16 {
        self.post(body).await.status().as_u16()
    }
}

fn cancel(request_id: i64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
           "params": {"requestId": request_id, "reason": "the user gave up"}})
}

fn call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "provision", "arguments": {}}})
}

/// The client's answer to the question `ask`.
fn accept(ask: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": ask["id"],
           "result": {"action": "accept", "content": {"region": "eu-west-1"}}})
}

/// A call cancelled while it works (its first question answered): the handler sees the
/// cancellation, its second question is never sent, and the stream ends with `-32800`.
#[tokio::test]
async fn a_cancelled_call_stops_and_asks_nothing_more() {
    let (seen, working) = (Arc::new(Seen::default()), Arc::new(Notify::new()));
    let session = Session::open(server(Arc::clone(&seen), Arc::clone(&working))).await;
    let mut stream = SseEvents::new(session.post(&call(2)).await);
    let (_, ask) = stream.next_message().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(session.send(&accept(&ask)).await, 202);
    working.notified().await;

    assert_eq!(session.send(&cancel(2)).await, 202);
    let rest = stream.rest().await;
    assert!(
        rest.iter().all(|m| m["method"] != "elicitation/create"),
        "no question after the cancellation: {rest:#?}"
    );
    assert_eq!(
        rest.last().map(|m| (&m["id"], &m["error"]["code"])),
        Some((&json!(2), &json!(-32800))),
        "{rest:#?}"
    );
    assert!(seen.cancelled.load(Ordering::SeqCst));
    assert!(seen.second_refused.load(Ordering::SeqCst));

    // The session serves on.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let pong: Value = session.post(&ping).await.json().await.unwrap();
    assert_eq!(pong["result"], json!({}));
}

/// A call cancelled while its question waits for the user: the question is withdrawn (a
/// `notifications/cancelled` naming it, on the call's stream), then the stream ends with
/// `-32800`; an answer arriving late is taken (202) and ignored.
#[tokio::test]
async fn cancelling_a_call_withdraws_its_pending_question() {
    let seen = Arc::new(Seen::default());
    let session = Session::open(server(Arc::clone(&seen), Arc::new(Notify::new()))).await;
    let mut stream = SseEvents::new(session.post(&call(7)).await);
    let (_, ask) = stream.next_message().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");

    assert_eq!(session.send(&cancel(7)).await, 202);
    let rest = stream.rest().await;
    let [withdrawn, ended] = rest.as_slice() else {
        panic!("a withdrawal, then the end: {rest:#?}");
    };
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    assert_eq!(withdrawn["params"]["requestId"], ask["id"]);
    assert_eq!(ended["id"], 7);
    assert_eq!(ended["error"]["code"], -32800, "{ended}");
    assert!(seen.cancelled.load(Ordering::SeqCst));
    assert!(seen.second_refused.load(Ordering::SeqCst));
    assert_eq!(session.send(&accept(&ask)).await, 202);
}
