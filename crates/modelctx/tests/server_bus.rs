//! The change bus: server instances in one test process, each on its own HTTP listener, share a
//! Redis (`RedisBus`, pub/sub). A change made on one instance reaches the listen streams and
//! 2025-11-25 sessions of every instance exactly once; a task running on one reports each
//! status to a listener on another; garbage on the channel is ignored and logged once; a fleet
//! with another prefix hears nothing. Needs `redis-server` (`scripts/redis.sh install`); fails,
//! never skips, without it.

use std::sync::Arc;
use std::time::Duration;

use modelctx::client::{Client, ListenEvent, Mode, Subscription, TaskSettings};
use modelctx::server::bus::RedisBus;
use modelctx::server::tasks::{RedisTaskStore, TaskContext, TaskInput, TaskStep, TaskTool, Tasks};
use modelctx::server::{Change, Server};
use modelctx::types::tasks::TaskIdsFilter as _;
use modelctx::types::{
    CallToolResult, ReadResourceRequestParams, ReadResourceResult, ResourceContents,
    ResourceTemplate, SubscriptionFilter, Tool,
};
use modelctx_test_support::listen::{listen, next, until, updated};
use modelctx_test_support::redis::{Persistence, Redis};
use modelctx_test_support::server::capture_logs;
use modelctx_test_support::tasks::{HttpServer, ask_text, poll_status, start, with_tasks};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

const REPORT: &str = "report://2026-q3";
/// Announced last: every event a stream gets before it is one the test expects, so a
/// duplicate or a stray change shows up as an event before the sentinel.
const SENTINEL: &str = "report://sentinel";

async fn bus(redis: &Redis, prefix: &str) -> RedisBus {
    RedisBus::connect(&redis.url, prefix).await.unwrap()
}

fn server(bus: RedisBus) -> Server {
    // The reports the tests follow: a 2025-11-25 session may `resources/subscribe` only to
    // resources the server has.
    let reports = ResourceTemplate::new("report://{quarter}", "report");
    Server::builder("bus-test", "1.0.0")
        .declare_tools()
        .declare_resources()
        .resource_template(
            reports,
            |_ctx, params: ReadResourceRequestParams, _vars| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, "")])
            },
        )
        .bus(bus)
        .build()
        .unwrap()
}

/// Follows the tool list, [`REPORT`] and [`SENTINEL`].
fn filter() -> SubscriptionFilter {
    SubscriptionFilter::new()
        .with_tools_list_changed()
        .with_resource(REPORT)
        .with_resource(SENTINEL)
}

/// The events up to and including the update of [`SENTINEL`].
async fn until_sentinel(subscription: &mut Subscription) -> Vec<ListenEvent> {
    until(subscription, |event| *event == updated(SENTINEL)).await
}

/// Instances A and B of the fleet on `redis`, each on its own HTTP listener, with a listener on
/// each (and a 2025-11-25 session on B), all following [`filter`].
struct Pair {
    a: Server,
    b: Server,
    on_a: Client,
    on_b: Client,
    at_a: Subscription,
    at_b: Subscription,
    at_b_handshake: Subscription,
    _kept: (HttpServer, HttpServer, Client),
}

async fn pair(redis: &Redis) -> Pair {
    let a = server(bus(redis, "fleet").await);
    let b = server(bus(redis, "fleet").await);
    let (http_a, http_b) = (
        HttpServer::start(a.clone()).await,
        HttpServer::start(b.clone()).await,
    );
    let on_a = Client::builder().connect_http(&http_a.url).await.unwrap();
    let on_b = Client::builder().connect_http(&http_b.url).await.unwrap();
    let on_b_handshake = Client::builder()
        .mode(Mode::Handshake)
        .connect_http(&http_b.url)
        .await
        .unwrap();
    Pair {
        at_a: listen(&on_a, filter()).await,
        at_b: listen(&on_b, filter()).await,
        at_b_handshake: listen(&on_b_handshake, filter()).await,
        a,
        b,
        on_a,
        on_b,
        _kept: (http_a, http_b, on_b_handshake),
    }
}

