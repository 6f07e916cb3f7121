//! A 2026-07-28-only upstream of our own, which shows what reaches it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{Client, Mode};
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, Era, ErrorObject,
    LoggingLevel, Tool,
};
use serde_json::{Value, json};

use super::host::{BOUND, MCP, Recorder, call, host, host_with, text};

/// A 2026-07-28-only upstream of our own whose `wait` tool runs until cancelled, telling the
/// test when it starts and when its cancellation arrives.
struct WaitingUpstream {
    url: String,
    server: Server,
    started: tokio::sync::mpsc::Receiver<()>,
    cancelled: tokio::sync::mpsc::Receiver<()>,
}

/// Sends on its channel when dropped: the end of a handler, however it ends.
struct TellOnDrop(tokio::sync::mpsc::Sender<()>);

impl Drop for TellOnDrop {
    fn drop(&mut self) {
        let _ = self.0.try_send(());
    }
}

async fn waiting_upstream() -> WaitingUpstream {
    let (started_tx, started) = tokio::sync::mpsc::channel(4);
    let (cancelled_tx, cancelled) = tokio::sync::mpsc::channel(4);
    let tool = Tool::new(
        "wait",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let chatty = Tool::new(
        "chatty",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let server = Server::builder("waiting", "1")
        .only_era(Era::Modern)
        // One tool a page: the bridge walks the upstream's pages.
        .page_size(1)
        .logging(true)
        .completion(
            |_ctx: RequestContext, params: CompleteRequestParams| async move {
                let typed = params.argument.value;
                Ok::<CompleteResult, ErrorObject>(
                    serde_json::from_value(
                        json!({"completion": {"values": [format!("{typed}-q3")]}}),
                    )
                    .unwrap(),
                )
            },
        )
        .tool(
            chatty,
            |ctx: RequestContext, _params: CallToolRequestParams| async move {
                ctx.log(LoggingLevel::Debug, Some("upstream"), json!("too fine"))
                    .await;
                ctx.log(
                    LoggingLevel::Info,
                    Some("upstream"),
                    json!("hello from upstream"),
                )
                .await;
                Ok::<_, ErrorObject>(CallToolResult::text("said hello"))
            },
        )
        .tool(
            tool,
            move |ctx: RequestContext, _params: CallToolRequestParams| {
                let (started, cancelled) = (started_tx.clone(), cancelled_tx.clone());
                async move {
                    let _ = started.send(()).await;
                    // Told whether the request is cancelled (its token) or dropped with its stream.
                    let _told = TellOnDrop(cancelled);
                    ctx.cancelled().await;
                    Err::<CallToolResult, _>(ErrorObject::internal("cancelled"))
                }
            },
        )
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = modelctx::server::http::HttpConfig::default();
    let handle = server.clone();
    tokio::spawn(async move {
        server
            .serve_http_on(listener, config, std::future::pending())
            .await
    });
    WaitingUpstream {
        url,
        server: handle,
        started,
        cancelled,
    }
}

/// `notifications/cancelled` from the host cancels the upstream request (whose response stream
/// the bridge closes), and the bridge goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_cancellation_reaches_the_upstream() {
    let mut upstream = waiting_upstream().await;
    let client = host(Mode::Handshake, &upstream.url, &Recorder::default()).await;
    for _ in 0..2 {
        let call = client.call_tool("wait", json!({}));
        tokio::select! {
            outcome = call => panic!("the call ended by itself: {outcome:?}"),
            started = upstream.started.recv() => started.unwrap(),
        }
        // The call's future is dropped: the host sends `notifications/cancelled`.
        tokio::time::timeout(BOUND, upstream.cancelled.recv())
            .await
            .expect("the upstream request is cancelled")
            .unwrap();
    }
    client.close().await.unwrap();
}

/// `mcp bridge --timeout` bounds each request the bridge sends upstream: the host gets an error
/// naming the timeout, and the upstream request is abandoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_s_timeout_bounds_upstream_requests() {
    let mut upstream = waiting_upstream().await;
    let options = ["--timeout", "0.2"];
    let client = host_with(
        Mode::Handshake,
        &upstream.url,
        &Recorder::default(),
        &options,
    )
    .await;
    let error = call(&client, "wait", json!({}))
        .await
        .expect_err("the upstream never answers");
    assert!(
        error.to_string().contains("did not finish within 200ms"),
        "{error}"
    );
    upstream.started.recv().await.unwrap();
    tokio::time::timeout(BOUND, upstream.cancelled.recv())
        .await
        .expect("the upstream request is abandoned")
        .unwrap();
    client.close().await.unwrap();
}

