//! A clean stop (issue 32, item 16): served with a shutdown future, a server that is asked to
//! stop ends its listen streams with their closing result, refuses new work, lets the requests
//! in flight answer, and returns; requests still running when the grace period is over are
//! dropped. Over the in-memory pipe (the stdio code path) and HTTP on 127.0.0.1. The requests
//! in flight are tools that wait for the test, never for the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use modelctx::memory;
use modelctx::server::http::HttpConfig;
use modelctx::server::{Change, Server, StdioConfig};
use modelctx::types::{CallToolRequestParams, CallToolResult, Tool};
use modelctx_test_support::server::{HttpPeer, request};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf};
use tokio::sync::{Semaphore, oneshot};

/// What the test holds of the server's tools: `gate` announces itself on `entered` and answers
/// once `gate` has a permit; `forever` never answers, and sets `dropped` when its future is
/// dropped.
#[derive(Clone)]
struct Tools {
    entered: Arc<Semaphore>,
    gate: Arc<Semaphore>,
    dropped: Arc<AtomicBool>,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            entered: Arc::new(Semaphore::new(0)),
            gate: Arc::new(Semaphore::new(0)),
            dropped: Arc::default(),
        }
    }
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Tools {
    fn server(&self) -> Server {
        let gated = self.clone();
        let forever = self.clone();
        Server::builder("shutdown-test", "1.0.0")
            .tool(
                Tool::new("gate", Tool::empty_input_schema()),
                move |_ctx, _params: CallToolRequestParams| {
                    let tools = gated.clone();
                    async move {
                        tools.entered.add_permits(1);
                        let _permit = tools.gate.acquire().await;
                        CallToolResult::text("through")
                    }
                },
            )
            .tool(
                Tool::new("forever", Tool::empty_input_schema()),
                move |_ctx, _params: CallToolRequestParams| {
                    let tools = forever.clone();
                    async move {
                        let _flag = DropFlag(Arc::clone(&tools.dropped));
                        tools.entered.add_permits(1);
                        std::future::pending::<()>().await;
                        CallToolResult::text("never")
                    }
                },
            )
            .tool(
                Tool::new("quick", Tool::empty_input_schema()),
                |_ctx, _params: CallToolRequestParams| async { CallToolResult::text("quick") },
            )
            .build()
            .unwrap()
    }

    /// Waits until a tool call is running.
    async fn wait_entered(&self) {
        self.entered.acquire().await.unwrap().forget();
    }
}

fn call(id: i64, tool: &str) -> Value {
    request(id, "tools/call", json!({"name": tool}))
}

fn listen(id: i64) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
}

/// The client's side of the in-memory pipe.
struct Peer {
    writer: tokio::io::WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl Peer {
    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
    }

    async fn next(&mut self) -> Option<Value> {
        let line = self.lines.next_line().await.unwrap()?;
        Some(serde_json::from_str(&line).unwrap())
    }
}

/// The default limits, with a grace period of `seconds`.
fn grace(seconds: u64) -> StdioConfig {
    let mut config = StdioConfig::default();
    config.shutdown_grace = Duration::from_secs(seconds);
    config
}

/// Waits for `serving` to end, as it must `seconds` after `started` (to the instant: the clock
/// is paused). The timeout only bounds a failure.
async fn ends_after(
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
    started: tokio::time::Instant,
    seconds: u64,
) {
    let ended = tokio::time::timeout(Duration::from_secs(600), serving).await;
    ended
        .expect("serving ended with the grace period")
        .unwrap()
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(seconds));
}

/// Serves `server` on a new pipe until the returned sender fires (or is dropped).
fn serve_until(server: Server, config: StdioConfig) -> Serving {
    serve_until_with_output(server, config, 1 << 20)
}

/// The client's end of a connection served until the sender fires, and the serving task.
type Serving = (
    Peer,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
);

