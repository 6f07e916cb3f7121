//! The bridge: a low-level handler written for 2026-07-28 (it asks by
//! returning an `InputRequiredResult`) served to a 2025-11-25 session. The SDK asks over the
//! back-channel — form and URL elicitation, sampling, roots — and calls the handler again with
//! the answers and its plaintext state (never sealed, opened or redeemed: it does not leave the
//! process), within the round limit; only declared capabilities are asked, by the same rule as
//! on 2026-07-28, and cancelling the call cancels the question in flight.

// Test helpers take JSON values by value: they are built inline with `json!`.
#![allow(clippy::needless_pass_by_value)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx::seal::{
    Codec, InvalidRequestState, Reason, ReplayKey, RequestStateSecurity, SealError,
};
use modelctx::server::single_use::{Redemption, ReplayGuard, ReplayGuardError, SingleUse};
use modelctx::server::{RequestContext, Server, ServerBuilder};
use modelctx::types::*;
use modelctx::uri_template::UriVariables;
use modelctx_test_support::server::{HttpPeer, StdioPeer, object};
use serde_json::{Value, json};

/// A codec that keeps every payload it seals in the clear (base64), so a test can see what the
/// bridge seals and opens: nothing, since a bridged round's state never leaves the process.
#[derive(Debug, Default)]
struct Recording {
    sealed: Mutex<Vec<String>>,
    opened: AtomicUsize,
}

impl Codec for Recording {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        self.sealed
            .lock()
            .map_err(|_| SealError::codec("the recording is poisoned"))?
            .push(String::from_utf8_lossy(payload).into_owned());
        Ok(format!("t.{}", URL_SAFE_NO_PAD.encode(payload)))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        self.opened.fetch_add(1, Ordering::Relaxed);
        token
            .strip_prefix("t.")
            .and_then(|t| URL_SAFE_NO_PAD.decode(t).ok())
            .ok_or_else(|| InvalidRequestState::new(Reason::Malformed))
    }
}

fn form(message: &str, field: &str, schema: Value) -> InputRequest {
    let schema: ElicitationSchema = serde_json::from_value(
        json!({"type": "object", "properties": {field: schema}, "required": [field]}),
    )
    .unwrap();
    InputRequest::elicit(ElicitRequestFormParams::new(message, schema))
}

fn answer(params: &impl InputResponseParams, key: &str) -> Option<InputResponse> {
    params.input_responses()?.get(key).cloned()
}

fn tool(name: &str) -> Tool {
    Tool::new(name, object(json!({"type": "object"})))
}

/// A server whose handlers only know the 2026-07-28 way of asking.
fn server(codec: Arc<Recording>) -> Server {
    builder(codec).build().unwrap()
}

