//! Traces across languages: our SDK and the Python SDK 2.3.0 (its default OpenTelemetry
//! instrumentation, `mcp/shared/_otel.py` and `mcp/server/_otel.py`), each side recording into
//! its own SDK's in-memory exporter, over stdio and streamable HTTP, with multi-round calls.
//!
//! * A Python client (`tests/python/otel_client.py`) calls our server: each of our server spans
//!   carries Python's trace id and has Python's client span of that request as its (remote)
//!   parent, so Python injects `_meta.traceparent` and we read it. Over stdio our server runs in
//!   this process on the Python client's own stdin and stdout, so its spans land in this
//!   process's exporter.
//! * Our client calls a Python server (`tests/python/otel_provisioner.py`): each of Python's
//!   server spans is the child of our round span (`mcp.client.request`) of that request.
//! * Controls: with `OTEL_PROPAGATORS=none` on the Python side the same runs give no such
//!   parents, so the assertions above are about propagation and nothing else.
//!
//! Both SDKs speak 2026-07-28 by default (Python's client probes `server/discover`; its server
//! serves both eras); the handshake era (2025-11-25), which both also speak, is covered too.
//! Needs the project venv (`scripts/python-env.sh`, created on first use).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use modelctx::client::{Client, Mode};
use modelctx_test_support::client::{self as peers, Recorder, answers, recording_builder};
use modelctx_test_support::otel::{assert_attributes, attribute, exporter, in_root, spans_of};
use modelctx_test_support::process::{python, repo_root};
use modelctx_test_support::server::{self as ours, fixture_with_failing_tool};
use modelctx_test_support::tempdir::TempDir;
use opentelemetry::trace::{SpanKind, Status, TraceId};
use opentelemetry_sdk::trace::SpanData;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug)]
enum Via {
    Stdio,
    Http,
}

impl Via {
    /// Our spans' `network.transport`.
    fn transport(self) -> &'static str {
        match self {
            Via::Stdio => "pipe",
            Via::Http => "tcp",
        }
    }
}

/// One span as `tests/python/_otel_spans.py` writes it.
#[derive(Debug, Deserialize)]
struct PySpan {
    name: String,
    kind: String,
    trace_id: String,
    span_id: String,
    parent_span_id: Option<String>,
    parent_is_remote: Option<bool>,
    status: String,
    attributes: BTreeMap<String, Value>,
}

impl PySpan {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }
}

/// What `otel_client.py` writes: its operations' results and its spans.
#[derive(Debug, Deserialize)]
struct PyRun {
    results: Vec<Value>,
    spans: Vec<PySpan>,
    error: Option<Value>,
}

fn hex(trace: TraceId) -> String {
    format!("{trace}")
}

// ---------------------------------------------------------------------------------------------
// A Python client calls our server.

/// The Python client's operations: a plain call, a two-round call (a state-only
/// `InputRequiredResult`, then the retry) and a tool error.
fn python_ops() -> Value {
    json!([
        {"op": "call_tool", "name": "echo", "arguments": {"text": "hi"}},
        {"op": "call_tool", "name": "ask", "arguments": {}},
        {"op": "call_tool", "name": "fail", "arguments": {}},
    ])
}

/// Runs `otel_client.py` (mode `mode`, extra environment `env`) against our fixture server over
/// `via` and returns what it wrote. Over stdio the server serves the client's own pipes here.
async fn run_python_client(via: Via, mode: &str, env: &[(&str, &str)]) -> PyRun {
    exporter();
    let dir = TempDir::new("otel-python-client");
    let out = dir.file("run.json");
    let mut command = tokio::process::Command::new(python());
    command
        .arg(repo_root().join("tests/python/otel_client.py"))
        .args(["--out", out.to_str().unwrap(), "--mode", mode])
        .args(["--ops-json", &python_ops().to_string()])
        .envs(env.iter().copied())
        .kill_on_drop(true);
    if std::env::var_os("MCP_TEST_PEER_STDERR").is_none() {
        command.stderr(Stdio::null());
    }
    let limit = Duration::from_secs(120);
    match via {
        Via::Http => {
            let server = ours::HttpPeer::start(fixture_with_failing_tool()).await;
            command.args(["--url", &server.url]).stdin(Stdio::null());
            let status = tokio::time::timeout(limit, command.status())
                .await
                .expect("the Python client finished in time")
                .expect("run otel_client.py");
            assert!(status.success(), "otel_client.py: {status}");
        }
        Via::Stdio => {
            command
                .arg("--own-stdio")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            let mut child = command.spawn().expect("spawn otel_client.py");
            let (reader, writer) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
            let serving =
                tokio::spawn(
                    async move { fixture_with_failing_tool().serve_io(reader, writer).await },
                );
            let status = tokio::time::timeout(limit, child.wait())
                .await
                .expect("the Python client finished in time")
                .expect("wait for otel_client.py");
            assert!(status.success(), "otel_client.py: {status}");
            // The client's exit ends our input: the server finishes (and its spans with it).
            tokio::time::timeout(limit, serving)
                .await
                .expect("the server stopped at the client's EOF")
                .unwrap()
                .expect("serve the Python client");
        }
    }
    read_json(&out)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("{} was not written: {error}", path.display()));
    serde_json::from_str(&text).expect("the Python side's JSON")
}