/// [`serve_until`] on a pipe whose output holds `output` bytes (its input 4 MiB): with a few, a
/// peer that stops reading blocks the server's writer almost at once.
fn serve_until_with_output(server: Server, config: StdioConfig, output: usize) -> Serving {
    let (client_in, server_in) = tokio::io::duplex(4 << 20);
    let (server_out, client_out) = tokio::io::duplex(output);
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_io_until(server_in, server_out, config, async {
                let _ = stopped.await;
            })
            .await
    });
    let (reader, _) = tokio::io::split(client_out);
    let (_, writer) = tokio::io::split(client_in);
    let peer = Peer {
        writer,
        lines: BufReader::new(reader).lines(),
    };
    (peer, stop, serving)
}

/// The stdio drain: the listen stream's closing result comes first, a new request is refused
/// with -32603 while the input is still read, the call in flight answers when it is done, and
/// serving then ends on its own (the peer never closed its side).
#[tokio::test]
async fn stdio_drains_on_shutdown() {
    let tools = Tools::default();
    let (mut peer, stop, serving) = serve_until(tools.server(), StdioConfig::default());
    peer.send(&listen(1)).await;
    let ack = peer.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    peer.send(&call(2, "gate")).await;
    tools.wait_entered().await;

    stop.send(()).unwrap();
    let closed = peer.next().await.unwrap();
    assert_eq!(closed["id"], 1, "{closed}");
    assert_eq!(closed["result"]["resultType"], "complete", "{closed}");

    peer.send(&call(3, "quick")).await;
    let refused = peer.next().await.unwrap();
    assert_eq!(refused["id"], 3, "{refused}");
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{refused}"
    );
    assert!(
        !serving.is_finished(),
        "the call in flight is still running"
    );

    tools.gate.add_permits(1);
    let answered = peer.next().await.unwrap();
    assert_eq!(answered["id"], 2, "{answered}");
    assert_eq!(answered["result"]["content"][0]["text"], "through");
    assert_eq!(peer.next().await, None, "the output closes");
    serving.await.unwrap().unwrap();
}

/// A call still running when the grace period is over is dropped (its future with it), without
/// a response, and serving returns then: not before, not later (paused clock).
#[tokio::test(start_paused = true)]
async fn stdio_drops_what_outlives_the_grace_period() {
    let tools = Tools::default();
    let (mut peer, stop, serving) = serve_until(tools.server(), grace(3));
    peer.send(&call(1, "forever")).await;
    tools.wait_entered().await;

    let started = tokio::time::Instant::now();
    stop.send(()).unwrap();
    assert_eq!(peer.next().await, None, "no answer, then the output closes");
    ends_after(serving, started, 3).await;
    assert!(tools.dropped.load(Ordering::SeqCst));
}

/// Without a shutdown, end of input still ends serving once the calls in flight have answered;
/// a shutdown that begins meanwhile bounds that wait by the grace period.
#[tokio::test(start_paused = true)]
async fn a_shutdown_after_end_of_input_bounds_the_wait() {
    let tools = Tools::default();
    let (mut peer, stop, serving) = serve_until(tools.server(), grace(2));
    peer.send(&call(1, "forever")).await;
    tools.wait_entered().await;
    peer.writer.shutdown().await.unwrap();
    // An hour later the call is still waited for: end of input alone sets no limit.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!serving.is_finished());
    assert!(!tools.dropped.load(Ordering::SeqCst));

    stop.send(()).unwrap();
    assert_eq!(peer.next().await, None);
    serving.await.unwrap().unwrap();
    assert!(tools.dropped.load(Ordering::SeqCst));
}

