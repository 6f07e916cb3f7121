//! Single-use sealed rounds (a replay guard) and the WARN line of a refused `requestState`.
//!
//! Without a guard a sealed state can be redeemed again until it expires; with one, the rounds
//! it covers are redeemed once — in one process (`MemoryReplayGuard`) or across a fleet sharing
//! keys (`RedisReplayGuard`) — and a replay gets the one frozen `-32602`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::seal::RequestStateSecurity;
use modelctx::server::single_use::{MemoryReplayGuard, RedisReplayGuard, ReplayGuard, SingleUse};
use modelctx::server::{Elicit, McpServer};
use modelctx::server::{RegistrationError, Server, ServerBuilder};
use modelctx::types::*;
use modelctx::{resolver, tool};
use modelctx_test_support::redis::{Persistence, Redis};
use modelctx_test_support::server::{StdioPeer, capture_logs, object, request};
use serde_json::{Value, json};

const KEY: &[u8; 32] = b"single-use-key-single-use-key-!!";

fn frozen() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
}

/// A tool that asks once (state `step-1`) and then completes; `calls` counts handler runs.
fn asking_tool(
    builder: ServerBuilder,
    name: &str,
    destructive: bool,
    calls: &Arc<AtomicUsize>,
) -> ServerBuilder {
    let mut tool = Tool::new(
        name,
        object(json!({"type":"object","properties":{"repo":{"type":"string"}}})),
    );
    if destructive {
        tool.annotations = Some(ToolAnnotations::new().with_destructive_hint(true));
    }
    let calls = Arc::clone(calls);
    builder.tool(tool, move |_ctx, p: CallToolRequestParams| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            match p.request_state.as_deref() {
                Some(state) => Outcome::Complete(CallToolResult::text(format!("done: {state}"))),
                None => Outcome::InputRequired(
                    InputRequiredResult::new()
                        .with_request("confirm", InputRequest::list_roots())
                        .with_state("step-1"),
                ),
            }
        }
    })
}

/// `delete_repo` (destructive) and `lookup` (no hints), sealed under `KEY`, single use through
/// `guard` when given.
fn server(guard: Option<(Arc<dyn ReplayGuard>, SingleUse)>, calls: &Arc<AtomicUsize>) -> Server {
    let mut builder = Server::builder("Repos", "1.0.0")
        .seal_request_state(RequestStateSecurity::with_keys([KEY]).unwrap());
    builder = asking_tool(builder, "delete_repo", true, calls);
    builder = asking_tool(builder, "lookup", false, calls);
    builder = builder.prompt(
        Prompt::new("review"),
        |_ctx, p: GetPromptRequestParams| async move {
            match p.request_state {
                Some(state) => Outcome::Complete(GetPromptResult::new(vec![PromptMessage::new(
                    Role::USER,
                    ContentBlock::text(state),
                )])),
                None => Outcome::InputRequired(
                    InputRequiredResult::new()
                        .with_request("confirm", InputRequest::list_roots())
                        .with_state("prompt-1"),
                ),
            }
        },
    );
    builder = builder.resource(
        Resource::new("repo://readme", "readme"),
        |_ctx, p: ReadResourceRequestParams| async move {
            ReadResourceResult::new(vec![ResourceContents::text(p.uri, None, "readme")])
        },
    );
    if let Some((guard, scope)) = guard {
        builder = builder.single_use(guard, scope);
    }
    builder.build().unwrap()
}

/// `body` declaring roots, and with `state` (and an answer) when given: a retry.
fn round(mut body: Value, state: Option<&str>) -> Value {
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": {}});
    if let Some(state) = state {
        body["params"]["requestState"] = json!(state);
        body["params"]["inputResponses"] = json!({"confirm": {"roots": []}});
    }
    body
}

fn call(id: i64, tool: &str, state: Option<&str>) -> Value {
    let params = json!({"name": tool, "arguments": {"repo": "prod"}});
    round(request(id, "tools/call", params), state)
}

fn get_prompt(id: i64, state: Option<&str>) -> Value {
    round(request(id, "prompts/get", json!({"name": "review"})), state)
}