/// Python's root span and its client spans (one per request it sent), after checking the
/// operations' results.
fn python_client_spans<'a>(run: &'a PyRun, protocol: &str) -> (TraceId, Vec<&'a PySpan>) {
    assert!(run.error.is_none(), "the Python client failed: {run:#?}");
    for result in &run.results {
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["protocol_version"], protocol, "{result}");
    }
    let text = |i: usize| run.results[i]["result"]["content"][0]["text"].clone();
    assert_eq!(text(0), "hi");
    assert_eq!(text(1), "answered");
    assert_eq!(run.results[2]["result"]["isError"], true);
    let root = run
        .spans
        .iter()
        .find(|span| span.name == "python root")
        .expect("Python's root span");
    let clients: Vec<&PySpan> = run
        .spans
        .iter()
        .filter(|span| span.kind == "CLIENT")
        .collect();
    for client in &clients {
        assert_eq!(client.trace_id, root.trace_id, "{client:#?}");
        assert_eq!(client.parent_span_id.as_ref(), Some(&root.span_id));
    }
    let trace = TraceId::from_hex(&root.trace_id).expect("a W3C trace id");
    (trace, clients)
}

/// Each of our server spans in Python's trace is the child of the Python client span of the
/// same request (method and JSON-RPC id), and each Python request has exactly one: the
/// multi-round call `ask` is two requests, so two server spans under two client spans.
fn assert_served_under_python(run: &PyRun, via: Via, protocol: &str, ask_rounds: usize) {
    let (trace, clients) = python_client_spans(run, protocol);
    let ours = spans_of(trace);
    let servers: Vec<&SpanData> = ours
        .iter()
        .filter(|span| span.span_kind == SpanKind::Server)
        .collect();
    assert_eq!(
        servers.len(),
        clients.len(),
        "one server span of ours per Python request: {clients:#?} {ours:#?}"
    );
    for client in &clients {
        let children: Vec<&&SpanData> = servers
            .iter()
            .filter(|span| span.parent_span_id.to_string() == client.span_id)
            .collect();
        assert_eq!(children.len(), 1, "our span under {client:#?}: {ours:#?}");
        let server = children[0];
        assert!(server.parent_span_is_remote, "{server:#?}");
        assert_eq!(hex(server.span_context.trace_id()), client.trace_id);
        assert_eq!(
            format!("MCP send {}", server.name),
            client.name,
            "{server:#?}"
        );
        assert_attributes(
            server,
            &[
                (
                    "mcp.method.name",
                    client.attribute("mcp.method.name").unwrap(),
                ),
                (
                    "jsonrpc.request.id",
                    client.attribute("jsonrpc.request.id").unwrap(),
                ),
                ("network.transport", via.transport()),
                ("mcp.protocol.version", protocol),
            ],
        );
    }
    let rounds: Vec<&&SpanData> = servers
        .iter()
        .filter(|span| span.name == "tools/call ask")
        .collect();
    assert_eq!(rounds.len(), ask_rounds, "{ours:#?}");
    for round in &rounds {
        assert_attributes(
            round,
            &[
                ("gen_ai.tool.name", "ask"),
                ("mcp.protocol.version", protocol),
            ],
        );
    }
    let failed = servers
        .iter()
        .find(|span| span.name == "tools/call fail")
        .expect("the failing call's span");
    assert!(matches!(failed.status, Status::Error { .. }), "{failed:#?}");
    assert_attributes(failed, &[("error.type", "tool_error")]);
}

#[tokio::test]
async fn a_python_client_is_the_parent_of_our_server_spans_over_stdio() {
    let run = run_python_client(Via::Stdio, "auto", &[]).await;
    assert_served_under_python(&run, Via::Stdio, "2026-07-28", 2);
}

#[tokio::test]
async fn a_python_client_is_the_parent_of_our_server_spans_over_http() {
    let run = run_python_client(Via::Http, "auto", &[]).await;
    assert_served_under_python(&run, Via::Http, "2026-07-28", 2);
}

