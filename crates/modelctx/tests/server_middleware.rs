//! The server middleware chain: every request and notification passes it, on the in-memory pipe
//! (the stdio code path) and on streamable HTTP, in both eras. The two middlewares of the
//! `Middleware` rustdoc, an audit log and a rate limiter, are the ones tested here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use modelctx::client::{Client, ClientError, Mode};
use modelctx::server::middleware::{Middleware, Next, Reply, Request};
use modelctx::server::{BoxFuture, Server, ServerBuilder};
use modelctx::types::*;
use modelctx_test_support::client::connect_in_memory;
use modelctx_test_support::server::{HttpPeer, StdioPeer, request};
use serde_json::{Value, json};

/// The code the rate limiter answers with.
const RATE_LIMITED: i32 = -32000;

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    method: String,
    target: Option<String>,
    principal: Option<String>,
    era: Era,
    /// Whether the middleware got a request context.
    context: bool,
    /// `ok`, `tool error`, `error <code>`, or `none` (a notification).
    outcome: String,
}

/// Records method, target and outcome of everything that passes.
#[derive(Clone, Default)]
struct AuditLog(Arc<Mutex<Vec<Entry>>>);

impl AuditLog {
    fn entries(&self) -> Vec<Entry> {
        self.0.lock().unwrap().clone()
    }

    /// The entries of one method.
    fn of(&self, method: &str) -> Vec<Entry> {
        self.entries()
            .into_iter()
            .filter(|entry| entry.method == method)
            .collect()
    }
}

impl Middleware for AuditLog {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let mut entry = Entry {
                method: request.method().to_owned(),
                target: request.target().map(str::to_owned),
                principal: request.principal().map(|p| p.as_str().to_owned()),
                era: request.era(),
                context: request.context().is_some(),
                outcome: String::new(),
            };
            let notification = request.is_notification();
            let reply = next.run(request).await;
            entry.outcome = match reply.as_error() {
                Some(error) => format!("error {}", error.code.0),
                None if notification => "none".to_owned(),
                None if reply.is_tool_error() => "tool error".to_owned(),
                None => "ok".to_owned(),
            };
            self.0.lock().unwrap().push(entry);
            reply
        })
    }
}

/// At most `limit` requests per principal, else per peer address, else for the anonymous peer;
/// notifications pass.
#[derive(Clone)]
struct RateLimit {
    limit: u32,
    used: Arc<Mutex<HashMap<String, u32>>>,
}

impl RateLimit {
    fn new(limit: u32) -> Self {
        Self {
            limit,
            used: Arc::default(),
        }
    }

    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.used.lock().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    }
}

impl Middleware for RateLimit {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            if request.is_notification() {
                return next.run(request).await;
            }
            let key = match (request.principal(), request.peer_addr()) {
                (Some(principal), _) => format!("principal:{}", principal.as_str()),
                (None, Some(peer)) => format!("peer:{}", peer.ip()),
                (None, None) => "anonymous".to_owned(),
            };
            let allowed = {
                let mut used = self.used.lock().unwrap();
                let count = used.entry(key).or_default();
                *count += 1;
                *count <= self.limit
            };
            if !allowed {
                return Reply::error(ErrorObject::new(
                    ErrorCode(RATE_LIMITED),
                    "Rate limit exceeded; retry later",
                ));
            }
            next.run(request).await
        })
    }
}

/// A server whose `count` tool counts its calls (so a refused call is seen not to reach it) and
/// whose `fail` tool reports a tool error; the audit log is outermost, then the limiter.
fn builder(calls: &Arc<AtomicUsize>, audit: &AuditLog, limit: &RateLimit) -> ServerBuilder {
    let counter = Arc::clone(calls);
    Server::builder("middleware-test", "1.0.0")
        .tool(
            Tool::new("count", Tool::empty_input_schema()),
            move |_ctx, _params| {
                let counter = Arc::clone(&counter);
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    CallToolResult::text("counted")
                }
            },
        )
        .tool(
            Tool::new("fail", Tool::empty_input_schema()),
            |_ctx, _params| async { CallToolResult::error("no such thing") },
        )
        .middleware(audit.clone())
        .middleware(limit.clone())
}

fn call(id: i64, tool: &str) -> Value {
    request(id, "tools/call", json!({"name": tool, "arguments": {}}))
}