/// Round one of `tool`: the sealed state of its `InputRequiredResult`.
async fn sealed_state(peer: &mut StdioPeer, tool: &str) -> String {
    let (response, _) = peer.request(&call(1, tool, None)).await;
    response["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("an InputRequiredResult: {response}"))
        .to_owned()
}

/// Redeems `state` on `tool` twice; the two responses.
async fn redeem_twice(peer: &mut StdioPeer, tool: &str, state: &str) -> (Value, Value) {
    let (first, _) = peer.request(&call(2, tool, Some(state))).await;
    let (second, _) = peer.request(&call(3, tool, Some(state))).await;
    (first, second)
}

fn memory(scope: SingleUse) -> Option<(Arc<dyn ReplayGuard>, SingleUse)> {
    Some((Arc::new(MemoryReplayGuard::default()), scope))
}

#[tokio::test]
async fn a_destructive_round_is_redeemed_once_with_single_use_on() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut peer = StdioPeer::start(server(memory(SingleUse::DestructiveTools), &calls));
    let state = sealed_state(&mut peer, "delete_repo").await;
    let (first, replay) = redeem_twice(&mut peer, "delete_repo", &state).await;
    assert_eq!(first["result"]["content"][0]["text"], "done: step-1");
    assert_eq!(replay["error"], frozen(), "{replay}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the replay never reached the handler"
    );

    // A tool without `destructiveHint: true` keeps the replay window under this scope.
    let state = sealed_state(&mut peer, "lookup").await;
    let (first, again) = redeem_twice(&mut peer, "lookup", &state).await;
    assert_eq!(first["result"]["content"][0]["text"], "done: step-1");
    assert_eq!(again["result"]["content"][0]["text"], "done: step-1");
}

#[tokio::test]
async fn without_single_use_a_round_can_be_replayed_within_its_ttl() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut peer = StdioPeer::start(server(None, &calls));
    let state = sealed_state(&mut peer, "delete_repo").await;
    let (first, again) = redeem_twice(&mut peer, "delete_repo", &state).await;
    assert_eq!(first["result"]["content"][0]["text"], "done: step-1");
    assert_eq!(
        again["result"]["content"][0]["text"], "done: step-1",
        "{again}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn single_use_everywhere_covers_every_tool_and_prompt() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut peer = StdioPeer::start(server(memory(SingleUse::All), &calls));
    let state = sealed_state(&mut peer, "lookup").await;
    let (first, replay) = redeem_twice(&mut peer, "lookup", &state).await;
    assert_eq!(first["result"]["content"][0]["text"], "done: step-1");
    assert_eq!(replay["error"], frozen());

    let (asked, _) = peer.request(&get_prompt(4, None)).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let (first, _) = peer.request(&get_prompt(5, Some(&state))).await;
    assert_eq!(
        first["result"]["messages"][0]["content"]["text"],
        "prompt-1"
    );
    let (replay, _) = peer.request(&get_prompt(6, Some(&state))).await;
    assert_eq!(replay["error"], frozen());
}

/// A full memory guard forgets its oldest key to make room, and from then on refuses every
/// token as old as it: one client redeeming its own rounds cannot make single use fail for
/// everyone, and a forgotten token is never accepted again.
#[tokio::test]
async fn a_full_guard_forgets_its_oldest_key_and_refuses_tokens_as_old() {
    let calls = Arc::new(AtomicUsize::new(0));
    let guard: Arc<dyn ReplayGuard> = Arc::new(MemoryReplayGuard::new(1));
    let mut peer = StdioPeer::start(server(Some((guard, SingleUse::All)), &calls));
    let one = sealed_state(&mut peer, "delete_repo").await;
    let two = sealed_state(&mut peer, "delete_repo").await;
    let three = sealed_state(&mut peer, "delete_repo").await;
    let (first, _) = peer.request(&call(2, "delete_repo", Some(&one))).await;
    assert_eq!(first["result"]["content"][0]["text"], "done: step-1");
    // The table is full: the newer token is served, the first one's key is forgotten.
    let (third, _) = peer.request(&call(3, "delete_repo", Some(&three))).await;
    assert_eq!(third["result"]["content"][0]["text"], "done: step-1");
    for (id, state) in [(4, &one), (5, &two), (6, &three)] {
        let (refused, _) = peer.request(&call(id, "delete_repo", Some(state))).await;
        assert_eq!(refused["error"], frozen(), "{refused}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        5,
        "three rounds one, two redemptions"
    );
}

/// A guard that cannot answer refuses the round as an internal error, and the token stays
/// unused.
#[tokio::test]
async fn a_guard_that_cannot_answer_refuses_the_round_as_an_internal_error() {
    #[derive(Debug)]
    struct Down;
    impl ReplayGuard for Down {
        fn redeem<'a>(
            &'a self,
            _key: &'a modelctx::seal::ReplayKey,
            _expires_at: std::time::SystemTime,
        ) -> futures::future::BoxFuture<
            'a,
            Result<
                modelctx::server::single_use::Redemption,
                modelctx::server::single_use::ReplayGuardError,
            >,
        > {
            let down = std::io::Error::other("store unreachable");
            Box::pin(
                async move { Err(modelctx::server::single_use::ReplayGuardError::store(down)) },
            )
        }
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let mut peer = StdioPeer::start(server(Some((Arc::new(Down), SingleUse::All)), &calls));
    let state = sealed_state(&mut peer, "delete_repo").await;
    let (refused, _) = peer.request(&call(2, "delete_repo", Some(&state))).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the handler never saw the round"
    );
}

