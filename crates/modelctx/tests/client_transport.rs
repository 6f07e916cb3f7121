//! The line transports (stdio process, in-memory pipe) and negotiation: cancellation when a
//! call is dropped, shutdown of a spawned server, era negotiation in every mode, the
//! handshake-era back-channel, progress and notification routing, the manual loop gate.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use modelctx::client::{
    ClientBuilder, ClientError, InputOrigin, Mode, RequestOptions, RoundOutcome,
};
use modelctx::types::{
    CallToolRequestParams, ElicitResult, Era, ErrorObject, ProtocolVersion, RequestId,
};
use modelctx_test_support::client::{
    FakeServer, elicit_ok, error, pinned, python, repo_root, result, text_result,
};
use serde_json::{Value, json};

fn cancel_probe(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(python());
    command
        .arg(repo_root().join("tests/python/client_fixtures/cancel_probe.py"))
        .args(args);
    command
}

/// Dropping a call on stdio sends `notifications/cancelled` for exactly that request.
#[tokio::test]
async fn dropped_call_is_cancelled_over_stdio() {
    let client = pinned().connect_stdio(cancel_probe(&[])).await.unwrap();
    let done = client.call_tool("quick", json!({})).await.unwrap();
    assert_eq!(done.first_text(), Some("quick"));
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        client.call_tool("slow", json!({})),
    )
    .await;
    assert!(abandoned.is_err());
    let cancelled = client.call_tool("cancelled", json!({})).await.unwrap();
    // Request 1 completed, request 2 was abandoned: only 2 is cancelled.
    assert_eq!(cancelled.first_text(), Some("[2]"));
    client.close().await.unwrap();
}

/// The same through the in-memory pipe, dropping the future explicitly mid-loop.
#[tokio::test]
async fn dropped_loop_cancels_the_request_in_flight() {
    let server = FakeServer::start(|m| match m["params"].get("requestState") {
        None if m["method"] == "tools/call" => vec![result(
            m,
            json!({"resultType": "input_required", "requestState": "one"}),
        )],
        // The retry is never answered.
        _ => vec![],
    });
    let (client, _log, mut received) = server.connect(pinned()).await;
    let mut call = Box::pin(client.call_tool("t", json!({})));
    // Drive the call until the server has seen the first request and its retry.
    let (first, retry) = tokio::select! {
        _ = &mut call => unreachable!("the retry is never answered"),
        pair = async {
            (received.recv().await.unwrap(), received.recv().await.unwrap())
        } => pair,
    };
    assert_ne!(first["id"], retry["id"]);
    drop(call);
    // The dropped call cancels its retry.
    let cancel = tokio::time::timeout(Duration::from_secs(5), received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], retry["id"]);
    assert!(cancel["params"]["reason"].is_string());
}

/// Closing closes stdin and waits for the server to exit.
#[tokio::test]
async fn close_stdio_ends_the_server() {
    let client = pinned()
        .shutdown_grace(Duration::from_secs(10))
        .connect_stdio(cancel_probe(&[]))
        .await
        .unwrap();
    client.call_tool("x", json!({})).await.unwrap();
    let started = Instant::now();
    client.close().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A server that ignores EOF gets SIGTERM after the grace period; one that also ignores
/// SIGTERM is killed after a second grace period.
#[tokio::test]
async fn close_stdio_escalates() {
    let grace = Duration::from_millis(300);
    let client = pinned()
        .shutdown_grace(grace)
        .connect_stdio(cancel_probe(&["--ignore-eof"]))
        .await
        .unwrap();
    client.call_tool("x", json!({})).await.unwrap();
    let started = Instant::now();
    client.close().await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= grace && elapsed < grace * 2 + Duration::from_secs(2),
        "{elapsed:?}"
    );

    let client = pinned()
        .shutdown_grace(grace)
        .connect_stdio(cancel_probe(&["--ignore-eof", "--ignore-term"]))
        .await
        .unwrap();
    client.call_tool("x", json!({})).await.unwrap();
    let started = Instant::now();
    client.close().await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= grace * 2 && elapsed < grace * 2 + Duration::from_secs(3),
        "{elapsed:?}"
    );
}

