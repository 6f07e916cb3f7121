//! Listen-stream load: one `reliability-server` holding N concurrent `subscriptions/listen`
//! streams over HTTP (raw HTTP/1.1 connections from this process, 127.0.0.1 only). Reports the
//! server's memory per stream (RSS after the streams are acknowledged minus RSS before, over N)
//! and, over K changes (`touch` of the resource every stream follows), the time from the
//! `tools/call` until the last of the N streams received the update (p50/p99 over the K).
//! Bounded in count (N, K) and time (every wait has a deadline).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use modelctx_reliability::procfs;
use modelctx_reliability::rawhttp::{self, Body};
use modelctx_reliability::server::{HttpServer, Launch};
use modelctx_reliability::stats::{Latencies, ms};
use modelctx_reliability::wire;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};

#[derive(Debug, Parser)]
#[command(about = "Many concurrent listen streams on one server: memory per stream, fan-out time")]
struct Args {
    /// The server binary (`reliability-server`).
    #[arg(long)]
    server: PathBuf,
    /// Concurrent listen streams.
    #[arg(long, default_value_t = 10_000)]
    streams: usize,
    /// Changes announced (each measured separately).
    #[arg(long, default_value_t = 20)]
    changes: usize,
    /// Streams being opened at once.
    #[arg(long, default_value_t = 256)]
    opening: usize,
    /// Open the streams over this many HTTP/2 connections (cleartext, prior knowledge),
    /// spread evenly; 0 (the default): one HTTP/1.1 connection per stream.
    #[arg(long, default_value_t = 0)]
    http2_connections: usize,
    /// Write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The resource every stream follows.
const URI: &str = "load://report";
const ACK: &[u8] = b"notifications/subscriptions/acknowledged";
const UPDATED: &[u8] = b"notifications/resources/updated";
/// The longest any one wait may take.
const BOUND: Duration = Duration::from_secs(120);

fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
}

/// Occurrences of `needle` in `chunk`, counting one that straddles the previous chunk (`carry`
/// holds its last `needle.len() - 1` bytes).
fn count(carry: &mut Vec<u8>, chunk: &[u8], needle: &[u8]) -> usize {
    carry.extend_from_slice(chunk);
    let found = carry.windows(needle.len()).filter(|w| *w == needle).count();
    let keep = carry.len().saturating_sub(needle.len() - 1);
    carry.drain(..keep);
    found
}

/// Header names and values.
type Headers = Vec<(String, String)>;

/// The `subscriptions/listen` request of stream `id`: its headers and body.
fn listen_request(id: usize) -> Result<(Headers, Vec<u8>), Error> {
    let body = serde_json::to_vec(&wire::request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": [URI]}}),
    ))?;
    Ok((wire::http_headers("subscriptions/listen", None), body))
}

/// A listen stream's response body, read chunk by chunk.
enum Stream {
    Http1(TcpStream),
    Http2(hyper::body::Incoming),
}

impl Stream {
    /// The next chunk of the body (empty: it ended).
    async fn chunk(&mut self, buffer: &mut [u8; 4096]) -> Result<Vec<u8>, Error> {
        match self {
            Self::Http1(stream) => {
                let read = stream.read(buffer).await?;
                Ok(buffer[..read].to_vec())
            }
            Self::Http2(body) => loop {
                match body.frame().await {
                    None => return Ok(Vec::new()),
                    Some(frame) => {
                        if let Ok(data) = frame?.into_data() {
                            return Ok(data.to_vec());
                        }
                    }
                }
            },
        }
    }

    /// Reads until the acknowledgement.
    async fn acknowledged(mut self) -> Result<Self, Error> {
        let mut carry = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let chunk = self.chunk(&mut buffer).await?;
            if chunk.is_empty() {
                return Err("the stream closed before its acknowledgement".into());
            }
            if count(&mut carry, &chunk, ACK) > 0 {
                return Ok(self);
            }
        }
    }
}

/// Opens one listen stream on its own HTTP/1.1 connection; returns it once acknowledged.
async fn open(addr: SocketAddr, id: usize) -> Result<Stream, Error> {
    let (headers, body) = listen_request(id)?;
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", addr.port());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    Stream::Http1(stream).acknowledged().await
}

/// An HTTP/2 connection (cleartext, prior knowledge) to open streams on.
async fn connect_http2(
    addr: SocketAddr,
) -> Result<hyper::client::conn::http2::SendRequest<Full<Bytes>>, Error> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Opens one listen stream on an HTTP/2 connection; returns it once acknowledged.
async fn open_http2(
    mut sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    id: usize,
) -> Result<Stream, Error> {
    let (headers, body) = listen_request(id)?;
    let mut request = hyper::Request::post(format!("http://127.0.0.1:{}/mcp", addr.port()));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    sender.ready().await?;
    let response = sender
        .send_request(request.body(Full::new(Bytes::from(body)))?)
        .await?;
    if response.status() != 200 {
        return Err(format!("listen answered HTTP {}", response.status()).into());
    }
    Stream::Http2(response.into_body()).acknowledged().await
}

