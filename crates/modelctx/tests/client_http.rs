//! The streamable HTTP client against scripted servers on 127.0.0.1: the standard and
//! `Mcp-Param-*` headers, the `-32020` refresh-and-resend, SSE responses (comments,
//! notifications), re-issuing a request whose stream broke, error statuses, and the limit on a
//! JSON response.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use modelctx::client::{ClientError, RequestOptions};
use modelctx::types::CallToolRequestParams;
use modelctx_test_support::client::pinned;
use serde_json::{Value, json};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    headers: HeaderMap,
    body: Value,
}

type Script = dyn Fn(&Value, usize) -> (u16, &'static str, String) + Send + Sync;

struct Fake {
    seen: Mutex<Vec<Seen>>,
    script: Box<Script>,
    arrived: tokio::sync::Notify,
}

async fn handle(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap();
    let index = {
        let mut seen = fake.seen.lock().unwrap();
        seen.push(Seen {
            headers,
            body: body.clone(),
        });
        seen.len() - 1
    };
    fake.arrived.notify_waiters();
    let (status, content_type, text) = (fake.script)(&body, index);
    let mut response = Response::builder().status(StatusCode::from_u16(status).unwrap());
    if body["method"] == "initialize" {
        response = response.header("mcp-session-id", "session-1");
    }
    if content_type == "busy" {
        // Shed before reading: 503 with the delay in `text`.
        return response
            .header("retry-after", text)
            .body(Body::from("busy"))
            .unwrap();
    }
    if content_type == "hang" {
        // An event stream that never ends.
        return response
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(futures::stream::pending::<
                Result<bytes::Bytes, std::io::Error>,
            >()))
            .unwrap();
    }
    if content_type == "chunked-json" {
        // JSON without a Content-Length, in two chunks.
        let (first, second) = text.split_at(text.len() / 2);
        let chunks = [first.to_owned(), second.to_owned()]
            .map(|chunk| Ok::<_, std::io::Error>(bytes::Bytes::from(chunk)));
        return response
            .header("content-type", "application/json")
            .body(Body::from_stream(futures::stream::iter(chunks)))
            .unwrap();
    }
    response
        .header("content-type", content_type)
        .body(Body::from(text))
        .unwrap()
}

/// Serves `script` at `http://127.0.0.1:<port>/mcp`; returns the URL and the request log.
async fn serve(
    script: impl Fn(&Value, usize) -> (u16, &'static str, String) + Send + Sync + 'static,
) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake {
        seen: Mutex::new(Vec::new()),
        script: Box::new(script),
        arrived: tokio::sync::Notify::new(),
    });
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(handle))
        .with_state(Arc::clone(&fake));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fake)
}

fn json_reply(request: &Value, result: &Value) -> (u16, &'static str, String) {
    (
        200,
        "application/json",
        json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string(),
    )
}

fn text(value: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": value}]})
}

fn tools_list() -> Value {
    json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [
        {"name": "region_tool", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "note": {"type": "string"}}}},
        {"name": "bad_tool", "inputSchema": {"type": "object", "properties": {
            "x": {"type": "number", "x-mcp-header": "X"}}}}]})
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).map(|v| v.to_str().unwrap())
}

