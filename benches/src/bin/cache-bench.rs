//! The client response cache's hit path against the request it saves: N sequential
//! `Client::list_tools` calls over the in-memory transport (`modelctx::memory::pipe`, the stdio
//! code path, client and server in this process on a current-thread runtime), against a server
//! whose listing is public for an hour.
//!
//! ```text
//! cache-bench (--cached | --uncached) [-n N] [--tools T]
//! ```
//!
//! `--cached`: the client's cache on (the default `CacheConfig`): one request, then N - 1 hits.
//! `--uncached`: the cache off (`ClientBuilder::no_cache`): N requests. `--tools`: how many
//! tools the listing has (default 8, each with a small input schema). Prints one line:
//! `mode=… calls=N seconds=… ns_per_call=…`. `scripts/bench-cache.sh` runs it under callgrind
//! twice per mode and reports instructions per call.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use modelctx::client::Client;
use modelctx::server::{CachePolicy, Caching, Server};
use modelctx::types::{CacheScope, CallToolResult, Tool};
use modelctx_benches::eprint_line;

const USAGE: &str = "usage: cache-bench (--cached | --uncached) [-n N] [--tools T]";

fn server(tools: usize) -> Server {
    let mut builder = Server::builder("CacheBench", "0.0.1").caching(Caching {
        lists: CachePolicy::new(3_600_000, CacheScope::PUBLIC),
        ..Caching::default()
    });
    for i in 0..tools {
        let schema = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to echo back"}},
            "required": ["text"]
        }))
        .expect("a schema");
        let mut tool = Tool::new(format!("echo_{i}"), schema);
        tool.description = Some(format!("Echoes its text back (tool {i})"));
        builder = builder.tool(tool, |_ctx, _params| async { CallToolResult::text("echo") });
    }
    builder.build().expect("a server")
}

fn main() -> ExitCode {
    let mut cached = None;
    let mut calls = 10_000usize;
    let mut tools = 8usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--cached" => cached = Some(true),
            "--uncached" => cached = Some(false),
            "-n" => calls = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            "--tools" => tools = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            _ => {
                eprint_line(USAGE);
                return ExitCode::from(2);
            }
        }
    }
    let (Some(cached), true) = (cached, calls > 0) else {
        eprint_line(USAGE);
        return ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let pipe = modelctx::memory::pipe();
        let server = server(tools);
        tokio::spawn(async move {
            server
                .serve_io(pipe.server.reader, pipe.server.writer)
                .await
        });
        let builder = Client::builder();
        let builder = if cached { builder } else { builder.no_cache() };
        let client = builder
            .connect_io(pipe.client.reader, pipe.client.writer)
            .await
            .expect("connected");
        let started = Instant::now();
        for _ in 0..calls {
            let listed = client.list_tools().await.expect("listed");
            assert_eq!(listed.len(), tools);
        }
        let seconds = started.elapsed().as_secs_f64();
        if cached {
            let stats = client.cache().expect("on").stats();
            assert_eq!(stats.hits as usize, calls - 1, "{stats:?}");
        }
        let line = format!(
            "mode={} calls={calls} seconds={seconds:.6} ns_per_call={:.0}",
            if cached { "cached" } else { "uncached" },
            seconds * 1e9 / calls as f64
        );
        let _ = writeln!(std::io::stdout().lock(), "{line}");
        client.close().await.expect("closed");
    });
    ExitCode::SUCCESS
}
