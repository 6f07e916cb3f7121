//! What one call may make the client do, against hostile scripted servers: the per-round cap
//! on input requests, the per-call sampling budget, bounded callback concurrency and identical
//! questions answered once — in the 2026 input-required loop, a task's input requests, a
//! durable flow's saved round, and the 2025-11-25 back-channel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::flows::{FlowError, FlowRunner, MemoryFlowStore};
use modelctx::client::{CallbackContext, ClientBuilder, ClientError, Mode, TaskSettings};
use modelctx::types::{
    CallToolRequestParams, CreateMessageResult, ElicitResult, ErrorObject, ListRootsResult,
};
use modelctx_test_support::client::{
    FakeServer, elicit_ok, pinned, result, text_result, tool_calls,
};
use serde_json::{Map, Value, json};

/// A sampling input request whose prompt is `text`.
fn sample(text: &str) -> Value {
    json!({"method": "sampling/createMessage", "params": {"maxTokens": 5,
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}]}})
}

fn roots_request() -> Value {
    json!({"method": "roots/list"})
}

/// Counts invocations of every callback kind.
#[derive(Debug, Clone, Default)]
struct Counts {
    sampling: Arc<AtomicUsize>,
    roots: Arc<AtomicUsize>,
    elicitation: Arc<AtomicUsize>,
}

impl Counts {
    fn builder(&self, builder: ClientBuilder) -> ClientBuilder {
        let (sampling, roots, elicitation) = (
            Arc::clone(&self.sampling),
            Arc::clone(&self.roots),
            Arc::clone(&self.elicitation),
        );
        builder
            .on_sampling(move |_c, _p| {
                sampling.fetch_add(1, Ordering::SeqCst);
                async { Ok(CreateMessageResult::text("fake-llm", "sampled")) }
            })
            .on_list_roots(move |_c| {
                roots.fetch_add(1, Ordering::SeqCst);
                async { Ok(ListRootsResult::default()) }
            })
            .on_elicitation(move |_c, _p| {
                elicitation.fetch_add(1, Ordering::SeqCst);
                let mut content = Map::new();
                content.insert("ok".to_owned(), json!(true));
                async { Ok(ElicitResult::accept(content)) }
            })
    }

    fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }
}

/// A round of 100,000 `roots/list` requests (once a 7.8 MB retry) fails locally before any
/// callback runs and before anything is sent back; the limit is configurable.
#[tokio::test]
async fn a_round_with_too_many_input_requests_fails_before_any_callback() {
    let server = FakeServer::start(|m| {
        let requests: Map<String, Value> = (0..100_000)
            .map(|i| (format!("r{i}"), roots_request()))
            .collect();
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": requests}),
        )]
    });
    let counts = Counts::default();
    let (client, log, _) = server.connect(counts.builder(pinned())).await;
    let error = client.call_tool("flood", json!({})).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::TooManyInputRequests {
                count: 100_000,
                max: 16
            }
        ),
        "{error:?}"
    );
    assert!(!error.is_peer_error() && error.rpc_error().is_none());
    assert!(
        error.to_string().contains("max_input_requests_per_round"),
        "{error}"
    );
    assert_eq!(Counts::get(&counts.roots), 0);
    client.close().await.unwrap();
    assert_eq!(tool_calls(&log).len(), 1, "no retry was sent");

    // 17 questions with a limit of 17 are answered.
    let server = FakeServer::start(|m| {
        if m["params"].get("inputResponses").is_some() {
            let answered = m["params"]["inputResponses"].as_object().unwrap().len();
            return vec![result(m, text_result(&answered.to_string()))];
        }
        let requests: Map<String, Value> = (0..17)
            .map(|i| (format!("q{i}"), elicit_ok(&format!("question {i}?"))))
            .collect();
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": requests}),
        )]
    });
    let counts = Counts::default();
    let builder = counts.builder(pinned().max_input_requests_per_round(17));
    let (client, _log, _) = server.connect(builder).await;
    let done = client.call_tool("many", json!({})).await.unwrap();
    assert_eq!(done.first_text(), Some("17"));
    assert_eq!(Counts::get(&counts.elicitation), 17);
}

