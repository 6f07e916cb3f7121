//! The HTTP+SSE transport of 2024-11-05, both sides: our client and our server over it (calls,
//! a server→client request, notifications), against the Python SDK 2.3.0's `sse_app`
//! (`tests/python/sse_server.py`) and `sse_client` (`tests/python/sse_client.py`), and the
//! guards: Host/Origin, unknown sessions, bodies, bounds, and an endpoint on another origin.
//! Everything on 127.0.0.1; every wait bounded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{Client, ClientBuilder, ClientError};
use modelctx::server::http::{HttpConfig, SseConfig};
use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::client::{
    HttpPeer as PythonPeer, Recorder, answers, peer_command, recording_builder,
};
use modelctx_test_support::server::{HttpPeer, fixture, object};
use serde_json::{Value, json};

/// How long any one step may take before the test fails.
const STEP: Duration = Duration::from_secs(30);

/// The fixture server with `provision`, which asks through the handshake-era back-channel.
fn server() -> Server {
    let server = fixture();
    server
        .add_tool(
            Tool::new("provision", object(json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}))),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let schema: ElicitationSchema = serde_json::from_value(json!({"type":"object","properties":{"region":{"type":"string"}},"required":["region"]})).unwrap();
                let answer = ctx.elicit(ElicitRequestFormParams::new("Which region should the database live in?", schema)).await?;
                let region = answer.content.unwrap_or_default()["region"].as_str().unwrap_or_default().to_owned();
                let name = params.arguments.unwrap_or_default()["name"].as_str().unwrap_or_default().to_owned();
                Ok::<_, ErrorObject>(CallToolResult::text(format!("Provisioned '{name}' in {region}.")))
            },
        )
        .unwrap();
    server
}

async fn serve(config: HttpConfig) -> (HttpPeer, String) {
    let (peer, sse, _) = serve_server(config).await;
    (peer, sse)
}

