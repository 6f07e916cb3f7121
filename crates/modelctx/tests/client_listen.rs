//! `Client::listen` against our own server, in both eras, over the in-memory pipe (the stdio
//! framing, with the client's outgoing lines tapped) and streamable HTTP on 127.0.0.1 (with
//! the server's listen response bodies watched): the acknowledgement, list changes, resource
//! updates for subscribed URIs only, isolation of concurrent subscriptions, cancellation on
//! drop, and the server's graceful close. And interop: the Python SDK 2.3.0's own
//! `subscriptions/listen` (`tests/python/listener.py`) over stdio and HTTP.

use std::time::Duration;

use futures::StreamExt as _;
use modelctx::client::{Client, ListenEvent, Mode, Subscription};
use modelctx::server::http::HttpConfig;
use modelctx::server::{Change, Server};
use modelctx::types::jsonrpc::Notification;
use modelctx::types::{
    ReadResourceRequestParams, ReadResourceResult, RequestId, ResourceContents, ResourceTemplate,
    SubscriptionFilter,
};
use modelctx_test_support::listen::{BOUND, listen, next, until, updated};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Memory,
    Http,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Era {
    Modern,
    Handshake,
}

/// A connected client and what the test can observe around it.
struct Rig {
    client: Client,
    server: Server,
    /// Memory: every line the client sent.
    sent: Option<mpsc::UnboundedReceiver<Value>>,
    /// HTTP: one message each time a `subscriptions/listen` response body is dropped.
    listen_closed: Option<mpsc::UnboundedReceiver<()>>,
    /// What reached `on_notification`.
    unclaimed: mpsc::UnboundedReceiver<Notification>,
}

fn build_server() -> Server {
    // The files the tests follow: a 2025-11-25 session may `resources/subscribe` only to
    // resources the server has.
    let files = ResourceTemplate::new("file:///{name}", "file");
    Server::builder("ListenPeer", "0.0.1")
        .declare_tools()
        .declare_resources()
        .resource_template(
            files,
            |_ctx, params: ReadResourceRequestParams, _vars| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, "")])
            },
        )
        .build()
        .unwrap()
}

/// Sends a message when dropped.
struct DropSignal(mpsc::UnboundedSender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

async fn rig(via: Via, era: Era) -> Rig {
    let server = build_server();
    let (note_tx, unclaimed) = mpsc::unbounded_channel();
    let mut builder = Client::builder().on_notification(move |n: &Notification| {
        let _ = note_tx.send(n.clone());
    });
    if era == Era::Handshake {
        builder = builder.mode(Mode::Handshake);
    }
    match via {
        Via::Memory => {
            // client -> relay (tapped) -> server; server -> client.
            let (client_out, relay_in) = tokio::io::duplex(1 << 16);
            let (mut relay_out, server_in) = tokio::io::duplex(1 << 16);
            let (server_out, client_in) = tokio::io::duplex(1 << 16);
            let (sent_tx, sent) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                let mut lines = BufReader::new(relay_in).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(value) = serde_json::from_str::<Value>(&line) {
                        let _ = sent_tx.send(value);
                    }
                    if relay_out.write_all(line.as_bytes()).await.is_err()
                        || relay_out.write_all(b"\n").await.is_err()
                    {
                        return;
                    }
                }
            });
            let serving = server.clone();
            tokio::spawn(async move { serving.serve_io(server_in, server_out).await });
            let client = builder.connect_io(client_in, client_out).await.unwrap();
            Rig {
                client,
                server,
                sent: Some(sent),
                listen_closed: None,
                unclaimed,
            }
        }
        Via::Http => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            let (closed_tx, listen_closed) = mpsc::unbounded_channel();
            let app = server
                .http_router(HttpConfig::default())
                .layer(axum::middleware::from_fn(
                    move |request: axum::extract::Request, next: axum::middleware::Next| {
                        let closed = closed_tx.clone();
                        async move {
                            let listen = request
                                .headers()
                                .get("mcp-method")
                                .is_some_and(|m| m == "subscriptions/listen");
                            let response = next.run(request).await;
                            if !listen {
                                return response;
                            }
                            let (parts, body) = response.into_parts();
                            let guard = DropSignal(closed);
                            let stream = body.into_data_stream().map(move |chunk| {
                                let _alive = &guard;
                                chunk
                            });
                            axum::response::Response::from_parts(
                                parts,
                                axum::body::Body::from_stream(stream),
                            )
                        }
                    },
                ));
            tokio::spawn(async move { axum::serve(listener, app).await });
            let client = builder.connect_http(&url).await.unwrap();
            Rig {
                client,
                server,
                sent: None,
                listen_closed: Some(listen_closed),
                unclaimed,
            }
        }
    }
}