/// A server whose process cannot be spawned is a transport error.
#[tokio::test]
async fn spawn_failure_is_a_transport_error() {
    let error = pinned()
        .connect_stdio(tokio::process::Command::new("/nonexistent/mcp-server"))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
}

fn discover_ok(m: &Value) -> Value {
    result(
        m,
        json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
               "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
               "instructions": "be nice",
               "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "Fake", "version": "9"}}}),
    )
}

fn initialize_ok(m: &Value, version: &str) -> Value {
    result(
        m,
        json!({"protocolVersion": version, "capabilities": {"tools": {}},
               "serverInfo": {"name": "Old", "version": "1"}}),
    )
}

#[tokio::test]
async fn auto_adopts_discover() {
    let server = FakeServer::start(|m| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        _ => vec![result(m, text_result("ok"))],
    });
    let (client, log, _) = server.connect(ClientBuilder::new()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.server_info().unwrap().name, "Fake");
    assert_eq!(client.instructions().as_deref(), Some("be nice"));
    client.call_tool("t", json!({})).await.unwrap();
    let log = log.lock().unwrap();
    let meta = &log[0]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // No callbacks, no capabilities.
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(log.len(), 2);
}

/// Any non-transport failure of the probe falls back to `initialize` (not keyed to one code).
#[tokio::test]
async fn auto_falls_back_on_any_probe_failure() {
    let answers: Vec<fn(&Value) -> Value> = vec![
        |m| {
            error(
                m,
                -32601,
                "Method not found",
                Some(json!("server/discover")),
            )
        },
        |m| error(m, -32600, "Bad Request: Missing session ID", None),
        |m| error(m, -32602, "Invalid params", None),
        |m| {
            result(
                m,
                json!({"resultType": "complete", "supportedVersions": ["2025-11-25"],
                             "capabilities": {}}),
            )
        },
        |m| result(m, json!({"unexpected": true})),
    ];
    for answer in answers {
        let server = FakeServer::start(move |m| match m["method"].as_str() {
            Some("server/discover") => vec![answer(m)],
            Some("initialize") => vec![initialize_ok(m, "2025-06-18")],
            Some("tools/call") => vec![result(m, json!({"content": []}))],
            _ => vec![],
        });
        let (client, log, _) = server.connect(ClientBuilder::new()).await;
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_06_18);
        assert_eq!(client.era(), Era::Handshake);
        client.call_tool("t", json!({})).await.unwrap();
        let log = log.lock().unwrap();
        let methods: Vec<_> = log.iter().map(|m| m["method"].clone()).collect();
        assert_eq!(
            methods,
            [
                json!("server/discover"),
                json!("initialize"),
                json!("notifications/initialized"),
                json!("tools/call")
            ]
        );
        // Handshake-era requests carry no 2026 envelope.
        assert!(log[3]["params"].get("_meta").is_none(), "{}", log[3]);
        assert_eq!(log[1]["params"]["protocolVersion"], "2025-11-25");
    }
}

/// A probe that never answers times out and falls back; the probe is cancelled.
#[tokio::test(start_paused = true)]
async fn probe_timeout_falls_back() {
    let server = FakeServer::start(|m| match m["method"].as_str() {
        Some("initialize") => vec![initialize_ok(m, "2025-11-25")],
        _ => vec![],
    });
    let (client, log, _) = server
        .connect(ClientBuilder::new().probe_timeout(Duration::from_secs(3)))
        .await;
    assert_eq!(client.era(), Era::Handshake);
    let log = log.lock().unwrap();
    assert_eq!(log[0]["method"], "server/discover");
    assert_eq!(log[1]["method"], "notifications/cancelled");
    assert_eq!(log[1]["params"]["requestId"], log[0]["id"]);
    assert_eq!(log[2]["method"], "initialize");
}