/// A peer that keeps writing but no longer reads cannot hold the drain past its grace period:
/// the refusals of its new requests fill the writer's queue (1,024 messages), and the drain used
/// to wait for room there, never reaching the end of the grace period. A refusal is dropped
/// when the queue is full; any other answer waits for room no longer than the grace period.
/// Paused clock; the timeout only bounds the failure.
#[tokio::test(start_paused = true)]
async fn a_peer_that_stops_reading_cannot_hold_the_drain() {
    let tools = Tools::default();
    let (mut peer, stop, serving) = serve_until_with_output(tools.server(), grace(3), 64);
    peer.send(&call(1, "forever")).await;
    tools.wait_entered().await;
    stop.send(()).unwrap();
    let started = tokio::time::Instant::now();
    // A line already there is served before the signal is polled: the drain has begun once a
    // call is refused.
    let mut refused = false;
    for id in 2..10 {
        peer.send(&call(id, "quick")).await;
        let answer = peer.next().await.unwrap();
        refused = answer["error"]["code"] == -32603;
        if refused {
            break;
        }
    }
    assert!(refused, "the drain began");

    // From here on the peer writes and never reads: refusals, then lines that are no JSON.
    for id in 10..3_000 {
        peer.send(&call(id, "quick")).await;
    }
    for _ in 0..100 {
        peer.writer.write_all(b"{not json\n").await.unwrap();
    }
    ends_after(serving, started, 3).await;
    assert!(tools.dropped.load(Ordering::SeqCst));
}

/// Reading pauses while `max_concurrent_requests` requests run; a shutdown that begins while
/// the loop waits for room there still ends serving with its grace period (it used to wait for
/// a request to end, and these never do). Paused clock.
#[tokio::test(start_paused = true)]
async fn a_full_server_still_stops_within_its_grace_period() {
    let tools = Tools::default();
    let mut config = grace(3);
    config.max_concurrent_requests = 1;
    let (mut peer, stop, serving) = serve_until(tools.server(), config);
    peer.send(&call(1, "forever")).await;
    tools.wait_entered().await;
    // Read, and waiting for room that the first call never gives back.
    peer.send(&call(2, "quick")).await;
    stop.send(()).unwrap();
    let started = tokio::time::Instant::now();
    ends_after(serving, started, 3).await;
    assert!(tools.dropped.load(Ordering::SeqCst));
}

/// One connection's end is not the server's: of a `Server` serving two connections, the one
/// whose input closes ends its own listen stream with the closing result, and the other's keeps
/// listening (it used to end too: end of input cancelled the server-wide token), until
/// `Server::shutdown_subscriptions` ends every connection's streams.
#[tokio::test]
async fn one_connection_ending_leaves_the_others_listening() {
    let server = Tools::default().server();
    let serve = |pipe: memory::Pipe| {
        let server = server.clone();
        let serving = tokio::spawn(async move {
            server
                .serve_io(pipe.server.reader, pipe.server.writer)
                .await
        });
        let peer = Peer {
            writer: pipe.client.writer,
            lines: BufReader::new(pipe.client.reader).lines(),
        };
        (peer, serving)
    };
    let (mut first, serving_first) = serve(memory::pipe());
    let (mut second, serving_second) = serve(memory::pipe());
    for peer in [&mut first, &mut second] {
        peer.send(&listen(1)).await;
        let ack = peer.next().await.unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }

    first.writer.shutdown().await.unwrap();
    let closed = first.next().await.unwrap();
    assert_eq!(closed["id"], 1, "{closed}");
    assert_eq!(closed["result"]["resultType"], "complete", "{closed}");
    assert_eq!(first.next().await, None);
    serving_first.await.unwrap().unwrap();

    // The second connection's stream is still there, and still told of changes.
    server.notify(Change::ToolsListChanged);
    let changed = second.next().await.unwrap();
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    server.shutdown_subscriptions();
    let closed = second.next().await.unwrap();
    assert_eq!(closed["id"], 1, "{closed}");
    assert_eq!(closed["result"]["resultType"], "complete", "{closed}");
    second.writer.shutdown().await.unwrap();
    assert_eq!(second.next().await, None);
    serving_second.await.unwrap().unwrap();
}

