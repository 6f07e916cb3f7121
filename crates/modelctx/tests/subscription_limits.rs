//! What subscriptions may make a server hold (issue 32, items 1 and 2): listen requests and
//! 2025-11-25 `resources/subscribe` past their limits are refused with a precise error and the
//! server keeps serving; a stream keeps each resource once; a client holds a bounded number of
//! streams — its 2025-11-25 sessions' `GET` streams among them, one a session — and a bounded
//! share of the server's budget, and the server a bounded budget of them, given back when
//! streams end.

use std::sync::Arc;

use modelctx::client::{Client, ClientError, Subscription};
use modelctx::server::middleware::{Middleware, Next, Reply, Request};
use modelctx::server::{BoxFuture, Change, RequestContext, Server, SubscriptionLimits};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ErrorObject, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, SubscriptionFilter, Tool,
};
use modelctx_test_support::listen::{BOUND, listen, next, updated};
use modelctx_test_support::server::{HttpPeer, StdioPeer, request};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Counts the `subscriptions/listen` requests whose work is over — refused, or a stream that
/// ended, its charge given back by then — so that a test waits for a stream's end instead of
/// asking again and again until the server has noticed it.
#[derive(Clone)]
struct Ended(Arc<watch::Sender<usize>>);

/// Counts one ended listen request when dropped: after the request's own future, whose hold
/// goes with it, whether the request returned or was dropped (its connection closed).
struct Counted<'a>(&'a watch::Sender<usize>);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|ended| *ended += 1);
    }
}

impl Middleware for Ended {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            if request.method() != "subscriptions/listen" {
                return next.run(request).await;
            }
            let _counted = Counted(&self.0);
            next.run(request).await
        })
    }
}

impl Ended {
    fn new() -> Self {
        Self(Arc::new(watch::channel(0).0))
    }

    /// How many listen requests have ended so far.
    fn count(&self) -> usize {
        *self.0.borrow()
    }

    /// Waits (bounded in time) until `count` listen requests have ended.
    async fn reach(&self, count: usize) {
        let mut ended = self.0.subscribe();
        tokio::time::timeout(BOUND, ended.wait_for(|ended| *ended >= count))
            .await
            .expect("the stream ended in time")
            .unwrap();
    }
}

/// A server with a resource, a template (`test://items/{id}`) and a tool `touch {uri}` that
/// announces an update of `uri`.
fn server(limits: SubscriptionLimits) -> Server {
    watched(limits, &Ended::new())
}

/// [`server`], counting the listen requests that end in `ended`.
fn watched(limits: SubscriptionLimits, ended: &Ended) -> Server {
    let touch = Tool::new(
        "touch",
        serde_json::from_value(
            json!({"type": "object", "properties": {"uri": {"type": "string"}}}),
        )
        .unwrap(),
    );
    Server::builder("limits", "1.0.0")
        .resource(
            Resource::new("test://doc", "doc"),
            |_ctx, params: ReadResourceRequestParams| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, "doc")])
            },
        )
        .resource_template(
            ResourceTemplate::new("test://items/{id}", "item"),
            |_ctx, params: ReadResourceRequestParams, _vars| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, "item")])
            },
        )
        .tool(
            touch,
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let uri = params.arguments.unwrap_or_default()["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                ctx.server().notify(Change::ResourceUpdated(uri));
                CallToolResult::text("touched")
            },
        )
        .subscription_limits(limits)
        .middleware(ended.clone())
        .build()
        .unwrap()
}

fn listen_request(id: i64, notifications: &Value) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({"notifications": notifications}),
    )
}

/// The next message of the peer, within [`BOUND`].
async fn next_message(peer: &mut StdioPeer) -> Value {
    tokio::time::timeout(BOUND, peer.next())
        .await
        .expect("an answer in time")
        .expect("the server is still there")
}

/// Sends a listen request and returns what comes back first: its acknowledgement, or its error.
async fn first_answer(peer: &mut StdioPeer, listen: &Value) -> Value {
    peer.send(listen).await;
    next_message(peer).await
}

fn items(count: usize, length: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let id = format!("{i:0>width$}", width = length - "test://items/".len());
            format!("test://items/{id}")
        })
        .collect()
}

