//! The client response cache against our own server, over the in-memory pipe and streamable
//! HTTP on 127.0.0.1: a counter of the requests that reach the server proves the hits. The
//! server's hints are honoured (`ttlMs`, `cacheScope`), the per-call modes, invalidation by
//! `list_changed` and `resources/updated` in both eras (unsolicited on 2025-11-25, on a listen
//! stream on 2026-07-28), a read reached through input requests never cached, and a store
//! shared by clients of several principals and servers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::cache::{CacheConfig, CacheMode, CacheStore, MemoryCacheStore};
use modelctx::client::{Client, ClientBuilder, ListenEvent, Mode, RequestOptions};
use modelctx::server::middleware::{Middleware, Next, Reply, Request};
use modelctx::server::{BoxFuture, CachePolicy, Caching, Change, RequestContext, Server};
use modelctx::types::jsonrpc::Notification;
use modelctx::types::{
    CacheScope, CallToolResult, ElicitRequestFormParams, ElicitResult, ErrorObject, InputRequest,
    InputRequiredResult, Outcome, ReadResourceRequestParams, ReadResourceResult, ResourceContents,
    ResourceTemplate, SubscriptionFilter, Tool,
};
use modelctx::uri_template::UriVariables;
use modelctx_test_support::listen::{BOUND, listen, until};
use modelctx_test_support::server::serve_http_background;
use serde_json::json;
use tokio::sync::mpsc;

/// How many requests of each method reached the server.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<HashMap<String, usize>>>);

impl Counter {
    fn get(&self, method: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .get(method)
            .copied()
            .unwrap_or_default()
    }
}

impl Middleware for Counter {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        if !request.is_notification() {
            *self
                .0
                .lock()
                .unwrap()
                .entry(request.method().to_owned())
                .or_default() += 1;
        }
        next.run(request)
    }
}

fn empty_schema() -> modelctx::types::Extra {
    serde_json::from_value(json!({"type": "object"})).unwrap()
}

/// A read that asks which format first (one input round), then answers.
async fn report(
    _ctx: RequestContext,
    params: ReadResourceRequestParams,
    _variables: UriVariables,
) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
    let answered = params
        .input_responses
        .as_ref()
        .is_some_and(|r| r.get("format").is_some());
    if !answered {
        let schema = serde_json::from_value(json!({"type": "object",
            "properties": {"format": {"type": "string"}}, "required": ["format"]}))
        .unwrap();
        return Ok(Outcome::InputRequired(
            InputRequiredResult::new()
                .with_request(
                    "format",
                    InputRequest::elicit(ElicitRequestFormParams::new("Which format?", schema)),
                )
                .with_state("report".to_owned()),
        ));
    }
    Ok(Outcome::Complete(ReadResourceResult::new(vec![
        ResourceContents::text(params.uri, None, "the report"),
    ])))
}

/// A server whose listings are public for a minute and whose reads are private for a minute.
fn server(counter: &Counter, caching: Caching) -> Server {
    Server::builder("CachePeer", "0.0.1")
        .declare_tools()
        .declare_resources()
        .caching(caching)
        .middleware(counter.clone())
        .tool(Tool::new("echo", empty_schema()), |_ctx, _params| async {
            CallToolResult::text("echo")
        })
        .prompt(
            serde_json::from_value(json!({"name": "brief"})).unwrap(),
            |_ctx, _params| async {
                Ok::<_, ErrorObject>(modelctx::types::GetPromptResult::new(Vec::new()))
            },
        )
        .resource_template(
            ResourceTemplate::new("file:///{name}", "file"),
            |_ctx, params: ReadResourceRequestParams, _vars| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, "text")])
            },
        )
        .resource_template(ResourceTemplate::new("report://{name}", "report"), report)
        .seal_request_state_ephemeral()
        .build()
        .unwrap()
}

