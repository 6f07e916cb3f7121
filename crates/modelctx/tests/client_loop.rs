//! The input-required loop against scripted servers on an in-memory pipe: the retry's shape,
//! the round cap, the state-only backoff schedule (paused time), missing and refusing
//! callbacks, concurrency of one round's callbacks, isolation of parallel calls, time bounds,
//! and `resultType` handling.

use std::sync::Arc;
use std::time::Duration;

use modelctx::client::{ClientError, RoundOutcome};
use modelctx::types::{
    CallToolRequestParams, ElicitRequestParams, ElicitResult, ErrorObject, ResultDecodeError,
};
use modelctx_test_support::client::{
    FakeServer, elicit_ok, error, pinned, result, text_result, tool_calls as calls,
};
use serde_json::{Value, json};
use tokio::time::Instant;

fn accept_ok() -> impl Fn(
    modelctx::client::CallbackContext,
    ElicitRequestParams,
) -> std::future::Ready<Result<ElicitResult, ErrorObject>>
+ Send
+ Sync
+ 'static {
    |_context, _params| {
        let mut content = serde_json::Map::new();
        content.insert("ok".to_owned(), json!(true));
        std::future::ready(Ok(ElicitResult::accept(content)))
    }
}

/// The retry is the same request with a new id, the same name and arguments, answers under
/// the server's keys and the state byte for byte; a later round without state omits it.
#[tokio::test]
async fn retry_shape() {
    // Escapes, unicode and JSON-looking text: the client must not re-encode or parse it.
    let state = "s\u{e9}\"{\\\"n\\\":1}\\n \u{1F600}";
    let server = FakeServer::start(move |m| {
        let params = &m["params"];
        match params.get("inputResponses") {
            None => vec![result(
                m,
                json!({"resultType": "input_required",
                       "inputRequests": {"first": elicit_ok("one?"), "second": elicit_ok("two?")},
                       "requestState": state}),
            )],
            Some(_) if params["requestState"] == state => vec![result(
                m,
                json!({"resultType": "input_required",
                       "inputRequests": {"third": elicit_ok("three?")}}),
            )],
            Some(_) => vec![result(m, text_result("done"))],
        }
    });
    let (client, log, _) = server.connect(pinned().on_elicitation(accept_ok())).await;
    let arguments = json!({"z": 1, "a": {"nested": [1, 2.5, "x"]}, "m": null});
    let result = client.call_tool("shape", arguments.clone()).await.unwrap();
    assert_eq!(result.first_text(), Some("done"));

    let calls = calls(&log);
    assert_eq!(calls.len(), 3);
    let ids: Vec<_> = calls.iter().map(|c| c["id"].clone()).collect();
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
    for call in &calls {
        assert_eq!(call["params"]["name"], "shape");
        assert_eq!(call["params"]["arguments"], arguments);
        let meta = &call["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}, "url": {}}})
        );
        assert!(meta["io.modelcontextprotocol/clientInfo"]["name"].is_string());
    }
    assert!(calls[0]["params"].get("inputResponses").is_none());
    assert!(calls[0]["params"].get("requestState").is_none());
    assert_eq!(calls[1]["params"]["requestState"], state);
    assert_eq!(
        calls[1]["params"]["inputResponses"],
        json!({"first": {"action": "accept", "content": {"ok": true}},
               "second": {"action": "accept", "content": {"ok": true}}})
    );
    // The server sent no state in round two: the retry carries none.
    assert!(calls[2]["params"].get("requestState").is_none());
    assert_eq!(
        calls[2]["params"]["inputResponses"],
        json!({"third": {"action": "accept", "content": {"ok": true}}})
    );
}

fn state_only_server(rounds_before_done: Option<u32>) -> FakeServer {
    FakeServer::start(move |m| {
        let done: u32 = m["params"]["requestState"]
            .as_str()
            .map_or(0, |s| s.parse().unwrap());
        if rounds_before_done.is_some_and(|n| done >= n) {
            return vec![result(m, text_result("done"))];
        }
        vec![result(
            m,
            json!({"resultType": "input_required", "requestState": (done + 1).to_string()}),
        )]
    })
}

