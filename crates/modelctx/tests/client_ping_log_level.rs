//! `Client::ping` and `Client::set_log_level` in both eras: a ping is answered (a `ping` in the
//! handshake era, a `server/discover` on 2026-07-28, which has no `ping`); the level set after
//! connecting decides which log messages a tool's later calls send (`logging/setLevel` in the
//! handshake era, the level in every later request's `_meta` on 2026-07-28), and the
//! high-level `Context::error` is one of them.

use modelctx::client::{Client, Mode};
use modelctx::server::{Context, McpServer};
use modelctx::types::jsonrpc::Notification;
use modelctx::types::*;
use modelctx_test_support::client::connect_in_memory;
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// A tool that logs one message at each of three levels.
fn logging_server() -> modelctx::server::Server {
    McpServer::builder("logs", "1.0.0")
        .tool_fn(
            "chatty",
            "Logs.",
            |ctx: Context, _args: NoArgs| async move {
                ctx.debug("a debug line").await;
                ctx.warning("a warning").await;
                ctx.error("an error").await;
                "done".to_owned()
            },
        )
        .build()
        .unwrap()
        .into_server()
}

/// The messages of the log notifications received so far, in order.
fn drained(seen: &mut mpsc::UnboundedReceiver<Notification>) -> Vec<String> {
    let mut messages = Vec::new();
    while let Ok(notification) = seen.try_recv() {
        if notification.method == "notifications/message" {
            let params: Value =
                serde_json::from_str(notification.params.as_ref().unwrap().get()).unwrap();
            messages.push(params["data"].as_str().unwrap_or_default().to_owned());
        }
    }
    messages
}

#[tokio::test]
async fn the_log_level_set_after_connecting_decides_what_later_calls_log() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let (sent, mut seen) = mpsc::unbounded_channel();
        let builder = Client::builder().mode(mode.clone()).on_notification(
            move |notification: &Notification| {
                let _ = sent.send(notification.clone());
            },
        );
        let client = connect_in_memory(logging_server(), builder).await;

        client.set_log_level(LoggingLevel::Warning).await.unwrap();
        client.call_tool("chatty", json!({})).await.unwrap();
        assert_eq!(drained(&mut seen), ["a warning", "an error"], "{mode:?}");

        client.set_log_level(LoggingLevel::Error).await.unwrap();
        client.call_tool("chatty", json!({})).await.unwrap();
        assert_eq!(drained(&mut seen), ["an error"], "{mode:?}");

        client.set_log_level(LoggingLevel::Debug).await.unwrap();
        client.call_tool("chatty", json!({})).await.unwrap();
        assert_eq!(
            drained(&mut seen),
            ["a debug line", "a warning", "an error"],
            "{mode:?}"
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_ping_is_answered_in_both_eras() {
    for (mode, era) in [(Mode::Auto, Era::Modern), (Mode::Handshake, Era::Handshake)] {
        let client = connect_in_memory(logging_server(), Client::builder().mode(mode)).await;
        assert_eq!(client.era(), era);
        client.ping().await.unwrap();
        client.close().await.unwrap();
    }
}