/// Serves [`server`] with `config`; also returns the server, to change it while it serves.
async fn serve_server(config: HttpConfig) -> (HttpPeer, String, Server) {
    let server = server();
    let peer = HttpPeer::start_with(server.clone(), config).await;
    let sse = format!("http://{}/sse", peer.addr);
    (peer, sse, server)
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Calls `echo`, then `provision`, whose question the recorder answers through the back-channel.
async fn echo_and_provision(client: &Client, recorder: &Recorder) {
    let echoed = client
        .call_tool("echo", json!({"text": "over sse"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "over sse");
    let provisioned = tokio::time::timeout(
        STEP,
        client.call_tool("provision", json!({"name": "orders"})),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        text(&provisioned).starts_with("Provisioned 'orders' in "),
        "{provisioned:?}"
    );
    let calls = recorder.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].kind, "elicitation");
    assert_eq!(
        calls[0].message.as_deref(),
        Some("Which region should the database live in?")
    );
}

/// Our client and our server over SSE: the handshake era, a call, a back-channel elicitation,
/// log notifications and a list change on the stream.
#[tokio::test]
async fn our_client_and_our_server() {
    let (_peer, url, server) = serve_server(HttpConfig::default().sse(SseConfig::default())).await;
    let recorder = Recorder::default();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let notified = Arc::clone(&seen);
    let builder = recording_builder(&recorder, answers()).on_notification(move |n| {
        notified.lock().unwrap().push(n.method.clone());
    });
    let client = tokio::time::timeout(STEP, builder.connect_sse(&url))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(client.era(), Era::Handshake);

    echo_and_provision(&client, &recorder).await;

    client.set_log_level(LoggingLevel::Debug).await.unwrap();
    let logged = client.call_tool("logs", json!({})).await.unwrap();
    assert_eq!(text(&logged), "logged");
    // A list change made on the server reaches the session's stream.
    server
        .add_tool(
            Tool::new("added", Tool::empty_input_schema()),
            |_ctx, _params| async { CallToolResult::text("new") },
        )
        .unwrap();
    let wanted = ["notifications/message", "notifications/tools/list_changed"];
    tokio::time::timeout(STEP, async {
        while !wanted
            .iter()
            .all(|w| seen.lock().unwrap().iter().any(|m| m == w))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("notifications seen: {:?}", seen.lock().unwrap()));
    client.close().await.unwrap();
}

/// Our client against the Python SDK's `sse_app` (`MCPServer.sse_app()`), and `connect_http_or_sse`
/// falling back to it by itself.
#[tokio::test]
async fn our_client_against_python_sse_app() {
    let python = PythonPeer::start("sse_server.py", &[]).await;
    assert!(python.url.ends_with("/sse"), "{}", python.url);
    let recorder = Recorder::default();
    let client = tokio::time::timeout(
        STEP,
        recording_builder(&recorder, answers()).connect_sse(&python.url),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        client.server_info().map(|i| i.name),
        Some("PeerSse".to_owned())
    );
    echo_and_provision(&client, &recorder).await;
    client.close().await.unwrap();

    let fallback =
        tokio::time::timeout(STEP, ClientBuilder::new().connect_http_or_sse(&python.url))
            .await
            .unwrap()
            .unwrap();
    let echoed = fallback
        .call_tool("echo", json!({"text": "fell back"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "fell back");
    fallback.close().await.unwrap();
}

/// The Python SDK's `sse_client` against our server: initialize, list, call, and the
/// back-channel elicitation answered by Python's callback.
#[tokio::test]
async fn python_sse_client_against_our_server() {
    let (_peer, url) = serve(HttpConfig::default().sse(SseConfig::default())).await;
    let output = tokio::time::timeout(STEP * 2, peer_command("sse_client.py", &[&url]).output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let steps: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(steps[0]["step"], "initialized");
    assert_eq!(steps[0]["protocol_version"], "2025-11-25");
    assert!(
        steps[1]["names"]
            .as_array()
            .unwrap()
            .contains(&json!("provision"))
    );
    assert_eq!(steps[2]["text"], "over sse");
    assert_eq!(steps[3]["text"], "Provisioned 'orders' in eu-west.");
    assert_eq!(
        steps[3]["elicited"],
        json!(["Which region should the database live in?"])
    );
    assert_eq!(steps.last().unwrap()["step"], "done");
}

/// Opens a session by hand: the GET response (kept open) and the endpoint its first event names.
async fn open_session(http: &reqwest::Client, url: &str) -> (reqwest::Response, String) {
    let mut response = http.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    let endpoint = tokio::time::timeout(STEP, async {
        loop {
            let chunk = response
                .chunk()
                .await
                .unwrap()
                .expect("the stream names its endpoint");
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(event) = buffer
                .split("\n\n")
                .next()
                .filter(|_| buffer.contains("\n\n"))
            {
                assert!(event.starts_with("event: endpoint\ndata: "), "{event}");
                return event
                    .trim_start_matches("event: endpoint\ndata: ")
                    .to_owned();
            }
        }
    })
    .await
    .unwrap();
    (response, endpoint)
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    http.post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The guards: a bad Origin and a bad Host are refused, a message needs a live session of the
/// stream it names (missing → 400, unknown or ended → 404), a body must be one JSON-RPC message
/// of the handshake era within the size bound (400, 413), and the sessions are bounded (503).
#[tokio::test]
async fn the_guards() {
    let config = HttpConfig::default()
        .max_body_size(1024)
        .sse(SseConfig::default().max_sessions(1));
    let (peer, url) = serve(config).await;
    let base = format!("http://{}", peer.addr);
    let http = reqwest::Client::new();

    let foreign = http
        .get(&url)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let rebound = http
        .get(&url)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 421);

    let missing = post(&http, &format!("{base}/messages"), "{}").await;
    assert_eq!(missing.status(), 400);
    let unknown = post(
        &http,
        &format!("{base}/messages?session_id=00ff"),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(unknown.status(), 404);

    let (stream, endpoint) = open_session(&http, &url).await;
    assert!(endpoint.starts_with("/messages?session_id="), "{endpoint}");
    let endpoint = format!("{base}{endpoint}");
    // One session at most: another stream waits for room.
    let full = http.get(&url).send().await.unwrap();
    assert_eq!(full.status(), 503);

    let foreign = http
        .post(&endpoint)
        .header("origin", "http://evil.example")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let garbage = post(&http, &endpoint, "{not json").await;
    assert_eq!(garbage.status(), 400);
    let error: Value = garbage.json().await.unwrap();
    assert_eq!(error["error"]["code"], -32700);
    let oversized = post(
        &http,
        &endpoint,
        format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":{{"pad":"{}"}}}}"#,
            "x".repeat(2048)
        ),
    )
    .await;
    assert_eq!(oversized.status(), 413);
    let modern = post(&http, &endpoint, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#).await;
    assert_eq!(modern.status(), 400);
    let fine = post(
        &http,
        &endpoint,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(fine.status(), 202);

    // Closing the stream ends the session, and gives its room back.
    drop(stream);
    tokio::time::timeout(STEP, async {
        loop {
            let gone = post(
                &http,
                &endpoint,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )
            .await;
            if gone.status() == 404 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the session ended with its stream");
    let (_stream, _) = open_session(&http, &url).await;
}

/// Without `HttpConfig::sse` nothing is served at `/sse`.
#[tokio::test]
async fn off_by_default() {
    let (peer, url) = serve(HttpConfig::default()).await;
    let response = peer.client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 404);
}

/// A hostile SSE server names an endpoint on another origin (another port of the same host):
/// the client refuses it, and nothing is POSTed there.
#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused() {
    use axum::routing::any;
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let elsewhere_addr = elsewhere.local_addr().unwrap();
    let hits = Arc::new(Mutex::new(0u32));
    let counted = Arc::clone(&hits);
    let trap = axum::Router::new().fallback(any(move || {
        *counted.lock().unwrap() += 1;
        async { "" }
    }));
    tokio::spawn(async move { axum::serve(elsewhere, trap).await.unwrap() });

    let endpoint = format!("http://{elsewhere_addr}/messages?session_id=1");
    let addr = hostile_sse(format!("event: endpoint\ndata: {endpoint}\n\n")).await;

    let refused = tokio::time::timeout(
        STEP,
        Client::builder().connect_sse(&format!("http://{addr}/sse")),
    )
    .await
    .unwrap()
    .unwrap_err();
    let ClientError::Protocol(message) = &refused else {
        panic!("{refused:?}")
    };
    assert!(message.contains("not on the origin"), "{message}");
    assert_eq!(*hits.lock().unwrap(), 0);
}

/// A hostile SSE server at `/sse`: its stream sends `events`, then stays open; POSTs to
/// `/messages` get 202.
async fn hostile_sse(events: String) -> std::net::SocketAddr {
    use axum::routing::{get, post};
    use futures::StreamExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hostile = axum::Router::new()
        .route(
            "/sse",
            get(move || {
                let events = events.clone();
                async move {
                    let events =
                        futures::stream::once(
                            async move { Ok::<_, std::convert::Infallible>(events) },
                        )
                        .chain(futures::stream::pending());
                    (
                        [("content-type", "text/event-stream")],
                        axum::body::Body::from_stream(events),
                    )
                }
            }),
        )
        .route("/messages", post(|| async { http::StatusCode::ACCEPTED }));
    tokio::spawn(async move { axum::serve(listener, hostile).await.unwrap() });
    addr
}

/// An event larger than the largest message is refused even when each of its lines is short:
/// the connection closes instead of buffering it (here during `initialize`, which then fails).
#[tokio::test]
async fn an_oversized_event_closes_the_connection() {
    let line = format!("data: {}\n", "x".repeat(100));
    let huge = format!(
        "event: endpoint\ndata: /messages?session_id=1\n\nevent: message\n{}",
        line.repeat(200)
    );
    let addr = hostile_sse(huge).await;
    let refused = tokio::time::timeout(
        STEP,
        Client::builder()
            .max_message_size(4096)
            .connect_sse(&format!("http://{addr}/sse")),
    )
    .await
    .expect("the connection closed instead of waiting")
    .unwrap_err();
    assert!(matches!(refused, ClientError::Transport(_)), "{refused:?}");
}

/// A shutdown ends the SSE sessions' streams at once (their clients reconnect elsewhere): the
/// server returns long before its grace period, and the client's connection is closed.
#[tokio::test]
async fn a_shutdown_ends_the_streams() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    let config = HttpConfig::default()
        .shutdown_grace(Duration::from_secs(600))
        .sse(SseConfig::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server()
            .serve_http_on(listener, config, async {
                let _ = stopped.await;
            })
            .await
    });
    let client = tokio::time::timeout(STEP, Client::builder().connect_sse(&url))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        text(
            &client
                .call_tool("echo", json!({"text": "up"}))
                .await
                .unwrap()
        ),
        "up"
    );
    stop.send(()).unwrap();
    tokio::time::timeout(STEP, serving)
        .await
        .expect("served to its end well within the grace period")
        .unwrap()
        .unwrap();
    let after = tokio::time::timeout(STEP, client.call_tool("echo", json!({"text": "down"})))
        .await
        .unwrap();
    assert!(after.is_err(), "{after:?}");
}

/// `Server::sse_router` nested under a prefix in the user's app: the `endpoint` event names the
/// messages' path under that prefix, so a client POSTs where the router listens.
#[tokio::test]
async fn the_router_nests_under_a_prefix() {
    let app = axum::Router::new().nest("/legacy", server().sse_router(HttpConfig::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/legacy/sse", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = tokio::time::timeout(STEP, Client::builder().connect_sse(&url))
        .await
        .unwrap()
        .unwrap();
    let echoed = client
        .call_tool("echo", json!({"text": "nested"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "nested");
    client.close().await.unwrap();
}