/// Ten input-required rounds are allowed by default; the eleventh fails locally.
#[tokio::test(start_paused = true)]
async fn round_cap_default() {
    let (client, log, _) = state_only_server(Some(10)).connect(pinned()).await;
    let result = client.call_tool("s", json!({})).await.unwrap();
    assert_eq!(result.first_text(), Some("done"));
    assert_eq!(calls(&log).len(), 11);

    let (client, log, _) = state_only_server(Some(11)).connect(pinned()).await;
    let error = client.call_tool("s", json!({})).await.unwrap_err();
    assert!(
        matches!(error, ClientError::RoundsExceeded { max_rounds: 10 }),
        "{error:?}"
    );
    assert!(!error.is_peer_error());
    assert_eq!(calls(&log).len(), 11, "no request after the cap");
}

#[tokio::test(start_paused = true)]
async fn round_cap_configurable() {
    let (client, log, _) = state_only_server(None)
        .connect(pinned().input_required_max_rounds(3))
        .await;
    let error = client.call_tool("s", json!({})).await.unwrap_err();
    assert!(matches!(
        error,
        ClientError::RoundsExceeded { max_rounds: 3 }
    ));
    assert_eq!(calls(&log).len(), 4);
}

/// State-only rounds back off 50, 100, 200, 250, 250 ms; a round that asks resets it.
#[tokio::test(start_paused = true)]
async fn backoff_schedule() {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = Arc::clone(&arrivals);
    // Rounds: 5 state-only, one that asks, 2 state-only, then done.
    let server = FakeServer::start(move |m| {
        recorded.lock().unwrap().push(Instant::now());
        let round: u32 = m["params"]["requestState"]
            .as_str()
            .map_or(0, |s| s.parse().unwrap());
        let next = (round + 1).to_string();
        let reply = match round {
            0..=4 | 6 | 7 => json!({"resultType": "input_required", "requestState": next}),
            5 => json!({"resultType": "input_required", "requestState": next,
                        "inputRequests": {"q": elicit_ok("now?")}}),
            _ => text_result("done"),
        };
        vec![result(m, reply)]
    });
    let (client, _log, _) = server.connect(pinned().on_elicitation(accept_ok())).await;
    client.call_tool("s", json!({})).await.unwrap();
    let arrivals = arrivals.lock().unwrap().clone();
    let gaps: Vec<u128> = arrivals
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(gaps, [50, 100, 200, 250, 250, 0, 50, 100]);
}

#[tokio::test(start_paused = true)]
async fn backoff_is_configurable() {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = Arc::clone(&arrivals);
    let server = FakeServer::start(move |m| {
        recorded.lock().unwrap().push(Instant::now());
        let round: u32 = m["params"]["requestState"]
            .as_str()
            .map_or(0, |s| s.parse().unwrap());
        let reply = if round < 4 {
            json!({"resultType": "input_required", "requestState": (round + 1).to_string()})
        } else {
            text_result("done")
        };
        vec![result(m, reply)]
    });
    let builder =
        pinned().input_required_backoff(Duration::from_millis(10), Duration::from_millis(30));
    let (client, _log, _) = server.connect(builder).await;
    client.call_tool("s", json!({})).await.unwrap();
    let arrivals = arrivals.lock().unwrap().clone();
    let gaps: Vec<u128> = arrivals
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(gaps, [10, 20, 30, 30]);
}

