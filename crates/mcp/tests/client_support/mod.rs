//! Shared helpers of the client tests: the Python reference peers (stdio commands and HTTP
//! servers on 127.0.0.1), and callbacks that record what they were asked.
#![allow(dead_code, unreachable_pub)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp::client::{CallbackContext, ClientBuilder, InputOrigin};
use mcp::types::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, ListRootsResult, Root,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The Python interpreter of the project venv (`scripts/python-env.sh` creates it once).
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let output = std::process::Command::new("bash")
                .arg(repo_root().join("scripts/python-env.sh"))
                .stderr(Stdio::inherit())
                .output()
                .expect("run scripts/python-env.sh");
            assert!(output.status.success(), "scripts/python-env.sh failed");
            PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
        })
        .clone()
}

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
pub struct HttpPeer {
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
    pub kind: &'static str,
    pub origin: InputOrigin,
    pub message: Option<String>,
}

/// Records callback invocations.
#[derive(Debug, Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Call>>>);

impl Recorder {
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
                Ok::<_, ErrorObject>(ListRootsResult {
                    roots: vec![Root::new(
                        "file:///tmp/mcp-rust-root",
                        Some("rust-root".to_owned()),
                    )],
                    meta: None,
                    extra: serde_json::Map::new(),
                })
            }
        })
}

/// The standard answers used against the peers.
pub fn answers() -> Value {
    json!({"region": "eu-west-1", "seat": "aisle", "amount": 1200, "confirm": true,
           "audience": "the board", "format": "pdf", "ok": true})
}
