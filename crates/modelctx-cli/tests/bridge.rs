//! `mcp bridge URL` (issue 36, shape 1) and `mcp serve demo --protocol` (one era only), end to
//! end: the demo served 2026-07-28-only over HTTP on 127.0.0.1 is the upstream; the hosts are our
//! own client over stdio in either era and the TypeScript SDK v1 1.32.2 client (what hosts ship,
//! installed by `scripts/ts-sdk-env.sh`).

use std::process::{Command, Stdio};
use std::time::Duration;

use std::sync::{Arc, Mutex};

use modelctx::client::{CallbackContext, Client, ClientBuilder, InputOrigin, Mode, RequestOptions};
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    CreateMessageResult, ElicitRequestParams, ElicitResult, Era, ErrorObject, ListRootsResult,
    LoggingLevel, Root, Tool,
};
use modelctx_test_support::cli::{HttpServer, repo_root};
use serde_json::{Value, json};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// How long any one step may take before the test fails (never reached when things work).
const BOUND: Duration = Duration::from_secs(30);

/// `mcp serve demo --http 0 --protocol VERSION`.
fn demo(protocol: &str) -> HttpServer {
    HttpServer::start(
        MCP,
        &["serve", "demo", "--http", "0", "--protocol", protocol],
    )
}

/// The answers our host gives: the demo's forms (`provision`, `deploy`).
fn answers() -> Value {
    json!({"region": "eu-west-1", "environment": "staging", "count": 2})
}

/// The questions our host was asked: their kind and where they came from.
#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(&'static str, InputOrigin)>>>);

impl Recorder {
    fn calls(&self) -> Vec<(&'static str, InputOrigin)> {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, kind: &'static str, context: &CallbackContext) {
        self.0
            .lock()
            .unwrap()
            .push((kind, context.origin().clone()));
    }
}

/// Our host's callbacks: forms filled from [`answers`], URLs accepted, a fixed summary, one
/// root; each question recorded.
fn recording_builder(recorder: &Recorder) -> ClientBuilder {
    let (r1, r2, r3) = (recorder.clone(), recorder.clone(), recorder.clone());
    Client::builder()
        .on_elicitation(
            move |context: CallbackContext, params: ElicitRequestParams| {
                r1.push("elicitation", &context);
                let answer = match params {
                    ElicitRequestParams::Form(form) => {
                        let schema = serde_json::to_value(&form.requested_schema).unwrap();
                        let mut content = serde_json::Map::new();
                        for name in schema["properties"].as_object().unwrap().keys() {
                            content.insert(name.clone(), answers()[name].clone());
                        }
                        ElicitResult::accept(content)
                    }
                    _ => ElicitResult::accept_url(),
                };
                async move { Ok::<_, ErrorObject>(answer) }
            },
        )
        .on_sampling(move |context: CallbackContext, _params| {
            r2.push("sampling", &context);
            async move {
                Ok::<_, ErrorObject>(CreateMessageResult::text("host-llm", "A short summary."))
            }
        })
        .on_list_roots(move |context: CallbackContext| {
            r3.push("roots", &context);
            async move {
                Ok::<_, ErrorObject>(ListRootsResult::new(vec![Root::new(
                    "file:///tmp/mcp-rust-root",
                    Some("rust-root".to_owned()),
                )]))
            }
        })
}

/// Our client as the host, in `mode`, running `mcp bridge URL` as its stdio server.
async fn host(mode: Mode, url: &str, recorder: &Recorder) -> Client {
    host_with(mode, url, recorder, &[]).await
}

/// [`host`], the bridge given `options` too.
async fn host_with(mode: Mode, url: &str, recorder: &Recorder, options: &[&str]) -> Client {
    let mut bridge = tokio::process::Command::new(MCP);
    bridge
        .args(["bridge", url])
        .args(options)
        .stderr(Stdio::inherit());
    tokio::time::timeout(
        BOUND,
        recording_builder(recorder).mode(mode).connect_stdio(bridge),
    )
    .await
    .expect("the bridge answers in time")
    .expect("the host connects through the bridge")
}

/// Calls `name` through `client`, within [`BOUND`].
async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, modelctx::client::ClientError> {
    tokio::time::timeout(BOUND, client.call_tool(name, arguments))
        .await
        .expect("the call ends in time")
}

/// `deploy` through `client`, whose host answers staging and 2 replicas.
async fn deploy(client: &Client) {
    let deployed = call(client, "deploy", json!({"service": "api"}))
        .await
        .unwrap();
    assert_eq!(
        text(&deployed),
        "Deployed api to staging with 2 replica(s)."
    );
}