/// Standard headers on every POST, `Mcp-Name` with the sentinel when needed, `Mcp-Param-*`
/// mirrors for listed tools, invalid tools dropped, no session id.
#[tokio::test]
async fn headers_and_param_mirroring() {
    let (url, fake) = serve(|m, _| match m["method"].as_str() {
        Some("tools/list") => json_reply(m, &tools_list()),
        _ => json_reply(m, &text("ok")),
    })
    .await;
    let client = pinned().connect_http(&url).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["region_tool"]
    );
    client
        .call_tool(
            "region_tool",
            json!({"region": " eu west ", "count": 42, "flag": false, "note": "n"}),
        )
        .await
        .unwrap();
    client
        .call_tool("region_tool", json!({"region": null, "count": 1}))
        .await
        .unwrap();
    client.call_tool("naïve", json!({})).await.unwrap();

    let seen = fake.seen.lock().unwrap().clone();
    for request in &seen {
        assert_eq!(header(request, "mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(
            header(request, "mcp-method"),
            request.body["method"].as_str()
        );
        assert_eq!(
            header(request, "accept"),
            Some("application/json, text/event-stream")
        );
        assert!(request.headers.get("mcp-session-id").is_none());
        assert_eq!(
            request.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
    assert!(header(&seen[0], "mcp-name").is_none());
    let call = &seen[1];
    assert_eq!(header(call, "mcp-name"), Some("region_tool"));
    // Leading/trailing whitespace travels base64-wrapped.
    assert_eq!(
        header(call, "mcp-param-region"),
        Some("=?base64?IGV1IHdlc3Qg?=")
    );
    assert_eq!(header(call, "mcp-param-count"), Some("42"));
    assert_eq!(header(call, "mcp-param-flag"), Some("false"));
    // Null arguments are not mirrored.
    assert!(header(&seen[2], "mcp-param-region").is_none());
    assert_eq!(header(&seen[2], "mcp-param-count"), Some("1"));
    assert_eq!(header(&seen[3], "mcp-name"), Some("=?base64?bmHDr3Zl?="));
}

/// A `-32020` refreshes `tools/list` and re-sends the call once, with the new headers.
#[tokio::test]
async fn header_mismatch_refreshes_and_resends_once() {
    let (url, fake) = serve(|m, _| match m["method"].as_str() {
        Some("tools/list") => json_reply(m, &tools_list()),
        Some("tools/call") if m["params"]["name"] == "never" => (
            400,
            "application/json",
            json!({"jsonrpc": "2.0", "id": m["id"],
                   "error": {"code": -32020, "message": "Header mismatch"}})
            .to_string(),
        ),
        Some("tools/call") => json_reply(m, &text("ok")),
        _ => json_reply(m, &json!({})),
    })
    .await;
    // `never` always mismatches: one refresh, one re-send, then the server's error.
    let client = pinned().connect_http(&url).await.unwrap();
    let error = client.call_tool("never", json!({})).await.unwrap_err();
    assert_eq!(
        error.rpc_code(),
        Some(modelctx::types::ErrorCode::HEADER_MISMATCH)
    );
    let methods: Vec<String> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.body["method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(methods, ["tools/call", "tools/list", "tools/call"]);
}

/// After a refresh the re-sent call carries the mirrored header the server wanted.
#[tokio::test]
async fn refresh_adds_missing_param_headers() {
    let (url, fake) = serve(|m, index| match m["method"].as_str() {
        Some("tools/list") => json_reply(m, &tools_list()),
        // The first call (unlisted tool, so no Mcp-Param-Region) is refused.
        Some("tools/call") if index == 0 => (
            400,
            "application/json",
            json!({"jsonrpc": "2.0", "id": m["id"],
                   "error": {"code": -32020, "message": "Missing Mcp-Param-Region"}})
            .to_string(),
        ),
        _ => json_reply(m, &text("ok")),
    })
    .await;
    let client = pinned().connect_http(&url).await.unwrap();
    let result = client
        .call_tool("region_tool", json!({"region": "us-west1"}))
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("ok"));
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(header(&seen[0], "mcp-param-region").is_none());
    assert_eq!(seen[1].body["method"], "tools/list");
    assert_eq!(header(&seen[2], "mcp-param-region"), Some("us-west1"));
    assert_ne!(seen[0].body["id"], seen[2].body["id"]);
}

/// SSE responses: comments ignored, notifications routed, then the response.
#[tokio::test]
async fn sse_response_with_comments_and_progress() {
    let (url, _fake) = serve(|m, _| {
        let token = m["params"]["_meta"]["progressToken"].clone();
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": token, "progress": 5}});
        let reply = json!({"jsonrpc": "2.0", "id": m["id"], "result": text("streamed")});
        (
            200,
            "text/event-stream",
            format!(": keep-alive\n\nevent: message\ndata: {progress}\n\n: another\r\n\r\ndata: {reply}\r\n\r\n"),
        )
    })
    .await;
    let client = pinned().connect_http(&url).await.unwrap();
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&got);
    let result = client
        .call_tool_with(
            CallToolRequestParams::new("s", None),
            RequestOptions::new()
                .on_progress(move |p| record.lock().unwrap().push(p.progress.to_string())),
        )
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("streamed"));
    assert_eq!(*got.lock().unwrap(), ["5"]);
}

