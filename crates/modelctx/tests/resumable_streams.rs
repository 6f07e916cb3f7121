//! Resumable 2025-11-25 streams over streamable HTTP (issue 35, point 6): with an event store,
//! a call's response stream and a session's `GET` stream carry event ids, a client whose
//! connection broke reconnects with `GET` + `Last-Event-ID` and gets what it missed, then the
//! rest; a request goes on while its client is away; another session's ids are refused; a
//! handler can close its stream early (polling) and our client resumes on its own.
//!
//! No test sleeps to wait: the handler waits on signals the test gives, and every wait for
//! the server is bounded by a timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use modelctx::server::http::{HttpConfig, MemoryEventStore, RedisEventStore, Resumability};
use modelctx::server::{Change, RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::redis::{Persistence, Redis};
use modelctx_test_support::server::{HttpPeer, SseEvents};
use serde_json::{Value, json};
use tokio::sync::Notify;

const BOUND: Duration = Duration::from_secs(10);

/// What the test and the handler signal each other.
#[derive(Default)]
struct Signals {
    /// The handler sent its first step and waits.
    waiting: Notify,
    /// The test lets the handler go on.
    go_on: Notify,
    /// The handler saw its request cancelled.
    cancelled: AtomicBool,
}

async fn step(ctx: &RequestContext, n: u32) {
    ctx.send_notification("com.example/step", Some(&json!({ "n": n })))
        .await
        .unwrap();
}

/// `steps`: sends step 1, waits for the test, sends step 2 and answers. `polling`: closes its
/// stream after step 1 (SEP-1699), then sends step 2 and answers.
fn server(signals: Arc<Signals>) -> Server {
    let polling = Arc::clone(&signals);
    Server::builder("resumable", "1.0.0")
        .tool(
            Tool::new("steps", Tool::empty_input_schema()),
            move |ctx: RequestContext, _: CallToolRequestParams| {
                let signals = Arc::clone(&signals);
                async move {
                    step(&ctx, 1).await;
                    signals.waiting.notify_one();
                    signals.go_on.notified().await;
                    signals
                        .cancelled
                        .store(ctx.is_cancelled(), Ordering::SeqCst);
                    step(&ctx, 2).await;
                    Ok::<_, ErrorObject>(CallToolResult::text("done"))
                }
            },
        )
        .tool(
            Tool::new("polling", Tool::empty_input_schema()),
            move |ctx: RequestContext, _: CallToolRequestParams| {
                let signals = Arc::clone(&polling);
                async move {
                    step(&ctx, 1).await;
                    assert!(ctx.close_sse_stream(), "a resumable stream");
                    signals.go_on.notified().await;
                    // More closes than a client resumes in a row without news: each
                    // reconnection brings a new event, so the client keeps following.
                    for n in 2..=5 {
                        step(&ctx, n).await;
                        ctx.close_sse_stream();
                    }
                    Ok::<_, ErrorObject>(CallToolResult::text("polled"))
                }
            },
        )
        .tool(
            Tool::new("poll_once", Tool::empty_input_schema()),
            |ctx: RequestContext, _: CallToolRequestParams| async move {
                // Closed before anything but the priming event went out.
                assert!(ctx.close_sse_stream());
                tokio::task::yield_now().await;
                Ok::<_, ErrorObject>(CallToolResult::text("after the reconnection"))
            },
        )
        .build()
        .unwrap()
}

fn config() -> HttpConfig {
    HttpConfig::default().resumable(
        Resumability::new(MemoryEventStore::new())
            .retry(Duration::from_millis(20))
            .reconnect_window(Duration::from_secs(30)),
    )
}

/// A 2025-11-25 session, as a raw client sees it.
struct Session<'a> {
    peer: &'a HttpPeer,
    id: String,
}

impl<'a> Session<'a> {
    async fn open(peer: &'a HttpPeer) -> Self {
        let id = peer.open_handshake_session(&json!({})).await;
        Self { peer, id }
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        self.peer.handshake_post(body, Some(&self.id)).await
    }

    async fn call(&self, id: i64, tool: &str) -> SseEvents {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}});
        SseEvents::new(self.post(&call).await)
    }

    async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut request = self
            .peer
            .client
            .get(&self.peer.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        request.send().await.unwrap()
    }
}

