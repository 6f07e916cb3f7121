//! Load driver: N concurrent SDK clients (`modelctx::client::Client` over HTTP) against one server
//! for a fixed time, mixing `tools/call echo` with full two-round multi-round-trip flows
//! (`test_input_required_result_request_state`, sealed state, answered by the client's
//! elicitation callback through its input-required loop). Every answer is checked; any error
//! fails the run. Reports p50/p90/p99/max per kind, throughput, and the server's RSS sampled
//! every second. `scripts/load.sh` builds and runs it.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use modelctx::client::{Client, Mode};
use modelctx::types::{ElicitResult, ProtocolVersion};
use modelctx_reliability::procfs;
use modelctx_reliability::server::{HttpServer, Launch};
use modelctx_reliability::stats::{Latencies, ms};
use modelctx_reliability::wire::{CONFIRMED_TEXT, MRTR_TOOL};
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(about = "Concurrent MCP clients against one server: mixed calls and MRTR flows")]
struct Args {
    /// The server binary to start (`reliability-server`); ignored with --url.
    #[arg(long)]
    server: Option<PathBuf>,
    /// An already running server (then give --pid for memory samples).
    #[arg(long)]
    url: Option<String>,
    /// The pid of the server at --url.
    #[arg(long)]
    pid: Option<u32>,
    /// Concurrent clients (one connection each).
    #[arg(long, default_value_t = 200)]
    clients: usize,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Share of operations that are two-round MRTR flows, in percent.
    #[arg(long, default_value_t = 50)]
    mrtr_percent: u64,
    /// Write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// What one client recorded.
#[derive(Debug, Default)]
struct Tally {
    echo: Latencies,
    flow: Latencies,
    errors: Vec<String>,
    error_count: u64,
}

/// Operations completed, for the per-second series.
#[derive(Debug, Default)]
struct Counters {
    echo: AtomicU64,
    flow: AtomicU64,
    errors: AtomicU64,
}

fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
}

async fn connect(url: &str) -> Result<Client, String> {
    Client::builder()
        .mode(Mode::Pinned(ProtocolVersion::V2026_07_28))
        .on_elicitation(|_context, _params| async move {
            let mut content = serde_json::Map::new();
            content.insert("ok".to_owned(), Value::Bool(true));
            Ok(ElicitResult::accept(content))
        })
        .request_timeout(Duration::from_secs(30))
        .connect_http(url)
        .await
        .map_err(|e| format!("connect: {e}"))
}

/// One client's loop until `deadline`.
async fn run_client(
    client: Client,
    seed: u64,
    mrtr_percent: u64,
    deadline: Instant,
    counters: Arc<Counters>,
) -> Tally {
    let mut tally = Tally::default();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut n = 0u64;
    while Instant::now() < deadline {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        n += 1;
        let started = Instant::now();
        let flow = (state >> 33) % 100 < mrtr_percent;
        let outcome = if flow {
            client
                .call_tool(MRTR_TOOL, json!({}))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| match r.first_text() {
                    Some(CONFIRMED_TEXT) => Ok(()),
                    other => Err(format!("flow answered {other:?}")),
                })
        } else {
            let text = format!(
                "c{seed}-n{n}-{}",
                "x".repeat(((state >> 40) % 200) as usize)
            );
            client
                .call_tool("echo", json!({"text": text}))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| {
                    if r.first_text() == Some(text.as_str()) {
                        Ok(())
                    } else {
                        Err(format!("echo answered {:?}", r.first_text()))
                    }
                })
        };
        let elapsed = started.elapsed();
        match outcome {
            Ok(()) if flow => {
                tally.flow.record(elapsed);
                counters.flow.fetch_add(1, Ordering::Relaxed);
            }
            Ok(()) => {
                tally.echo.record(elapsed);
                counters.echo.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                tally.error_count += 1;
                counters.errors.fetch_add(1, Ordering::Relaxed);
                if tally.errors.len() < 5 {
                    tally.errors.push(format!(
                        "{} after {elapsed:?}: {error}",
                        if flow { "flow" } else { "echo" }
                    ));
                }
            }
        }
    }
    let _ = client.close().await;
    tally
}

/// One second of the run.
#[derive(Debug, Clone, Copy)]
struct Sample {
    second: u64,
    rss_mib: f64,
    hwm_mib: f64,
    echo: u64,
    flow: u64,
    errors: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut owned = None;
    let (url, pid) = match (&args.url, &args.server) {
        (Some(url), _) => (url.clone(), args.pid),
        (None, Some(bin)) => {
            let server = HttpServer::start(bin, &Launch::default()).await?;
            let target = (server.url(), Some(server.pid));
            owned = Some(server);
            target
        }
        (None, None) => return Err("give --server <bin> or --url <url>".into()),
    };
    let idle = pid.map(procfs::memory).transpose()?;
    out(&format!(
        "load: {} clients × {} s against {url} (MRTR share {} %)",
        args.clients, args.seconds, args.mrtr_percent
    ));

