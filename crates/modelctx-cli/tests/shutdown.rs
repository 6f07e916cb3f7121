//! `mcp serve demo` stopped by SIGTERM or SIGINT mid-call (issue 32, item 16), over stdio and
//! HTTP: the call in flight still gets its answer, a listen stream gets its closing result, a
//! request that arrives during the drain is refused, the process exits 0 on its own, and the
//! OTLP exporter has sent the spans (the test-support receiver, as in `otlp.rs`). Every wait is
//! on an event (a line, a message, the exit), bounded by [`BOUND`].

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use modelctx_test_support::cli::Running;
use modelctx_test_support::otlp::OtlpReceiver;
use serde_json::{Value, json};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// How long any one expected message, line or export may take.
const BOUND: Duration = Duration::from_secs(30);

/// The service name the server exports under.
const SERVICE: &str = "mcp-demo-server";

/// `mcp serve demo ARGS…` with stdin and stdout piped, and stderr read line by line.
fn serve_demo(args: &[&str]) -> Running {
    Running::spawn(
        Command::new(MCP)
            .args(["serve", "demo"])
            .args(args)
            .env_remove("OTEL_SERVICE_NAME")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("MCP_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped()),
    )
}

/// Sends `kill -SIGNAL` to the process.
fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{name} {pid}");
}

/// A stdio server's pipes: messages out, and the messages it writes, each awaited for at most
/// [`BOUND`].
struct Pipes {
    input: ChildStdin,
    output: mpsc::Receiver<String>,
}

impl Pipes {
    fn of(running: &mut Running) -> Self {
        let input = running.child.stdin.take().unwrap();
        let stdout = running.child.stdout.take().unwrap();
        let (sender, output) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Self { input, output }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// The next message; `None` once the server closed its stdout.
    fn next(&self) -> Option<Value> {
        match self.output.recv_timeout(BOUND) {
            Ok(line) => Some(serde_json::from_str(&line).unwrap()),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("no message within {BOUND:?}"),
        }
    }
}

/// A 2026-07-28 request: `params` with the envelope in `_meta` (a client that can answer forms).
fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "shutdown-test", "version": "1.0.0"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn listen(id: i64) -> Value {
    modern(
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
}

/// Asserts that `message` is the closing result of the listen request `id`.
fn assert_listen_closed(message: &Value, id: i64) {
    assert_eq!(message["id"], id, "{message}");
    assert_eq!(message["result"]["resultType"], "complete", "{message}");
}

/// Runs a blocking step (processes, pipes) off the runtime that serves the OTLP receiver.
async fn blocking<T: Send + 'static>(step: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(step).await.unwrap()
}

/// Waits until the receiver holds `count` spans `tools/call provision` of the server.
async fn wait_for_spans(receiver: &mut OtlpReceiver, count: usize) {
    receiver
        .wait_until(BOUND, |r| {
            r.spans_named(SERVICE, "tools/call provision").len() >= count
        })
        .await;
}

/// Opens a 2025-11-25 session on `server`'s stdio and calls `provision` (request 2), which asks
/// for the region and waits for the answer: returns the pipes and its question.
fn provision_waiting_for_its_answer(server: &mut Running) -> (Pipes, Value) {
    let mut pipes = Pipes::of(server);
    pipes.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "shutdown-test", "version": "1.0.0"}}}),
    );
    let initialized = pipes.next().unwrap();
    assert_eq!(initialized["result"]["protocolVersion"], "2025-11-25");
    pipes.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    pipes.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "provision", "arguments": {"name": "orders"}}}));
    let question = pipes.next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    (pipes, question)
}

/// Over stdio, the 2025-11-25 way: `provision` waits for the answer to its question (a
/// back-channel request), so it is in flight for certain when SIGTERM comes. The server says it
/// is stopping; a request sent then is refused (-32603); the answer is still read, the call
/// answers, and the server exits 0 by itself (stdin still open) after sending its spans.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_on_stdio_lets_the_call_in_flight_answer_and_sends_the_spans() {
    let mut receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint.clone();
    let (status, stderr) = blocking(move || {
        let mut server = serve_demo(&["--otlp-endpoint", &endpoint]);
        let (mut pipes, question) = provision_waiting_for_its_answer(&mut server);

        signal(server.child.id(), "TERM");
        let said = server.wait_for("stopping: ");
        assert!(said.contains("in flight have 5s to answer"), "{said}");
        pipes.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "late"}}}));
        let refused = pipes.next().unwrap();
        assert_eq!(refused["id"], 3, "{refused}");
        assert_eq!(refused["error"]["code"], -32603, "{refused}");

        pipes.send(&json!({"jsonrpc": "2.0", "id": question["id"],
            "result": {"action": "accept", "content": {"region": "eu-west-1"}}}));
        let answered = pipes.next().unwrap();
        assert_eq!(answered["id"], 2, "{answered}");
        assert_eq!(
            answered["result"]["content"][0]["text"], "Provisioned 'orders' in eu-west-1.",
            "{answered}"
        );
        assert_eq!(pipes.next(), None, "the server closes stdout");
        let (status, _, stderr) = server.finish();
        drop(pipes);
        (status, stderr)
    })
    .await;
    assert_eq!(status.code(), Some(0), "{stderr:?}");
    wait_for_spans(&mut receiver, 1).await;
}