#[test]
fn single_use_needs_sealing() {
    let error = Server::builder("Repos", "1.0.0")
        .single_use(Arc::new(MemoryReplayGuard::default()), SingleUse::All)
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistrationError::SingleUseNeedsSealing)
            && error.to_string().contains("single use"),
        "{error}"
    );
}

/// Two instances sharing keys and one Redis: a token redeemed on one is a replay on the other,
/// and of many concurrent redemptions exactly one wins.
#[tokio::test]
async fn a_redis_guard_makes_a_round_single_use_across_instances() {
    let redis = Redis::start(Persistence::Off).await;
    let guard = |prefix: &'static str| {
        let url = redis.url.clone();
        async move {
            let guard: Arc<dyn ReplayGuard> =
                Arc::new(RedisReplayGuard::connect(&url, prefix).await.unwrap());
            Some((guard, SingleUse::DestructiveTools))
        }
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let mut a = StdioPeer::start(server(guard("fleet").await, &calls));
    let mut b = StdioPeer::start(server(guard("fleet").await, &calls));

    let state = sealed_state(&mut a, "delete_repo").await;
    let (first, _) = b.request(&call(2, "delete_repo", Some(&state))).await;
    assert_eq!(first["result"]["content"][0]["text"], "done: step-1");
    let (replay, _) = a.request(&call(3, "delete_repo", Some(&state))).await;
    assert_eq!(replay["error"], frozen(), "{replay}");

    // Concurrent redemptions of one fresh token on one server: one wins.
    let server = server(guard("race").await, &calls);
    let mut peer = StdioPeer::start(server.clone());
    let state = sealed_state(&mut peer, "delete_repo").await;
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let server = server.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let mut peer = StdioPeer::start(server);
                peer.request(&call(10 + i, "delete_repo", Some(&state)))
                    .await
                    .0
            })
        })
        .collect();
    let mut wins = 0;
    for racer in racers {
        let response = racer.await.unwrap();
        if response.get("result").is_some() {
            wins += 1;
        } else {
            assert_eq!(response["error"], frozen());
        }
    }
    assert_eq!(wins, 1);
}

/// A key whose expiry is already past on Redis's clock is never recorded as a first use: sent
/// as an instant (`SET … NX PXAT`), Redis stored it expired and every redemption was the first.
/// Here the instant is past on both clocks (the Redis of the test runs on this machine), which
/// the guard now refuses itself; a Redis clock ahead of ours is the lib's
/// `single_use::redis::tests::a_redis_clock_ahead_of_ours_does_not_make_replays_first`.
#[tokio::test]
async fn a_redis_guard_never_takes_an_expired_key_as_a_first_use() {
    use modelctx::server::single_use::Redemption;
    let redis = Redis::start(Persistence::Off).await;
    let guard = RedisReplayGuard::connect(&redis.url, "expired")
        .await
        .unwrap();
    let key = modelctx::seal::ReplayKey::digest(b"an expired token");
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(5);
    for _ in 0..2 {
        let redeemed = guard.redeem(&key, past).await.unwrap();
        assert_eq!(redeemed, Redemption::Forgotten);
    }
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    let fresh = modelctx::seal::ReplayKey::digest(b"a live token");
    assert_eq!(
        guard.redeem(&fresh, later).await.unwrap(),
        Redemption::First
    );
    assert_eq!(
        guard.redeem(&fresh, later).await.unwrap(),
        Redemption::Replay
    );
}

#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    sure: bool,
}

#[resolver]
async fn ask_confirm() -> Elicit<Confirm> {
    Elicit::new("Really drop it?")
}