/// Each limit of one listen request is refused before the acknowledgement with `-32602` naming
/// it — the probe among them (4 MiB of one-character URIs, which kept ~140 MiB for the
/// stream's life) — and the connection keeps serving.
#[tokio::test]
async fn a_listen_past_its_limits_is_refused_before_the_acknowledgement() {
    let mut peer = StdioPeer::start(server(SubscriptionLimits::default()));
    let probe = vec!["a"; 1 << 20];
    let cases: Vec<(Value, String)> = vec![
        (
            json!({"resourceSubscriptions": items(1_001, 20)}),
            "resourceSubscriptions lists 1001 URIs; a listen stream may follow at most 1000"
                .to_owned(),
        ),
        (
            json!({"resourceSubscriptions": items(1, 4_097)}),
            "a resource URI of 4097 bytes exceeds the limit of 4096 bytes".to_owned(),
        ),
        (
            json!({"resourceSubscriptions": items(20, 4_000)}),
            "resourceSubscriptions holds 80000 bytes of URIs; a listen stream may follow at \
             most 65536 bytes of them"
                .to_owned(),
        ),
        (
            json!({"toolsListChanged": true, "padding": "x".repeat(200_000)}),
            "exceeds the limit of 131072 bytes (a stream keeps its request for its life)"
                .to_owned(),
        ),
        (
            json!({"resourceSubscriptions": probe}),
            "exceeds the limit of 131072 bytes".to_owned(),
        ),
    ];
    for (id, (filter, says)) in (1..).zip(cases) {
        let answer = first_answer(&mut peer, &listen_request(id, &filter)).await;
        assert_eq!(
            answer["id"], id,
            "refused, not acknowledged: {}",
            answer["method"]
        );
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(&says), "case {id}: {message}");
    }
    // The largest request within every limit is served: 1 000 URIs, 64 000 bytes of them.
    let most = items(1_000, 64);
    let ack = first_answer(
        &mut peer,
        &listen_request(10, &json!({"resourceSubscriptions": most})),
    )
    .await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(most)
    );
    let (answer, _) = peer
        .request(&request(
            11,
            "tools/call",
            json!({"name": "touch", "arguments": {"uri": "test://doc"}}),
        ))
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "touched");
}

/// A stream follows each resource once: the acknowledgement lists it once, and one update is
/// one notification.
#[tokio::test]
async fn a_stream_follows_each_resource_once() {
    let mut peer = StdioPeer::start(server(SubscriptionLimits::default()));
    let ack = first_answer(
        &mut peer,
        &listen_request(
            1,
            &json!({"resourceSubscriptions":
                ["test://items/2", "test://doc", "test://items/2", "test://doc"]}),
        ),
    )
    .await;
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://doc", "test://items/2"])
    );
    let (answer, notes) = peer
        .request(&request(
            2,
            "tools/call",
            json!({"name": "touch", "arguments": {"uri": "test://items/2"}}),
        ))
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "touched");
    // The update may follow the response: one more request flushes it.
    let (_, more) = peer
        .request(&request(
            3,
            "tools/call",
            json!({"name": "touch", "arguments": {"uri": "test://unfollowed"}}),
        ))
        .await;
    let updates: Vec<&Value> = notes
        .iter()
        .chain(&more)
        .filter(|n| n["method"] == "notifications/resources/updated")
        .collect();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["params"]["uri"], "test://items/2");
}

fn refusal(result: Result<Subscription, ClientError>) -> ErrorObject {
    match result {
        Err(ClientError::Rpc(error)) => error,
        Err(other) => panic!("not a JSON-RPC refusal: {other:?}"),
        Ok(_) => panic!("acknowledged past the limit"),
    }
}

fn follow(uri: &str) -> SubscriptionFilter {
    SubscriptionFilter::new().with_resource(uri)
}

/// One client (here a peer address: no principal) holds at most its limit of streams; past it
/// `-32603` with `data.reason = "subscription_limit"`, and its streams keep working; a stream
/// that ends makes room again.
#[tokio::test]
async fn a_client_holds_a_bounded_number_of_streams() {
    let limits = SubscriptionLimits::default().max_streams_per_client(2);
    let ended = Ended::new();
    let peer = HttpPeer::start(watched(limits, &ended)).await;
    let client = Client::builder().connect_http(&peer.url).await.unwrap();
    let mut first = listen(&client, follow("test://doc")).await;
    let second = listen(&client, follow("test://items/1")).await;
    let error = refusal(client.listen(follow("test://items/2")).await);
    assert_eq!(error.code.0, -32603);
    assert_eq!(
        error.data.unwrap(),
        json!({"reason": "subscription_limit", "scope": "client", "limit": 2})
    );
    assert!(
        error.message.contains("holds 2 streams"),
        "{}",
        error.message
    );
    // Another client from the same address is the same client.
    let other = Client::builder().connect_http(&peer.url).await.unwrap();
    assert_eq!(
        refusal(other.listen(follow("test://doc")).await).code.0,
        -32603
    );
    // The streams held still work, and so does everything else.
    client
        .call_tool("touch", json!({"uri": "test://doc"}))
        .await
        .unwrap();
    assert_eq!(next(&mut first).await, updated("test://doc"));
    // The server learns of the end when the stream's connection closes: once it has, one
    // attempt is enough. The refusals so far have ended before their answers came.
    let refused = ended.count();
    tokio::time::timeout(BOUND, second.close()).await.unwrap();
    ended.reach(refused + 1).await;
    let mut third = listen(&other, follow("test://items/3")).await;
    client
        .call_tool("touch", json!({"uri": "test://items/3"}))
        .await
        .unwrap();
    assert_eq!(next(&mut third).await, updated("test://items/3"));
}