/// A server that asks for three different samplings every round gets three rounds (nine LLM
/// runs) of the default budget of ten; the fourth round fails before its callbacks run.
#[tokio::test]
async fn sampling_budget_spans_the_rounds_of_a_call() {
    let server = FakeServer::start(|m| {
        let round = m["params"]["requestState"]
            .as_str()
            .map_or(0, |s| s.parse::<u32>().unwrap());
        let requests: Map<String, Value> = (0..3)
            .map(|i| {
                (
                    format!("s{round}-{i}"),
                    sample(&format!("round {round} #{i}")),
                )
            })
            .collect();
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": requests,
                   "requestState": (round + 1).to_string()}),
        )]
    });
    let counts = Counts::default();
    let (client, log, _) = server.connect(counts.builder(pinned())).await;
    let error = client.call_tool("llm", json!({})).await.unwrap_err();
    assert!(
        matches!(error, ClientError::SamplingBudgetExceeded { max: 10 }),
        "{error:?}"
    );
    assert!(!error.is_peer_error());
    assert_eq!(Counts::get(&counts.sampling), 9);
    assert_eq!(tool_calls(&log).len(), 4);

    // The budget is per call: the next call starts afresh, and it is configurable.
    let error = client.call_tool("llm", json!({})).await.unwrap_err();
    assert!(matches!(error, ClientError::SamplingBudgetExceeded { .. }));
    assert_eq!(Counts::get(&counts.sampling), 18);
}

/// Identical questions under several keys run their callback once; every key gets the
/// answer.
#[tokio::test]
async fn identical_questions_are_answered_once() {
    let server = FakeServer::start(|m| {
        if let Some(answers) = m["params"].get("inputResponses") {
            let mut keys: Vec<&String> = answers.as_object().unwrap().keys().collect();
            keys.sort();
            return vec![result(m, text_result(&format!("{keys:?}")))];
        }
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": {
                "r1": roots_request(), "r2": roots_request(), "r3": roots_request(),
                "s1": sample("same"), "s2": sample("same"), "s3": sample("other"),
                "e1": elicit_ok("ok?"), "e2": elicit_ok("ok?")}}),
        )]
    });
    let counts = Counts::default();
    let (client, log, _) = server.connect(counts.builder(pinned())).await;
    let done = client.call_tool("dup", json!({})).await.unwrap();
    assert_eq!(
        done.first_text(),
        Some(r#"["e1", "e2", "r1", "r2", "r3", "s1", "s2", "s3"]"#)
    );
    assert_eq!(Counts::get(&counts.roots), 1);
    assert_eq!(Counts::get(&counts.sampling), 2);
    assert_eq!(Counts::get(&counts.elicitation), 1);
    let retry = &tool_calls(&log)[1]["params"]["inputResponses"];
    assert_eq!(retry["s1"], retry["s2"]);
    assert_eq!(retry["r1"], retry["r3"]);
}

/// A round's callbacks run at most `max_concurrent_callbacks` at a time (4 by default).
#[tokio::test(start_paused = true)]
async fn callbacks_run_with_bounded_concurrency() {
    for (limit, expected) in [(None, 4), (Some(2), 2)] {
        let server = FakeServer::start(|m| {
            if m["params"].get("inputResponses").is_some() {
                return vec![result(m, text_result("done"))];
            }
            let requests: Map<String, Value> = (0..10)
                .map(|i| (format!("q{i}"), elicit_ok(&format!("question {i}?"))))
                .collect();
            vec![result(
                m,
                json!({"resultType": "input_required", "inputRequests": requests}),
            )]
        });
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (now, most) = (Arc::clone(&running), Arc::clone(&peak));
        let mut builder = pinned().on_elicitation(move |_c, _p| {
            let (now, most) = (Arc::clone(&now), Arc::clone(&most));
            async move {
                let current = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(current, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(ElicitResult::decline())
            }
        });
        if let Some(limit) = limit {
            builder = builder.max_concurrent_callbacks(limit);
        }
        let (client, _log, _) = server.connect(builder).await;
        let done = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(done.first_text(), Some("done"));
        assert_eq!(peak.load(Ordering::SeqCst), expected, "limit {limit:?}");
    }
}

/// A task's input requests count against the same call: each fresh batch is a round, its
/// sampling is charged to the call's budget, and a batch over the cap fails the call.
#[tokio::test(start_paused = true)]
async fn a_task_s_input_requests_share_the_call_s_limits() {
    for (tool, per_batch, expected_sampling) in [("sample", 3usize, 9usize), ("flood", 17, 0)] {
        let polls = Arc::new(AtomicUsize::new(0));
        let server = FakeServer::start(move |m| {
            let task = |status: &str| {
                json!({"taskId": "t-1", "status": status, "createdAt": "2026-07-28T00:00:00Z",
                       "lastUpdatedAt": "2026-07-28T00:00:00Z", "ttlMs": null,
                       "pollIntervalMs": 50})
            };
            match m["method"].as_str() {
                Some("tools/call") => {
                    let mut created = task("working");
                    created["resultType"] = json!("task");
                    vec![result(m, created)]
                }
                Some("tasks/get") => {
                    // A fresh batch of questions at every poll.
                    let poll = polls.fetch_add(1, Ordering::SeqCst);
                    let mut status = task("input_required");
                    status["inputRequests"] = (0..per_batch)
                        .map(|i| (format!("p{poll}-{i}"), sample(&format!("{poll}/{i}"))))
                        .collect::<Map<String, Value>>()
                        .into();
                    vec![result(m, status)]
                }
                Some("tasks/update" | "tasks/cancel") => vec![result(m, json!({}))],
                _ => vec![],
            }
        });
        let counts = Counts::default();
        let builder = counts.builder(pinned().tasks(TaskSettings::new()));
        let (client, log, _) = server.connect(builder).await;
        let error = client.call_tool(tool, json!({})).await.unwrap_err();
        match tool {
            "sample" => assert!(
                matches!(error, ClientError::SamplingBudgetExceeded { max: 10 }),
                "{error:?}"
            ),
            _ => assert!(
                matches!(
                    error,
                    ClientError::TooManyInputRequests { count: 17, max: 16 }
                ),
                "{error:?}"
            ),
        }
        assert_eq!(Counts::get(&counts.sampling), expected_sampling, "{tool}");
        let updates = log
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m["method"] == "tasks/update")
            .count();
        assert_eq!(updates, expected_sampling / 3, "{tool}");
    }
}