fn builder(codec: Arc<Recording>) -> ServerBuilder {
    Server::builder("bridge-test", "1.0.0")
        .seal_request_state(RequestStateSecurity::with_codec(codec))
        // One form question, then the result; the state says what was asked.
        .tool(
            tool("provision"),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let region = answer(&params, "region").and_then(|a| a.as_elicit().ok());
                match (params.request_state.as_deref(), region) {
                    (Some("asked:region"), Some(region)) => {
                        let region = region.content.unwrap_or_default()["region"].clone();
                        Outcome::Complete(CallToolResult::text(format!(
                            "provisioned in {region} ({})",
                            ctx.protocol_version()
                        )))
                    }
                    _ => Outcome::InputRequired(
                        InputRequiredResult::new()
                            .with_request(
                                "region",
                                form(
                                    "Which region?",
                                    "region",
                                    json!({"type": "string", "minLength": 2}),
                                ),
                            )
                            .with_state("asked:region"),
                    ),
                }
            },
        )
        // Three kinds of question in one round, URL mode among them.
        .tool(
            tool("connect"),
            |_ctx, params: CallToolRequestParams| async move {
                if params.request_state.as_deref() == Some("asked:three") {
                    let consent = answer(&params, "consent").and_then(|a| a.as_elicit().ok());
                    let model = answer(&params, "model")
                        .and_then(|a| serde_json::from_value::<CreateMessageResult>(a.0).ok());
                    let roots = answer(&params, "roots")
                        .and_then(|a| serde_json::from_value::<ListRootsResult>(a.0).ok());
                    return Outcome::Complete(CallToolResult::text(format!(
                        "consent {:?}, model {}, {} root(s)",
                        consent.map(|c| c.action),
                        model.map(|m| m.model).unwrap_or_default(),
                        roots.map_or(0, |r| r.roots.len())
                    )));
                }
                Outcome::InputRequired(
                    InputRequiredResult::new()
                        .with_request(
                            "consent",
                            InputRequest::elicit(ElicitRequestUrlParams::new(
                                "Sign in",
                                "https://accounts.example.com/connect",
                            )),
                        )
                        .with_request(
                            "model",
                            InputRequest::create_message(CreateMessageRequestParams::new(
                                vec![SamplingMessage::user_text("hi")],
                                10,
                            )),
                        )
                        .with_request("roots", InputRequest::list_roots())
                        .with_state("asked:three"),
                )
            },
        )
        // Three state-only rounds ("not yet"), then the result.
        .tool(
            tool("waits"),
            |_ctx, params: CallToolRequestParams| async move {
                let waited: u32 = params
                    .request_state
                    .as_deref()
                    .and_then(|s| s.strip_prefix("waited:"))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                if waited == 3 {
                    Outcome::Complete(CallToolResult::text("ready after 3 waits"))
                } else {
                    Outcome::InputRequired(
                        InputRequiredResult::new().with_state(format!("waited:{}", waited + 1)),
                    )
                }
            },
        )
        // Asks again, whatever the answer.
        .tool(
            tool("insists"),
            |_ctx, _params: CallToolRequestParams| async move {
                InputRequiredResult::new()
                    .with_request("again", form("Again?", "ok", json!({"type": "boolean"})))
            },
        )
        .prompt(
            Prompt::new("brief"),
            |_ctx, params: GetPromptRequestParams| async move {
                match answer(&params, "audience").and_then(|a| a.as_elicit().ok()) {
                    Some(audience) if params.request_state.as_deref() == Some("asked:audience") => {
                        let audience = audience.content.unwrap_or_default()["audience"].clone();
                        Outcome::Complete(GetPromptResult::new(vec![PromptMessage::new(
                            Role::USER,
                            ContentBlock::text(format!("Brief {audience}.")),
                        )]))
                    }
                    _ => Outcome::InputRequired(
                        InputRequiredResult::new()
                            .with_request(
                                "audience",
                                form("Who for?", "audience", json!({"type": "string"})),
                            )
                            .with_state("asked:audience"),
                    ),
                }
            },
        )
        .resource_template(
            ResourceTemplate::new("report://{quarter}", "report"),
            |_ctx, params: ReadResourceRequestParams, vars: UriVariables| async move {
                match answer(&params, "roots") {
                    Some(_) if params.request_state.as_deref() == Some("asked:roots") => {
                        Outcome::Complete(ReadResourceResult::new(vec![ResourceContents::text(
                            params.uri,
                            None,
                            format!("report {}", vars["quarter"]),
                        )]))
                    }
                    _ => Outcome::InputRequired(
                        InputRequiredResult::new()
                            .with_request("roots", InputRequest::list_roots())
                            .with_state("asked:roots"),
                    ),
                }
            },
        )
        // Asks the client's model directly, with a tool choice but no tools.
        .tool(
            tool("choose"),
            |ctx: RequestContext, _params: CallToolRequestParams| async move {
                let mut params =
                    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("pick")], 10);
                params.tool_choice = Some(serde_json::from_value(json!({"mode": "auto"})).unwrap());
                let answer = ctx.create_message(&params).await?;
                Ok::<_, ErrorObject>(CallToolResult::text(answer.model))
            },
        )
}

