//! The bookshop example (`examples/mcp_server_bookshop.rs`) driven end to end by real clients:
//! our `modelctx::client::Client` (in-memory pipe and streamable HTTP) and the Python SDK 2.3.0
//! `mcp.Client` with callbacks (`tests/python/client_driver.py`, over stdio against the example
//! binary and over HTTP).

// Test helpers take JSON values by value: they are built inline with `json!`.
#![allow(clippy::needless_pass_by_value)]

#[path = "../examples/mcp_server_bookshop.rs"]
#[allow(dead_code, unreachable_pub, clippy::print_stderr)]
mod bookshop;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use modelctx::client::{CallbackContext, Client, ClientBuilder};
use modelctx::types::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, ListRootsResult, Root,
};
use modelctx_test_support::process::{python, repo_root};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// Which questions the callbacks saw: `(kind, key, message)`.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String, String)>>>);

impl Seen {
    fn push(&self, kind: &str, context: &CallbackContext, message: &str) {
        let key = context.key().unwrap_or_default().to_owned();
        self.0
            .lock()
            .unwrap()
            .push((kind.to_owned(), key, message.to_owned()));
    }

    fn take(&self) -> Vec<(String, String, String)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn values() -> Value {
    json!({"seat": "aisle", "amount": 1200, "confirm": true, "audience": "the board",
           "format": "pdf", "ok": true})
}

/// A client answering every kind of question (forms from `values()`).
fn builder(seen: &Seen, elicitation: bool) -> ClientBuilder {
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let mut builder = Client::builder()
        .on_sampling(move |context: CallbackContext, _params| {
            s2.push("sampling", &context, "");
            async { Ok::<_, ErrorObject>(CreateMessageResult::text("fake-llm-1", "Short.")) }
        })
        .on_list_roots(move |context: CallbackContext| {
            s3.push("roots", &context, "");
            async {
                Ok::<_, ErrorObject>(ListRootsResult::new(vec![Root::new(
                    "file:///tmp/shop",
                    Some("shop".to_owned()),
                )]))
            }
        });
    if elicitation {
        builder = builder.on_elicitation(
            move |context: CallbackContext, params: ElicitRequestParams| {
                s1.push("elicitation", &context, params.message());
                let mut content = serde_json::Map::new();
                if let ElicitRequestParams::Form(form) = &params {
                    for name in form.requested_schema.properties.keys() {
                        content.insert(name.clone(), values()[name].clone());
                    }
                }
                async move { Ok::<_, ErrorObject>(ElicitResult::accept(content)) }
            },
        );
    }
    builder
}

/// The tool that asks by returning an `InputRequiredResult` itself gets its answer and state.
async fn manual_irr_completes(client: &Client) {
    let result = client
        .call_tool("manual_irr", json!({"x": 7}))
        .await
        .unwrap();
    assert_eq!(
        result.first_text(),
        Some("manual_irr done: x=7, ok=true, state seen by handler: 'manual:7'")
    );
}

async fn every_surface(client: &Client, seen: &Seen) {
    let result = client
        .call_tool("order_book", json!({"title": "Neuromancer"}))
        .await
        .unwrap();
    assert_eq!(
        result.first_text(),
        Some("Backorder for 'Neuromancer': placed.")
    );
    let key = |name: &str| name.to_owned();
    assert_eq!(
        seen.take(),
        [(
            "elicitation".to_owned(),
            key("confirm_backorder"),
            "'Neuromancer' is out of stock. Place a backorder?".to_owned()
        )]
    );

    let result = client
        .call_tool("plan_trip", json!({"city": "Lisbon"}))
        .await
        .unwrap();
    assert_eq!(
        result.first_text(),
        Some("Trip to Lisbon: seat aisle, budget 1200 EUR.")
    );
    let mut keys: Vec<String> = seen.take().into_iter().map(|(_, k, _)| k).collect();
    keys.sort();
    assert_eq!(keys, [key("ask_budget"), key("ask_prefs")]);

    let result = client
        .call_tool("summarize", json!({"text": "long text"}))
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("summary[fake-llm-1]: Short."));
    let result = client.call_tool("where_am_i", json!({})).await.unwrap();
    assert_eq!(result.first_text(), Some("roots: file:///tmp/shop (shop)"));
    let kinds: Vec<String> = seen.take().into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(kinds, ["sampling", "roots"]);