fn minute() -> Caching {
    Caching {
        discover: CachePolicy::default(),
        lists: CachePolicy::new(60_000, CacheScope::PUBLIC),
        reads: CachePolicy::new(60_000, CacheScope::PRIVATE),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Era {
    Modern,
    Handshake,
}

/// What a test holds: the client, the server and its counter, the notifications the client
/// saw that no subscription took.
struct Rig {
    client: Client,
    server: Server,
    counter: Counter,
    unclaimed: mpsc::UnboundedReceiver<Notification>,
}

fn builder(era: Era, notes: mpsc::UnboundedSender<Notification>) -> ClientBuilder {
    let builder = Client::builder()
        .on_notification(move |n: &Notification| {
            let _ = notes.send(n.clone());
        })
        .on_elicitation(|_context, _params| async {
            let mut content = serde_json::Map::new();
            content.insert("format".to_owned(), json!("pdf"));
            Ok(ElicitResult::accept(content))
        });
    match era {
        Era::Modern => builder,
        // The handshake era carries no hints: a default life caches its results.
        Era::Handshake => builder
            .mode(Mode::Handshake)
            .cache(CacheConfig::new().default_ttl(Duration::from_secs(60))),
    }
}

async fn rig_with(
    era: Era,
    caching: Caching,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Rig {
    let counter = Counter::default();
    let server = server(&counter, caching);
    let (notes, unclaimed) = mpsc::unbounded_channel();
    let pipe = modelctx::memory::pipe();
    let serving = server.clone();
    tokio::spawn(async move {
        serving
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let client = configure(builder(era, notes))
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    Rig {
        client,
        server,
        counter,
        unclaimed,
    }
}

async fn rig(era: Era) -> Rig {
    rig_with(era, minute(), |builder| builder).await
}

/// Waits for the first unclaimed notification of `method`.
async fn unclaimed(rig: &mut Rig, method: &str) {
    loop {
        let note = tokio::time::timeout(BOUND, rig.unclaimed.recv())
            .await
            .expect("a notification in time")
            .expect("the client is alive");
        if note.method == method {
            return;
        }
    }
}

#[tokio::test]
async fn hits_do_not_reach_the_server() {
    let rig = rig(Era::Modern).await;
    let client = &rig.client;
    for _ in 0..3 {
        assert_eq!(client.list_tools().await.unwrap().len(), 1);
        assert_eq!(client.list_prompts().await.unwrap().len(), 1);
        assert!(client.list_resources().await.unwrap().is_empty());
        assert_eq!(client.list_resource_templates().await.unwrap().len(), 2);
        let read = client.read_resource("file:///a").await.unwrap();
        assert_eq!(read.contents.len(), 1);
    }
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    ] {
        assert_eq!(rig.counter.get(method), 1, "{method}");
    }
    // Other URIs are other entries.
    client.read_resource("file:///b").await.unwrap();
    assert_eq!(rig.counter.get("resources/read"), 2);
    let stats = client.cache().unwrap().stats();
    assert_eq!((stats.hits, stats.misses, stats.stored), (10, 6, 6));
}

#[tokio::test]
async fn each_call_may_refresh_or_bypass() {
    let rig = rig(Era::Modern).await;
    let client = &rig.client;
    client.list_tools().await.unwrap();
    client
        .list_tools_with(RequestOptions::new().cache(CacheMode::Refresh))
        .await
        .unwrap();
    client
        .list_tools_with(RequestOptions::new().cache(CacheMode::Bypass))
        .await
        .unwrap();
    assert_eq!(rig.counter.get("tools/list"), 3);
    client.list_tools().await.unwrap();
    assert_eq!(
        rig.counter.get("tools/list"),
        3,
        "served from the refreshed entry"
    );
    // A call that wants progress reaches the server.
    client
        .list_tools_with(RequestOptions::new().on_progress(|_| {}))
        .await
        .unwrap();
    assert_eq!(rig.counter.get("tools/list"), 4);
    let params = ReadResourceRequestParams::new("file:///a");
    for mode in [
        CacheMode::Use,
        CacheMode::Use,
        CacheMode::Refresh,
        CacheMode::Bypass,
        CacheMode::Use,
    ] {
        client
            .read_resource_with(params.clone(), RequestOptions::new().cache(mode))
            .await
            .unwrap();
    }
    assert_eq!(rig.counter.get("resources/read"), 3);
}

#[tokio::test]
async fn without_hints_or_with_the_cache_off_every_call_reaches_the_server() {
    // Our server's default: `ttlMs: 0`.
    let rig = rig_with(Era::Modern, Caching::default(), |builder| builder).await;
    rig.client.list_tools().await.unwrap();
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 2);
    let rig = rig_with(Era::Modern, minute(), ClientBuilder::no_cache).await;
    rig.client.list_tools().await.unwrap();
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 2);
    assert!(rig.client.cache().is_none());
    // A handshake-era client without a default life caches nothing (no hints in that era).
    let rig = rig_with(Era::Handshake, minute(), |builder| {
        builder.cache(CacheConfig::new())
    })
    .await;
    rig.client.list_tools().await.unwrap();
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 2);
}

/// `list_changed` drops the listing: on 2026-07-28 it comes on a listen stream.
#[tokio::test]
async fn tools_list_changed_invalidates_on_a_listen_stream() {
    let rig = rig(Era::Modern).await;
    let mut subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_tools_list_changed(),
    )
    .await;
    assert_eq!(rig.client.list_tools().await.unwrap().len(), 1);
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 1);
    rig.server
        .add_tool(Tool::new("second", empty_schema()), |_ctx, _params| async {
            CallToolResult::text("second")
        })
        .unwrap();
    until(&mut subscription, |event| {
        *event == ListenEvent::ToolsListChanged
    })
    .await;
    // The subscriber refetches on the event, and gets the server's new listing.
    assert_eq!(rig.client.list_tools().await.unwrap().len(), 2);
    assert_eq!(rig.counter.get("tools/list"), 2);
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 2);
}