#[tokio::test]
async fn changes_made_on_one_instance_reach_listeners_on_every_instance_once() {
    let redis = Redis::start(Persistence::Off).await;
    let Pair {
        a,
        b,
        mut at_a,
        mut at_b,
        mut at_b_handshake,
        on_a: _on_a,
        on_b: _on_b,
        _kept,
    } = pair(&redis).await;
    // Another fleet on the same Redis.
    let c = server(bus(&redis, "other-fleet").await);
    let http_c = HttpServer::start(c.clone()).await;
    let on_c = Client::builder().connect_http(&http_c.url).await.unwrap();
    let mut at_c = listen(&on_c, filter()).await;

    // A resource update and a tool-list change (a tool added at run time) on A.
    a.notify(Change::ResourceUpdated(REPORT.into()));
    a.add_tool(
        Tool::new("touched", Tool::empty_input_schema()),
        |_ctx, _params| async { CallToolResult::text("touched") },
    )
    .unwrap();
    a.notify(Change::ResourceUpdated(SENTINEL.into()));
    c.notify(Change::ResourceUpdated(SENTINEL.into()));

    let expected = [
        updated(REPORT),
        ListenEvent::ToolsListChanged,
        updated(SENTINEL),
    ];
    assert_eq!(until_sentinel(&mut at_b).await, expected, "B, 2026-07-28");
    assert_eq!(
        until_sentinel(&mut at_b_handshake).await,
        expected,
        "B, 2025-11-25 session"
    );
    // A's own listener hears each change once: its echo from the bus is ignored.
    assert_eq!(until_sentinel(&mut at_a).await, expected, "A");
    // The other fleet heard nothing of A's changes.
    assert_eq!(until_sentinel(&mut at_c).await, [updated(SENTINEL)], "C");

    // And the other way round: B's change reaches A.
    b.notify(Change::ResourceUpdated(SENTINEL.into()));
    assert_eq!(until_sentinel(&mut at_a).await, [updated(SENTINEL)]);
    assert_eq!(until_sentinel(&mut at_b).await, [updated(SENTINEL)]);
}

/// Publishes raw bytes on a fleet's channel, as any Redis client could.
async fn publish_raw(redis: &Redis, channel: &str, message: &[u8]) {
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let receivers: i64 = redis::cmd("PUBLISH")
        .arg(channel)
        .arg(message)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(receivers, 1, "the instance is subscribed");
}