/// A stream that ends before the response re-issues the request with a new id; the number of
/// re-issues is bounded.
#[tokio::test]
async fn broken_stream_is_reissued_with_a_new_id() {
    let (url, fake) = serve(|m, index| {
        if index == 0 {
            // A notification, then the stream ends without the response.
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "data": "working"}});
            return (200, "text/event-stream", format!("data: {note}\n\n"));
        }
        json_reply(m, &text("second time lucky"))
    })
    .await;
    let client = pinned().connect_http(&url).await.unwrap();
    let result = client.call_tool("flaky", json!({"a": 1})).await.unwrap();
    assert_eq!(result.first_text(), Some("second time lucky"));
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_ne!(seen[0].body["id"], seen[1].body["id"]);
    assert_eq!(seen[0].body["params"], seen[1].body["params"]);

    let (url, fake) = serve(|_, _| (200, "text/event-stream", ": nothing\n\n".to_owned())).await;
    let client = pinned()
        .max_stream_reissues(1)
        .connect_http(&url)
        .await
        .unwrap();
    let error = client.call_tool("dead", json!({})).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Transport(modelctx::client::TransportError::StreamBroken { attempts: 2 })
        ),
        "{error:?}"
    );
    assert_eq!(fake.seen.lock().unwrap().len(), 2);
}

/// JSON-RPC errors at error statuses are the server's errors; bare error statuses are
/// `HttpStatus`; neither is mistaken for the other.
#[tokio::test]
async fn error_statuses() {
    let (url, _fake) = serve(|m, _| match m["params"]["name"].as_str() {
        Some("rpc") => (
            404,
            "application/json",
            json!({"jsonrpc": "2.0", "id": m["id"],
                   "error": {"code": -32601, "message": "Method not found"}})
            .to_string(),
        ),
        Some("null-id") => (
            400,
            "application/json",
            json!({"jsonrpc": "2.0", "id": null,
                   "error": {"code": -32600, "message": "Bad Request"}})
            .to_string(),
        ),
        Some("accepted") => (202, "application/json", String::new()),
        Some("html") => (200, "text/html", "<html/>".to_owned()),
        _ => (500, "text/plain", "boom".to_owned()),
    })
    .await;
    let client = pinned().connect_http(&url).await.unwrap();
    let rpc = client.call_tool("rpc", json!({})).await.unwrap_err();
    assert_eq!(
        rpc.rpc_code(),
        Some(modelctx::types::ErrorCode::METHOD_NOT_FOUND)
    );
    let null_id = client.call_tool("null-id", json!({})).await.unwrap_err();
    assert_eq!(
        null_id.rpc_code(),
        Some(modelctx::types::ErrorCode::INVALID_REQUEST)
    );
    let plain = client.call_tool("plain", json!({})).await.unwrap_err();
    assert!(
        matches!(&plain, ClientError::HttpStatus { status: 500, body } if body == "boom"),
        "{plain:?}"
    );
    assert!(plain.is_peer_error() && plain.rpc_error().is_none());
    let accepted = client.call_tool("accepted", json!({})).await.unwrap_err();
    assert!(matches!(accepted, ClientError::Protocol(_)), "{accepted:?}");
    let html = client.call_tool("html", json!({})).await.unwrap_err();
    assert!(matches!(html, ClientError::Protocol(_)), "{html:?}");
}