fn error_code(response: &Value) -> Option<i64> {
    response["error"]["code"].as_i64()
}

fn rate_limited(result: Result<CallToolResult, ClientError>) -> bool {
    matches!(result, Err(ClientError::Rpc(error)) if error.code == ErrorCode(RATE_LIMITED))
}

/// 2026-07-28 on the stdio path: requests (those the ladder refuses included) and a
/// `notifications/cancelled` pass the audit log; the limiter keys on the bound principal and
/// its refusal never reaches the handler.
#[tokio::test]
async fn stdio_modern_requests_and_a_notification_pass_the_chain() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(3));
    let server = builder(&calls, &audit, &limit)
        .bind_principal(|_| Some(modelctx::seal::Principal::new("alice")))
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);

    let (first, _) = peer.request(&call(1, "count")).await;
    assert_eq!(first["result"]["content"][0]["text"], "counted");
    // No envelope: the ladder's -32602 comes back through the chain.
    let bare = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}});
    let (refused, _) = peer.request(&bare).await;
    assert_eq!(error_code(&refused), Some(-32602));
    let (failed, _) = peer.request(&call(3, "fail")).await;
    assert_eq!(failed["result"]["isError"], true);
    let (limited, _) = peer.request(&call(4, "count")).await;
    assert_eq!(error_code(&limited), Some(i64::from(RATE_LIMITED)));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the refused call ran");

    peer.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}),
    )
    .await;
    // Messages are read in order: once this one is answered the notification has passed.
    let (after, _) = peer.request(&call(5, "count")).await;
    assert_eq!(error_code(&after), Some(i64::from(RATE_LIMITED)));

    let entry = |target: &str, outcome: &str| Entry {
        method: "tools/call".into(),
        target: Some(target.into()),
        principal: Some("alice".into()),
        era: Era::Modern,
        context: true,
        outcome: outcome.into(),
    };
    let limited = format!("error {RATE_LIMITED}");
    assert_eq!(
        audit.entries(),
        vec![
            entry("count", "ok"),
            entry("count", "error -32602"),
            entry("fail", "tool error"),
            entry("count", &limited),
            Entry {
                method: "notifications/cancelled".into(),
                target: None,
                principal: None,
                era: Era::Modern,
                context: false,
                outcome: "none".into(),
            },
            entry("count", &limited),
        ]
    );
    assert_eq!(limit.keys(), ["principal:alice"]);
    peer.close().await.unwrap();
}

/// Makes three calls on a handshake-era session whose limiter allows three requests (the
/// first was `initialize`), and checks what the audit log and the limiter saw.
async fn check_handshake_session(
    client: &Client,
    calls: &AtomicUsize,
    audit: &AuditLog,
    limit: &RateLimit,
    key: &str,
) {
    assert!(client.call_tool("count", json!({})).await.is_ok());
    assert!(client.call_tool("count", json!({})).await.is_ok());
    assert!(rate_limited(client.call_tool("count", json!({})).await));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let initialize = audit.of("initialize");
    assert_eq!(initialize.len(), 1);
    assert_eq!(initialize[0].era, Era::Handshake);
    assert_eq!(initialize[0].outcome, "ok");
    assert!(!initialize[0].context);
    let initialized = audit.of("notifications/initialized");
    assert_eq!(initialized.len(), 1);
    assert_eq!(initialized[0].era, Era::Handshake);
    assert_eq!(initialized[0].outcome, "none");
    let outcomes: Vec<(String, Era, bool)> = audit
        .of("tools/call")
        .into_iter()
        .map(|entry| (entry.outcome, entry.era, entry.context))
        .collect();
    let limited = format!("error {RATE_LIMITED}");
    assert_eq!(
        outcomes,
        [
            ("ok".to_owned(), Era::Handshake, true),
            ("ok".to_owned(), Era::Handshake, true),
            (limited, Era::Handshake, true),
        ]
    );
    assert_eq!(limit.keys(), [key]);
}

/// The handshake era on the stdio path: `initialize`, `notifications/initialized` and the
/// session's calls all pass the chain.
#[tokio::test]
async fn stdio_handshake_session_passes_the_chain() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(3));
    let server = builder(&calls, &audit, &limit).build().unwrap();
    let client = connect_in_memory(server, Client::builder().mode(Mode::Handshake)).await;
    check_handshake_session(&client, &calls, &audit, &limit, "anonymous").await;
    client.close().await.unwrap();
}