async fn close(subscription: Subscription) {
    tokio::time::timeout(BOUND, subscription.close())
        .await
        .expect("closed in time");
}

/// The events up to and including the first `ToolsListChanged`.
async fn until_tools(subscription: &mut Subscription) -> Vec<ListenEvent> {
    until(subscription, |event| {
        *event == ListenEvent::ToolsListChanged
    })
    .await
}

/// The first unclaimed notification of `method`, and the methods seen before it.
async fn unclaimed_until(rig: &mut Rig, method: &str) -> Vec<String> {
    let mut before = Vec::new();
    loop {
        let note = tokio::time::timeout(BOUND, rig.unclaimed.recv())
            .await
            .expect("a notification in time")
            .expect("the client is alive");
        if note.method == method {
            return before;
        }
        before.push(note.method);
    }
}

async fn acknowledged_then_tools_change(via: Via, era: Era) {
    let rig = rig(via, era).await;
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed()
        .with_prompts_list_changed()
        .with_resource("file:///x");
    let mut subscription = listen(&rig.client, filter).await;
    let ack = subscription.acknowledged();
    assert!(ack.wants_tools_list_changed(), "{ack:?}");
    // The server has no prompts: not honoured in either era.
    assert!(!ack.wants_prompts_list_changed(), "{ack:?}");
    assert_eq!(ack.resources(), ["file:///x".to_owned()]);
    assert_eq!(subscription.id().is_some(), era == Era::Modern);
    rig.server.notify(Change::ToolsListChanged);
    assert_eq!(next(&mut subscription).await, ListenEvent::ToolsListChanged);
}

#[tokio::test]
async fn modern_memory_acknowledged_then_tools_change() {
    acknowledged_then_tools_change(Via::Memory, Era::Modern).await;
}

#[tokio::test]
async fn modern_http_acknowledged_then_tools_change() {
    acknowledged_then_tools_change(Via::Http, Era::Modern).await;
}

#[tokio::test]
async fn handshake_memory_acknowledged_then_tools_change() {
    acknowledged_then_tools_change(Via::Memory, Era::Handshake).await;
}

#[tokio::test]
async fn handshake_http_acknowledged_then_tools_change() {
    acknowledged_then_tools_change(Via::Http, Era::Handshake).await;
}

/// Updates of other URIs never reach the subscription; notifications it does not want still
/// reach `on_notification`, the ones it takes do not.
async fn only_subscribed_resources(via: Via, era: Era) {
    let mut rig = rig(via, era).await;
    let mut subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_resource("file:///x"),
    )
    .await;
    rig.server
        .notify(Change::ResourceUpdated("file:///y".into()));
    rig.server
        .notify(Change::ResourceUpdated("file:///x".into()));
    rig.server.notify(Change::ToolsListChanged);
    assert_eq!(next(&mut subscription).await, updated("file:///x"));
    if era == Era::Handshake {
        // Unsolicited and wanted by no subscription: on_notification, as before; the update
        // the subscription took (sent before it) is not there.
        let before = unclaimed_until(&mut rig, "notifications/tools/list_changed").await;
        assert!(before.is_empty(), "{before:?}");
    }
    // Nothing else for the subscription: the next event after a later update is that update.
    rig.server
        .notify(Change::ResourceUpdated("file:///x".into()));
    assert_eq!(next(&mut subscription).await, updated("file:///x"));
}

#[tokio::test]
async fn modern_memory_only_subscribed_resources() {
    only_subscribed_resources(Via::Memory, Era::Modern).await;
}

#[tokio::test]
async fn modern_http_only_subscribed_resources() {
    only_subscribed_resources(Via::Http, Era::Modern).await;
}