/// A listen stream's acknowledgement drops what it follows (changes before it were told to
/// nobody), and resource updates drop that resource only.
#[tokio::test]
async fn acknowledgements_and_updates_invalidate_on_2026() {
    let rig = rig(Era::Modern).await;
    rig.client.list_tools().await.unwrap();
    rig.client.read_resource("file:///a").await.unwrap();
    rig.client.read_resource("file:///b").await.unwrap();
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed()
        .with_resource("file:///a");
    let mut subscription = listen(&rig.client, filter).await;
    rig.client.list_tools().await.unwrap();
    rig.client.read_resource("file:///a").await.unwrap();
    rig.client.read_resource("file:///b").await.unwrap();
    assert_eq!(
        rig.counter.get("tools/list"),
        2,
        "the acknowledgement dropped the listing"
    );
    assert_eq!(
        rig.counter.get("resources/read"),
        3,
        "and the followed resource only"
    );
    rig.server
        .notify(Change::ResourceUpdated("file:///a".to_owned()));
    until(&mut subscription, |event| {
        matches!(event, ListenEvent::ResourceUpdated { .. })
    })
    .await;
    rig.client.read_resource("file:///a").await.unwrap();
    rig.client.read_resource("file:///b").await.unwrap();
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("resources/read"), 4);
    assert_eq!(rig.counter.get("tools/list"), 2);
}

/// On 2025-11-25 the server's list changes come unsolicited: they invalidate whether or not a
/// subscription takes them.
#[tokio::test]
async fn list_changed_invalidates_in_the_handshake_era() {
    let mut rig = rig(Era::Handshake).await;
    assert_eq!(rig.client.list_tools().await.unwrap().len(), 1);
    rig.client.list_tools().await.unwrap();
    rig.client.list_resource_templates().await.unwrap();
    rig.client.list_resource_templates().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 1);
    assert_eq!(rig.counter.get("resources/templates/list"), 1);
    rig.server
        .add_tool(Tool::new("second", empty_schema()), |_ctx, _params| async {
            CallToolResult::text("second")
        })
        .unwrap();
    unclaimed(&mut rig, "notifications/tools/list_changed").await;
    assert_eq!(rig.client.list_tools().await.unwrap().len(), 2);
    rig.client.list_tools().await.unwrap();
    assert_eq!(rig.counter.get("tools/list"), 2);
    // Through a subscription too; a resource list change drops the templates as well.
    let mut subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_resources_list_changed(),
    )
    .await;
    rig.server.notify(Change::ResourcesListChanged);
    until(&mut subscription, |event| {
        *event == ListenEvent::ResourcesListChanged
    })
    .await;
    rig.client.list_resource_templates().await.unwrap();
    assert_eq!(rig.counter.get("resources/templates/list"), 2);
    // Resource reads, subscribed with `resources/subscribe`, are dropped by their updates.
    let mut subscription = listen(
        &rig.client,
        SubscriptionFilter::new().with_resource("file:///a"),
    )
    .await;
    rig.client.read_resource("file:///a").await.unwrap();
    rig.client.read_resource("file:///a").await.unwrap();
    assert_eq!(rig.counter.get("resources/read"), 1);
    rig.server
        .notify(Change::ResourceUpdated("file:///a".to_owned()));
    until(&mut subscription, |event| {
        matches!(event, ListenEvent::ResourceUpdated { .. })
    })
    .await;
    rig.client.read_resource("file:///a").await.unwrap();
    assert_eq!(rig.counter.get("resources/read"), 2);
}