#[tokio::test]
async fn garbage_on_the_channel_is_ignored_and_logged_once() {
    let (logs, _guard) = capture_logs(tracing::Level::WARN);
    let redis = Redis::start(Persistence::Off).await;
    let bus = bus(&redis, "fleet").await;
    let channel = bus.channel().to_owned();
    assert_eq!(channel, "fleet:changes");
    let b = server(bus);
    let http_b = HttpServer::start(b.clone()).await;
    let on_b = Client::builder().connect_http(&http_b.url).await.unwrap();
    let mut at_b = listen(&on_b, filter()).await;

    let oversized = format!(
        r#"{{"v":1,"from":"x","kind":"resource","uri":"{}"}}"#,
        "r".repeat(64 * 1024)
    );
    for garbage in [
        b"\xff\xfe not json".as_slice(),
        br#"{"v":1,"from":"x","kind":"tools","shutdown":true}"#,
        br#"{"v":1,"from":"x","kind":"resource"}"#,
        br#"{"v":9,"from":"x","kind":"tools"}"#,
        oversized.as_bytes(),
    ] {
        publish_raw(&redis, &channel, garbage).await;
    }
    // A well-formed message from another instance still gets through after the garbage.
    let sentinel = format!(r#"{{"v":1,"from":"x","kind":"resource","uri":"{SENTINEL}"}}"#);
    publish_raw(&redis, &channel, sentinel.as_bytes()).await;
    assert_eq!(until_sentinel(&mut at_b).await, [updated(SENTINEL)]);

    let warnings: Vec<String> = logs
        .lines()
        .into_iter()
        .filter(|line| line.contains("change bus"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].contains("not a change"), "{warnings:#?}");
    // The instance serves on.
    on_b.list_tools().await.unwrap();
}

/// A task tool that waits for the test before asking, and completes once answered: its
/// statuses are `working`, `input_required`, `completed`, each held until the test moves on.
fn gated_task(gate: &Arc<Semaphore>) -> TaskTool {
    let gate = Arc::clone(gate);
    TaskTool::new(
        Tool::new("gated", Tool::empty_input_schema()),
        move |_ctx: TaskContext, input: TaskInput| {
            let gate = Arc::clone(&gate);
            async move {
                if input.accepted("approve").is_some() {
                    return TaskStep::Complete(CallToolResult::text("approved"));
                }
                gate.acquire().await.unwrap().forget();
                TaskStep::ask("approve", ask_text("Approve?", "name"))
            }
        },
    )
}

/// An instance with tasks in the shared Redis store; listen streams would read the store only
/// once an hour, so whatever reaches them sooner came over the bus.
async fn task_instance(redis: &Redis, gate: &Arc<Semaphore>) -> Server {
    let store = RedisTaskStore::connect(&redis.url, "{bus-test}")
        .await
        .unwrap();
    let tasks = Tasks::builder(store)
        .poll_interval(Duration::from_secs(3600))
        .tool(gated_task(gate))
        .build();
    Server::builder("bus-tasks", "1.0.0")
        .tasks(tasks)
        .bus(bus(redis, "fleet").await)
        .build()
        .unwrap()
}

fn status_of(event: &ListenEvent) -> Option<String> {
    match event {
        ListenEvent::Other { method, params } if method == "notifications/tasks" => params
            .as_ref()
            .and_then(|p| p["status"].as_str())
            .map(str::to_owned),
        _ => None,
    }
}

/// The status of the next `notifications/tasks` on the stream.
async fn next_status(subscription: &mut Subscription) -> String {
    loop {
        if let Some(status) = status_of(&next(subscription).await) {
            return status;
        }
    }
}

#[tokio::test]
async fn a_listener_on_b_hears_each_status_of_a_task_running_on_a() {
    let redis = Redis::start(Persistence::Off).await;
    let gate = Arc::new(Semaphore::new(0));
    let http_a = HttpServer::start(task_instance(&redis, &gate).await).await;
    let http_b = HttpServer::start(task_instance(&redis, &gate).await).await;

    let id = start(&http_a, "gated", json!({})).await;
    let on_b = Client::builder()
        .tasks(TaskSettings::new())
        .connect_http(&http_b.url)
        .await
        .unwrap();
    let mut filter = SubscriptionFilter::new();
    filter.set_task_ids(Some(vec![id.clone()]));
    let mut at_b = listen(&on_b, filter).await;
    assert_eq!(next_status(&mut at_b).await, "working");

    gate.add_permits(1);
    assert_eq!(next_status(&mut at_b).await, "input_required");
    poll_status(&http_a, &id, "input_required").await;
    let (status, reply) = http_a
        .call(
            2,
            "tasks/update",
            json!({"taskId": id, "inputResponses":
                {"approve": {"action": "accept", "content": {"name": "Ada"}}}}),
            &with_tasks(),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    // The answer runs the handler again (working) and it completes; the run may be quicker
    // than B's read of the store, so `working` may or may not be seen in between.
    let mut status = next_status(&mut at_b).await;
    if status == "working" {
        status = next_status(&mut at_b).await;
    }
    assert_eq!(status, "completed");
    let _: Value = poll_status(&http_a, &id, "completed").await;
}

#[tokio::test]
async fn instances_serve_through_a_redis_restart_and_listeners_resync_after_it() {
    let mut redis = Redis::start(Persistence::Off).await;
    let Pair {
        a,
        b: _b,
        on_a,
        on_b,
        mut at_a,
        mut at_b,
        mut at_b_handshake,
        _kept,
    } = pair(&redis).await;
    a.notify(Change::ResourceUpdated(SENTINEL.into()));
    assert_eq!(until_sentinel(&mut at_b).await, [updated(SENTINEL)]);
    assert_eq!(
        until_sentinel(&mut at_b_handshake).await,
        [updated(SENTINEL)]
    );
    assert_eq!(until_sentinel(&mut at_a).await, [updated(SENTINEL)]);

    // Redis goes away. Both instances keep serving, and a change on A still reaches A's own
    // listeners at once (notify never waits for the bus).
    redis.stop().await;
    a.notify(Change::ResourceUpdated(REPORT.into()));
    assert_eq!(next(&mut at_a).await, updated(REPORT));
    on_a.list_tools().await.unwrap();
    on_b.list_tools().await.unwrap();

    // Redis is back. Each instance subscribes again and tells every listener to refetch what it
    // follows: the tool list and both resources (the handshake-era session all three lists).
    redis.start_again().await;
    let resync = [
        ListenEvent::ToolsListChanged,
        updated(REPORT),
        updated(SENTINEL),
    ];
    assert_eq!(until_sentinel(&mut at_b).await, resync, "B");
    assert_eq!(until_sentinel(&mut at_a).await, resync, "A");
    // The session's resources come in no particular order.
    let mut handshake = vec![next(&mut at_b_handshake).await];
    while !(handshake.contains(&updated(REPORT)) && handshake.contains(&updated(SENTINEL))) {
        handshake.push(next(&mut at_b_handshake).await);
    }
    assert_eq!(handshake[0], ListenEvent::ToolsListChanged, "{handshake:?}");
    assert_eq!(handshake.len(), 3, "{handshake:?}");

    // Changes made after the restart cross again. A's update made during the outage is
    // published late (retried), or was covered by the resync: either way at most once more.
    a.add_tool(
        Tool::new("after", Tool::empty_input_schema()),
        |_ctx, _params| async { CallToolResult::text("after") },
    )
    .unwrap();
    a.notify(Change::ResourceUpdated(SENTINEL.into()));
    let mut after = until_sentinel(&mut at_b).await;
    if after.first() == Some(&updated(REPORT)) {
        after.remove(0);
    }
    assert_eq!(after, [ListenEvent::ToolsListChanged, updated(SENTINEL)]);
}

/// A rolling restart behind a load balancer, in one process: two instances on a `MemoryBus`
/// behind one URL whose requests go to A until the switch, then to B. A ends its listen streams
/// gracefully (as its HTTP shutdown does); a client with `relisten_after_close` listens again —
/// on B — and yields a change for everything it follows (it may have missed some), then B's
/// and A's changes as usual. Without the option the subscription ends.
#[tokio::test]
async fn a_client_listens_again_on_another_instance_after_a_graceful_close() {
    use std::sync::atomic::{AtomicBool, Ordering};

    use modelctx::server::bus::MemoryBus;
    use modelctx::server::http::HttpConfig;
    use tower::ServiceExt as _;

    let bus = MemoryBus::new();
    let instance = || {
        Server::builder("bus-test", "1.0.0")
            .declare_tools()
            .declare_resources()
            .bus(bus.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (instance(), instance());
    let to_b = Arc::new(AtomicBool::new(false));
    let (router_a, router_b) = (
        a.http_router(HttpConfig::default()),
        b.http_router(HttpConfig::default()),
    );
    let switch = Arc::clone(&to_b);
    let balancer = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let router = if switch.load(Ordering::SeqCst) {
            router_b.clone()
        } else {
            router_a.clone()
        };
        async move { router.oneshot(request).await.unwrap() }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, balancer).await });

    let relistening = Client::builder()
        .relisten_after_close(true)
        .connect_http(&url)
        .await
        .unwrap();
    let plain = Client::builder().connect_http(&url).await.unwrap();
    let mut follows = listen(&relistening, filter()).await;
    let mut ends = listen(&plain, filter()).await;

    // A is taken out of the balancer, then closes its streams.
    to_b.store(true, Ordering::SeqCst);
    a.shutdown_subscriptions();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), ends.next())
            .await
            .unwrap(),
        None
    );
    assert!(ends.error().is_none(), "{:?}", ends.error());

    // Listening again on B: everything followed is announced once, then changes flow.
    assert_eq!(
        until_sentinel(&mut follows).await,
        [
            ListenEvent::ToolsListChanged,
            updated(REPORT),
            updated(SENTINEL)
        ]
    );
    b.notify(Change::ResourceUpdated(REPORT.into()));
    a.notify(Change::ResourceUpdated(SENTINEL.into()));
    assert_eq!(
        until_sentinel(&mut follows).await,
        [updated(REPORT), updated(SENTINEL)]
    );
    assert!(follows.error().is_none());
}