#[tokio::test]
async fn handshake_memory_only_subscribed_resources() {
    only_subscribed_resources(Via::Memory, Era::Handshake).await;
}

#[tokio::test]
async fn handshake_http_only_subscribed_resources() {
    only_subscribed_resources(Via::Http, Era::Handshake).await;
}

/// Two subscriptions at once each see their own notifications only.
async fn two_subscriptions_isolated(via: Via, era: Era) {
    let rig = rig(via, era).await;
    let mut a = listen(
        &rig.client,
        SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_resource("file:///a"),
    )
    .await;
    let mut b = listen(
        &rig.client,
        SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_resource("file:///b"),
    )
    .await;
    if era == Era::Modern {
        assert_ne!(a.id(), b.id());
    }
    rig.server
        .notify(Change::ResourceUpdated("file:///a".into()));
    rig.server
        .notify(Change::ResourceUpdated("file:///b".into()));
    rig.server.notify(Change::ToolsListChanged);
    assert_eq!(
        until_tools(&mut a).await,
        [updated("file:///a"), ListenEvent::ToolsListChanged]
    );
    assert_eq!(
        until_tools(&mut b).await,
        [updated("file:///b"), ListenEvent::ToolsListChanged]
    );
    // One ends; the other goes on.
    drop(a);
    rig.server
        .notify(Change::ResourceUpdated("file:///b".into()));
    assert_eq!(next(&mut b).await, updated("file:///b"));
}

#[tokio::test]
async fn modern_memory_two_subscriptions_isolated() {
    two_subscriptions_isolated(Via::Memory, Era::Modern).await;
}

#[tokio::test]
async fn modern_http_two_subscriptions_isolated() {
    two_subscriptions_isolated(Via::Http, Era::Modern).await;
}

#[tokio::test]
async fn handshake_memory_two_subscriptions_isolated() {
    two_subscriptions_isolated(Via::Memory, Era::Handshake).await;
}

#[tokio::test]
async fn handshake_http_two_subscriptions_isolated() {
    two_subscriptions_isolated(Via::Http, Era::Handshake).await;
}

/// The first sent message matching `pred`.
async fn sent_until(rig: &mut Rig, pred: impl Fn(&Value) -> bool) -> Value {
    let sent = rig.sent.as_mut().expect("a tapped connection");
    loop {
        let line = tokio::time::timeout(BOUND, sent.recv())
            .await
            .expect("the message in time")
            .expect("the tap is alive");
        if pred(&line) {
            return line;
        }
    }
}

fn id_json(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap()
}

/// stdio framing: dropping the subscription sends `notifications/cancelled` with the listen
/// id, and the connection keeps serving.
#[tokio::test]
async fn modern_memory_drop_sends_cancelled() {
    let mut rig = rig(Via::Memory, Era::Modern).await;
    let subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_tools_list_changed(),
    )
    .await;
    let id = id_json(subscription.id().unwrap());
    let listen = sent_until(&mut rig, |m| m["method"] == "subscriptions/listen").await;
    assert_eq!(listen["id"], id);
    assert_eq!(listen["params"]["notifications"]["toolsListChanged"], true);
    drop(subscription);
    // Races the cancellation: whatever the server still sends for it is dropped.
    rig.server.notify(Change::ToolsListChanged);
    let cancelled = sent_until(&mut rig, |m| m["method"] == "notifications/cancelled").await;
    assert_eq!(cancelled["params"]["requestId"], id);
    tokio::time::timeout(BOUND, rig.client.list_tools())
        .await
        .expect("an answer in time")
        .unwrap();
    while let Ok(note) = rig.unclaimed.try_recv() {
        let tag = note
            .params_as::<Value>()
            .ok()
            .map(|p| p["_meta"]["io.modelcontextprotocol/subscriptionId"].clone());
        assert_ne!(tag, Some(id.clone()), "leaked to on_notification: {note:?}");
    }
}