/// The handshake era (Python's `mode="legacy"`): `initialize` and every request after it.
#[tokio::test]
async fn a_python_handshake_client_is_the_parent_of_our_server_spans_over_stdio() {
    let run = run_python_client(Via::Stdio, "legacy", &[]).await;
    assert_served_under_python(&run, Via::Stdio, "2025-11-25", 1);
}

#[tokio::test]
async fn a_python_handshake_client_is_the_parent_of_our_server_spans_over_http() {
    let run = run_python_client(Via::Http, "legacy", &[]).await;
    assert_served_under_python(&run, Via::Http, "2025-11-25", 1);
}

/// Control: a Python client that propagates nothing (`OTEL_PROPAGATORS=none`) leaves our server
/// spans outside its trace, so the parent checks above hold only through `_meta.traceparent`.
#[tokio::test]
async fn without_python_propagation_our_server_spans_have_no_python_parent() {
    let run = run_python_client(Via::Stdio, "auto", &[("OTEL_PROPAGATORS", "none")]).await;
    let (trace, clients) = python_client_spans(&run, "2026-07-28");
    assert!(!clients.is_empty());
    assert!(spans_of(trace).is_empty(), "{:#?}", spans_of(trace));
    let python_ids: Vec<&str> = clients.iter().map(|span| span.span_id.as_str()).collect();
    let adopted: Vec<SpanData> = exporter()
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|span| python_ids.contains(&span.parent_span_id.to_string().as_str()))
        .collect();
    assert!(adopted.is_empty(), "{adopted:#?}");
}

// ---------------------------------------------------------------------------------------------
// Our client calls a Python server.

/// Our client's calls: `provision` (on 2026-07-28 an elicitation round, then the retry; in the
/// handshake era one request, the question coming through the back-channel), `state_only`
/// with three rounds (2026-07-28 only), and a plain `echo`.
async fn our_calls(client: &Client, modern: bool) {
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert!(
        result
            .first_text()
            .unwrap()
            .starts_with("Provisioned 'orders' in eu-west-1"),
        "{result:?}"
    );
    if modern {
        let result = client
            .call_tool("state_only", json!({"n": 2}))
            .await
            .unwrap();
        assert_eq!(
            result.first_text(),
            Some("state_only completed after 2 state-only round(s)")
        );
    }
    let result = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("hi"));
}

/// Connects our client (mode `mode`) to `otel_provisioner.py` over `via`, runs [`our_calls`]
/// under a root span and returns our trace id and Python's server spans: over stdio written
/// when our close ends its stdin, over HTTP read from its `GET /otel/spans`.
async fn run_against_python_server(
    via: Via,
    mode: Mode,
    env: &[(&str, &str)],
) -> (TraceId, Vec<PySpan>) {
    exporter();
    let modern = mode != Mode::Handshake;
    let builder = recording_builder(&Recorder::default(), answers()).mode(mode);
    match via {
        Via::Stdio => {
            let dir = TempDir::new("otel-python-server");
            let out = dir.file("spans.json");
            let mut command = peers::peer_command(
                "otel_provisioner.py",
                &["--spans-out", out.to_str().unwrap()],
            );
            command.envs(env.iter().copied());
            let client = builder
                .connect_stdio(command)
                .await
                .expect("connect over stdio");
            let (trace, ()) = in_root(Box::pin(our_calls(&client, modern))).await;
            // Closing ends the server's stdin and waits for it to exit: it writes its spans first.
            client.close().await.unwrap();
            let spans: Value = read_json(&out);
            (
                trace,
                serde_json::from_value(spans["spans"].clone()).unwrap(),
            )
        }
        Via::Http => {
            let server = peers::HttpPeer::start_with_env("otel_provisioner.py", &[], env).await;
            let client = builder
                .connect_http(&server.url)
                .await
                .expect("connect over HTTP");
            let (trace, ()) = in_root(Box::pin(our_calls(&client, modern))).await;
            client.close().await.unwrap();
            let spans_url = server.url.replace("/mcp", "/otel/spans");
            let spans: Value = reqwest::get(&spans_url)
                .await
                .and_then(reqwest::Response::error_for_status)
                .expect("GET /otel/spans")
                .json()
                .await
                .unwrap();
            (
                trace,
                serde_json::from_value(spans["spans"].clone()).unwrap(),
            )
        }
    }
}