/// -32022 naming a mutual version re-probes once; a disjoint 2026-only list fails.
#[tokio::test]
async fn auto_handles_unsupported_version() {
    let first = Arc::new(Mutex::new(true));
    let server = FakeServer::start(move |m| match m["method"].as_str() {
        Some("server/discover") if std::mem::replace(&mut *first.lock().unwrap(), false) => {
            vec![error(
                m,
                -32022,
                "Unsupported protocol version",
                Some(json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})),
            )]
        }
        Some("server/discover") => vec![discover_ok(m)],
        _ => vec![],
    });
    let (client, log, _) = server.connect(ClientBuilder::new()).await;
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(log.lock().unwrap().len(), 2);

    let server = FakeServer::start(|m| {
        vec![error(
            m,
            -32022,
            "Unsupported protocol version",
            Some(json!({"supported": ["2099-01-01"], "requested": "2026-07-28"})),
        )]
    });
    let error = ClientBuilder::new()
        .connect_io(server.reader, server.writer)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Negotiation(_)), "{error:?}");
}

/// On a 2026 connection, -32022 on a request switches to a mutual version and re-sends once.
#[tokio::test]
async fn request_retries_once_on_unsupported_version() {
    let count = Arc::new(Mutex::new(0));
    let server = FakeServer::start(move |m| {
        let mut count = count.lock().unwrap();
        *count += 1;
        if *count == 3 {
            return vec![result(m, text_result("ok"))];
        }
        vec![error(
            m,
            -32022,
            "Unsupported protocol version",
            Some(json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})),
        )]
    });
    let (client, log, _) = server.connect(pinned()).await;
    // First call: rejected twice (the one retry is spent) → the server's error.
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(
        error.rpc_code(),
        Some(modelctx::types::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
    );
    // Second call: the third answer succeeds.
    client.call_tool("t", json!({})).await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 3);
    assert_ne!(log[0]["id"], log[1]["id"]);
}

#[tokio::test]
async fn handshake_refuses_a_modern_answer_to_initialize() {
    let server = FakeServer::start(|m| vec![initialize_ok(m, "2026-07-28")]);
    let error = ClientBuilder::new()
        .mode(Mode::Handshake)
        .connect_io(server.reader, server.writer)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Negotiation(_)), "{error:?}");
}

#[tokio::test]
async fn pinned_rejects_a_handshake_version() {
    let server = FakeServer::start(|_| vec![]);
    let error = ClientBuilder::new()
        .mode(Mode::Pinned(ProtocolVersion::V2025_11_25))
        .connect_io(server.reader, server.writer)
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::InvalidArgument(_)),
        "{error:?}"
    );
}

/// The handshake era's back-channel over a line transport: server requests reach the same
/// callbacks (with the JSON-RPC id), `ping` is answered, a missing callback is an error
/// response.
#[tokio::test]
async fn handshake_back_channel() {
    let pending: Arc<Mutex<Option<Value>>> = Arc::default();
    let server = FakeServer::start(move |m| {
        let mut pending = pending.lock().unwrap();
        match (m.get("method").and_then(Value::as_str), m.get("id")) {
            (Some("initialize"), _) => vec![initialize_ok(m, "2025-11-25")],
            (Some("tools/call"), _) => {
                *pending = Some(m.clone());
                let method = if m["params"]["name"] == "sample" {
                    json!({"jsonrpc": "2.0", "id": "srv-2", "method": "sampling/createMessage",
                           "params": {"maxTokens": 5, "messages": []}})
                } else {
                    json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                           "params": elicit_ok("ok?")["params"]})
                };
                vec![
                    json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}),
                    method,
                ]
            }
            (None, Some(id)) if id == "srv-1" || id == "srv-2" => {
                let call = pending.take().unwrap();
                let answer = m.get("result").or_else(|| m.get("error")).unwrap();
                vec![result(&call, text_result(&answer.to_string()))]
            }
            _ => vec![],
        }
    });
    let seen: Arc<Mutex<Vec<InputOrigin>>> = Arc::default();
    let record = Arc::clone(&seen);
    let builder = ClientBuilder::new().mode(Mode::Handshake).on_elicitation(
        move |context: modelctx::client::CallbackContext, _params| {
            record.lock().unwrap().push(context.origin().clone());
            async { Ok(ElicitResult::decline()) }
        },
    );
    let (client, log, _) = server.connect(builder).await;
    let answered = client.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(answered.first_text(), Some(r#"{"action":"decline"}"#));
    assert_eq!(
        *seen.lock().unwrap(),
        [InputOrigin::ServerRequest {
            id: RequestId::from("srv-1")
        }]
    );
    let refused = client.call_tool("sample", json!({})).await.unwrap();
    let refusal: Value = serde_json::from_str(refused.first_text().unwrap()).unwrap();
    assert_eq!(refusal["code"], -32600);
    assert_eq!(refusal["message"], "Sampling not supported");
    let log = log.lock().unwrap();
    let pong = log.iter().find(|m| m["id"] == 99).expect("ping answered");
    assert_eq!(pong["result"], json!({}));
}

/// Progress notifications reach the request that asked for them; other notifications reach
/// the notification callback; the log level opt-in travels in `_meta`.
#[tokio::test]
async fn progress_and_notifications() {
    let server = FakeServer::start(|m| {
        let token = m["params"]["_meta"]["progressToken"].clone();
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": token, "progress": 1, "total": 2}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "data": "hello"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": token, "progress": 2, "total": 2}}),
            result(m, text_result("done")),
        ]
    });
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&notes);
    let builder = pinned()
        .log_level(modelctx::types::LoggingLevel::Info)
        .on_notification(move |n: &modelctx::types::jsonrpc::Notification| {
            record.lock().unwrap().push(n.method.clone());
        });
    let (client, log, _) = server.connect(builder).await;
    let progress: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&progress);
    let options = RequestOptions::new().on_progress(move |p| {
        record.lock().unwrap().push(p.progress.to_string());
    });
    client
        .call_tool_with(CallToolRequestParams::new("t", None), options)
        .await
        .unwrap();
    assert_eq!(*progress.lock().unwrap(), ["1", "2"]);
    assert_eq!(*notes.lock().unwrap(), ["notifications/message"]);
    // The request opted in to log messages.
    assert_eq!(
        log.lock().unwrap()[0]["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "info"
    );
}