/// `--shutdown-grace`: a call still waiting for its answer when the grace period is over is
/// dropped (no response), and the server exits 0 all the same, by itself.
#[test]
fn a_call_that_outlives_the_shutdown_grace_is_dropped() {
    let mut server = serve_demo(&["--shutdown-grace", "0.2"]);
    let (pipes, _question) = provision_waiting_for_its_answer(&mut server);
    signal(server.child.id(), "TERM");
    let said = server.wait_for("stopping: ");
    assert!(said.contains("in flight have 200ms to answer"), "{said}");
    assert_eq!(pipes.next(), None, "no answer; the server closes stdout");
    let (status, _, stderr) = server.finish();
    drop(pipes);
    assert_eq!(status.code(), Some(0), "{stderr:?}");
}

/// Over stdio, 2026-07-28: SIGINT (a terminal's Ctrl-C, here without telemetry) ends the listen
/// stream with its closing result, and the server exits 0.
#[test]
fn sigint_on_stdio_ends_the_listen_stream_with_its_result() {
    let mut server = serve_demo(&[]);
    let mut pipes = Pipes::of(&mut server);
    pipes.send(&listen(1));
    let acknowledged = pipes.next().unwrap();
    assert_eq!(
        acknowledged["method"], "notifications/subscriptions/acknowledged",
        "{acknowledged}"
    );
    signal(server.child.id(), "INT");
    assert_listen_closed(&pipes.next().unwrap(), 1);
    assert_eq!(pipes.next(), None, "the server closes stdout");
    let (status, _, stderr): (ExitStatus, _, _) = server.finish();
    assert_eq!(status.code(), Some(0), "{stderr:?}");
}

/// An HTTP response's SSE events, each awaited for at most [`BOUND`].
struct Events {
    response: reqwest::Response,
    parser: modelctx::__fuzz::SseParser,
    ready: std::collections::VecDeque<Value>,
}

impl Events {
    fn of(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        Self {
            response,
            parser: modelctx::__fuzz::SseParser::default(),
            ready: std::collections::VecDeque::new(),
        }
    }

    /// The next event; `None` at the end of the stream.
    async fn next(&mut self) -> Option<Value> {
        while self.ready.is_empty() {
            let chunk = tokio::time::timeout(BOUND, self.response.chunk())
                .await
                .expect("an event in time")
                .unwrap()?;
            for event in self.parser.feed(&chunk).unwrap() {
                self.ready
                    .push_back(serde_json::from_str(&event.data).unwrap());
            }
        }
        self.ready.pop_front()
    }

    /// The events up to the end of the stream.
    async fn rest(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// POSTs a 2026-07-28 request with its standard headers.
async fn post(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    let method = body["method"].as_str().unwrap();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if let Some(name) = body["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    request.send().await.unwrap()
}

/// Over HTTP: a listen stream is open and `provision` is between two of its progress steps
/// when SIGTERM comes; the call's remaining progress and its result arrive, the listen stream
/// ends with its closing result, the server exits 0, and the spans of both rounds are sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_over_http_lets_the_call_finish_and_ends_the_listen_stream() {
    let mut receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint.clone();
    let (server, url) = blocking(move || {
        let mut server = serve_demo(&["--http", "0", "--otlp-endpoint", &endpoint]);
        let url = server.wait_for("listening on ");
        (server, url)
    })
    .await;
    let client = reqwest::Client::new();

    let mut listening = Events::of(post(&client, &url, &listen(1)).await);
    let acknowledged = listening.next().await.unwrap();
    assert_eq!(
        acknowledged["method"], "notifications/subscriptions/acknowledged",
        "{acknowledged}"
    );

    let provision = json!({"name": "provision", "arguments": {"name": "orders"}});
    let first = post(&client, &url, &modern(2, "tools/call", provision.clone())).await;
    let first: Value = serde_json::from_slice(&first.bytes().await.unwrap()).unwrap();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    // The question's key, whatever the server calls it.
    let key = first["result"]["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next())
        .expect("one question")
        .clone();
    let mut second = provision;
    second["inputResponses"] =
        json!({ key: {"action": "accept", "content": {"region": "eu-west-1"}} });
    second["requestState"] = first["result"]["requestState"].clone();
    let mut second = modern(3, "tools/call", second);
    // With a progress token the tool takes a moment per step, reporting each.
    second["params"]["_meta"]["progressToken"] = json!("steps");
    let mut call = Events::of(post(&client, &url, &second).await);
    let progress = call.next().await.unwrap();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");

    signal(server.child.id(), "TERM");
    let rest = call.rest().await;
    let result = rest.last().expect("the call's result");
    assert_eq!(result["id"], 3, "{rest:?}");
    assert_eq!(
        result["result"]["content"][0]["text"], "Provisioned 'orders' in eu-west-1.",
        "{rest:?}"
    );
    let rest = listening.rest().await;
    assert_listen_closed(rest.last().expect("the closing result"), 1);

    let (status, _, stderr) = blocking(move || server.finish()).await;
    assert_eq!(status.code(), Some(0), "{stderr:?}");
    assert!(
        stderr.iter().any(|line| line.starts_with("stopping: ")),
        "{stderr:?}"
    );
    wait_for_spans(&mut receiver, 2).await;
}