const EVERYTHING: &str = r#"{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}"#;

/// A handshake-era session on the in-memory stdio pipe, with these client capabilities.
async fn session(codec: Arc<Recording>, capabilities: &str) -> StdioPeer {
    session_on(server(codec), capabilities).await
}

/// A handshake-era session with `server`.
async fn session_on(server: Server, capabilities: &str) -> StdioPeer {
    let mut peer = StdioPeer::start(server);
    let capabilities: Value = serde_json::from_str(capabilities).unwrap();
    let (init, _) = peer
        .request(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "legacy", "version": "0"}}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    peer
}

fn call(id: i64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": {}}})
}

/// Reads the next server→client request, checks its method and answers it with `result`.
async fn answer_next(peer: &mut StdioPeer, method: &str, result: Value) -> Value {
    let ask = peer.next().await.unwrap();
    assert_eq!(ask["method"], method, "{ask}");
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": result}))
        .await;
    ask
}

#[tokio::test]
async fn an_input_required_result_is_asked_over_the_back_channel_with_its_plain_state() {
    let codec = Arc::new(Recording::default());
    let guard = Arc::new(Counting::default());
    let server = builder(Arc::clone(&codec))
        .single_use(Arc::clone(&guard) as Arc<dyn ReplayGuard>, SingleUse::All)
        .build()
        .unwrap();
    let mut peer = session_on(server, EVERYTHING).await;
    peer.send(&call(1, "provision")).await;
    let ask = answer_next(
        &mut peer,
        "elicitation/create",
        json!({"action": "accept", "content": {"region": "eu-west-1"}}),
    )
    .await;
    assert_eq!(ask["params"]["message"], "Which region?");
    assert_eq!(
        ask["params"]["requestedSchema"]["required"],
        json!(["region"])
    );
    let result = peer.next().await.unwrap();
    assert_eq!(result["id"], 1);
    assert_eq!(
        result["result"],
        json!({"content": [{"type": "text", "text": "provisioned in \"eu-west-1\" (2025-11-25)"}],
               "isError": false})
    );
    // The handler's state went straight to its next call: it never left the process, so it
    // was neither sealed nor opened, nor redeemed in the replay guard though single use is on
    // (a Redis write per round, guard capacity, a possible `-32603` after the user answered).
    assert!(codec.sealed.lock().unwrap().is_empty());
    assert_eq!(codec.opened.load(Ordering::Relaxed), 0);
    assert_eq!(guard.0.load(Ordering::SeqCst), 0);

    // An answer that breaks the form's schema never reaches the handler.
    peer.send(&call(2, "provision")).await;
    answer_next(
        &mut peer,
        "elicitation/create",
        json!({"action": "accept", "content": {"region": "x"}}),
    )
    .await;
    let refused = peer.next().await.unwrap();
    assert_eq!(refused["id"], 2);
    assert_eq!(refused["error"]["code"], -32603);
    assert!(
        refused["error"]["message"].as_str().unwrap().starts_with(
            "the client's answer to elicitation/create does not match the requested schema"
        ),
        "{refused}"
    );
    peer.close().await.unwrap();
}

