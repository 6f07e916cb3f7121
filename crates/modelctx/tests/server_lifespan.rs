//! Start-up and shutdown hooks (`ServerBuilder::on_startup` / `on_shutdown`, the Python SDK's
//! `lifespan`): start-up runs once before the first request whichever transport asks first,
//! shutdown once when `serve_http` ends, in reverse order; a failed start-up keeps the server
//! from serving on every transport.

use std::sync::{Arc, Mutex};

use modelctx::client::Client;
use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::client::connect_in_memory;
use serde_json::json;
use tokio::net::TcpListener;

type Events = Arc<Mutex<Vec<&'static str>>>;

fn server(events: &Events) -> Server {
    let (a, b, c, d, e) = (
        Arc::clone(events),
        Arc::clone(events),
        Arc::clone(events),
        Arc::clone(events),
        Arc::clone(events),
    );
    Server::builder("lifespan", "1.0.0")
        .on_startup(move || async move {
            a.lock().unwrap().push("open pool");
            Ok::<_, String>(())
        })
        .on_startup(move || async move {
            b.lock().unwrap().push("warm cache");
            Ok::<_, String>(())
        })
        .on_shutdown(move || async move { c.lock().unwrap().push("close pool") })
        .on_shutdown(move || async move { d.lock().unwrap().push("drop cache") })
        .tool(
            Tool::new("work", Tool::empty_input_schema()),
            move |_ctx: RequestContext, _p: CallToolRequestParams| {
                let e = Arc::clone(&e);
                async move {
                    e.lock().unwrap().push("work");
                    CallToolResult::text("done")
                }
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn start_up_runs_once_before_the_first_request_and_shutdown_once_in_reverse() {
    let events = Events::default();
    let server = server(&events);
    // Two in-memory connections and an in-process call: start-up runs once, before any work.
    let first = connect_in_memory(server.clone(), Client::builder()).await;
    let second = connect_in_memory(server.clone(), Client::builder()).await;
    first.call_tool("work", json!({})).await.unwrap();
    second.call_tool("work", json!({})).await.unwrap();
    server
        .in_process()
        .call_tool("work", json!({}))
        .await
        .unwrap();
    assert_eq!(
        *events.lock().unwrap(),
        ["open pool", "warm cache", "work", "work", "work"]
    );
    first.close().await.unwrap();
    second.close().await.unwrap();

    // Over HTTP: serving ends with the shutdown hooks, the last given first, once.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .serve_http_on(listener, HttpConfig::default(), async {
                    let _ = stopped.await;
                })
                .await
        }
    });
    let client = Client::builder().connect_http(&url).await.unwrap();
    client.call_tool("work", json!({})).await.unwrap();
    client.close().await.unwrap();
    let _ = stop.send(());
    serving.await.unwrap().unwrap();
    server.stop().await;
    assert_eq!(
        events.lock().unwrap()[5..],
        ["work", "drop cache", "close pool"]
    );
}

#[tokio::test]
async fn a_failed_start_up_keeps_the_server_from_serving() {
    let server = Server::builder("broken", "1.0.0")
        .on_startup(|| async { Err::<(), _>("the database is unreachable") })
        .build()
        .unwrap();
    let pipe = modelctx::memory::pipe();
    let error = server
        .serve_io(pipe.server.reader, pipe.server.writer)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("the database is unreachable"),
        "{error}"
    );
    let refused = server.in_process().list_tools().await.unwrap_err();
    assert!(
        refused.message.contains("the database is unreachable"),
        "{refused:?}"
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = server
        .serve_http_on(listener, HttpConfig::default(), std::future::pending())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("start-up failed"), "{error}");
}