fn text(result: &CallToolResult) -> &str {
    result.first_text().expect("a text result")
}

/// A 2025-11-25 host in front of a 2026-07-28-only server: `initialize` is answered from the
/// upstream's discovery, the lists are relayed, the upstream's progress reaches the host, and each `InputRequiredResult` of the upstream
/// reaches the host as back-channel requests (form, two questions, URL, sampling, roots) whose
/// answers complete the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_host_gets_a_2026_server_s_questions_over_the_back_channel() {
    let upstream = demo("2026-07-28");
    let recorder = Recorder::default();
    let client = host(Mode::Handshake, &upstream.url, &recorder).await;
    assert_eq!(client.era(), Era::Handshake);
    assert_eq!(client.server_info().unwrap().name, "mcp-demo");
    assert!(
        client.instructions().unwrap().contains("demo server"),
        "{:?}",
        client.instructions()
    );
    let tools: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for name in [
        "provision",
        "deploy",
        "summarize",
        "connect_account",
        "where_am_i",
    ] {
        assert!(tools.iter().any(|t| t == name), "{name} in {tools:?}");
    }
    let call = |name: &'static str, arguments: Value| {
        let client = client.clone();
        async move { call(&client, name, arguments).await.unwrap() }
    };
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&steps);
    let progress = RequestOptions::new().on_progress(move |progress| {
        seen.lock()
            .unwrap()
            .push(progress.message.unwrap_or_default());
    });
    let params =
        serde_json::from_value(json!({"name": "provision", "arguments": {"name": "web"}})).unwrap();
    let provisioned = tokio::time::timeout(BOUND, client.call_tool_with(params, progress))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text(&provisioned), "Provisioned 'web' in eu-west-1.");
    // Every step of the upstream's progress, before the result, under the host's token.
    assert_eq!(
        *steps.lock().unwrap(),
        [
            "allocating storage",
            "creating the database",
            "configuring backups"
        ]
    );
    deploy(&client).await;
    let summary = call("summarize", json!({"text": "a long text"})).await;
    assert!(text(&summary).contains("A short summary."), "{summary:?}");
    let connected = call("connect_account", json!({"service": "github"})).await;
    assert_eq!(text(&connected), "Connected your github account.");
    let roots = call("where_am_i", json!({})).await;
    assert!(
        text(&roots).contains("file:///tmp/mcp-rust-root"),
        "{roots:?}"
    );
    let asked: Vec<&str> = recorder.calls().iter().map(|(kind, _)| *kind).collect();
    // provision: 1 question; deploy: 2; connect_account: a URL; then sampling and roots.
    assert_eq!(
        asked.iter().filter(|k| **k == "elicitation").count(),
        4,
        "{asked:?}"
    );
    assert!(
        asked.contains(&"sampling") && asked.contains(&"roots"),
        "{asked:?}"
    );
    // Every question came as a server request: the host never saw an InputRequiredResult.
    assert!(
        recorder
            .calls()
            .iter()
            .all(|(_, origin)| matches!(origin, InputOrigin::ServerRequest { .. })),
        "{:?}",
        recorder.calls()
    );
    client.close().await.unwrap();
}

/// A 2026-07-28 host through the same bridge gets the upstream's questions as
/// `InputRequiredResult`s, answered by its own loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_host_gets_input_required_results_through_the_bridge() {
    let upstream = demo("2026-07-28");
    let recorder = Recorder::default();
    let client = host(Mode::Auto, &upstream.url, &recorder).await;
    assert_eq!(client.era(), Era::Modern);
    deploy(&client).await;
    let keys: Vec<InputOrigin> = recorder
        .calls()
        .into_iter()
        .map(|(_, origin)| origin)
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys.iter()
            .all(|origin| matches!(origin, InputOrigin::InputRequest { .. })),
        "{keys:?}"
    );
    client.close().await.unwrap();
}

/// A 2026-07-28-only upstream of our own whose `wait` tool runs until cancelled, telling the
/// test when it starts and when its cancellation arrives.
struct WaitingUpstream {
    url: String,
    server: Server,
    started: tokio::sync::mpsc::Receiver<()>,
    cancelled: tokio::sync::mpsc::Receiver<()>,
}

/// Sends on its channel when dropped: the end of a handler, however it ends.
struct TellOnDrop(tokio::sync::mpsc::Sender<()>);

impl Drop for TellOnDrop {
    fn drop(&mut self) {
        let _ = self.0.try_send(());
    }
}