#[tokio::test]
async fn url_sampling_and_roots_in_one_round_and_the_url_is_announced_complete() {
    let mut peer = session(Arc::new(Recording::default()), EVERYTHING).await;
    peer.send(&call(1, "connect")).await;
    // One question at a time, in key order.
    let url = answer_next(&mut peer, "elicitation/create", json!({"action": "accept"})).await;
    assert_eq!(url["params"]["mode"], "url");
    assert_eq!(url["params"]["url"], "https://accounts.example.com/connect");
    let elicitation_id = url["params"]["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(elicitation_id.len(), 32, "128 random bits");
    answer_next(
        &mut peer,
        "sampling/createMessage",
        json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m-1"}),
    )
    .await;
    answer_next(
        &mut peer,
        "roots/list",
        json!({"roots": [{"uri": "file:///tmp"}]}),
    )
    .await;
    let complete = peer.next().await.unwrap();
    assert_eq!(
        complete,
        json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
               "params": {"elicitationId": elicitation_id}})
    );
    let result = peer.next().await.unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"],
        "consent Some(Accept), model m-1, 1 root(s)"
    );
    // A new URL elicitation gets a new id.
    peer.send(&call(2, "connect")).await;
    let again = answer_next(
        &mut peer,
        "elicitation/create",
        json!({"action": "decline"}),
    )
    .await;
    assert_ne!(again["params"]["elicitationId"], json!(elicitation_id));
    answer_next(
        &mut peer,
        "sampling/createMessage",
        json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m-2"}),
    )
    .await;
    answer_next(&mut peer, "roots/list", json!({"roots": []})).await;
    // Declined: nothing to announce.
    let result = peer.next().await.unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"],
        "consent Some(Decline), model m-2, 0 root(s)"
    );
    peer.close().await.unwrap();
}

#[tokio::test]
async fn prompts_and_templates_are_bridged_too() {
    let mut peer = session(Arc::new(Recording::default()), EVERYTHING).await;
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "brief"}}),
    )
    .await;
    answer_next(
        &mut peer,
        "elicitation/create",
        json!({"action": "accept", "content": {"audience": "the board"}}),
    )
    .await;
    let prompt = peer.next().await.unwrap();
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"],
        "Brief \"the board\"."
    );
    peer.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "report://q3"}}))
        .await;
    answer_next(&mut peer, "roots/list", json!({"roots": []})).await;
    let read = peer.next().await.unwrap();
    assert_eq!(read["result"]["contents"][0]["text"], "report q3");
    assert!(read["result"].get("resultType").is_none());
    peer.close().await.unwrap();
}

#[tokio::test]
async fn only_declared_capabilities_are_asked() {
    // Form elicitation only: the URL, sampling and roots questions are refused before anything
    // is sent, with the error the 2026-07-28 path gives.
    let mut peer = session(Arc::new(Recording::default()), r#"{"elicitation":{}}"#).await;
    let (refused, before) = peer.request(&call(1, "connect")).await;
    assert!(before.is_empty(), "nothing is asked: {before:?}");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}, "sampling": {}, "roots": {}})
    );
    // No capabilities at all: not even a form.
    let mut peer = session(Arc::new(Recording::default()), "{}").await;
    let (refused, before) = peer.request(&call(1, "provision")).await;
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(
        refused["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
    );
    peer.close().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn state_only_rounds_wait_and_the_round_limit_holds() {
    let mut peer = session(Arc::new(Recording::default()), EVERYTHING).await;
    let started = tokio::time::Instant::now();
    let (ready, before) = peer.request(&call(1, "waits")).await;
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(ready["result"]["content"][0]["text"], "ready after 3 waits");
    // 50 + 100 + 200 ms, as the client loop waits (virtual time).
    assert_eq!(started.elapsed().as_millis(), 350);

    // A handler that never stops asking: every round is asked, up to the limit, then the call
    // fails without asking once more.
    peer.send(&call(2, "insists")).await;
    for _ in 0..16 {
        answer_next(
            &mut peer,
            "elicitation/create",
            json!({"action": "accept", "content": {"ok": true}}),
        )
        .await;
    }
    let failed = peer.next().await.unwrap();
    assert_eq!(failed["id"], 2, "{failed}");
    assert_eq!(
        failed["error"],
        json!({"code": -32603, "message": "the handler asked for input more than 16 times"})
    );
    peer.close().await.unwrap();
}

#[tokio::test]
async fn cancelling_the_call_cancels_the_question_in_flight() {
    let mut peer = session(Arc::new(Recording::default()), EVERYTHING).await;
    peer.send(&call(7, "provision")).await;
    let ask = peer.next().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 7, "reason": "user gave up"}}),
    )
    .await;
    let cancelled = peer.next().await.unwrap();
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], ask["id"]);
    // A late answer is ignored, the cancelled call gets no response, and the server serves on.
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                      "result": {"action": "accept", "content": {"region": "eu-west-1"}}}))
        .await;
    let (pong, before) = peer
        .request(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
        .await;
    assert!(
        before.is_empty(),
        "nothing more for the cancelled call: {before:?}"
    );
    assert_eq!(pong["result"], json!({}));
    peer.close().await.unwrap();
}