/// HTTP: dropping the subscription closes its response stream (the server sees the body go).
#[tokio::test]
async fn modern_http_drop_closes_the_stream() {
    let mut rig = rig(Via::Http, Era::Modern).await;
    let subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_tools_list_changed(),
    )
    .await;
    let closed = rig.listen_closed.as_mut().unwrap();
    assert!(closed.try_recv().is_err(), "the stream is open");
    drop(subscription);
    // A write to a closed connection is what surfaces it at the latest: keep announcing.
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        rig.server.notify(Change::ToolsListChanged);
        match tokio::time::timeout(Duration::from_millis(100), closed.recv()).await {
            Ok(Some(())) => break,
            Ok(None) => panic!("the server went away"),
            Err(_) => assert!(
                tokio::time::Instant::now() < deadline,
                "the listen stream was not closed"
            ),
        }
    }
    // Nothing of the abandoned stream leaks to on_notification's callers; the client works.
    tokio::time::timeout(BOUND, rig.client.list_tools())
        .await
        .expect("an answer in time")
        .unwrap();
}

/// The handshake era: `resources/subscribe` per URI, shared between subscriptions, and
/// `resources/unsubscribe` once the last one that wants it closes.
#[tokio::test]
async fn handshake_memory_subscribe_and_unsubscribe() {
    let mut rig = rig(Via::Memory, Era::Handshake).await;
    let filter = SubscriptionFilter::new().with_resource("file:///x");
    let mut first = listen(&rig.client, filter.clone()).await;
    let subscribe = sent_until(&mut rig, |m| m["method"] == "resources/subscribe").await;
    assert_eq!(subscribe["params"]["uri"], "file:///x");
    let second = listen(&rig.client, filter).await;
    // Closing one keeps the server subscription: the other still gets updates.
    close(second).await;
    rig.server
        .notify(Change::ResourceUpdated("file:///x".into()));
    assert_eq!(next(&mut first).await, updated("file:///x"));
    // Closing the last unsubscribes (and nothing was sent for the second subscription).
    close(first).await;
    let after = sent_until(&mut rig, |m| {
        m["method"]
            .as_str()
            .is_some_and(|m| m.starts_with("resources/"))
    })
    .await;
    assert_eq!(after["method"], "resources/unsubscribe");
    assert_eq!(after["params"]["uri"], "file:///x");
    // The server no longer sends the update: on_notification sees the next change, not it.
    rig.server
        .notify(Change::ResourceUpdated("file:///x".into()));
    rig.server.notify(Change::ToolsListChanged);
    let before = unclaimed_until(&mut rig, "notifications/tools/list_changed").await;
    assert!(before.is_empty(), "{before:?}");
}

/// Dropping (not closing) a handshake-era subscription unsubscribes in the background.
#[tokio::test]
async fn handshake_memory_drop_unsubscribes() {
    let mut rig = rig(Via::Memory, Era::Handshake).await;
    let subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_resource("file:///x"),
    )
    .await;
    drop(subscription);
    let unsubscribe = sent_until(&mut rig, |m| m["method"] == "resources/unsubscribe").await;
    assert_eq!(unsubscribe["params"]["uri"], "file:///x");
}

/// The server's graceful close ends the stream: `next` is `None`, without an error.
async fn graceful_close(via: Via) {
    let rig = rig(via, Era::Modern).await;
    let mut subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_tools_list_changed(),
    )
    .await;
    rig.server.shutdown_subscriptions();
    let end = tokio::time::timeout(BOUND, subscription.next())
        .await
        .expect("the end in time");
    assert_eq!(end, None);
    assert!(subscription.error().is_none(), "{:?}", subscription.error());
    assert_eq!(subscription.next().await, None);
}

#[tokio::test]
async fn modern_memory_graceful_close() {
    graceful_close(Via::Memory).await;
}

#[tokio::test]
async fn modern_http_graceful_close() {
    graceful_close(Via::Http).await;
}

/// A rolling restart: shutting the HTTP server down gracefully ends its listen streams with
/// their closing result (the client sees a graceful end, not an error), and the shutdown does
/// not wait for the listening clients to hang up.
#[tokio::test]
async fn http_shutdown_ends_listen_streams_gracefully() {
    let server = build_server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_http_on(listener, HttpConfig::default(), async {
                let _ = stopped.await;
            })
            .await
    });
    let client = Client::builder().connect_http(&url).await.unwrap();
    let mut subscription =
        listen(&client, SubscriptionFilter::new().with_tools_list_changed()).await;
    stop.send(()).unwrap();
    let end = tokio::time::timeout(BOUND, subscription.next())
        .await
        .expect("the end in time");
    assert_eq!(end, None);
    assert!(subscription.error().is_none(), "{:?}", subscription.error());
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("the server stopped in time")
        .unwrap()
        .unwrap();
}