    manual_irr_completes(client).await;
    seen.take();
    let result = client
        .call_tool("link_loyalty", json!({"partner": "paperback"}))
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("Linked your paperback account."));
    assert_eq!(
        seen.take(),
        [(
            "elicitation".to_owned(),
            key("sign_in_partner"),
            "Sign in to paperback to link your loyalty account.".to_owned()
        )]
    );
    let result = client
        .call_tool("stock", json!({"title": "Dune"}))
        .await
        .unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"title": "Dune", "copies": 0}))
    );

    let prompt = client
        .get_prompt(
            "briefing",
            Some([("topic".to_owned(), "Q3".to_owned())].into()),
        )
        .await
        .unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Brief the board on Q3.")
    );
    let report = client.read_resource("report://q3").await.unwrap();
    assert_eq!(
        serde_json::to_value(&report.contents).unwrap(),
        json!([{"uri": "report://q3", "mimeType": "text/plain", "text": "Report q3 (pdf)"}])
    );
    let hours = client.read_resource("info://hours").await.unwrap();
    assert_eq!(
        serde_json::to_value(&hours.contents[0]).unwrap()["text"],
        "Mon-Sat 9-18"
    );
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "report://{quarter}");
}

#[tokio::test]
async fn our_client_in_memory() {
    let pipe = modelctx::memory::pipe();
    let server = bookshop::bookshop();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let seen = Seen::default();
    let client = builder(&seen, true)
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    every_surface(&client, &seen).await;
    client.close().await.unwrap();
}

/// The bookshop on streamable HTTP at 127.0.0.1, stopped on drop.
struct Http {
    url: String,
    _stop: oneshot::Sender<()>,
}

async fn http() -> Http {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = bookshop::bookshop();
    tokio::spawn(async move {
        server
            .serve_http_on(listener, Default::default(), async {
                let _ = stopped.await;
            })
            .await
    });
    Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        _stop: stop,
    }
}