/// A tool added upstream (announced on the 2026-07-28 listen stream the bridge keeps open)
/// reaches a 2025-11-25 host as `notifications/tools/list_changed`, and its next listing has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_list_changes_reach_a_2025_host() {
    let upstream = waiting_upstream().await;
    let (changed_tx, mut changed) = tokio::sync::mpsc::channel(16);
    let mut bridge = tokio::process::Command::new(MCP);
    bridge.args(["bridge", &upstream.url]);
    let client = tokio::time::timeout(
        BOUND,
        Client::builder()
            .mode(Mode::Handshake)
            .on_notification(move |notification| {
                let _ = changed_tx.try_send(notification.method.clone());
            })
            .connect_stdio(bridge),
    )
    .await
    .unwrap()
    .unwrap();
    let names = |tools: Vec<Tool>| {
        let mut names: Vec<String> = tools.into_iter().map(|t| t.name).collect();
        names.sort();
        names
    };
    assert_eq!(
        names(client.list_tools().await.unwrap()),
        ["chatty", "wait"]
    );
    let added = Tool::new(
        "added",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    // The bridge may still be opening its listen stream: add until it hears of a change.
    let mut attempts = 0;
    let method = loop {
        attempts += 1;
        upstream
            .server
            .add_tool(
                added.clone(),
                |_ctx: RequestContext, _params: CallToolRequestParams| async {
                    Ok::<_, ErrorObject>(CallToolResult::text("added"))
                },
            )
            .ok();
        upstream
            .server
            .notify(modelctx::server::Change::ToolsListChanged);
        match tokio::time::timeout(Duration::from_millis(500), changed.recv()).await {
            Ok(method) => break method.unwrap(),
            Err(_) if attempts < 60 => {}
            Err(_) => panic!("no list change reached the host"),
        }
    };
    assert_eq!(method, "notifications/tools/list_changed");
    assert_eq!(
        names(client.list_tools().await.unwrap()),
        ["added", "chatty", "wait"]
    );
    client.close().await.unwrap();
}

/// The upstream's log messages reach the host at the level the host asked for, before the
/// result of the call they belong to: a 2026-07-28 host's per-request `logLevel` and a
/// 2025-11-25 host's `logging/setLevel` are both forwarded upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_logs_reach_the_host_at_its_level() {
    let upstream = waiting_upstream().await;
    for mode in [Mode::Handshake, Mode::Auto] {
        let logged = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&logged);
        let mut bridge = tokio::process::Command::new(MCP);
        bridge.args(["bridge", &upstream.url]);
        let client = tokio::time::timeout(
            BOUND,
            Client::builder()
                .mode(mode.clone())
                .log_level(LoggingLevel::Info)
                .on_notification(move |notification| {
                    if notification.method == "notifications/message" {
                        let params: Value =
                            serde_json::from_str(notification.params.as_ref().unwrap().get())
                                .unwrap();
                        seen.lock().unwrap().push(params["data"].clone());
                    }
                })
                .connect_stdio(bridge),
        )
        .await
        .unwrap()
        .unwrap();
        if client.era() == Era::Handshake {
            client.set_log_level(LoggingLevel::Info).await.unwrap();
        }
        let result = call(&client, "chatty", json!({})).await.unwrap();
        assert_eq!(text(&result), "said hello");
        assert_eq!(
            *logged.lock().unwrap(),
            [json!("hello from upstream")],
            "{mode:?}"
        );
        client.close().await.unwrap();
    }
}

/// `completion/complete` is relayed to an upstream that offers completions, in both host eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_are_relayed() {
    let upstream = waiting_upstream().await;
    for mode in [Mode::Handshake, Mode::Auto] {
        let client = host(mode, &upstream.url, &Recorder::default()).await;
        assert!(client.server_capabilities().unwrap().completions.is_some());
        let params = serde_json::from_value(json!({
            "ref": {"type": "ref/prompt", "name": "any"},
            "argument": {"name": "quarter", "value": "2026"}}))
        .unwrap();
        let completed = tokio::time::timeout(BOUND, client.complete(params))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(completed.completion.values, ["2026-q3"]);
        client.close().await.unwrap();
    }
}