/// Session-level calls: without `allow_input_required` an input-required result is an error
/// that still carries the result.
#[tokio::test]
async fn manual_loop_gate() {
    let server = FakeServer::start(|m| {
        vec![result(
            m,
            json!({"resultType": "input_required", "requestState": "s",
                   "inputRequests": {"q": elicit_ok("?")}}),
        )]
    });
    let (client, _log, _) = server.connect(pinned()).await;
    let params = CallToolRequestParams::new("t", None);
    let error = client
        .session()
        .call_tool(params.clone(), false)
        .await
        .unwrap_err();
    match error {
        ClientError::InputRequired(result) => {
            assert_eq!(result.request_state.as_deref(), Some("s"));
        }
        other => panic!("{other:?}"),
    }
    let outcome = client.session().call_tool(params, true).await.unwrap();
    assert!(matches!(outcome, RoundOutcome::InputRequired(r) if r.input_requests.is_some()));
}

/// Requests fail fast with a transport error once the server is gone.
#[tokio::test]
async fn server_hangup_fails_pending_and_new_requests() {
    let server = FakeServer::start(|m| {
        if m["params"]["name"] == "bye" {
            // Returning nothing and dropping the pipe is simulated by panicking the task.
            panic!("server goes away");
        }
        vec![]
    });
    let (client, _log, _) = server.connect(pinned()).await;
    let error = client.call_tool("bye", json!({})).await.unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
    let error = client.call_tool("again", json!({})).await.unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
}

/// A refusing callback in the handshake era answers the server with the callback's error.
#[tokio::test]
async fn handshake_callback_error_is_sent_to_the_server() {
    let server = FakeServer::start(|m| match m.get("method").and_then(Value::as_str) {
        Some("initialize") => vec![initialize_ok(m, "2025-11-25")],
        Some("tools/call") => vec![json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"})],
        _ => vec![],
    });
    let builder = ClientBuilder::new()
        .mode(Mode::Handshake)
        .on_list_roots(|_context| async {
            Err(ErrorObject::new(
                modelctx::types::ErrorCode(-32001),
                "no roots for you",
            ))
        });
    let (client, _log, mut received) = server.connect(builder).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("t", json!({})).await }
    });
    let reply = loop {
        let message = received.recv().await.unwrap();
        if message["id"] == 7 {
            break message;
        }
    };
    assert_eq!(reply["error"]["code"], -32001);
    assert_eq!(reply["error"]["message"], "no roots for you");
    call.abort();
}