/// 2026-07-28 on HTTP: the limiter keys on the peer address, and a notification (which the
/// transport then drops) passes the chain.
#[tokio::test]
async fn http_modern_requests_are_limited_per_peer_and_notifications_pass() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(2));
    let peer = HttpPeer::start(builder(&calls, &audit, &limit).build().unwrap()).await;

    let (status, first) = peer.call(&call(1, "count")).await;
    assert_eq!(
        (status, &first["result"]["content"][0]["text"]),
        (200, &json!("counted"))
    );
    let (_, second) = peer.call(&call(2, "count")).await;
    assert_eq!(second["result"]["content"][0]["text"], "counted");
    let (_, limited) = peer.call(&call(3, "count")).await;
    assert_eq!(error_code(&limited), Some(i64::from(RATE_LIMITED)));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let notification =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    let (status, _, messages) = peer.post(&notification, &[]).await;
    assert_eq!((status, messages.len()), (202, 0));

    let entries = audit.entries();
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert!(entries[..3].iter().all(|entry| entry.method == "tools/call"
        && entry.target.as_deref() == Some("count")
        && entry.era == Era::Modern
        && entry.context));
    assert_eq!(entries[3].method, "notifications/cancelled");
    assert_eq!(entries[3].outcome, "none");
    assert_eq!(limit.keys(), ["peer:127.0.0.1"]);
}

/// The handshake era on HTTP: `initialize` (which opens the session), the
/// `notifications/initialized` the client posts, and the session's calls pass the chain.
#[tokio::test]
async fn http_handshake_session_passes_the_chain() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(3));
    let peer = HttpPeer::start(builder(&calls, &audit, &limit).build().unwrap()).await;
    let client = Client::builder()
        .mode(Mode::Handshake)
        .connect_http(&peer.url)
        .await
        .unwrap();
    check_handshake_session(&client, &calls, &audit, &limit, "peer:127.0.0.1").await;
    client.close().await.unwrap();
}

/// Answers `tools/call` of `cached` itself; refuses `initialize` after the server answered it.
struct Gate;

impl Middleware for Gate {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            if request.target() == Some("cached") {
                return Reply::result(&CallToolResult::text("from the cache"));
            }
            if request.method() == "tools/call" && request.target() == Some("boom") {
                panic!("a middleware bug");
            }
            let initialize = request.method() == "initialize";
            let reply = next.run(request).await;
            if initialize {
                return Reply::error(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "no sessions today",
                ));
            }
            reply
        })
    }
}

/// A middleware answers on its own (a cached result stamped with the request's id), a panicking
/// one costs its request a -32603 and the server keeps serving, and an `initialize` refused on
/// the way out opens no session.
#[tokio::test]
async fn a_middleware_answers_alone_and_its_panic_is_contained() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(100));
    let server = builder(&calls, &audit, &limit)
        .middleware(Gate)
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server.clone());
    let (cached, _) = peer.request(&call(7, "cached")).await;
    assert_eq!(cached["id"], 7);
    assert_eq!(cached["result"]["content"][0]["text"], "from the cache");
    let (panicked, _) = peer.request(&call(8, "boom")).await;
    assert_eq!(error_code(&panicked), Some(-32603));
    let (counted, _) = peer.request(&call(9, "count")).await;
    assert_eq!(counted["result"]["content"][0]["text"], "counted");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    peer.close().await.unwrap();

    let mut handshake = StdioPeer::start(server);
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (refused, _) = handshake.request(&init).await;
    assert_eq!(error_code(&refused), Some(-32600));
    // No session was opened: the connection's era is still open, so a 2026-07-28 request is
    // served (on a handshake-era session it would be refused with -32600).
    let (modern, _) = handshake.request(&call(2, "count")).await;
    assert_eq!(modern["result"]["content"][0]["text"], "counted");
    handshake.close().await.unwrap();
}

/// The principal hook runs for the middleware's context too: a hook that panics there costs its
/// request a -32603, and the connection keeps serving.
#[tokio::test]
async fn a_panicking_principal_hook_is_contained_with_middleware() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(100));
    let server = builder(&calls, &audit, &limit)
        .bind_principal(|ctx| {
            assert!(ctx.client_info().is_some(), "a client without clientInfo");
            None
        })
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    let mut anonymous = call(1, "count");
    anonymous["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let (panicked, _) = peer.request(&anonymous).await;
    assert_eq!(error_code(&panicked), Some(-32603));
    let (counted, _) = peer.request(&call(2, "count")).await;
    assert_eq!(counted["result"]["content"][0]["text"], "counted");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    peer.close().await.unwrap();
}

