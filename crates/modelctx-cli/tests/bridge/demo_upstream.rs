//! The demo as the upstream, served one era only.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use modelctx::client::{Client, InputOrigin, Mode, RequestOptions};
use modelctx::types::Era;
use modelctx_test_support::cli::repo_root;
use serde_json::{Value, json};

use super::host::{BOUND, MCP, Recorder, call, demo, deploy, host, text};

/// A 2025-11-25 host in front of a 2026-07-28-only server: `initialize` is answered from the
/// upstream's discovery, the lists are relayed, the upstream's progress reaches the host, and
/// each `InputRequiredResult` of the upstream reaches the host as back-channel requests (form,
/// two questions, URL, sampling, roots) whose answers complete the call.
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
/// `mcp bridge` to the demo served 2026-07-28-only: `provision` (with its progress), `deploy`
/// (two questions), `summarize` (sampling), `connect_account` (URL elicitation), and a cancelled
/// call whose question is withdrawn.
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