async fn waiting_upstream() -> WaitingUpstream {
    let (started_tx, started) = tokio::sync::mpsc::channel(4);
    let (cancelled_tx, cancelled) = tokio::sync::mpsc::channel(4);
    let tool = Tool::new(
        "wait",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let chatty = Tool::new(
        "chatty",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let server = Server::builder("waiting", "1")
        .only_era(Era::Modern)
        // One tool a page: the bridge walks the upstream's pages.
        .page_size(1)
        .logging(true)
        .completion(
            |_ctx: RequestContext, params: CompleteRequestParams| async move {
                let typed = params.argument.value;
                Ok::<CompleteResult, ErrorObject>(
                    serde_json::from_value(
                        json!({"completion": {"values": [format!("{typed}-q3")]}}),
                    )
                    .unwrap(),
                )
            },
        )
        .tool(
            chatty,
            |ctx: RequestContext, _params: CallToolRequestParams| async move {
                ctx.log(LoggingLevel::Debug, Some("upstream"), json!("too fine"))
                    .await;
                ctx.log(
                    LoggingLevel::Info,
                    Some("upstream"),
                    json!("hello from upstream"),
                )
                .await;
                Ok::<_, ErrorObject>(CallToolResult::text("said hello"))
            },
        )
        .tool(
            tool,
            move |ctx: RequestContext, _params: CallToolRequestParams| {
                let (started, cancelled) = (started_tx.clone(), cancelled_tx.clone());
                async move {
                    let _ = started.send(()).await;
                    // Told whether the request is cancelled (its token) or dropped with its stream.
                    let _told = TellOnDrop(cancelled);
                    ctx.cancelled().await;
                    Err::<CallToolResult, _>(ErrorObject::internal("cancelled"))
                }
            },
        )
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = modelctx::server::http::HttpConfig::default();
    let handle = server.clone();
    tokio::spawn(async move {
        server
            .serve_http_on(listener, config, std::future::pending())
            .await
    });
    WaitingUpstream {
        url,
        server: handle,
        started,
        cancelled,
    }
}

/// `notifications/cancelled` from the host cancels the upstream request (whose response stream
/// the bridge closes), and the bridge goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_cancellation_reaches_the_upstream() {
    let mut upstream = waiting_upstream().await;
    let client = host(Mode::Handshake, &upstream.url, &Recorder::default()).await;
    for _ in 0..2 {
        let call = client.call_tool("wait", json!({}));
        tokio::select! {
            outcome = call => panic!("the call ended by itself: {outcome:?}"),
            started = upstream.started.recv() => started.unwrap(),
        }
        // The call's future is dropped: the host sends `notifications/cancelled`.
        tokio::time::timeout(BOUND, upstream.cancelled.recv())
            .await
            .expect("the upstream request is cancelled")
            .unwrap();
    }
    client.close().await.unwrap();
}

/// `mcp bridge --timeout` bounds each request the bridge sends upstream: the host gets an error
/// naming the timeout, and the upstream request is abandoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_s_timeout_bounds_upstream_requests() {
    let mut upstream = waiting_upstream().await;
    let options = ["--timeout", "0.2"];
    let client = host_with(
        Mode::Handshake,
        &upstream.url,
        &Recorder::default(),
        &options,
    )
    .await;
    let error = call(&client, "wait", json!({}))
        .await
        .expect_err("the upstream never answers");
    assert!(
        error.to_string().contains("did not finish within 200ms"),
        "{error}"
    );
    upstream.started.recv().await.unwrap();
    tokio::time::timeout(BOUND, upstream.cancelled.recv())
        .await
        .expect("the upstream request is abandoned")
        .unwrap();
    client.close().await.unwrap();
}

