//! Notifications of the application's own, both ways, in both eras: a handler's
//! `RequestContext::send_notification` reaches the client's `on_notification`; the client's
//! `send_notification` and `notify_roots_changed` reach the server's `on_notification` handler;
//! specification methods are refused on both sides; a flood of notifications runs a bounded
//! number of handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::client::{Client, ClientError, Mode};
use modelctx::server::notification_handler::{ClientNotification, MAX_RUNNING};
use modelctx::server::{RequestContext, Server};
use modelctx::types::jsonrpc::Notification;
use modelctx::types::*;
use modelctx_test_support::client::connect_in_memory;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

fn builder(
    mode: Mode,
) -> (
    modelctx::client::ClientBuilder,
    mpsc::UnboundedReceiver<Notification>,
) {
    let (sent, seen) = mpsc::unbounded_channel();
    let builder =
        Client::builder()
            .mode(mode)
            .on_notification(move |notification: &Notification| {
                let _ = sent.send(notification.clone());
            });
    (builder, seen)
}

/// A tool that sends `com.example/tick` twice, then tries `notifications/progress` by hand.
fn ticking_server() -> Server {
    Server::builder("ticks", "1.0.0")
        .tool(
            Tool::new("tick", Tool::empty_input_schema()),
            |ctx: RequestContext, _params: CallToolRequestParams| async move {
                for n in 1..=2 {
                    ctx.send_notification("com.example/tick", Some(&json!({"n": n})))
                        .await?;
                }
                let refused = ctx
                    .send_notification("notifications/progress", Some(&json!({})))
                    .await
                    .expect_err("a specification method is refused");
                assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
                Ok::<_, ErrorObject>(CallToolResult::text("ticked"))
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_handler_s_own_notifications_reach_the_client_in_both_eras() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let (builder, mut seen) = builder(mode.clone());
        let client = connect_in_memory(ticking_server(), builder).await;
        client.call_tool("tick", json!({})).await.unwrap();
        let mut ticks = Vec::new();
        while let Ok(notification) = seen.try_recv() {
            if notification.method == "com.example/tick" {
                let params: Value =
                    serde_json::from_str(notification.params.as_ref().unwrap().get()).unwrap();
                ticks.push(params["n"].clone());
            }
        }
        assert_eq!(ticks, [json!(1), json!(2)], "{mode:?}");
        client.close().await.unwrap();
    }
}

/// A server that records the notifications its handlers see.
fn recording_server() -> (Server, mpsc::UnboundedReceiver<ClientNotification>) {
    let (sent, seen) = mpsc::unbounded_channel();
    let roots = sent.clone();
    let server = Server::builder("listener", "1.0.0")
        .on_notification("com.example/hello", move |n: ClientNotification| {
            let sent = sent.clone();
            async move {
                let _ = sent.send(n);
            }
        })
        .on_notification(
            "notifications/roots/list_changed",
            move |n: ClientNotification| {
                let roots = roots.clone();
                async move {
                    let _ = roots.send(n);
                }
            },
        )
        .build()
        .unwrap();
    (server, seen)
}

#[tokio::test]
async fn the_client_s_notifications_reach_the_server_s_handlers_in_both_eras() {
    for (mode, era) in [(Mode::Auto, Era::Modern), (Mode::Handshake, Era::Handshake)] {
        let (server, mut seen) = recording_server();
        let client = connect_in_memory(server, Client::builder().mode(mode.clone())).await;
        client
            .send_notification("com.example/hello", Some(&json!({"from": "client"})))
            .await
            .unwrap();
        let hello = seen.recv().await.unwrap();
        assert_eq!(hello.method, "com.example/hello");
        assert_eq!(hello.params, Some(json!({"from": "client"})));
        assert_eq!(hello.era, era);

        let refused = client
            .send_notification("notifications/cancelled", Some(&json!({"requestId": 1})))
            .await
            .unwrap_err();
        assert!(
            matches!(refused, ClientError::InvalidArgument(_)),
            "{refused}"
        );

        client.notify_roots_changed().await.unwrap();
        // A request after the notification: its answer comes after the server read both.
        client.ping().await.unwrap();
        let roots = seen.try_recv();
        if era == Era::Handshake {
            let roots = roots.expect("roots/list_changed reached the handler");
            assert_eq!(roots.method, "notifications/roots/list_changed");
        } else {
            assert!(
                roots.is_err(),
                "2026-07-28 has no roots notification: {roots:?}"
            );
        }
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_second_handler_for_one_method_is_refused() {
    let error = Server::builder("twice", "1.0.0")
        .on_notification("com.example/x", |_n: ClientNotification| async {})
        .on_notification("com.example/x", |_n: ClientNotification| async {})
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("com.example/x"), "{error}");
}

/// Handlers that wait: the first `MAX_RUNNING` run, the rest of the flood is dropped, and the
/// server goes on answering; once they finish, a new notification runs again.
#[tokio::test]
async fn a_flood_of_notifications_runs_a_bounded_number_of_handlers() {
    let started = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(0));
    let server = {
        let started = Arc::clone(&started);
        let gate = Arc::clone(&gate);
        Server::builder("flood", "1.0.0")
            .on_notification("com.example/slow", move |_n: ClientNotification| {
                started.fetch_add(1, Ordering::SeqCst);
                let gate = Arc::clone(&gate);
                async move {
                    let _ = gate.acquire().await.map(|permit| permit.forget());
                }
            })
            .build()
            .unwrap()
    };
    let client = connect_in_memory(server, Client::builder()).await;
    for _ in 0..MAX_RUNNING + 36 {
        client
            .send_notification("com.example/slow", None)
            .await
            .unwrap();
    }
    client.ping().await.unwrap();
    // Every handler was started (counted) when its notification was read, before the ping's
    // answer: the count is final.
    assert_eq!(started.load(Ordering::SeqCst), MAX_RUNNING);

    gate.add_permits(MAX_RUNNING);
    // The handlers finish and give their room back; a new notification then runs. Polled,
    // bounded.
    let mut ran = false;
    for _ in 0..1000 {
        client
            .send_notification("com.example/slow", None)
            .await
            .unwrap();
        client.ping().await.unwrap();
        if started.load(Ordering::SeqCst) > MAX_RUNNING {
            ran = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(ran, "no handler ran after the others finished");
    gate.add_permits(1000);
    client.close().await.unwrap();
}