/// Records the principal each request carries through the chain.
#[derive(Clone, Default)]
struct SeenPrincipals(Arc<Mutex<Vec<Option<String>>>>);

impl Middleware for SeenPrincipals {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let principal = request.principal().map(|p| p.as_str().to_owned());
            self.0.lock().unwrap().push(principal);
            next.run(request).await
        })
    }
}

/// With middleware registered the principal hook runs once per request, and the middleware and
/// the handler both see its answer (it ran twice, once for each context).
#[tokio::test]
async fn the_principal_hook_runs_once_per_request_with_middleware() {
    let hooked = Arc::new(AtomicUsize::new(0));
    let handled = Arc::new(Mutex::new(Vec::new()));
    let seen = SeenPrincipals::default();
    let server = {
        let hooked = Arc::clone(&hooked);
        let handled = Arc::clone(&handled);
        Server::builder("principal-test", "1.0.0")
            .tool(
                Tool::new("whoami", Tool::empty_input_schema()),
                move |ctx: modelctx::server::RequestContext, _params| {
                    let handled = Arc::clone(&handled);
                    async move {
                        let principal = ctx.principal().map(|p| p.as_str().to_owned());
                        handled.lock().unwrap().push(principal);
                        CallToolResult::text("ok")
                    }
                },
            )
            .bind_principal(move |_ctx| {
                let n = hooked.fetch_add(1, Ordering::SeqCst);
                Some(modelctx_seal::Principal::new(format!("user-{n}")))
            })
            .middleware(seen.clone())
            .build()
            .unwrap()
    };

    let mut peer = StdioPeer::start(server.clone());
    for id in 1..=3 {
        let (reply, _) = peer.request(&call(id, "whoami")).await;
        assert_eq!(reply["result"]["content"][0]["text"], "ok", "{reply}");
    }
    peer.close().await.unwrap();
    let http = HttpPeer::start(server).await;
    let (status, reply) = http.call(&call(4, "whoami")).await;
    assert_eq!(status, 200, "{reply}");

    assert_eq!(hooked.load(Ordering::SeqCst), 4, "one hook run per request");
    let expected: Vec<_> = (0..4).map(|n| Some(format!("user-{n}"))).collect();
    assert_eq!(*seen.0.lock().unwrap(), expected, "what the middleware saw");
    assert_eq!(*handled.lock().unwrap(), expected, "what the handler saw");
}

/// Holds `notifications/slow` until the test opens the gate.
#[derive(Clone, Default)]
struct SlowNotifications {
    gate: Arc<tokio::sync::Notify>,
    served: Arc<AtomicUsize>,
    done: Arc<tokio::sync::Notify>,
}

impl Middleware for SlowNotifications {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            if request.method() == "notifications/slow" {
                self.gate.notified().await;
                let reply = next.run(request).await;
                self.served.fetch_add(1, Ordering::SeqCst);
                self.done.notify_one();
                return reply;
            }
            next.run(request).await
        })
    }
}

/// On stdio a notification's chain that waits does not hold up the lines after it: a request
/// sent behind a held notification is answered, and the notification finishes once released.
#[tokio::test]
async fn a_slow_notification_middleware_does_not_hold_up_the_stdio_connection() {
    let (calls, audit, limit) = (Arc::default(), AuditLog::default(), RateLimit::new(100));
    let slow = SlowNotifications::default();
    let server = builder(&calls, &audit, &limit)
        .middleware(slow.clone())
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/slow", "params": {}}))
        .await;
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        peer.request(&call(1, "count")),
    )
    .await
    .expect("the request behind a held notification is answered");
    assert_eq!(answered.0["result"]["content"][0]["text"], "counted");
    assert_eq!(slow.served.load(Ordering::SeqCst), 0, "still held");

    slow.gate.notify_one();
    tokio::time::timeout(std::time::Duration::from_secs(10), slow.done.notified())
        .await
        .expect("the released notification finishes");
    assert_eq!(slow.served.load(Ordering::SeqCst), 1);
    peer.close().await.unwrap();
}