#[tokio::test]
async fn a_read_that_needed_input_is_not_cached() {
    let rig = rig(Era::Modern).await;
    for _ in 0..2 {
        let read = rig.client.read_resource("report://q3").await.unwrap();
        assert_eq!(read.contents.len(), 1);
    }
    // Two rounds each time: nothing was served from the cache.
    assert_eq!(rig.counter.get("resources/read"), 4);
    assert_eq!(rig.client.cache().unwrap().stats().stored, 0);
}

/// Clients sharing a store: public listings are shared by the principals of one server,
/// private reads are not, and nothing crosses to another server.
#[tokio::test]
async fn a_shared_store_keeps_principals_and_servers_apart() {
    let store: Arc<dyn CacheStore> = Arc::new(MemoryCacheStore::new());
    let counter = Counter::default();
    let url = serve_http_background(server(&counter, minute())).await;
    let other_counter = Counter::default();
    let other_url = serve_http_background(server(&other_counter, minute())).await;
    let connect = |url: String, principal: &'static str| {
        let store = Arc::clone(&store);
        async move {
            Client::builder()
                .cache(CacheConfig::new().shared_store(store).principal(principal))
                .connect_http(&url)
                .await
                .unwrap()
        }
    };
    let alice = connect(url.clone(), "alice").await;
    let bob = connect(url.clone(), "bob").await;
    let alice_elsewhere = connect(other_url, "alice").await;
    alice.list_tools().await.unwrap();
    bob.list_tools().await.unwrap();
    assert_eq!(
        counter.get("tools/list"),
        1,
        "public: bob got alice's listing"
    );
    alice.read_resource("file:///a").await.unwrap();
    bob.read_resource("file:///a").await.unwrap();
    assert_eq!(
        counter.get("resources/read"),
        2,
        "private: bob asked the server himself"
    );
    let alice_again = connect(url.clone(), "alice").await;
    alice_again.read_resource("file:///a").await.unwrap();
    assert_eq!(
        counter.get("resources/read"),
        2,
        "alice's own private entry, from another client"
    );
    alice_elsewhere.list_tools().await.unwrap();
    alice_elsewhere.read_resource("file:///a").await.unwrap();
    assert_eq!(other_counter.get("tools/list"), 1);
    assert_eq!(other_counter.get("resources/read"), 1);
    // A shared store needs the server's identity where there is no URL.
    let pipe = modelctx::memory::pipe();
    let error = Client::builder()
        .cache(CacheConfig::new().shared_store(Arc::clone(&store)))
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("server_id"), "{error}");
}