/// A question no callback can answer fails the call locally, before any callback runs, and
/// nothing more is sent to the server.
#[tokio::test]
async fn missing_callback_fails_locally() {
    let server = FakeServer::start(|m| {
        vec![result(
            m,
            json!({"resultType": "input_required", "requestState": "st",
                   "inputRequests": {
                       "ask": elicit_ok("a question"),
                       "llm": {"method": "sampling/createMessage", "params": {"maxTokens": 5,
                           "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}}}}),
        )]
    });
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let builder = pinned().on_elicitation(move |_c, _p| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { Ok(ElicitResult::decline()) }
    });
    let (client, log, _) = server.connect(builder).await;
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    match &error {
        ClientError::MissingCallback { method, key } => {
            assert_eq!(
                (method.as_str(), key.as_str()),
                ("sampling/createMessage", "llm")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(error.rpc_error().is_none());
    assert!(error.to_string().contains("no callback"), "{error}");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
    client.close().await.unwrap();
    assert_eq!(log.lock().unwrap().len(), 1);
}

/// A callback error aborts the call locally; it is not dressed up as a server error.
#[tokio::test]
async fn refusing_callback_is_local() {
    let server = FakeServer::start(|m| {
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": {"q": elicit_ok("?")}}),
        )]
    });
    let builder = pinned().on_elicitation(|_c, _p| async {
        Err(ErrorObject::new(
            modelctx::types::ErrorCode(-32001),
            "user is away",
        ))
    });
    let (client, log, _) = server.connect(builder).await;
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::CallbackRefused { key, error, .. }
            if key == "q" && error.message == "user is away"),
        "{error:?}"
    );
    assert!(error.rpc_error().is_none() && !error.is_peer_error());
    client.close().await.unwrap();
    assert_eq!(log.lock().unwrap().len(), 1);
}

/// All input requests of a round run concurrently: each callback waits for the others.
#[tokio::test]
async fn round_callbacks_run_concurrently() {
    let server = FakeServer::start(|m| {
        if m["params"].get("inputResponses").is_some() {
            return vec![result(m, text_result("done"))];
        }
        vec![result(
            m,
            json!({"resultType": "input_required", "inputRequests": {
                "a": elicit_ok("a?"), "b": elicit_ok("b?"), "c": elicit_ok("c?")}}),
        )]
    });
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let builder = pinned().on_elicitation(move |context: modelctx::client::CallbackContext, _p| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            let mut content = serde_json::Map::new();
            content.insert("ok".to_owned(), json!(context.key() == Some("b")));
            Ok(ElicitResult::accept(content))
        }
    });
    let (client, log, _) = server.connect(builder).await;
    let result = tokio::time::timeout(Duration::from_secs(10), client.call_tool("t", json!({})))
        .await
        .expect("sequential callbacks would deadlock on the barrier")
        .unwrap();
    assert_eq!(result.first_text(), Some("done"));
    let retry = &calls(&log)[1];
    assert_eq!(
        retry["params"]["inputResponses"]["b"],
        json!({"action": "accept", "content": {"ok": true}})
    );
    assert_eq!(
        retry["params"]["inputResponses"]["a"],
        json!({"action": "accept", "content": {"ok": false}})
    );
}

/// Parallel calls never see each other's input requests or state.
#[tokio::test]
async fn parallel_calls_are_isolated() {
    const CALLS: usize = 16;
    let server = FakeServer::start(|m| {
        let n = m["params"]["arguments"]["n"].as_u64().unwrap();
        match m["params"].get("requestState").and_then(Value::as_str) {
            None => vec![result(
                m,
                json!({"resultType": "input_required", "requestState": format!("state-{n}"),
                       "inputRequests": {format!("key-{n}"): elicit_ok(&format!("q{n}"))}}),
            )],
            Some(state) => {
                let answered: Vec<&String> = m["params"]["inputResponses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .collect();
                vec![result(m, text_result(&format!("{n}:{state}:{answered:?}")))]
            }
        }
    });
    let (client, log, _) = server.connect(pinned().on_elicitation(accept_ok())).await;
    let tasks: Vec<_> = (0..CALLS)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("iso", json!({ "n": n })).await })
        })
        .collect();
    for (n, task) in tasks.into_iter().enumerate() {
        let result = task.await.unwrap().unwrap();
        assert_eq!(
            result.first_text().unwrap(),
            format!("{n}:state-{n}:[\"key-{n}\"]")
        );
    }
    // Every first request was clean, whatever was in flight around it.
    for call in calls(&log) {
        let params = &call["params"];
        let n = params["arguments"]["n"].as_u64().unwrap();
        if let Some(state) = params.get("requestState") {
            assert_eq!(state, &json!(format!("state-{n}")));
        } else {
            assert!(params.get("inputResponses").is_none());
        }
    }
}

/// `tokio::time::timeout` bounds a whole loop; the client stays usable afterwards.
#[tokio::test(start_paused = true)]
async fn wall_clock_bound_with_tokio_timeout() {
    let (client, log, _) = state_only_server(None)
        .connect(pinned().input_required_max_rounds(1000))
        .await;
    let started = Instant::now();
    let outcome =
        tokio::time::timeout(Duration::from_secs(2), client.call_tool("s", json!({}))).await;
    assert!(outcome.is_err(), "the loop should have been cut off");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    // 50+100+200+250×6 = 1850 ms → 10 requests fit in 2 s.
    assert_eq!(calls(&log).len(), 10);
    // The connection is still good.
    let next = client
        .session()
        .call_tool(CallToolRequestParams::new("s", None), true)
        .await
        .unwrap();
    assert!(matches!(next, RoundOutcome::InputRequired(_)));
}

/// The builder's loop timeout reports a typed error.
#[tokio::test(start_paused = true)]
async fn wall_clock_bound_option() {
    let (client, _log, _) = state_only_server(None)
        .connect(
            pinned()
                .input_required_max_rounds(1000)
                .loop_timeout(Duration::from_secs(1)),
        )
        .await;
    let error = client.call_tool("s", json!({})).await.unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout { operation: "input-required loop", after }
            if after == Duration::from_secs(1)),
        "{error:?}"
    );
}