/// A durable flow does not save a round with more questions than the client would answer.
#[tokio::test]
async fn a_flow_refuses_to_save_an_oversized_round() {
    let server = FakeServer::start(|m| {
        let requests: Map<String, Value> = (0..1000)
            .map(|i| (format!("r{i}"), roots_request()))
            .collect();
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": requests,
                   "requestState": "s"}),
        )]
    });
    let (client, _log, _) = server.connect(pinned()).await;
    let runner = FlowRunner::new(MemoryFlowStore::new());
    let error = runner
        .start(&client, "fake", None, CallToolRequestParams::new("t", None))
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(
            error,
            FlowError::Client(ClientError::TooManyInputRequests {
                count: 1000,
                max: 16
            })
        ),
        "{error:?}"
    );
    let saved = runner.list(&Default::default()).await.unwrap();
    assert!(saved.is_empty(), "{saved:?}");
}

/// `answer_input_requests` (the manual loop) applies the per-round cap and sampling budget.
#[tokio::test]
async fn the_manual_loop_applies_the_same_limits() {
    let server = FakeServer::start(|_| vec![]);
    let counts = Counts::default();
    let builder = counts.builder(pinned().max_sampling_per_call(1));
    let (client, _log, _) = server.connect(builder).await;
    let two_samplings = serde_json::from_value(json!({"a": sample("a"), "b": sample("b")}));
    let error = client
        .answer_input_requests(two_samplings.unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::SamplingBudgetExceeded { max: 1 }),
        "{error:?}"
    );
    let flood: Map<String, Value> = (0..17).map(|i| (i.to_string(), roots_request())).collect();
    let error = client
        .answer_input_requests(serde_json::from_value(Value::Object(flood)).unwrap())
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        ClientError::TooManyInputRequests { count: 17, .. }
    ));
    assert_eq!(Counts::get(&counts.sampling), 0);
    assert_eq!(Counts::get(&counts.roots), 0);
}

fn initialize_ok(m: &Value) -> Value {
    result(
        m,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "Old", "version": "1"}}),
    )
}

fn server_sampling(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage",
           "params": {"maxTokens": 5, "messages": []}})
}