/// The server's budget bounds all streams together, whoever holds them (stdio: no client to
/// count them against): past it `-32603` with `scope: "server"`; an ended stream gives its
/// charge back.
#[tokio::test]
async fn the_server_holds_a_bounded_budget_of_streams() {
    let charge = SubscriptionLimits::STREAM_CHARGE;
    let limits = SubscriptionLimits::default().max_held_bytes(2 * charge + charge / 2);
    let ended = Ended::new();
    let mut peer = StdioPeer::start(watched(limits, &ended));
    for id in [1, 2] {
        let ack = first_answer(
            &mut peer,
            &listen_request(id, &json!({"toolsListChanged": true})),
        )
        .await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }
    let answer = first_answer(
        &mut peer,
        &listen_request(3, &json!({"toolsListChanged": true})),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(answer["error"]["data"]["scope"], "server");
    assert_eq!(answer["error"]["data"]["reason"], "subscription_limit");
    // Cancelling a stream gives its charge back once its task has seen the cancellation (a
    // cancelled request is answered nothing): then one attempt is enough.
    assert_eq!(ended.count(), 1, "the refusal");
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}}),
    )
    .await;
    ended.reach(2).await;
    let ack = first_answer(
        &mut peer,
        &listen_request(4, &json!({"toolsListChanged": true})),
    )
    .await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
}

/// The documented bound is what the largest stream the limits admit is charged: a server whose
/// whole budget is `max_stream_charge` admits a request of the largest size following the most
/// URIs of the most bytes (their bytes are charged too).
#[tokio::test]
async fn the_largest_stream_fits_its_documented_bound() {
    let limits = SubscriptionLimits::default();
    let mut peer = StdioPeer::start(server(
        limits.clone().max_held_bytes(limits.max_stream_charge()),
    ));
    let mut listen = listen_request(
        1,
        &json!({"resourceSubscriptions": items(1_000, 64), "padding": ""}),
    );
    let text = serde_json::to_string(&listen["params"]).unwrap().len();
    listen["params"]["notifications"]["padding"] =
        json!("x".repeat(limits.max_listen_request - text));
    let text = serde_json::to_string(&listen["params"]).unwrap().len();
    assert_eq!(
        text, limits.max_listen_request,
        "a request of the largest size"
    );
    let ack = first_answer(&mut peer, &listen).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
}

/// Opens a 2025-11-25 session on `peer` and returns its id.
async fn open_session(peer: &HttpPeer) -> String {
    let init = plain(
        1,
        "initialize",
        &json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "legacy", "version": "1"}}),
    );
    let opened = peer.handshake_post(&init, None).await;
    assert_eq!(opened.status(), 200);
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = peer.handshake_post(&initialized, Some(&id)).await;
    assert_eq!(answer.status(), 202);
    id
}