/// No `resultType` means complete; an unknown one is an error; input_required where none is
/// allowed is an error; an IRR with neither member is an error.
#[tokio::test]
async fn result_type_handling() {
    let server = FakeServer::start(|m| {
        let reply = match m["params"]["name"].as_str() {
            Some("bare") => json!({"content": [{"type": "text", "text": "bare"}]}),
            Some("odd") => json!({"resultType": "task", "content": []}),
            Some("empty") => json!({"resultType": "input_required"}),
            _ if m["method"] == "tools/list" => {
                json!({"resultType": "input_required", "requestState": "x"})
            }
            _ => text_result("?"),
        };
        vec![result(m, reply)]
    });
    let (client, log, _) = server.connect(pinned()).await;
    let bare = client.call_tool("bare", json!({})).await.unwrap();
    assert_eq!(bare.first_text(), Some("bare"));
    assert_eq!(
        calls(&log).len(),
        1,
        "a result without resultType is not retried"
    );

    let odd = client.call_tool("odd", json!({})).await.unwrap_err();
    assert!(
        matches!(&odd, ClientError::InvalidResult(ResultDecodeError::UnknownResultType(t)) if t == "task"),
        "{odd:?}"
    );
    let empty = client.call_tool("empty", json!({})).await.unwrap_err();
    assert!(matches!(
        empty,
        ClientError::InvalidResult(ResultDecodeError::EmptyInputRequired)
    ));
    let listed = client.list_tools().await.unwrap_err();
    assert!(matches!(
        listed,
        ClientError::InvalidResult(ResultDecodeError::InputRequiredNotAllowed(_))
    ));
}

/// A server error inside the loop is the server's error, with its data.
#[tokio::test]
async fn peer_error_mid_loop() {
    let server = FakeServer::start(|m| {
        if m["params"].get("requestState").is_some() {
            return vec![error(
                m,
                -32602,
                "Invalid or expired requestState",
                Some(json!({"reason": "invalid_request_state"})),
            )];
        }
        vec![result(
            m,
            json!({"resultType": "input_required", "requestState": "v1.x",
                   "inputRequests": {"q": elicit_ok("?")}}),
        )]
    });
    let (client, _log, _) = server.connect(pinned().on_elicitation(accept_ok())).await;
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    let rpc = error.rpc_error().unwrap();
    assert_eq!(rpc.code, modelctx::types::ErrorCode::INVALID_PARAMS);
    assert_eq!(rpc.data, Some(json!({"reason": "invalid_request_state"})));
}

/// `get_prompt` and `read_resource` run the same loop, keeping their name / uri.
#[tokio::test]
async fn prompt_and_resource_loops() {
    let server = FakeServer::start(|m| {
        let asked = m["params"].get("inputResponses").is_some();
        let reply = match (m["method"].as_str().unwrap(), asked) {
            (_, false) => json!({"resultType": "input_required", "requestState": "p",
                                 "inputRequests": {"q": elicit_ok("?")}}),
            ("prompts/get", true) => json!({"resultType": "complete", "messages": [
                {"role": "user", "content": {"type": "text",
                 "text": format!("{} {}", m["params"]["name"], m["params"]["arguments"]["topic"])}}]}),
            ("resources/read", true) => json!({"resultType": "complete", "contents": [
                {"uri": m["params"]["uri"], "text": "body"}]}),
            _ => json!({}),
        };
        vec![result(m, reply)]
    });
    let (client, log, _) = server.connect(pinned().on_elicitation(accept_ok())).await;
    let prompt = client
        .get_prompt(
            "brief",
            Some([("topic".to_owned(), "q3".to_owned())].into()),
        )
        .await
        .unwrap();
    let text = serde_json::to_value(&prompt.messages[0].content).unwrap();
    assert_eq!(text["text"], "\"brief\" \"q3\"");
    let resource = client.read_resource("report://q3").await.unwrap();
    assert_eq!(
        serde_json::to_value(&resource.contents).unwrap()[0]["uri"],
        "report://q3"
    );
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 4);
    assert_eq!(log[1]["params"]["name"], "brief");
    assert_eq!(log[1]["params"]["requestState"], "p");
    assert_eq!(log[3]["params"]["uri"], "report://q3");
    assert_eq!(log[3]["params"]["requestState"], "p");
}