/// `mcp serve demo --protocol 2025-11-25` answers as a server that predates 2026-07-28 (a
/// dual-era client falls back to `initialize`); `--protocol 2026-07-28` refuses `initialize`
/// with -32022 naming its versions, on HTTP and on stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_demo_protocol_serves_one_era() {
    let old = demo("2025-11-25");
    let client = Client::builder()
        .mode(Mode::Auto)
        .connect_http(&old.url)
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Handshake);
    client.close().await.unwrap();
    let http = reqwest::Client::new();
    let post = |url: &str, version: Option<&str>, body: Value| {
        let mut request = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(version) = version {
            request = request.header("mcp-protocol-version", version);
        }
        request.send()
    };
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let refused = post(&old.url, Some("2026-07-28"), discover).await.unwrap();
    assert_eq!(refused.status(), 400, "a 2025-11-25 server wants a session");

    let new = demo("2026-07-28");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "old", "version": "1"}}});
    let refused = post(&new.url, None, initialize).await.unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = serde_json::from_slice(&refused.bytes().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], -32022, "{body}");
    assert_eq!(
        body["error"]["data"]["supported"],
        json!(["2026-07-28"]),
        "{body}"
    );
    let error = Client::builder()
        .mode(Mode::Handshake)
        .connect_http(&new.url)
        .await
        .expect_err("a 2026-07-28-only server refuses the handshake");
    assert!(error.to_string().contains("-32022"), "{error}");

    for (protocol, mode, works) in [
        ("2025-11-25", "auto", true),
        ("2026-07-28", "2025-11-25", false),
        ("2026-07-28", "auto", true),
    ] {
        let output = Command::new(MCP)
            .args([
                "tools",
                "--mode",
                mode,
                "--",
                MCP,
                "serve",
                "demo",
                "--protocol",
                protocol,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            output.status.success(),
            works,
            "{protocol} {mode}: {output:?}"
        );
        if !works {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("-32022"), "{stderr}");
        }
    }
}

