//! A stream connection runs at most `StdioConfig::max_concurrent_requests` waiting requests at
//! once: beyond it, reading pauses until one of them ends. A request answered on its first poll
//! never counts against the limit (any number of them pass while nothing waits).
//!
//! Time is paused: the runtime advances the clock only once every task is idle, so "not started
//! after a second" means the server could not start it, not that it was slow.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use modelctx::memory;
use modelctx::server::{Server, StdioConfig};
use modelctx_test_support::server::request;
use modelctx_types::{CallToolRequestParams, CallToolResult, Tool};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines, ReadHalf,
};
use tokio::sync::Semaphore;

/// A server whose `wait` tool counts its starts and ends when `gate` gives it a permit, and whose
/// `echo` answers at once.
fn server(started: Arc<AtomicUsize>, gate: Arc<Semaphore>) -> Server {
    Server::builder("bounded", "1.0.0")
        .tool(
            Tool::new("wait", Tool::empty_input_schema()),
            move |_ctx, _params| {
                let (started, gate) = (Arc::clone(&started), Arc::clone(&gate));
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    gate.acquire().await.expect("open").forget();
                    CallToolResult::text("released")
                }
            },
        )
        .tool(
            Tool::new("echo", Tool::empty_input_schema()),
            |_ctx, params: CallToolRequestParams| async move {
                let text = params
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .cloned();
                CallToolResult::text(
                    text.and_then(|t| t.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                )
            },
        )
        .build()
        .expect("valid tools")
}

fn call(id: i64, tool: &str) -> String {
    let line = request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {"text": "now"}}),
    );
    format!("{line}\n")
}

/// The id of the next reply (a result).
async fn next_id(replies: &mut Lines<BufReader<ReadHalf<DuplexStream>>>) -> i64 {
    let line = replies.next_line().await.unwrap().expect("a reply");
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert!(reply.get("result").is_some(), "{reply}");
    reply["id"].as_i64().expect("an integer id")
}

/// Lets every task run until all are idle.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn reading_pauses_beyond_the_limit_of_waiting_requests() {
    let started = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(0));
    let pipe = memory::pipe();
    let mut config = StdioConfig::default();
    config.max_concurrent_requests = 2;
    let serving = tokio::spawn({
        let server = server(Arc::clone(&started), Arc::clone(&gate));
        async move {
            server
                .serve_io_with(pipe.server.reader, pipe.server.writer, config)
                .await
        }
    });
    let mut writer = pipe.client.writer;
    let mut replies = BufReader::new(pipe.client.reader).lines();

    // Answered on their first poll, any number of quick requests never count.
    for id in 1..=5 {
        writer.write_all(call(id, "echo").as_bytes()).await.unwrap();
    }
    for id in 1..=5 {
        assert_eq!(next_id(&mut replies).await, id);
    }

    // Three waiting calls, then a quick one: two run, the third is read and held, and nothing
    // after it is read.
    for id in 10..=12 {
        writer.write_all(call(id, "wait").as_bytes()).await.unwrap();
    }
    writer.write_all(call(20, "echo").as_bytes()).await.unwrap();
    settle().await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        2,
        "the limit is 2 waiting requests"
    );

    // One ends: its answer comes, the third starts, and the quick call read after it waits for
    // room as well (it would finish at once, but reading and starting pause together).
    gate.add_permits(1);
    let first = next_id(&mut replies).await;
    assert!([10, 11].contains(&first), "{first}");
    settle().await;
    assert_eq!(started.load(Ordering::SeqCst), 3);
    assert!(
        tokio::time::timeout(Duration::from_secs(1), replies.next_line())
            .await
            .is_err(),
        "nothing else answers while two requests wait"
    );

    // Another ends: the quick call is answered too.
    gate.add_permits(1);
    let mut ids = vec![next_id(&mut replies).await, next_id(&mut replies).await];
    ids.sort_unstable();
    assert_eq!(ids, [if first == 10 { 11 } else { 10 }, 20]);

    // The last one ends; closing the input ends the connection once it has answered.
    gate.add_permits(1);
    assert_eq!(next_id(&mut replies).await, 12);
    writer.shutdown().await.unwrap();
    drop(writer);
    assert!(replies.next_line().await.unwrap().is_none());
    serving.await.unwrap().unwrap();
}