/// Each of our round spans has exactly one Python server span as its child (same name, method
/// and JSON-RPC id, a remote parent, our trace id): two for `provision`, three for
/// `state_only`, one for `echo`.
fn assert_python_served_under_us(trace: TraceId, python: &[PySpan], via: Via, protocol: &str) {
    let ours = spans_of(trace);
    let rounds: Vec<&SpanData> = ours
        .iter()
        .filter(|span| span.span_kind == SpanKind::Client)
        .collect();
    let servers: Vec<&PySpan> = python
        .iter()
        .filter(|span| span.kind == "SERVER" && span.trace_id == hex(trace))
        .collect();
    assert_eq!(
        servers.len(),
        rounds.len(),
        "one Python server span per request of ours: {python:#?} {ours:#?}"
    );
    for round in &rounds {
        assert_attributes(
            round,
            &[
                ("network.transport", via.transport()),
                ("mcp.protocol.version", protocol),
            ],
        );
        let children: Vec<&&PySpan> = servers
            .iter()
            .filter(|span| {
                span.parent_span_id.as_deref() == Some(&round.span_context.span_id().to_string())
            })
            .collect();
        assert_eq!(
            children.len(),
            1,
            "Python's span under {round:#?}: {python:#?}"
        );
        let server = children[0];
        assert_eq!(server.parent_is_remote, Some(true), "{server:#?}");
        assert_eq!(server.name, round.name, "{server:#?}");
        for key in ["mcp.method.name", "jsonrpc.request.id", "gen_ai.tool.name"] {
            assert_eq!(
                server.attribute(key).map(str::to_owned),
                attribute(round, key),
                "{key} of {server:#?}"
            );
        }
        assert_eq!(server.status, "UNSET", "{server:#?}");
    }
    let count = |name: &str| servers.iter().filter(|span| span.name == name).count();
    let modern = protocol == "2026-07-28";
    assert_eq!(
        count("tools/call provision"),
        if modern { 2 } else { 1 },
        "{python:#?}"
    );
    assert_eq!(
        count("tools/call state_only"),
        if modern { 3 } else { 0 },
        "{python:#?}"
    );
    assert_eq!(count("tools/call echo"), 1, "{python:#?}");
    if !modern {
        // The back-channel question is Python's client span under its server span: the whole
        // handshake-era call is one trace too.
        let provision = servers
            .iter()
            .find(|span| span.name == "tools/call provision")
            .unwrap();
        let asked: Vec<&PySpan> = python
            .iter()
            .filter(|span| span.name == "MCP send elicitation/create")
            .collect();
        assert_eq!(asked.len(), 1, "{python:#?}");
        assert_eq!(asked[0].kind, "CLIENT");
        assert_eq!(asked[0].trace_id, hex(trace));
        assert_eq!(asked[0].parent_span_id.as_ref(), Some(&provision.span_id));
    }
}

#[tokio::test]
async fn our_client_is_the_parent_of_python_server_spans_over_stdio() {
    let (trace, python) = run_against_python_server(Via::Stdio, Mode::Auto, &[]).await;
    assert_python_served_under_us(trace, &python, Via::Stdio, "2026-07-28");
}

#[tokio::test]
async fn our_client_is_the_parent_of_python_server_spans_over_http() {
    let (trace, python) = run_against_python_server(Via::Http, Mode::Auto, &[]).await;
    assert_python_served_under_us(trace, &python, Via::Http, "2026-07-28");
}

/// The handshake era (our `Mode::Handshake`): the question of `provision` comes through the
/// back-channel, inside the same trace.
#[tokio::test]
async fn our_handshake_client_is_the_parent_of_python_server_spans_over_stdio() {
    let (trace, python) = run_against_python_server(Via::Stdio, Mode::Handshake, &[]).await;
    assert_python_served_under_us(trace, &python, Via::Stdio, "2025-11-25");
}

#[tokio::test]
async fn our_handshake_client_is_the_parent_of_python_server_spans_over_http() {
    let (trace, python) = run_against_python_server(Via::Http, Mode::Handshake, &[]).await;
    assert_python_served_under_us(trace, &python, Via::Http, "2025-11-25");
}

/// Control: a Python server that extracts nothing (`OTEL_PROPAGATORS=none`) starts traces of
/// its own, so none of its server spans is in ours or under one of our spans.
#[tokio::test]
async fn without_python_extraction_its_server_spans_are_not_ours() {
    let (trace, python) =
        run_against_python_server(Via::Http, Mode::Auto, &[("OTEL_PROPAGATORS", "none")]).await;
    let ours: Vec<String> = spans_of(trace)
        .iter()
        .map(|span| span.span_context.span_id().to_string())
        .collect();
    assert!(!ours.is_empty());
    let servers: Vec<&PySpan> = python.iter().filter(|span| span.kind == "SERVER").collect();
    assert!(servers.len() >= 6, "{python:#?}");
    for server in servers {
        assert_ne!(server.trace_id, hex(trace), "{server:#?}");
        assert!(
            server
                .parent_span_id
                .as_ref()
                .is_none_or(|parent| !ours.contains(parent)),
            "{server:#?}"
        );
    }
}