    // Connect everyone first (each client is one HTTP/1.1 connection, kept alive).
    let connecting = Instant::now();
    let mut connects = tokio::task::JoinSet::new();
    for n in 0..args.clients {
        let url = url.clone();
        connects.spawn(async move { (n, connect(&url).await) });
    }
    let mut clients = Vec::with_capacity(args.clients);
    while let Some(joined) = connects.join_next().await {
        let (n, client) = joined?;
        clients.push((n, client?));
    }
    out(&format!(
        "load: {} clients connected in {:?}",
        clients.len(),
        connecting.elapsed()
    ));

    let counters = Arc::new(Counters::default());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for (n, client) in clients {
        tasks.spawn(run_client(
            client,
            n as u64 + 1,
            args.mrtr_percent,
            deadline,
            Arc::clone(&counters),
        ));
    }

    // Sample the server's memory and the completed operations every second.
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let (mut last_echo, mut last_flow, mut last_errors) = (0, 0, 0);
    for second in 1..=args.seconds {
        tick.tick().await;
        let memory = pid.map(procfs::memory).transpose()?;
        let (echo, flow, errors) = (
            counters.echo.load(Ordering::Relaxed),
            counters.flow.load(Ordering::Relaxed),
            counters.errors.load(Ordering::Relaxed),
        );
        samples.push(Sample {
            second,
            rss_mib: memory.map_or(0.0, |m| m.rss_mib()),
            hwm_mib: memory.map_or(0.0, |m| m.hwm_mib()),
            echo: echo - last_echo,
            flow: flow - last_flow,
            errors: errors - last_errors,
        });
        (last_echo, last_flow, last_errors) = (echo, flow, errors);
    }

    let mut total = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        let tally = joined?;
        total.echo.merge(&tally.echo);
        total.flow.merge(&tally.flow);
        total.error_count += tally.error_count;
        total.errors.extend(tally.errors);
    }
    let wall = started.elapsed();
    let after = pid.map(procfs::memory).transpose()?;
    if let Some(server) = owned {
        server.stop(Duration::from_secs(10)).await?;
    }

    let secs = wall.as_secs_f64();
    out(
        "\n| kind | completed | per second | p50 ms | p90 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|---:|",
    );
    for (kind, l) in [
        ("tools/call echo", &total.echo),
        ("two-round MRTR flow", &total.flow),
    ] {
        out(&format!(
            "| {kind} | {} | {:.0} | {} | {} | {} | {} |",
            l.len(),
            l.len() as f64 / secs,
            ms(l.percentile(50.0)),
            ms(l.percentile(90.0)),
            ms(l.percentile(99.0)),
            ms(l.max()),
        ));
    }
    let requests = total.echo.len() + 2 * total.flow.len();
    out(&format!(
        "\nerrors: {}; HTTP requests: {requests} ({:.0}/s) in {wall:.1?}",
        total.error_count,
        requests as f64 / secs
    ));
    if let (Some(idle), Some(after)) = (idle, after) {
        out(&format!(
            "server memory: idle VmRSS {:.1} MiB; after VmRSS {:.1} MiB, VmHWM {:.1} MiB",
            idle.rss_mib(),
            after.rss_mib(),
            after.hwm_mib()
        ));
    }
    out(
        "\n| s | VmRSS MiB | VmHWM MiB | echo/s | flows/s | errors |\n|---:|---:|---:|---:|---:|---:|",
    );
    for s in &samples {
        out(&format!(
            "| {} | {:.1} | {:.1} | {} | {} | {} |",
            s.second, s.rss_mib, s.hwm_mib, s.echo, s.flow, s.errors
        ));
    }
    for error in &total.errors {
        out(&format!("error: {error}"));
    }
    if let Some(path) = &args.json {
        let figures = json!({
            "clients": args.clients,
            "seconds": args.seconds,
            "wall_seconds": secs,
            "errors": total.error_count,
            "http_requests": requests,
            "echo": {"count": total.echo.len(), "p50_ms": ms(total.echo.percentile(50.0)), "p90_ms": ms(total.echo.percentile(90.0)), "p99_ms": ms(total.echo.percentile(99.0)), "max_ms": ms(total.echo.max())},
            "flow": {"count": total.flow.len(), "p50_ms": ms(total.flow.percentile(50.0)), "p90_ms": ms(total.flow.percentile(90.0)), "p99_ms": ms(total.flow.percentile(99.0)), "max_ms": ms(total.flow.max())},
            "idle_rss_mib": idle.map(|m| m.rss_mib()),
            "after_rss_mib": after.map(|m| m.rss_mib()),
            "hwm_mib": after.map(|m| m.hwm_mib()),
            "samples": samples.iter().map(|s| json!({"s": s.second, "rss_mib": s.rss_mib, "hwm_mib": s.hwm_mib, "echo": s.echo, "flows": s.flow, "errors": s.errors})).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_vec_pretty(&figures)?)?;
    }
    if total.error_count > 0 || total.echo.is_empty() || total.flow.is_empty() {
        return Err(format!("{} errors", total.error_count).into());
    }
    Ok(())
}