/// Opens the `GET` stream of `session`.
async fn get_stream(peer: &HttpPeer, session: &str) -> reqwest::Response {
    let get = peer
        .client
        .get(&peer.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .send();
    tokio::time::timeout(BOUND, get)
        .await
        .expect("answered in time")
        .unwrap()
}

/// A 2025-11-25 session has one `GET` stream at a time (409 for another, as the Python SDK
/// answers), and each is a stream of the client that opened the session: counted with its
/// listen streams against its limit (429 past it), and charged with its sessions'
/// subscriptions against its share of the budget.
#[tokio::test]
async fn get_streams_are_one_a_session_and_count_against_their_client() {
    let charge = SubscriptionLimits::STREAM_CHARGE;
    let limits = SubscriptionLimits::default()
        .max_streams_per_client(2)
        .max_held_bytes_per_client(2 * charge + 2_000);
    let peer = HttpPeer::start(server(limits)).await;
    let sessions = [
        open_session(&peer).await,
        open_session(&peer).await,
        open_session(&peer).await,
    ];
    let first = get_stream(&peer, &sessions[0]).await;
    assert_eq!(first.status(), 200);
    let again = get_stream(&peer, &sessions[0]).await;
    assert_eq!(again.status(), 409);
    let answer: Value = again.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let second = get_stream(&peer, &sessions[1]).await;
    assert_eq!(second.status(), 200);
    // The client (this address) holds its two streams.
    let third = get_stream(&peer, &sessions[2]).await;
    assert_eq!(third.status(), 429);
    let answer: Value = third.json().await.unwrap();
    assert_eq!(
        answer["error"]["data"],
        json!({"reason": "subscription_limit", "scope": "client", "limit": 2})
    );
    let client = Client::builder().connect_http(&peer.url).await.unwrap();
    let error = refusal(client.listen(follow("test://doc")).await);
    assert_eq!(error.data.unwrap()["scope"], "client");
    // What its sessions follow is charged to the same share: 2 000 bytes are left of it.
    let subscribe = |id, uri: String| {
        let subscribe = plain(id, "resources/subscribe", &json!({"uri": uri}));
        let session = &sessions[2];
        let peer = &peer;
        async move {
            let answer = peer.handshake_post(&subscribe, Some(session)).await;
            answer.json::<Value>().await.unwrap()
        }
    };
    let answer = subscribe(2, format!("test://items/{}", "x".repeat(1_900))).await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(answer["error"]["data"]["scope"], "client", "{answer}");
    let answer = subscribe(3, "test://doc".to_owned()).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    drop((first, second));
}

fn plain(id: i64, method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2025-11-25 session follows only resources the server has, each URI within its length, at
/// most its limit of them; following one again is free, and unsubscribing makes room.
#[tokio::test]
async fn handshake_subscriptions_are_known_and_bounded() {
    let mut peer = StdioPeer::start(server(SubscriptionLimits::default().max_resources(3)));
    let (opened, _) = peer
        .request(&plain(
            1,
            "initialize",
            &json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "legacy", "version": "1"}}),
        ))
        .await;
    assert_eq!(opened["result"]["protocolVersion"], "2025-11-25");
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let mut id = 2;
    let unknown = subscribe(
        &mut peer,
        &mut id,
        "resources/subscribe",
        "test://elsewhere",
    )
    .await;
    assert_eq!(
        unknown["error"],
        json!({"code": -32602, "message": "Resource not found",
            "data": {"uri": "test://elsewhere"}})
    );
    let long = &items(1, 4_097)[0];
    let answer = subscribe(&mut peer, &mut id, "resources/subscribe", long).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a resource URI of 4097 bytes exceeds the limit of 4096 bytes"),
        "{answer}"
    );
    for uri in [
        "test://doc",
        "test://items/1",
        "test://items/2",
        "test://doc",
    ] {
        let answer = subscribe(&mut peer, &mut id, "resources/subscribe", uri).await;
        assert_eq!(answer["result"], json!({}), "{uri}: {answer}");
    }
    let full = subscribe(&mut peer, &mut id, "resources/subscribe", "test://items/3").await;
    assert_eq!(full["error"]["code"], -32602, "{full}");
    assert!(
        full["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this session follows 3 resources"),
        "{full}"
    );
    let gone = subscribe(
        &mut peer,
        &mut id,
        "resources/unsubscribe",
        "test://items/1",
    )
    .await;
    assert_eq!(gone["result"], json!({}));
    let answer = subscribe(&mut peer, &mut id, "resources/subscribe", "test://items/3").await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    // Only what it follows reaches it.
    let mut notes = Vec::new();
    for (id, uri) in (50..).zip(["test://items/1", "test://items/3", "test://doc", "test://x"]) {
        let call = plain(
            id,
            "tools/call",
            &json!({"name": "touch", "arguments": {"uri": uri}}),
        );
        notes.extend(peer.request(&call).await.1);
    }
    let updated: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/resources/updated")
        .map(|n| &n["params"]["uri"])
        .collect();
    assert_eq!(updated, [&json!("test://items/3"), &json!("test://doc")]);
}

/// `method` for `uri` on a handshake-era session, with the next id.
async fn subscribe(peer: &mut StdioPeer, id: &mut i64, method: &str, uri: &str) -> Value {
    *id += 1;
    peer.request(&plain(*id, method, &json!({"uri": uri})))
        .await
        .0
}