/// A foreign entry (another client's listing) still teaches this client what it derives from
/// a listing: with `list_unseen_tools`, a call of a tool it has seen that way reads no listing.
#[tokio::test]
async fn a_tool_listing_from_another_client_is_absorbed() {
    let store: Arc<dyn CacheStore> = Arc::new(MemoryCacheStore::new());
    let counter = Counter::default();
    let url = serve_http_background(server(&counter, minute())).await;
    let config = CacheConfig::new().shared_store(store);
    let first = Client::builder()
        .cache(config.clone())
        .connect_http(&url)
        .await
        .unwrap();
    let second = Client::builder()
        .cache(config)
        .list_unseen_tools(true)
        .connect_http(&url)
        .await
        .unwrap();
    first.list_tools().await.unwrap();
    assert_eq!(second.list_tools().await.unwrap().len(), 1);
    assert_eq!(counter.get("tools/list"), 1);
    second.call_tool("echo", json!({})).await.unwrap();
    assert_eq!(
        counter.get("tools/list"),
        1,
        "the tool was known from the shared listing"
    );
    // A tool no listing showed is still looked up.
    let third = Client::builder()
        .list_unseen_tools(true)
        .connect_http(&url)
        .await
        .unwrap();
    third.call_tool("echo", json!({})).await.unwrap();
    assert_eq!(counter.get("tools/list"), 2);
}

/// The Python SDK 2.3.0's `MCPServer(cache_hints=…)` (`tests/python/cache_server.py`, which
/// counts what reaches it): its public tool listing and private reads are served again, its
/// `ttlMs: 0` prompts are not, and its `subscriptions/listen` tool change invalidates.
async fn python_peer(http: bool) {
    use modelctx_test_support::client::{HttpPeer, peer_command};
    let peer;
    let client = if http {
        peer = Some(HttpPeer::start("cache_server.py", &[]).await);
        let url = &peer.as_ref().unwrap().url;
        Client::builder().connect_http(url).await.unwrap()
    } else {
        peer = None;
        Client::builder()
            .connect_stdio(peer_command("cache_server.py", &[]))
            .await
            .unwrap()
    };
    let counts = |client: Client| async move {
        let result = client.call_tool("counts", json!({})).await.unwrap();
        let counts: HashMap<String, usize> =
            serde_json::from_str(result.first_text().unwrap()).unwrap();
        move |method: &str| counts.get(method).copied().unwrap_or_default()
    };
    for _ in 0..2 {
        assert_eq!(client.list_tools().await.unwrap().len(), 2);
        assert_eq!(client.list_prompts().await.unwrap().len(), 1);
        let read = client.read_resource("data://a").await.unwrap();
        assert_eq!(read.ttl_ms, Some(60_000));
    }
    client.read_resource("data://b").await.unwrap();
    let served = counts(client.clone()).await;
    assert_eq!(served("tools/list"), 1, "public for a minute");
    assert_eq!(served("prompts/list"), 2, "ttlMs 0");
    assert_eq!(served("resources/read"), 2, "private for a minute, per URI");
    // Its listen stream: the acknowledgement and the change drop the listing.
    let mut subscription =
        listen(&client, SubscriptionFilter::new().with_tools_list_changed()).await;
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(counts(client.clone()).await("tools/list"), 2);
    client.call_tool("change_tools", json!({})).await.unwrap();
    until(&mut subscription, |event| {
        *event == ListenEvent::ToolsListChanged
    })
    .await;
    client.list_tools().await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(counts(client.clone()).await("tools/list"), 3);
    drop(subscription);
    client.close().await.unwrap();
    drop(peer);
}

#[tokio::test]
async fn python_peer_hints_over_stdio() {
    python_peer(false).await;
}

#[tokio::test]
async fn python_peer_hints_over_http() {
    python_peer(true).await;
}

/// Answers `tools/list` itself with a negative `ttlMs` (a buggy or hostile server).
struct NegativeTtl;

impl Middleware for NegativeTtl {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        if request.method() == "tools/list" {
            return Box::pin(async {
                Reply::result(&json!({"resultType": "complete", "tools": [],
                    "ttlMs": -5, "cacheScope": "public"}))
            });
        }
        next.run(request)
    }
}

/// The spec reads a negative `ttlMs` as 0: the listing is served, and not cached.
#[tokio::test]
async fn a_negative_ttl_reads_as_zero() {
    let counter = Counter::default();
    let server = Server::builder("NegativeTtl", "0.0.1")
        .declare_tools()
        .middleware(counter.clone())
        .middleware(NegativeTtl)
        .build()
        .unwrap();
    let pipe = modelctx::memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let client = Client::connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    for _ in 0..2 {
        assert!(client.list_tools().await.unwrap().is_empty());
    }
    assert_eq!(counter.get("tools/list"), 2);
}