/// Starts `server` on HTTP with `config`, stopped by the returned sender; the serving task
/// returns what `serve_http_on` returned.
async fn http_until(
    server: Server,
    config: HttpConfig,
) -> (
    String,
    std::net::SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_http_on(listener, config, async {
                let _ = stopped.await;
            })
            .await
    });
    (
        format!("http://localhost:{}/mcp", addr.port()),
        addr,
        stop,
        serving,
    )
}

/// POSTs `body` with the 2026-07-28 headers.
async fn post(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    let mut builder = client.post(url).body(serde_json::to_vec(body).unwrap());
    for (name, value) in HttpPeer::standard_headers(body) {
        builder = builder.header(name, value);
    }
    builder.send().await.unwrap()
}

/// The events of an SSE response until it ends.
async fn events(mut response: reqwest::Response) -> Vec<Value> {
    let mut parser = modelctx::__fuzz::SseParser::default();
    let mut events = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        for event in parser.feed(&chunk).unwrap() {
            events.push(serde_json::from_str(&event.data).unwrap());
        }
    }
    events
}

/// The HTTP drain: the listen stream ends with its closing result and the listener is closed;
/// a 2025-11-25 session's GET stream ends too; the call in flight still gets its answer on its
/// connection; then `serve_http_on` returns.
#[tokio::test]
async fn http_drains_on_shutdown() {
    let tools = Tools::default();
    let (url, addr, stop, serving) = http_until(tools.server(), HttpConfig::default()).await;
    let client = reqwest::Client::new();

    let mut listening = post(&client, &url, &listen(1)).await;
    let mut parser = modelctx::__fuzz::SseParser::default();
    let ack = loop {
        let chunk = listening.chunk().await.unwrap().unwrap();
        if let Some(event) = parser.feed(&chunk).unwrap().into_iter().next() {
            break serde_json::from_str::<Value>(&event.data).unwrap();
        }
    };
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}});
    let opened = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(serde_json::to_vec(&init).unwrap())
        .send()
        .await
        .unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let session_stream = client
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(session_stream.status(), 200);

    let in_flight = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { post(&client, &url, &call(2, "gate")).await }
    });
    tools.wait_entered().await;

    stop.send(()).unwrap();
    let rest = events(listening).await;
    let closed = rest.last().expect("the closing result");
    assert_eq!(closed["id"], 1, "{rest:?}");
    assert_eq!(closed["result"]["resultType"], "complete", "{rest:?}");
    assert_eq!(events(session_stream).await, Vec::<Value>::new());
    // The listener closed before the streams were told to end.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert!(
        !serving.is_finished(),
        "the call in flight is still running"
    );

    tools.gate.add_permits(1);
    let answered: Value = in_flight.await.unwrap().json().await.unwrap();
    assert_eq!(answered["result"]["content"][0]["text"], "through");
    serving.await.unwrap().unwrap();
}

/// A call still running when the grace period is over: its connection is closed (the client
/// sees the request fail), its future dropped, and `serve_http_on` returns.
#[tokio::test]
async fn http_closes_what_outlives_the_grace_period() {
    let tools = Tools::default();
    let config = HttpConfig::default().shutdown_grace(Duration::from_millis(200));
    let (url, _, stop, serving) = http_until(tools.server(), config).await;
    let client = reqwest::Client::new();
    let in_flight = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move {
            let mut builder = client
                .post(&url)
                .body(serde_json::to_vec(&call(1, "forever")).unwrap());
            for (name, value) in HttpPeer::standard_headers(&call(1, "forever")) {
                builder = builder.header(name, value);
            }
            builder.send().await
        }
    });
    tools.wait_entered().await;
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    assert!(tools.dropped.load(Ordering::SeqCst));
    assert!(
        in_flight.await.unwrap().is_err(),
        "the connection was closed"
    );
}
