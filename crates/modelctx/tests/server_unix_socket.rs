//! `serve_http_on` takes any axum `Listener` (issue 33, point 5): the same endpoint served on a
//! Unix domain socket answers a 2026-07-28 call, its handler sees no peer address (a local
//! peer has none, so only a principal names a client), and the shutdown drains as on TCP.
#![cfg(unix)]

use std::path::PathBuf;

use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::{CallToolRequestParams, CallToolResult, Tool};
use modelctx_test_support::server::{HttpPeer, request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::oneshot;

/// A server whose `where` tool says whether its request came with a peer address.
fn server() -> Server {
    Server::builder("unix-socket-test", "1.0.0")
        .tool(
            Tool::new("where", Tool::empty_input_schema()),
            |ctx: RequestContext, _params: CallToolRequestParams| async move {
                let peer = ctx
                    .peer_addr()
                    .map_or_else(|| "none".to_owned(), |addr| addr.to_string());
                CallToolResult::text(peer)
            },
        )
        .build()
        .unwrap()
}

/// A socket path of this test's own, removed first if a previous run left it.
fn socket_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("modelctx-{name}-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// POSTs `body` over a new connection to the socket, HTTP/1.1 with `Connection: close`, and
/// returns the status code and the body's JSON.
async fn post(path: &PathBuf, body: &Value) -> (u16, Value) {
    let mut stream = UnixStream::connect(path).await.unwrap();
    let payload = serde_json::to_vec(body).unwrap();
    let mut head = String::from("POST /mcp HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n");
    for (name, value) in HttpPeer::standard_headers(body) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", payload.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&payload).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8(response).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    (status, serde_json::from_str(body).expect("a JSON body"))
}

#[tokio::test]
async fn the_endpoint_serves_on_a_unix_socket() {
    let path = socket_path("serve");
    let listener = UnixListener::bind(&path).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server()
            .serve_http_on(listener, HttpConfig::default(), async {
                let _ = stopped.await;
            })
            .await
    });

    let (status, discover) = post(&path, &request(1, "server/discover", json!({}))).await;
    assert_eq!(status, 200, "{discover}");
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "unix-socket-test",
        "{discover}"
    );

    let (status, called) = post(&path, &request(2, "tools/call", json!({"name": "where"}))).await;
    assert_eq!(status, 200, "{called}");
    assert_eq!(called["result"]["content"][0]["text"], "none", "{called}");

    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    // The listener is closed: nobody accepts on the socket any more.
    assert!(UnixStream::connect(&path).await.is_err());
    let _ = std::fs::remove_file(&path);
}