/// A stream that falls behind the change channel (more changes at once than it buffers) has
/// missed changes: it is resynced, so its client refetches what it follows. Over the
/// in-memory pipe, so the burst lands before the stream's task runs again.
#[tokio::test]
async fn a_stream_that_fell_behind_is_resynced() {
    let rig = rig(Via::Memory, Era::Modern).await;
    let mut subscription = listen(
        &rig.client,
        SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_resource("file:///x"),
    )
    .await;
    // Changes the stream does not follow, more than the channel holds, in one go.
    for n in 0..400 {
        rig.server
            .notify(Change::ResourceUpdated(format!("file:///other/{n}")));
    }
    assert_eq!(
        until(&mut subscription, |e| *e == updated("file:///x")).await,
        [ListenEvent::ToolsListChanged, updated("file:///x")]
    );
}

/// A server with nothing registered acknowledges the stream but honours none of the filter.
#[tokio::test]
async fn modern_bare_server_honours_nothing() {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server_io);
    let (client_in, client_out) = tokio::io::split(client_io);
    let server = Server::builder("Bare", "0.0.1").build().unwrap();
    tokio::spawn(async move { server.serve_io(server_in, server_out).await });
    let client = Client::connect_io(client_in, client_out).await.unwrap();
    let subscription = listen(
        &client,
        SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_resource("file:///x"),
    )
    .await;
    let ack = subscription.acknowledged();
    assert!(!ack.wants_tools_list_changed(), "{ack:?}");
    assert!(ack.resources().is_empty(), "{ack:?}");
}

/// Interop with the Python SDK's `subscriptions/listen`: the acknowledgement, a resource update
/// for the subscribed URI only, a tool list change, two streams kept apart, and a drop that
/// leaves the connection serving.
async fn python_listener(http: bool) {
    let (client, _server) = if http {
        let server = modelctx_test_support::client::HttpPeer::start("listener.py", &[]).await;
        (
            Client::connect_http(&server.url).await.unwrap(),
            Some(server),
        )
    } else {
        let command = modelctx_test_support::client::peer_command("listener.py", &[]);
        (Client::connect_stdio(command).await.unwrap(), None)
    };
    let mut a = listen(
        &client,
        SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_resource("file:///a"),
    )
    .await;
    assert!(a.acknowledged().wants_tools_list_changed());
    assert_eq!(a.acknowledged().resources(), ["file:///a".to_owned()]);
    let mut b = listen(
        &client,
        SubscriptionFilter::new().with_resource("file:///b"),
    )
    .await;
    assert_ne!(a.id(), b.id());
    let call = |name: &'static str, arguments: Value| {
        let client = client.clone();
        async move {
            tokio::time::timeout(BOUND, client.call_tool(name, arguments))
                .await
                .expect("an answer in time")
                .unwrap()
        }
    };
    call("touch", serde_json::json!({"uri": "file:///c"})).await;
    call("touch", serde_json::json!({"uri": "file:///b"})).await;
    call("touch", serde_json::json!({"uri": "file:///a"})).await;
    call("change_tools", serde_json::json!({})).await;
    assert_eq!(
        until_tools(&mut a).await,
        [updated("file:///a"), ListenEvent::ToolsListChanged]
    );
    assert_eq!(next(&mut b).await, updated("file:///b"));
    drop(a);
    call("touch", serde_json::json!({"uri": "file:///b"})).await;
    assert_eq!(next(&mut b).await, updated("file:///b"));
    close(b).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn python_listener_stdio() {
    python_listener(false).await;
}

#[tokio::test]
async fn python_listener_http() {
    python_listener(true).await;
}

/// A subscription can move to another task (and be shared by reference).
#[test]
fn subscription_is_send_and_sync() {
    fn check<T: Send + Sync + Unpin + futures::Stream<Item = ListenEvent>>() {}
    check::<Subscription>();
}
