//! Client extensions (SEP-2133, `modelctx::client::extension`): advertised in both eras, a
//! claimed `resultType` resolved, an unclaimed one still refused, notification bindings called,
//! and what connecting refuses.

use std::time::Duration;

use modelctx::client::extension::{ClientExtension, NotificationBinding, ResultClaim};
use modelctx::client::{ClientBuilder, ClientError, Mode, TaskSettings};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ExtensionId, Extra, ResultDecodeError,
};
use modelctx_test_support::client::{FakeServer, pinned, result, text_result};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const LATER: &str = "com.example/later";

fn id(text: &str) -> ExtensionId {
    text.parse().unwrap()
}

fn settings(value: Value) -> Extra {
    let Value::Object(settings) = value else {
        panic!("settings are an object");
    };
    settings
}

/// Claims `resultType: "later"` (whose result carries the text to return) and observes
/// `com.example/later/ready` notifications.
struct Later {
    seen: mpsc::UnboundedSender<Option<Value>>,
}

impl ClientExtension for Later {
    fn id(&self) -> ExtensionId {
        id(LATER)
    }

    fn settings(&self) -> Extra {
        settings(json!({"maxWaitMs": 500}))
    }

    fn claims(&self) -> Vec<ResultClaim> {
        let claim = ResultClaim::new("later", |claimed, context| async move {
            let body: Value = serde_json::from_str(claimed.raw.get())
                .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
            Ok(CallToolResult::text(format!(
                "{} (from {})",
                body["text"].as_str().unwrap_or_default(),
                context.tool()
            )))
        });
        vec![claim.unwrap()]
    }

    fn notifications(&self) -> Vec<NotificationBinding> {
        let seen = self.seen.clone();
        vec![NotificationBinding::new(
            "com.example/later/ready",
            move |params| {
                let seen = seen.clone();
                async move {
                    let _ = seen.send(params);
                }
            },
        )]
    }
}

fn later() -> (Later, mpsc::UnboundedReceiver<Option<Value>>) {
    let (seen, observed) = mpsc::unbounded_channel();
    (Later { seen }, observed)
}

/// A fake 2026-07-28 server: `tools/call` of `later` answers `resultType: "later"` (after a
/// `com.example/later/ready` notification), of `other` an unclaimed `resultType`, anything else
/// a text result.
fn later_server() -> FakeServer {
    FakeServer::start(|message| {
        if message["method"] != "tools/call" {
            return Vec::new();
        }
        match message["params"]["name"].as_str() {
            Some("later") => vec![
                json!({"jsonrpc": "2.0", "method": "com.example/later/ready", "params": {"ticket": 7}}),
                result(message, json!({"resultType": "later", "text": "done"})),
            ],
            Some("other") => vec![result(message, json!({"resultType": "someday"}))],
            _ => vec![result(message, text_result("plain"))],
        }
    })
}

/// The extension's settings travel in every 2026-07-28 request's `_meta` client capabilities,
/// beside a plain advertised one.
#[tokio::test]
async fn extensions_are_advertised_on_every_modern_request() {
    let (extension, _observed) = later();
    let builder = pinned()
        .extension(id("com.example/plain"), settings(json!({"v": 1})))
        .client_extension(extension);
    let (client, log, _) = later_server().connect(builder).await;
    client.call_tool("plain", json!({})).await.unwrap();
    client.call_tool("plain", json!({})).await.unwrap();
    let calls = modelctx_test_support::client::tool_calls(&log);
    assert_eq!(calls.len(), 2);
    for call in calls {
        let extensions =
            &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"];
        assert_eq!(extensions["com.example/plain"], json!({"v": 1}), "{call}");
        assert_eq!(extensions[LATER], json!({"maxWaitMs": 500}), "{call}");
    }
}

