//! Shared helpers of the client tests: the Python reference peers (stdio commands and HTTP
//! servers on 127.0.0.1), and callbacks that record what they were asked.
pub mod auth;

pub use crate::process::{python, repo_root};

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{CallbackContext, ClientBuilder, InputOrigin};
use modelctx::types::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, ListRootsResult, Root,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A path under `tests/python/`.
pub fn peer(script: &str) -> PathBuf {
    repo_root().join("tests/python").join(script)
}

/// The command that runs a Python peer over stdio (stderr discarded unless
/// `MCP_TEST_PEER_STDERR` is set).
pub fn peer_command(script: &str, args: &[&str]) -> Command {
    let mut command = Command::new(python());
    command.arg(peer(script)).args(args);
    if std::env::var_os("MCP_TEST_PEER_STDERR").is_none() {
        command.stderr(Stdio::null());
    }
    command
}

/// A Python peer serving streamable HTTP on a free 127.0.0.1 port; killed on drop.
#[derive(Debug)]
pub struct HttpPeer {
    /// The peer's MCP endpoint.
    pub url: String,
    child: Child,
}

impl HttpPeer {
    /// Starts `script --http 0 args…` and waits (bounded) for it to announce its URL.
    pub async fn start(script: &str, args: &[&str]) -> Self {
        Self::start_with_env(script, args, &[]).await
    }

    /// Like [`HttpPeer::start`], with extra environment variables.
    pub async fn start_with_env(script: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(python());
        command
            .arg(peer(script))
            .args(["--http", "0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn python peer");
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.split("listening on ").nth(1) {
                    return url.trim().to_owned();
                }
            }
            panic!("{script} exited before listening");
        })
        .await
        .expect("peer did not start listening in time");
        // Keep draining stderr so the peer never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if std::env::var_os("MCP_TEST_PEER_STDERR").is_some() {
                    let _ = writeln!(std::io::stderr(), "[peer] {line}");
                }
            }
        });
        Self { url, child }
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// One callback invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// What was asked: `"elicitation"`, `"sampling"` or `"roots"`.
    pub kind: &'static str,
    /// Where the question came from.
    pub origin: InputOrigin,
    /// The elicitation's message, if any.
    pub message: Option<String>,
}

/// Records callback invocations.
#[derive(Debug, Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Call>>>);

impl Recorder {
    /// The questions so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, kind: &'static str, context: &CallbackContext, message: Option<String>) {
        self.0.lock().unwrap().push(Call {
            kind,
            origin: context.origin().clone(),
            message,
        });
    }

    /// The input keys asked so far, in order.
    pub fn keys(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c.origin {
                InputOrigin::InputRequest { key } => Some(key),
                _ => None,
            })
            .collect()
    }
}

/// Fills an elicitation form: a value per property from `values`, else by type.
pub fn fill_form(params: &ElicitRequestParams, values: &Value) -> ElicitResult {
    match params {
        ElicitRequestParams::Url(_) => ElicitResult::accept_url(),
        ElicitRequestParams::Form(form) => {
            let schema = serde_json::to_value(&form.requested_schema).unwrap();
            let mut content = serde_json::Map::new();
            for (name, property) in schema["properties"].as_object().unwrap() {
                let value =
                    values
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| match property["type"].as_str() {
                            Some("boolean") => json!(true),
                            Some("integer" | "number") => json!(1),
                            _ => json!("x"),
                        });
                content.insert(name.clone(), value);
            }
            ElicitResult::accept(content)
        }
        other => panic!("no test answer for {other:?}"),
    }
}

/// A builder with recording callbacks for all three kinds: elicitation fills forms from
/// `values`, sampling answers "A short summary." from model `fake-llm-1`, roots answer one
/// `file:///tmp/mcp-rust-root` root.
pub fn recording_builder(recorder: &Recorder, values: Value) -> ClientBuilder {
    let (r1, r2, r3) = (recorder.clone(), recorder.clone(), recorder.clone());
    let values = Arc::new(values);
    ClientBuilder::new()
        .on_elicitation(
            move |context: CallbackContext, params: ElicitRequestParams| {
                r1.push("elicitation", &context, Some(params.message().to_owned()));
                let answer = fill_form(&params, &values);
                async move { Ok::<_, ErrorObject>(answer) }
            },
        )
        .on_sampling(move |context: CallbackContext, _params| {
            r2.push("sampling", &context, None);
            async move {
                Ok::<_, ErrorObject>(CreateMessageResult::text("fake-llm-1", "A short summary."))
            }
        })
        .on_list_roots(move |context: CallbackContext| {
            r3.push("roots", &context, None);
            async move {
                Ok::<_, ErrorObject>(ListRootsResult::new(vec![Root::new(
                    "file:///tmp/mcp-rust-root",
                    Some("rust-root".to_owned()),
                )]))
            }
        })
}