/// The TypeScript SDK v1 1.32.2 client (`tests/node/bridge_host.cjs`) as the host, through
/// `mcp bridge` to the demo served 2026-07-28-only: `provision` (with its progress), `deploy` (two questions),
/// `summarize` (sampling), `connect_account` (URL elicitation), and a cancelled call whose
/// question is withdrawn.
#[test]
fn typescript_v1_host_through_the_bridge() {
    let env = Command::new("bash")
        .arg(repo_root().join("scripts/ts-sdk-env.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/ts-sdk-env.sh");
    assert!(env.status.success(), "scripts/ts-sdk-env.sh failed");
    let env = String::from_utf8(env.stdout).unwrap();
    let mut lines = env.lines();
    let (node, sdk) = (lines.next().unwrap(), lines.next().unwrap());
    let upstream = demo("2026-07-28");
    let output = Command::new(node)
        .arg(repo_root().join("tests/node/bridge_host.cjs"))
        .args([MCP, &upstream.url])
        .env("NODE_PATH", format!("{sdk}/node_modules"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let report: Value = serde_json::from_str(stdout.trim()).expect("a JSON report");
    assert_eq!(report["server"]["name"], "mcp-demo", "{report}");
    assert_eq!(
        report["provision"], "Provisioned 'web' in eu-west-1.",
        "{report}"
    );
    // The upstream's progress, under the host's own token. The bridge sends all three before
    // the result (`a_2025_host_gets_…` counts them), but the TypeScript client handles a
    // notification a microtask after the response read with it, by when the call's progress
    // handler is gone: the last step, sent just before the result, is dropped there (as it is
    // when the TypeScript client calls `mcp serve demo` directly).
    let steps = [
        "allocating storage",
        "creating the database",
        "configuring backups",
    ];
    let progress = report["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "{report}");
    assert!(
        progress.iter().zip(steps).all(|(got, step)| got == step),
        "{report}"
    );
    assert_eq!(
        report["deploy"], "Deployed api to staging with 2 replica(s).",
        "{report}"
    );
    assert!(
        report["summarize"]
            .as_str()
            .unwrap()
            .contains("ts-host summary"),
        "{report}"
    );
    assert_eq!(
        report["connect_account"], "Connected your github account.",
        "{report}"
    );
    assert_eq!(report["questions"]["form"], 3, "{report}");
    assert_eq!(report["questions"]["url"], 1, "{report}");
    assert_eq!(report["questions"]["sampling"], 1, "{report}");
    assert_eq!(report["cancelled"]["call"], "aborted", "{report}");
    assert_eq!(report["cancelled"]["question_withdrawn"], true, "{report}");
    assert_eq!(
        report["after_cancel"], "Provisioned 'db' in eu-west-1.",
        "{report}"
    );
}

/// A tool added upstream (announced on the 2026-07-28 listen stream the bridge keeps open)
/// reaches a 2025-11-25 host as `notifications/tools/list_changed`, and its next listing has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_list_changes_reach_a_2025_host() {
    let upstream = waiting_upstream().await;
    let (changed_tx, mut changed) = tokio::sync::mpsc::channel(16);
    let mut bridge = tokio::process::Command::new(MCP);
    bridge.args(["bridge", &upstream.url]);
    let client = tokio::time::timeout(
        BOUND,
        Client::builder()
            .mode(Mode::Handshake)
            .on_notification(move |notification| {
                let _ = changed_tx.try_send(notification.method.clone());
            })
            .connect_stdio(bridge),
    )
    .await
    .unwrap()
    .unwrap();
    let names = |tools: Vec<Tool>| {
        let mut names: Vec<String> = tools.into_iter().map(|t| t.name).collect();
        names.sort();
        names
    };
    assert_eq!(
        names(client.list_tools().await.unwrap()),
        ["chatty", "wait"]
    );
    let added = Tool::new(
        "added",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    // The bridge may still be opening its listen stream: add until it hears of a change.
    let mut attempts = 0;
    let method = loop {
        attempts += 1;
        upstream
            .server
            .add_tool(
                added.clone(),
                |_ctx: RequestContext, _params: CallToolRequestParams| async {
                    Ok::<_, ErrorObject>(CallToolResult::text("added"))
                },
            )
            .ok();
        upstream
            .server
            .notify(modelctx::server::Change::ToolsListChanged);
        match tokio::time::timeout(Duration::from_millis(500), changed.recv()).await {
            Ok(method) => break method.unwrap(),
            Err(_) if attempts < 60 => {}
            Err(_) => panic!("no list change reached the host"),
        }
    };
    assert_eq!(method, "notifications/tools/list_changed");
    assert_eq!(
        names(client.list_tools().await.unwrap()),
        ["added", "chatty", "wait"]
    );
    client.close().await.unwrap();
}

/// The upstream's log messages reach the host at the level the host asked for, before the
/// result of the call they belong to: a 2026-07-28 host's per-request `logLevel` and a
/// 2025-11-25 host's `logging/setLevel` are both forwarded upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_logs_reach_the_host_at_its_level() {
    let upstream = waiting_upstream().await;
    for mode in [Mode::Handshake, Mode::Auto] {
        let logged = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&logged);
        let mut bridge = tokio::process::Command::new(MCP);
        bridge.args(["bridge", &upstream.url]);
        let client = tokio::time::timeout(
            BOUND,
            Client::builder()
                .mode(mode.clone())
                .log_level(LoggingLevel::Info)
                .on_notification(move |notification| {
                    if notification.method == "notifications/message" {
                        let params: Value =
                            serde_json::from_str(notification.params.as_ref().unwrap().get())
                                .unwrap();
                        seen.lock().unwrap().push(params["data"].clone());
                    }
                })
                .connect_stdio(bridge),
        )
        .await
        .unwrap()
        .unwrap();
        if client.era() == Era::Handshake {
            client.set_log_level(LoggingLevel::Info).await.unwrap();
        }
        let result = call(&client, "chatty", json!({})).await.unwrap();
        assert_eq!(text(&result), "said hello");
        assert_eq!(
            *logged.lock().unwrap(),
            [json!("hello from upstream")],
            "{mode:?}"
        );
        client.close().await.unwrap();
    }
}

/// A 2025-11-25-only upstream asks on its own back-channel while a call runs: the bridge's
/// client answers through the back-channel of the 2025-11-25 host's call (forms, sampling); a
/// 2026-07-28 host, which has no back-channel, gets an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_server_s_questions_reach_a_2025_host() {
    let upstream = demo("2025-11-25");
    let recorder = Recorder::default();
    let client = host(Mode::Handshake, &upstream.url, &recorder).await;
    deploy(&client).await;
    let summary = call(&client, "summarize", json!({"text": "t"}))
        .await
        .unwrap();
    assert!(text(&summary).contains("A short summary."), "{summary:?}");
    let asked: Vec<&str> = recorder.calls().iter().map(|(kind, _)| *kind).collect();
    assert_eq!(asked, ["elicitation", "elicitation", "sampling"]);
    client.close().await.unwrap();

    let client = host(Mode::Auto, &upstream.url, &Recorder::default()).await;
    assert_eq!(client.era(), Era::Modern);
    let error = call(&client, "deploy", json!({"service": "api"}))
        .await
        .expect_err("the question cannot reach a 2026-07-28 host");
    assert!(error.to_string().contains("not supported yet"), "{error}");
    client.close().await.unwrap();
}

/// `completion/complete` is relayed to an upstream that offers completions, in both host eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_are_relayed() {
    let upstream = waiting_upstream().await;
    for mode in [Mode::Handshake, Mode::Auto] {
        let client = host(mode, &upstream.url, &Recorder::default()).await;
        assert!(client.server_capabilities().unwrap().completions.is_some());
        let params = serde_json::from_value(json!({
            "ref": {"type": "ref/prompt", "name": "any"},
            "argument": {"name": "quarter", "value": "2026"}}))
        .unwrap();
        let completed = tokio::time::timeout(BOUND, client.complete(params))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(completed.completion.values, ["2026-q3"]);
        client.close().await.unwrap();
    }
}