/// Drops a table (asks first).
#[tool(destructive)]
async fn drop_table(table: String, #[resolve(ask_confirm)] confirm: Confirm) -> String {
    format!("dropped {table}: {}", confirm.sure)
}

/// The high-level server: `#[tool(destructive)]` is the per-tool opt-in.
#[tokio::test]
async fn a_destructive_macro_tool_is_single_use_on_the_high_level_server() {
    let server = McpServer::builder("Tables", "1.0.0")
        .tool::<drop_table>()
        .single_use(
            Arc::new(MemoryReplayGuard::default()),
            SingleUse::DestructiveTools,
        )
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server.into_server());
    let mut first = request(
        1,
        "tools/call",
        json!({"name": "drop_table", "arguments": {"table": "users"}}),
    );
    first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    let (asked, _) = peer.request(&first).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut retry = first.clone();
    retry["id"] = json!(2);
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] =
        json!({ key: {"action": "accept", "content": {"sure": true}} });
    let (done, _) = peer.request(&retry).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "dropped users: true",
        "{done}"
    );
    retry["id"] = json!(3);
    let (replay, _) = peer.request(&retry).await;
    assert_eq!(replay["error"], frozen(), "{replay}");
}

/// What was logged is one WARN line: a `requestState` rejected for `reason`, on `target`.
fn assert_one_rejection(
    captured: &modelctx_test_support::server::Captured,
    reason: &str,
    target: &str,
) {
    let lines = captured.lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    for part in [
        " WARN ".to_owned(),
        "requestState rejected".to_owned(),
        format!("reason=\"{reason}\""),
        format!("target=\"{target}\""),
    ] {
        assert!(lines[0].contains(&part), "{part} in {}", lines[0]);
    }
}

/// A tampered token is logged once, at WARN (visible at the default level), with its reason;
/// a peer-chosen target cannot make the line long or forge another line.
#[tokio::test]
async fn a_refused_state_is_one_bounded_warn_line() {
    let (captured, _default) = capture_logs(tracing::Level::WARN);

    let calls = Arc::new(AtomicUsize::new(0));
    let mut peer = StdioPeer::start(server(None, &calls));
    let state = sealed_state(&mut peer, "delete_repo").await;
    let mut tampered = state.into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (refused, _) = peer.request(&call(2, "delete_repo", Some(&tampered))).await;
    assert_eq!(refused["error"], frozen());
    assert_one_rejection(&captured, "seal", "delete_repo");

    // resources/read: the URI is the peer's. 64 KiB with a newline and a fake log line in it.
    let uri = format!(
        "x://a\n2099-01-01T00:00:00Z  WARN forged{}",
        "y".repeat(65_536)
    );
    let mut read = request(7, "resources/read", json!({"uri": uri}));
    read["params"]["requestState"] = json!(tampered);
    let (refused, _) = peer.request(&read).await;
    assert_eq!(refused["error"], frozen(), "{refused}");
    let lines = captured.lines();
    assert_eq!(lines.len(), 2, "one more line, no forged one: {lines:#?}");
    assert!(lines[1].len() < 512, "bounded: {} bytes", lines[1].len());
    assert!(
        lines[1].contains(r#"target="x://a\n2099"#),
        "escaped: {}",
        lines[1]
    );
    let length = format!("target_len={}", uri.len());
    assert!(lines[1].contains(&length), "{}", lines[1]);
}

/// The synchronous run of a task tool refuses a malformed progress state like any other state:
/// the one `-32602`, and one WARN line saying why.
#[tokio::test]
async fn a_malformed_task_state_is_a_warn_line_too() {
    use modelctx::server::tasks::{MemoryTaskStore, TaskContext, TaskInput, TaskTool, Tasks};
    let (captured, _default) = capture_logs(tracing::Level::WARN);
    let tasks = Tasks::builder(MemoryTaskStore::new())
        .tool(TaskTool::new(
            Tool::new("export", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move { CallToolResult::text("exported") },
        ))
        .build();
    let server = Server::builder("Exports", "1.0.0")
        .tasks(tasks)
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    let mut resumed = request(1, "tools/call", json!({"name": "export"}));
    resumed["params"]["requestState"] = json!("mcp-task:{not json");
    let (refused, _) = peer.request(&resumed).await;
    assert_eq!(refused["error"], frozen(), "{refused}");
    assert_one_rejection(&captured, "malformed", "export");
}