/// The bridge over streamable HTTP, driven by our client in 2025-11-25 mode: the questions ride
/// the call's SSE stream, the answers come back as POSTs.
#[tokio::test]
async fn the_bridge_over_streamable_http() {
    let peer = HttpPeer::start(server(Arc::new(Recording::default()))).await;
    let client = modelctx::client::Client::builder()
        .mode(modelctx::client::Mode::Handshake)
        .on_elicitation(|_ctx, params: ElicitRequestParams| async move {
            let mut content = Extra::new();
            if let ElicitRequestParams::Form(_) = params {
                content.insert("region".into(), json!("ap-south-1"));
            }
            Ok::<_, ErrorObject>(ElicitResult::accept(content))
        })
        .connect_http(&peer.url)
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Handshake);
    let result = client.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(
        result.first_text(),
        Some("provisioned in \"ap-south-1\" (2025-11-25)")
    );
    client.close().await.unwrap();
}

/// Counts redemptions; never refuses.
#[derive(Debug, Default)]
struct Counting(AtomicUsize);

impl ReplayGuard for Counting {
    fn redeem<'a>(
        &'a self,
        _key: &'a ReplayKey,
        _expires_at: std::time::SystemTime,
    ) -> futures::future::BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(Redemption::First) })
    }
}

/// A sampling request with a tool choice needs `sampling.tools`, whichever way it is asked: the
/// back-channel applies the rule an `InputRequiredResult` is checked by.
#[tokio::test]
async fn a_tool_choice_needs_sampling_tools_on_the_back_channel_too() {
    let mut peer = session(Arc::new(Recording::default()), r#"{"sampling":{}}"#).await;
    peer.send(&call(1, "choose")).await;
    let next = peer.next().await.unwrap();
    assert_eq!(next["id"], 1, "nothing is asked: {next}");
    assert_eq!(next["error"]["code"], -32021, "{next}");
    assert_eq!(
        next["error"]["message"],
        "Client did not declare the sampling.tools capability required by this request"
    );
    assert_eq!(
        next["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {"tools": {}}})
    );
    peer.close().await.unwrap();
}

/// A task tool run synchronously on a handshake-era session asks over the back-channel; a
/// question the client did not declare it can answer is `-32021` with
/// `data.requiredCapabilities`, as the resolvers and the bridge answer (it used to be `-32600`).
#[tokio::test]
async fn a_task_tool_asking_an_undeclared_capability_is_32021() {
    use modelctx::server::tasks::{MemoryTaskStore, TaskContext, TaskInput, TaskStep, TaskTool};
    let asks = TaskTool::new(
        tool("long_report"),
        |_ctx: TaskContext, _input: TaskInput| async move {
            TaskStep::ask(
                "format",
                form("Which format?", "format", json!({"type": "string"})),
            )
        },
    );
    let tasks = modelctx::server::tasks::Tasks::builder(MemoryTaskStore::new())
        .tool(asks)
        .build();
    let server = Server::builder("capabilities", "1.0.0")
        .tasks(tasks)
        .build()
        .unwrap();
    let mut peer = session_on(server, r#"{"sampling":{}}"#).await;
    peer.send(&call(1, "long_report")).await;
    let reply = peer.next().await.unwrap();
    assert_eq!(reply["id"], 1, "nothing is asked: {reply}");
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert_eq!(
        reply["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}}),
        "{reply}"
    );
    peer.close().await.unwrap();
}

/// Task tools run synchronously for a handshake-era session count their rounds as the bridge
/// does: the limit is checked before a round is asked, so a tool that is done after the 16th
/// answer gets it, and one that keeps asking fails without a 17th question. The preflight's
/// rounds and the handler's count together.
#[tokio::test]
async fn task_tools_count_rounds_like_the_bridge() {
    use modelctx::server::tasks::{
        MemoryTaskStore, Preflight, TaskContext, TaskInput, TaskStep, TaskTool,
    };
    fn question(n: usize) -> InputRequest {
        form(&format!("Question {n}?"), "ok", json!({"type": "boolean"}))
    }
    /// Asks one question a round until it holds `wanted` answers.
    fn asks(name: &str, wanted: usize) -> TaskTool {
        TaskTool::new(
            tool(name),
            move |_ctx: TaskContext, input: TaskInput| async move {
                let n = input.responses.len();
                if n == wanted {
                    TaskStep::Complete(CallToolResult::text(format!("{n} answers")))
                } else {
                    TaskStep::ask(format!("q{n}"), question(n))
                }
            },
        )
    }
    let tasks = modelctx::server::tasks::Tasks::builder(MemoryTaskStore::new())
        .tool(asks("sixteen", 16))
        .tool(asks("seventeen", 17))
        .tool(
            asks("checked", 0).preflight(|_ctx, params: CallToolRequestParams| async move {
                let n: usize = params.request_state.map_or(0, |s| s.parse().unwrap());
                if n == 16 {
                    return Preflight::Start(None);
                }
                Preflight::Ask(
                    InputRequiredResult::new()
                        .with_request(format!("p{n}"), question(n))
                        .with_state((n + 1).to_string()),
                )
            }),
        )
        .build();
    let server = Server::builder("rounds", "1.0.0")
        .tasks(tasks)
        .build()
        .unwrap();
    let mut peer = session_on(server, r#"{"elicitation":{}}"#).await;
    let yes = json!({"action": "accept", "content": {"ok": true}});
    for (id, name, outcome) in [
        (
            1,
            "sixteen",
            json!({"content": [{"type": "text", "text": "16 answers"}], "isError": false}),
        ),
        (
            2,
            "checked",
            json!({"content": [{"type": "text", "text": "0 answers"}], "isError": false}),
        ),
        (
            3,
            "seventeen",
            json!({"code": -32603, "message": "the handler asked for input more than 16 times"}),
        ),
    ] {
        peer.send(&call(id, name)).await;
        for _ in 0..16 {
            answer_next(&mut peer, "elicitation/create", yes.clone()).await;
        }
        let reply = peer.next().await.unwrap();
        assert_eq!(reply["id"], id, "{name}: no 17th question: {reply}");
        let got = reply.get("result").or(reply.get("error")).unwrap();
        assert_eq!(got, &outcome, "{name}");
    }
    peer.close().await.unwrap();
}

/// A client that cannot answer a question answers it with an error, e.g. `-32601 Method not
/// found` from a client without an elicitation handler (the TypeScript SDK). Passed on as it
/// was, that code became the whole `tools/call`'s, as if the method did not exist. The call
/// fails with `-32603` naming the input request and the method the client failed; the client's
/// error stays in `data.clientError`.
#[tokio::test]
async fn a_question_the_client_fails_names_the_input_request() {
    let mut peer = session(Arc::new(Recording::default()), r#"{"elicitation":{}}"#).await;
    peer.send(&call(1, "provision")).await;
    let ask = peer.next().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let refused = json!({"code": -32601, "message": "Method not found"});
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "error": refused}))
        .await;
    let reply = peer.next().await.unwrap();
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(
        reply["error"]["message"],
        "The client could not answer input request 'region' (elicitation/create): Method not \
         found (-32601)"
    );
    assert_eq!(reply["error"]["data"]["clientError"], refused);
    peer.close().await.unwrap();
}