/// 2025-11-25: back-channel sampling is charged to the calls in flight. Twelve sampling
/// requests during one call run the LLM ten times; the other two get an error response and
/// the call fails locally. Sampling while no call is in flight is refused.
#[tokio::test]
async fn back_channel_sampling_is_charged_to_the_call_in_flight() {
    const SENT: usize = 12;
    let pending: Arc<Mutex<Option<Value>>> = Arc::default();
    let server = FakeServer::start(move |m| {
        match (m.get("method").and_then(Value::as_str), m.get("id")) {
            (Some("initialize"), _) => vec![initialize_ok(m)],
            // Before any call: one sampling request out of the blue.
            (Some("notifications/initialized"), _) => vec![server_sampling("early")],
            (Some("tools/call"), _) => {
                *pending.lock().unwrap() = Some(m.clone());
                (0..SENT)
                    .map(|i| server_sampling(&format!("s{i}")))
                    .collect()
            }
            _ => vec![],
        }
    });
    let counts = Counts::default();
    let builder = counts.builder(ClientBuilder::new().mode(Mode::Handshake));
    let (client, _log, mut received) = server.connect(builder).await;
    let early = loop {
        let message = received.recv().await.unwrap();
        if message["id"] == "early" {
            break message;
        }
    };
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no request of this client is in progress"),
        "{early}"
    );
    let error = client.call_tool("llm", json!({})).await.unwrap_err();
    assert!(
        matches!(error, ClientError::SamplingBudgetExceeded { max: 10 }),
        "{error:?}"
    );
    assert!(!error.is_peer_error());
    let mut answers = Vec::new();
    while answers.len() < SENT {
        let message = received.recv().await.unwrap();
        if message["id"].as_str().is_some_and(|id| id.starts_with('s')) {
            answers.push(message);
        }
    }
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|a| a.get("error").is_some())
        .collect();
    assert_eq!(refused.len(), SENT - 10, "{answers:?}");
    assert!(
        refused.iter().any(|r| r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Sampling budget exhausted: at most 10")),
        "{refused:?}"
    );
    assert_eq!(Counts::get(&counts.sampling), 10);
}

/// 2025-11-25: at most `max_input_requests_per_round` server requests are answered at a time
/// (the rest are refused at once) and at most `max_concurrent_callbacks` callbacks run.
#[tokio::test]
async fn back_channel_requests_are_bounded() {
    const SENT: usize = 20;
    let server = FakeServer::start(move |m| match m.get("method").and_then(Value::as_str) {
        Some("initialize") => vec![initialize_ok(m)],
        Some("tools/call") => (0..SENT)
            .map(|i| {
                json!({"jsonrpc": "2.0", "id": format!("e{i}"), "method": "elicitation/create",
                       "params": elicit_ok("ok?")["params"]})
            })
            .collect(),
        _ => vec![],
    });
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (gate, now, most) = (
        Arc::clone(&release),
        Arc::clone(&running),
        Arc::clone(&peak),
    );
    let builder = ClientBuilder::new().mode(Mode::Handshake).on_elicitation(
        move |_c: CallbackContext, _p| {
            let (gate, now, most) = (Arc::clone(&gate), Arc::clone(&now), Arc::clone(&most));
            async move {
                let current = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(current, Ordering::SeqCst);
                gate.acquire().await.unwrap().forget();
                now.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, ErrorObject>(ElicitResult::decline())
            }
        },
    );
    let (client, _log, mut received) = server.connect(builder).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("ask", json!({})).await }
    });
    // The four beyond the sixteen admitted are refused while the callbacks still wait.
    let mut refused = 0;
    while refused < SENT - 16 {
        let message = received.recv().await.unwrap();
        if message.get("error").is_some() {
            assert!(
                message["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("at most 16 at a time"),
                "{message}"
            );
            refused += 1;
        }
    }
    release.add_permits(SENT);
    let mut answered = 0;
    while answered < 16 {
        let message = received.recv().await.unwrap();
        if message.get("result").is_some() {
            answered += 1;
        }
    }
    assert_eq!(peak.load(Ordering::SeqCst), 4);
    call.abort();
}

/// A server whose listing never ends (every page names a next one) costs the client a bounded
/// number of requests: the listing fails after `MAX_LIST_PAGES` pages, for every list.
#[tokio::test]
async fn a_listing_that_never_ends_stops_at_the_page_bound() {
    use modelctx::client::MAX_LIST_PAGES;
    let pages = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&pages);
    let server = FakeServer::start(move |message| {
        let method = message["method"].as_str().unwrap_or_default();
        let n = counted.fetch_add(1, Ordering::SeqCst);
        let key = match method {
            "tools/list" => "tools",
            "prompts/list" => "prompts",
            "resources/list" => "resources",
            "resources/templates/list" => "resourceTemplates",
            _ => return Vec::new(),
        };
        let mut page = json!({"resultType": "complete", "nextCursor": format!("page-{n}")});
        page[key] = json!([]);
        vec![result(message, page)]
    });
    let (client, _log, _received) = server.connect(pinned()).await;
    let error = client.list_tools().await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Protocol(m) if m.contains("pages")),
        "{error}"
    );
    assert_eq!(pages.load(Ordering::SeqCst), MAX_LIST_PAGES);
    assert!(client.list_prompts().await.is_err());
    assert!(client.list_resources().await.is_err());
    assert!(client.list_resource_templates().await.is_err());
    assert_eq!(pages.load(Ordering::SeqCst), 4 * MAX_LIST_PAGES);
}