/// A JSON response larger than `max_message_size` is refused, whether its Content-Length says
/// so or it arrives in chunks; a smaller one is read.
#[tokio::test]
async fn an_oversized_json_response_is_refused() {
    let (url, _fake) = serve(|m, _| {
        let padding = "x".repeat(4096);
        let (status, _, body) = json_reply(m, &text(&padding));
        match m["params"]["name"].as_str() {
            Some("chunked") => (status, "chunked-json", body),
            Some("small") => json_reply(m, &text("ok")),
            _ => (status, "application/json", body),
        }
    })
    .await;
    let client = pinned()
        .max_message_size(1024)
        .connect_http(&url)
        .await
        .unwrap();
    for name in ["sized", "chunked"] {
        let error = client.call_tool(name, json!({})).await.unwrap_err();
        assert!(
            matches!(&error, ClientError::Protocol(m) if m.contains("larger than 1024 bytes")),
            "{name}: {error:?}"
        );
    }
    let small = client.call_tool("small", json!({})).await.unwrap();
    assert_eq!(small.first_text(), Some("ok"));
}

/// A 503 with a short `Retry-After` is sent again (at most twice); a long one is not waited for.
#[tokio::test]
async fn unavailable_with_retry_after_is_sent_again() {
    let flaky_calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&flaky_calls);
    let (url, fake) = serve(move |m, _| match m["params"]["name"].as_str() {
        Some("flaky") => {
            if counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                (503, "busy", "0".to_owned())
            } else {
                json_reply(m, &text("served"))
            }
        }
        Some("down") => (503, "busy", "0".to_owned()),
        Some("later") => (503, "busy", "60".to_owned()),
        _ => json_reply(m, &text("?")),
    })
    .await;
    let client = pinned().connect_http(&url).await.unwrap();
    let posts = |name: &str| {
        fake.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.body["params"]["name"] == name)
            .count()
    };
    let served = client.call_tool("flaky", json!({})).await.unwrap();
    assert_eq!(served.first_text(), Some("served"));
    assert_eq!(posts("flaky"), 3);
    let down = client.call_tool("down", json!({})).await.unwrap_err();
    assert!(
        matches!(&down, ClientError::HttpStatus { status: 503, .. }),
        "{down:?}"
    );
    assert_eq!(posts("down"), 3, "the first POST and two more");
    let later = client.call_tool("later", json!({})).await.unwrap_err();
    assert!(
        matches!(&later, ClientError::HttpStatus { status: 503, .. }),
        "{later:?}"
    );
    assert_eq!(posts("later"), 1, "a minute is the caller's decision");
}

/// Connection failures are transport errors, not an era verdict.
#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let error = modelctx::client::Client::connect_http(&url)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
}

/// A handshake-era request abandoned by its caller is cancelled with
/// `notifications/cancelled`, sent in the session.
#[tokio::test]
async fn handshake_abandoned_request_is_cancelled() {
    let (url, fake) = serve(|m, _| match m["method"].as_str() {
        Some("initialize") => json_reply(
            m,
            &json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "old", "version": "1"}}),
        ),
        Some("tools/call") => (200, "hang", String::new()),
        _ => (202, "application/json", String::new()),
    })
    .await;
    let client = modelctx::client::Client::builder()
        .mode(modelctx::client::Mode::Handshake)
        .handshake_get_stream(false)
        .connect_http(&url)
        .await
        .unwrap();
    let abandoned = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        client.call_tool("slow", json!({})),
    )
    .await;
    assert!(abandoned.is_err());
    let cancel = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            let arrived = fake.arrived.notified();
            let found = fake
                .seen
                .lock()
                .unwrap()
                .iter()
                .find(|s| s.body["method"] == "notifications/cancelled")
                .cloned();
            if let Some(found) = found {
                return found;
            }
            arrived.await;
        }
    })
    .await
    .expect("notifications/cancelled was sent");
    let seen = fake.seen.lock().unwrap().clone();
    let call = seen
        .iter()
        .find(|s| s.body["method"] == "tools/call")
        .unwrap();
    assert_eq!(cancel.body["params"]["requestId"], call.body["id"]);
    assert_eq!(header(&cancel, "mcp-session-id"), Some("session-1"));
    assert_eq!(header(&cancel, "mcp-protocol-version"), Some("2025-11-25"));
}
