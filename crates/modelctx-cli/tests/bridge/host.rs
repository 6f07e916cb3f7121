//! The host side of the tests: our client with recording callbacks, running `mcp bridge URL`.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{CallbackContext, Client, ClientBuilder, ClientError, InputOrigin, Mode};
use modelctx::types::{
    CallToolResult, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject,
    ListRootsResult, Root,
};
use modelctx_test_support::cli::HttpServer;
use serde_json::{Value, json};

/// The `mcp` binary under test.
pub(crate) const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// How long any one step may take before the test fails (never reached when things work).
pub(crate) const BOUND: Duration = Duration::from_secs(30);

/// `mcp serve demo --http 0 --protocol VERSION`.
pub(crate) fn demo(protocol: &str) -> HttpServer {
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
pub(crate) struct Recorder(Arc<Mutex<Vec<(&'static str, InputOrigin)>>>);

impl Recorder {
    pub(crate) fn calls(&self) -> Vec<(&'static str, InputOrigin)> {
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
pub(crate) async fn host(mode: Mode, url: &str, recorder: &Recorder) -> Client {
    host_with(mode, url, recorder, &[]).await
}

/// [`host`], the bridge given `options` too.
pub(crate) async fn host_with(
    mode: Mode,
    url: &str,
    recorder: &Recorder,
    options: &[&str],
) -> Client {
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
pub(crate) async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, ClientError> {
    tokio::time::timeout(BOUND, client.call_tool(name, arguments))
        .await
        .expect("the call ends in time")
}

/// `deploy` through `client`, whose host answers staging and 2 replicas.
pub(crate) async fn deploy(client: &Client) {
    let deployed = call(client, "deploy", json!({"service": "api"}))
        .await
        .unwrap();
    assert_eq!(
        text(&deployed),
        "Deployed api to staging with 2 replica(s)."
    );
}

pub(crate) fn text(result: &CallToolResult) -> &str {
    result.first_text().expect("a text result")
}