/// The standard answers used against the peers.
pub fn answers() -> Value {
    json!({"region": "eu-west-1", "seat": "aisle", "amount": 1200, "confirm": true,
           "audience": "the board", "format": "pdf", "ok": true})
}

/// What a fake server received, in order.
pub type Log = Arc<Mutex<Vec<Value>>>;

/// A scripted server on an in-memory pipe: every message the client writes is logged, sent
/// to `received`, and handed to `handler`, whose replies are written back in order.
#[derive(Debug)]
pub struct FakeServer {
    /// Every message the client sent.
    pub log: Log,
    /// The client's messages, as they arrive.
    pub received: tokio::sync::mpsc::UnboundedReceiver<Value>,
    /// The client's end of the pipe, read side.
    pub reader: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    /// The client's end of the pipe, write side.
    pub writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl FakeServer {
    /// Starts the fake server; `handler` answers each message the client sends.
    pub fn start(mut handler: impl FnMut(&Value) -> Vec<Value> + Send + 'static) -> Self {
        use tokio::io::AsyncWriteExt as _;
        let pipe = modelctx::memory::pipe();
        let log: Log = Arc::default();
        let (sender, received) = tokio::sync::mpsc::unbounded_channel();
        let task_log = Arc::clone(&log);
        let mut writer = pipe.server.writer;
        let reader = pipe.server.reader;
        tokio::spawn(async move {
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let message: Value = serde_json::from_str(&line).expect("client wrote JSON");
                task_log.lock().unwrap().push(message.clone());
                let _ = sender.send(message.clone());
                for reply in handler(&message) {
                    let mut bytes = serde_json::to_vec(&reply).unwrap();
                    bytes.push(b'\n');
                    if writer.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
            }
            let _ = writer.shutdown().await;
        });
        Self {
            log,
            received,
            reader: pipe.client.reader,
            writer: pipe.client.writer,
        }
    }

    /// Connects `builder` to this server; returns the client and the server's log/receiver.
    pub async fn connect(
        self,
        builder: ClientBuilder,
    ) -> (
        modelctx::client::Client,
        Log,
        tokio::sync::mpsc::UnboundedReceiver<Value>,
    ) {
        let client = builder
            .connect_io(self.reader, self.writer)
            .await
            .expect("connect to the fake server");
        (client, self.log, self.received)
    }
}

/// The `tools/call` requests a fake server received, in order.
pub fn tool_calls(log: &Log) -> Vec<Value> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .cloned()
        .collect()
}

/// A JSON-RPC result for `request`.
pub fn result(request: &Value, result: Value) -> Value {
    let mut reply = json!({"jsonrpc": "2.0", "id": request["id"]});
    reply["result"] = result;
    reply
}

/// A JSON-RPC error for `request`.
pub fn error(request: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": request["id"], "error": error})
}

/// A complete text tool result.
pub fn text_result(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
}

/// A form elicitation input request with one boolean field `ok`.
pub fn elicit_ok(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}})
}

/// A builder pinned to 2026-07-28 (no discover probe), so fake servers see only the calls.
pub fn pinned() -> ClientBuilder {
    ClientBuilder::new().mode(modelctx::client::Mode::Pinned(
        modelctx::types::ProtocolVersion::V2026_07_28,
    ))
}

/// Serves `server` on a fresh in-memory pipe (the stdio code path) and connects `builder` to it.
pub async fn connect_in_memory(
    server: modelctx::server::Server,
    builder: ClientBuilder,
) -> modelctx::client::Client {
    let pipe = modelctx::memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    builder
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap()
}