/// Reads a stream until it closes, reporting each update's arrival.
async fn follow(mut stream: Stream, arrivals: mpsc::UnboundedSender<Instant>) {
    let mut carry = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(chunk) = stream.chunk(&mut buffer).await {
        if chunk.is_empty() {
            return;
        }
        for _ in 0..count(&mut carry, &chunk, UPDATED) {
            let _ = arrivals.send(Instant::now());
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    // Every stream comes from 127.0.0.1, one client to the server: let it hold them all.
    let launch = Launch {
        predictable_malloc: true,
        streams_per_client: Some(args.streams),
        ..Launch::default()
    };
    let server = HttpServer::start(&args.server, &launch).await?;
    let addr = server.addr();
    let before = procfs::memory(server.pid)?;

    // Open the streams, `opening` at a time.
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(args.opening.max(1)));
    let mut connections = Vec::with_capacity(args.http2_connections);
    for _ in 0..args.http2_connections {
        connections.push(connect_http2(addr).await?);
    }
    let mut opening = tokio::task::JoinSet::new();
    for id in 0..args.streams {
        let gate = Arc::clone(&gate);
        let connection =
            (!connections.is_empty()).then(|| connections[id % connections.len()].clone());
        opening.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            let opened = async {
                match connection {
                    Some(sender) => open_http2(sender, addr, id + 1).await,
                    None => open(addr, id + 1).await,
                }
            };
            tokio::time::timeout(BOUND, opened)
                .await
                .map_err(|_| Error::from("no acknowledgement in time"))?
        });
    }
    let (arrivals, mut arrived) = mpsc::unbounded_channel();
    let mut streams = 0;
    while let Some(opened) = opening.join_next().await {
        tokio::spawn(follow(opened??, arrivals.clone()));
        streams += 1;
    }
    let open_time = started.elapsed();
    let after = procfs::memory(server.pid)?;
    let per_stream_kib =
        after.rss_kib.saturating_sub(before.rss_kib) as f64 / streams.max(1) as f64;
    out(&format!(
        "{streams} listen streams ({}) acknowledged in {:.1} s; server RSS {:.1} MiB before, {:.1} MiB \
         after: {per_stream_kib:.2} KiB per stream",
        if args.http2_connections == 0 {
            "HTTP/1.1, a connection each".to_owned()
        } else {
            format!("HTTP/2 over {} connections", args.http2_connections)
        },
        open_time.as_secs_f64(),
        before.rss_mib(),
        after.rss_mib()
    ));

    // Each change: from the call until every stream has it.
    let http = |id: usize| {
        let body = wire::call_tool(id, "touch", &json!({"uri": URI}));
        let headers = rawhttp::text_headers(&wire::headers_for(&body));
        (serde_json::to_vec(&body), headers)
    };
    let mut fan_out = Latencies::new();
    for change in 0..args.changes {
        let (body, headers) = http(change);
        let sent = Instant::now();
        let response = rawhttp::post(addr, "/mcp", &headers, Body::Bytes(body?), BOUND).await?;
        if response.status != 200 {
            return Err(format!("touch answered HTTP {}", response.status).into());
        }
        let mut last = sent;
        for _ in 0..streams {
            last = tokio::time::timeout(BOUND, arrived.recv())
                .await
                .map_err(|_| Error::from("an update did not arrive in time"))?
                .ok_or("every stream closed")?;
        }
        fan_out.record(last.duration_since(sent));
    }
    let peak = procfs::memory(server.pid)?;
    out(&format!(
        "{} changes, each to all {streams} streams: p50 {} ms, p99 {} ms, max {} ms; server RSS \
         {:.1} MiB at the end (high-water mark {:.1} MiB)",
        args.changes,
        ms(fan_out.percentile(50.0)),
        ms(fan_out.percentile(99.0)),
        ms(fan_out.max()),
        peak.rss_mib(),
        peak.hwm_mib()
    ));
    if let Some(path) = &args.json {
        let figures = json!({
            "streams": streams,
            "http2_connections": args.http2_connections,
            "open_s": open_time.as_secs_f64(),
            "rss_before_kib": before.rss_kib,
            "rss_after_kib": after.rss_kib,
            "per_stream_kib": per_stream_kib,
            "changes": args.changes,
            "fan_out_p50_ms": ms(fan_out.percentile(50.0)),
            "fan_out_p99_ms": ms(fan_out.percentile(99.0)),
            "fan_out_max_ms": ms(fan_out.max()),
        });
        std::fs::write(path, serde_json::to_vec_pretty(&figures)?)?;
    }
    server.stop(Duration::from_secs(30)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_split_over_chunks_is_counted_once() {
        let mut carry = Vec::new();
        assert_eq!(count(&mut carry, b"xx notifications/reso", UPDATED), 0);
        assert_eq!(count(&mut carry, b"urces/updated yy", UPDATED), 1);
        assert_eq!(
            count(&mut carry, b"notifications/resources/updated", UPDATED),
            1
        );
        assert_eq!(count(&mut carry, b"", UPDATED), 0);
    }
}
