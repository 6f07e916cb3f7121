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

use clap::Parser;
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

/// Opens one listen stream; returns it once acknowledged.
async fn open(addr: SocketAddr, id: usize) -> Result<TcpStream, Error> {
    let body = serde_json::to_vec(&wire::request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": [URI]}}),
    ))?;
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", addr.port());
    for (name, value) in wire::http_headers("subscriptions/listen", None) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    let mut carry = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            return Err("the stream closed before its acknowledgement".into());
        }
        if count(&mut carry, &buffer[..read], ACK) > 0 {
            return Ok(stream);
        }
    }
}

/// Reads a stream until it closes, reporting each update's arrival.
async fn follow(mut stream: TcpStream, arrivals: mpsc::UnboundedSender<Instant>) {
    let mut carry = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            return;
        }
        for _ in 0..count(&mut carry, &buffer[..read], UPDATED) {
            let _ = arrivals.send(Instant::now());
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let launch = Launch {
        predictable_malloc: true,
        ..Launch::default()
    };
    let server = HttpServer::start(&args.server, &launch).await?;
    let addr = server.addr();
    let before = procfs::memory(server.pid)?;

    // Open the streams, `opening` at a time.
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(args.opening.max(1)));
    let mut opening = tokio::task::JoinSet::new();
    for id in 0..args.streams {
        let gate = Arc::clone(&gate);
        opening.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            tokio::time::timeout(BOUND, open(addr, id + 1))
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
        "{streams} listen streams acknowledged in {:.1} s; server RSS {:.1} MiB before, {:.1} MiB \
         after: {per_stream_kib:.2} KiB per stream",
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