/// In the handshake era the extensions are declared once, at `initialize`.
#[tokio::test]
async fn extensions_are_advertised_at_initialize() {
    let server = FakeServer::start(|message| match message["method"].as_str() {
        Some("initialize") => vec![result(
            message,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "old", "version": "1"}}),
        )],
        _ => Vec::new(),
    });
    let builder = ClientBuilder::new()
        .mode(Mode::Handshake)
        .extension(id("com.example/plain"), settings(json!({"v": 1})));
    let (client, log, _) = server.connect(builder).await;
    let initialize = log
        .lock()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "initialize")
        .cloned()
        .expect("an initialize request");
    assert_eq!(
        initialize["params"]["capabilities"]["extensions"]["com.example/plain"],
        json!({"v": 1}),
        "{initialize}"
    );
    drop(client);
}

/// A claimed `resultType` goes to the claim's resolver, whose result `call_tool` returns; the
/// bound notification reaches its handler.
#[tokio::test]
async fn a_claimed_result_is_resolved_and_a_binding_observes() {
    let (extension, mut observed) = later();
    let (client, _, _) = later_server()
        .connect(pinned().client_extension(extension))
        .await;
    let resolved = client.call_tool("later", json!({})).await.unwrap();
    assert_eq!(resolved.first_text(), Some("done (from later)"));
    let params = tokio::time::timeout(Duration::from_secs(10), observed.recv())
        .await
        .expect("the binding is called")
        .expect("the channel is open");
    assert_eq!(params, Some(json!({"ticket": 7})));
}

/// A session-level call resolves no claim: the claimed result comes back as
/// `ClientError::ClaimedResult`, raw result kept.
#[tokio::test]
async fn a_session_level_call_returns_the_claimed_result() {
    let (extension, _observed) = later();
    let (client, _, _) = later_server()
        .connect(pinned().client_extension(extension))
        .await;
    let error = client
        .session()
        .call_tool(CallToolRequestParams::new("later", None), false)
        .await
        .unwrap_err();
    let ClientError::ClaimedResult(claimed) = error else {
        panic!("not a claimed result: {error}");
    };
    assert_eq!(claimed.result_type.as_str(), "later");
    assert!(claimed.raw.get().contains("\"done\""));
}

/// A `resultType` no extension claims stays `UnknownResultType`, with or without extensions.
#[tokio::test]
async fn an_unclaimed_result_type_is_still_refused() {
    let (extension, _observed) = later();
    for builder in [pinned(), pinned().client_extension(extension)] {
        let (client, _, _) = later_server().connect(builder).await;
        let error = client.call_tool("other", json!({})).await.unwrap_err();
        assert!(
            matches!(&error, ClientError::InvalidResult(ResultDecodeError::UnknownResultType(t)) if t == "someday"),
            "{error}"
        );
    }
    // Without the extension, its type is as unknown as any other.
    let (client, _, _) = later_server().connect(pinned()).await;
    let error = client.call_tool("later", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::InvalidResult(ResultDecodeError::UnknownResultType(t)) if t == "later"),
        "{error}"
    );
}

/// Connecting refuses an identifier given twice, and a claim of the tasks extension's `task`
/// when the client follows tasks itself.
#[tokio::test]
async fn duplicates_and_a_claim_of_task_are_refused_when_connecting() {
    let (first, _a) = later();
    let (second, _b) = later();
    let builder = pinned().client_extension(first).client_extension(second);
    let pipe = modelctx::memory::pipe();
    let error = builder
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::InvalidArgument(m) if m.contains(LATER) && m.contains("twice")),
        "{error}"
    );

    struct Tasky;
    impl ClientExtension for Tasky {
        fn id(&self) -> ExtensionId {
            id("com.example/tasky")
        }
        fn claims(&self) -> Vec<ResultClaim> {
            vec![ResultClaim::new("task", |_r, _c| async { Ok(CallToolResult::text("")) }).unwrap()]
        }
    }
    let pipe = modelctx::memory::pipe();
    let error = pinned()
        .tasks(TaskSettings::new())
        .client_extension(Tasky)
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::InvalidArgument(m) if m.contains("\"task\"")),
        "{error}"
    );
}