#[tokio::test]
async fn our_client_over_http() {
    let server = http().await;
    let seen = Seen::default();
    let client = builder(&seen, true)
        .connect_http(&server.url)
        .await
        .unwrap();
    every_surface(&client, &seen).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn our_client_on_a_handshake_era_session_is_asked_through_the_back_channel() {
    let pipe = modelctx::memory::pipe();
    let server = bookshop::bookshop();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let seen = Seen::default();
    let client = builder(&seen, true)
        .mode(modelctx::client::Mode::Handshake)
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    assert_eq!(client.era(), modelctx::types::Era::Handshake);
    // The same resolvers, asked mid-call (two requests for the two questions, no state).
    let result = client
        .call_tool("plan_trip", json!({"city": "Lisbon"}))
        .await
        .unwrap();
    assert_eq!(
        result.first_text(),
        Some("Trip to Lisbon: seat aisle, budget 1200 EUR.")
    );
    let asked = seen.take();
    assert_eq!(asked.len(), 2);
    // A back-channel request has no input-request key: the callback sees its kind instead.
    assert!(
        asked
            .iter()
            .all(|(kind, key, _)| kind == "elicitation" && key == "form"),
        "{asked:?}"
    );
    let result = client.call_tool("where_am_i", json!({})).await.unwrap();
    assert_eq!(result.first_text(), Some("roots: file:///tmp/shop (shop)"));
    // A tool that asks by returning an InputRequiredResult is bridged: the SDK asks over the
    // back-channel and calls it again with the answer and its state.
    seen.take();
    manual_irr_completes(&client).await;
    assert_eq!(
        seen.take(),
        [(
            "elicitation".to_owned(),
            "form".to_owned(),
            "Confirm manual step for x=7?".to_owned()
        )]
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn our_client_without_elicitation_gets_32021() {
    let pipe = modelctx::memory::pipe();
    let server = bookshop::bookshop();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let client = builder(&Seen::default(), false)
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    let error = client
        .call_tool("order_book", json!({"title": "Neuromancer"}))
        .await
        .unwrap_err();
    let error = error.rpc_error().expect("the server's error");
    assert_eq!(error.code.0, -32021);
    assert_eq!(
        error.data,
        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
    );
    client.close().await.unwrap();
}

/// Arguments that do not fit: the model can correct a tool call (`isError`), a prompt request
/// is the client's mistake (`-32602`, as the spec's prompt errors say).
#[tokio::test]
async fn arguments_that_do_not_fit_are_is_error_for_tools_and_32602_for_prompts() {
    let pipe = modelctx::memory::pipe();
    let server = bookshop::bookshop();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let client = builder(&Seen::default(), true)
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    let result = client.call_tool("echo", json!({"text": 42})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = result.first_text().unwrap();
    // Checked against the published inputSchema before the handler runs, naming the place.
    assert_eq!(
        text,
        "Input validation error: /text: 42 is not of type \"string\""
    );

    let error = client
        .get_prompt("briefing", Some(std::collections::BTreeMap::new()))
        .await
        .unwrap_err();
    let error = error.rpc_error().expect("the server's error");
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert!(error.message.contains("topic"), "{}", error.message);
    // The server keeps serving.
    let result = client
        .call_tool("echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("still here"));
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// The Python SDK 2.3.0 client.

/// The example binary, built (or found up to date) by the cargo running this test.
fn example_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let output = std::process::Command::new(cargo)
                .args([
                    "build",
                    "-q",
                    "-p",
                    "modelctx",
                    "--example",
                    "mcp_server_bookshop",
                    "--message-format=json",
                ])
                .current_dir(repo_root())
                .stderr(Stdio::inherit())
                .output()
                .expect("run cargo build");
            assert!(output.status.success(), "building the example failed");
            String::from_utf8(output.stdout)
                .unwrap()
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find_map(|message| {
                    (message["target"]["name"] == "mcp_server_bookshop")
                        .then(|| message["executable"].as_str().map(PathBuf::from))
                        .flatten()
                })
                .expect("the example's executable")
        })
        .clone()
}

/// Runs `client_driver.py` with `ops`; returns its result events and its callback log lines.
async fn driver(target: &[&str], ops: &Value, extra: &[&str]) -> (Vec<Value>, Vec<Value>) {
    let answers = json!({"elicitation": {"values": values()}});
    let mut command = tokio::process::Command::new(python());
    command
        .arg(repo_root().join("tests/python/client_driver.py"))
        .args(["--timeout", "60", "--answers-json", &answers.to_string()])
        .args(["--ops-json", &ops.to_string()])
        .args(extra)
        .args(target)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the driver finished in time")
        .expect("run the driver");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        events.iter().any(|e| e["event"] == "done"),
        "driver did not finish: {stdout}\n{stderr}"
    );
    let callbacks = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("CALLBACK "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let results = events
        .into_iter()
        .filter(|e| e["event"] == "result")
        .collect();
    (results, callbacks)
}

fn python_ops() -> Value {
    json!([
        {"op": "call_tool", "name": "order_book", "arguments": {"title": "Neuromancer"}},
        {"op": "call_tool", "name": "plan_trip", "arguments": {"city": "Lisbon"}},
        {"op": "call_tool", "name": "summarize", "arguments": {"text": "long text"}},
        {"op": "call_tool", "name": "where_am_i", "arguments": {}},
        {"op": "call_tool", "name": "stock", "arguments": {"title": "Dune"}},
        {"op": "get_prompt", "name": "briefing", "arguments": {"topic": "Q3"}},
        {"op": "read_resource", "uri": "report://q3"},
    ])
}

fn check_python_run(results: &[Value], callbacks: &[Value]) {
    for result in results {
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["protocol_version"], "2026-07-28");
    }
    let text = |i: usize| results[i]["result"]["content"][0]["text"].clone();
    assert_eq!(text(0), "Backorder for 'Neuromancer': placed.");
    assert_eq!(text(1), "Trip to Lisbon: seat aisle, budget 1200 EUR.");
    assert_eq!(text(2), "summary[fake-llm-1]: A short summary.");
    assert_eq!(text(3), "roots: file:///tmp/mcp-peer-root (peer-root)");
    assert_eq!(
        results[4]["result"]["structuredContent"],
        json!({"title": "Dune", "copies": 0})
    );
    assert_eq!(
        results[5]["result"]["messages"][0]["content"]["text"],
        "Brief the board on Q3."
    );
    assert_eq!(
        results[6]["result"]["contents"][0]["text"],
        "Report q3 (pdf)"
    );
    let keys: Vec<&str> = callbacks.iter().filter_map(|c| c["key"].as_str()).collect();
    // The keys are the resolvers' names, whichever module the bookshop is compiled in (the
    // example binary's root, or this test's `bookshop` module).
    let expected: Vec<&str> = vec![
        "confirm_backorder",
        "ask_budget",
        "ask_prefs",
        "sample_summary",
        "get_roots",
        "ask_audience",
        "format",
    ];
    let mut sorted_keys = keys.clone();
    let mut sorted_expected = expected;
    sorted_keys.sort_unstable();
    sorted_expected.sort_unstable();
    assert_eq!(sorted_keys, sorted_expected, "{callbacks:?}");
}

#[tokio::test]
async fn python_client_over_stdio() {
    let binary = example_binary();
    let (results, callbacks) =
        driver(&["--stdio", binary.to_str().unwrap()], &python_ops(), &[]).await;
    check_python_run(&results, &callbacks);
}

#[tokio::test]
async fn python_client_over_http() {
    let server = http().await;
    let (results, callbacks) = driver(&["--url", &server.url], &python_ops(), &[]).await;
    check_python_run(&results, &callbacks);
}

#[tokio::test]
async fn python_handshake_client_is_asked_through_the_back_channel() {
    let binary = example_binary();
    let ops = json!([
        {"op": "call_tool", "name": "order_book", "arguments": {"title": "Neuromancer"}},
        {"op": "call_tool", "name": "plan_trip", "arguments": {"city": "Lisbon"}},
        {"op": "call_tool", "name": "summarize", "arguments": {"text": "long text"}},
        {"op": "get_prompt", "name": "briefing", "arguments": {"topic": "Q3"}},
        {"op": "call_tool", "name": "manual_irr", "arguments": {"x": 7}},
        {"op": "call_tool", "name": "link_loyalty", "arguments": {"partner": "paperback"}},
    ]);
    let (results, callbacks) = driver(
        &["--stdio", binary.to_str().unwrap()],
        &ops,
        &["--mode", "legacy"],
    )
    .await;
    for result in &results {
        assert_eq!(result["protocol_version"], "2025-11-25");
    }
    let text = |i: usize| results[i]["result"]["content"][0]["text"].clone();
    assert_eq!(text(0), "Backorder for 'Neuromancer': placed.");
    assert_eq!(text(1), "Trip to Lisbon: seat aisle, budget 1200 EUR.");
    assert_eq!(text(2), "summary[fake-llm-1]: A short summary.");
    assert_eq!(
        results[3]["result"]["messages"][0]["content"]["text"],
        "Brief the board on Q3."
    );
    // A hand-made InputRequiredResult is bridged over the back-channel (the Python SDK answers
    // -32603 here).
    assert_eq!(
        text(4),
        "manual_irr done: x=7, ok=true, state seen by handler: 'manual:7'"
    );
    // A URL to open, asked with an elicitationId and announced complete.
    assert_eq!(text(5), "Linked your paperback account.");
    // Back-channel requests carry JSON-RPC ids, not input-request keys.
    let kinds: Vec<&str> = callbacks
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "elicitation",
            "elicitation",
            "elicitation",
            "sampling",
            "elicitation",
            "elicitation",
            "elicitation"
        ]
    );
    let modes: Vec<&str> = callbacks
        .iter()
        .filter_map(|c| c["mode"].as_str())
        .collect();
    assert_eq!(modes.last(), Some(&"url"), "{callbacks:?}");
    assert!(
        callbacks.iter().all(|c| c["key"].is_number()),
        "{callbacks:?}"
    );
}

#[tokio::test]
async fn python_client_without_elicitation_gets_32021() {
    let server = http().await;
    let ops =
        json!([{"op": "call_tool", "name": "order_book", "arguments": {"title": "Neuromancer"}}]);
    let (results, callbacks) = driver(&["--url", &server.url], &ops, &["--no-elicitation"]).await;
    assert!(callbacks.is_empty());
    assert_eq!(results[0]["ok"], false);
    let error = &results[0]["error"];
    assert_eq!(error["code"], -32021);
    assert_eq!(
        error["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
    );
    assert_eq!(
        error["message"],
        "Client did not declare the form elicitation capability required by resolver 'confirm_backorder'"
    );
}