/// The next message of `events` and its event's id, which a resumable stream always gives.
async fn message(events: &mut SseEvents) -> (String, Value) {
    let (id, message) = events.next_message().await.expect("a message");
    (
        id.unwrap_or_else(|| panic!("a message without an id: {message}")),
        message,
    )
}

fn step_of(message: &Value) -> Option<u64> {
    (message["method"] == "com.example/step").then(|| message["params"]["n"].as_u64().unwrap())
}

/// The call's stream breaks after step 1; the request goes on while nobody listens; the
/// reconnection with `Last-Event-ID` gets step 2 and the result, and nothing twice.
#[tokio::test]
async fn a_broken_call_stream_resumes_with_what_was_missed() {
    broken_call_stream_resumes(config()).await;
}

/// The same with the events in Redis (a fleet's store).
#[tokio::test]
async fn a_broken_call_stream_resumes_from_redis() {
    let redis = Redis::start(Persistence::Off).await;
    let store = RedisEventStore::connect(&redis.url, "resumable")
        .await
        .unwrap();
    let config =
        HttpConfig::default().resumable(Resumability::new(store).retry(Duration::from_millis(20)));
    broken_call_stream_resumes(config).await;
}

async fn broken_call_stream_resumes(config: HttpConfig) {
    let signals = Arc::new(Signals::default());
    let peer = HttpPeer::start_with(server(Arc::clone(&signals)), config).await;
    let session = Session::open(&peer).await;
    let mut stream = session.call(1, "steps").await;
    let (priming_id, priming) = stream.next_event().await.unwrap();
    assert!(
        priming.is_none() && priming_id.is_some(),
        "a priming event first"
    );
    let (last_id, first) = message(&mut stream).await;
    assert_eq!(step_of(&first), Some(1));
    tokio::time::timeout(BOUND, signals.waiting.notified())
        .await
        .unwrap();
    drop(stream);
    // The handler goes on with nobody connected: step 2 and the result go to the store.
    signals.go_on.notify_one();
    let mut resumed = SseEvents::new(session.get(Some(&last_id)).await);
    let rest = resumed.rest().await;
    assert_eq!(rest.len(), 2, "step 2 and the result, once each: {rest:?}");
    assert_eq!(step_of(&rest[0]), Some(2));
    assert_eq!(rest[1]["id"], 1);
    assert_eq!(rest[1]["result"]["content"][0]["text"], "done");
    assert!(
        !signals.cancelled.load(Ordering::SeqCst),
        "not cancelled by the disconnect"
    );

    // From the priming event: everything again.
    let mut again = SseEvents::new(session.get(priming_id.as_deref()).await);
    let all = again.rest().await;
    assert_eq!(all.iter().filter_map(step_of).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(all.last().unwrap()["result"]["content"][0]["text"], "done");
}

/// A reconnection while the request still runs gets the missed events, then the live rest.
#[tokio::test]
async fn a_reconnection_to_a_running_call_continues_live() {
    let signals = Arc::new(Signals::default());
    let peer = HttpPeer::start_with(server(Arc::clone(&signals)), config()).await;
    let session = Session::open(&peer).await;
    let mut stream = session.call(7, "steps").await;
    let (priming_id, _) = stream.next_event().await.unwrap();
    tokio::time::timeout(BOUND, signals.waiting.notified())
        .await
        .unwrap();
    drop(stream);
    let mut resumed = SseEvents::new(session.get(priming_id.as_deref()).await);
    let (_, first) = message(&mut resumed).await;
    assert_eq!(step_of(&first), Some(1), "replayed from the store");
    signals.go_on.notify_one();
    let rest = resumed.rest().await;
    assert_eq!(step_of(&rest[0]), Some(2), "live");
    assert_eq!(rest[1]["id"], 7);
    assert_eq!(rest.len(), 2);
}

/// An event id is usable by its own session only; a malformed or foreign one gets 404, and a
/// session without resumability configured has no ids at all.
#[tokio::test]
async fn another_sessions_event_ids_are_refused() {
    let signals = Arc::new(Signals::default());
    let peer = HttpPeer::start_with(server(Arc::clone(&signals)), config()).await;
    let owner = Session::open(&peer).await;
    let other = Session::open(&peer).await;
    let mut stream = owner.call(1, "steps").await;
    let (priming_id, _) = stream.next_event().await.unwrap();
    let priming_id = priming_id.unwrap();
    for id in [priming_id.as_str(), "nonsense", "", "a.r1:1"] {
        let response = other.get(Some(id)).await;
        assert_eq!(response.status(), 404, "{id:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["message"], "Unknown or expired Last-Event-ID");
    }
    signals.go_on.notify_one();
    assert_eq!(stream.rest().await.last().unwrap()["id"], 1);
}

/// Without an event store nothing changes: no ids, and a disconnect cancels the request.
#[tokio::test]
async fn without_an_event_store_streams_have_no_ids() {
    let signals = Arc::new(Signals::default());
    let peer = HttpPeer::start(server(Arc::clone(&signals))).await;
    let session = Session::open(&peer).await;
    let mut stream = session.call(1, "steps").await;
    let (id, message) = stream.next_event().await.unwrap();
    assert_eq!((id, message.as_ref().and_then(step_of)), (None, Some(1)));
    signals.go_on.notify_one();
    assert_eq!(stream.rest().await.last().unwrap()["id"], 1);
}

/// The session's `GET` stream breaks; a list change while nobody listens is kept and arrives
/// on the reconnection; a plain `GET` meanwhile takes the stream over.
#[tokio::test]
async fn a_broken_get_stream_resumes_with_the_changes_missed() {
    let server = server(Arc::new(Signals::default()));
    let handle = server.clone();
    let peer = HttpPeer::start_with(server, config()).await;
    let session = Session::open(&peer).await;
    let mut get = SseEvents::new(session.get(None).await);
    let (priming_id, priming) = get.next_event().await.unwrap();
    assert!(priming.is_none());
    // A second GET while the first is connected: one stream a session.
    assert_eq!(session.get(None).await.status(), 409);
    drop(get);
    handle.notify(Change::ToolsListChanged);
    let mut resumed = SseEvents::new(session.get(priming_id.as_deref()).await);
    let (_, change) = message(&mut resumed).await;
    assert_eq!(change["method"], "notifications/tools/list_changed");
    // Still the session's stream: live changes follow.
    handle.notify(Change::PromptsListChanged);
    let (_, live) = message(&mut resumed).await;
    assert_eq!(live["method"], "notifications/prompts/list_changed");
}

/// A handler closes its stream early (SEP-1699 polling): our own client reconnects after the
/// stream's `retry` and gets the rest of the call, its notifications and result included.
#[tokio::test]
async fn our_client_follows_a_stream_the_handler_closed() {
    let signals = Arc::new(Signals::default());
    let peer = HttpPeer::start_with(server(Arc::clone(&signals)), config()).await;
    let steps = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&steps);
    let client = modelctx::client::Client::builder()
        .mode(modelctx::client::Mode::Handshake)
        .on_notification(move |notification| {
            if notification.method == "com.example/step" {
                let params: Value =
                    serde_json::from_str(notification.params.as_ref().unwrap().get()).unwrap();
                seen.lock().unwrap().push(params["n"].as_u64().unwrap());
            }
        })
        .connect_http(&peer.url)
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_ref(), "2025-11-25");
    let call = tokio::spawn(async move { client.call_tool("polling", json!({})).await });
    // The handler waits for this after it closed its stream; a permit is kept if it is not
    // waiting yet.
    signals.go_on.notify_one();
    let result = tokio::time::timeout(BOUND, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        "polled"
    );
    assert_eq!(
        *steps.lock().unwrap(),
        [1, 2, 3, 4, 5],
        "each step once, in order"
    );
}

/// The Python SDK 2.3.0 client (2025-11-25 over streamable HTTP) follows a stream the handler
/// closed: it reconnects with `Last-Event-ID` after the priming event's `retry` and receives
/// the result.
#[tokio::test]
async fn the_python_client_follows_a_stream_the_handler_closed() {
    let peer = HttpPeer::start_with(server(Arc::new(Signals::default())), config()).await;
    let ops = json!([{"op": "call_tool", "name": "poll_once", "arguments": {}}]);
    let mut command = tokio::process::Command::new(modelctx_test_support::process::python());
    command
        .arg(modelctx_test_support::process::repo_root().join("tests/python/client_driver.py"))
        .args([
            "--mode",
            "legacy",
            "--timeout",
            "30",
            "--ops-json",
            &ops.to_string(),
        ])
        .args(["--url", &peer.url])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the driver finished in time")
        .expect("run the driver");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: Value = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["event"] == "result")
        .unwrap_or_else(|| panic!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["protocol_version"], "2025-11-25");
    assert_eq!(
        result["result"]["content"][0]["text"], "after the reconnection",
        "{result}"
    );
}
