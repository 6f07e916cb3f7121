//! The rmcp 3.11 client as a bench peer of our client (`crates/modelctx/examples/client_bench.rs`,
//! see `scripts/bench.sh`): sequential `tools/call echo {"text":"hello"}` on one connection.
//!
//! ```text
//! rmcp-client [-n N] [--warmup W] --stdio CMD [ARGS...]   # spawn the server, talk over its stdio
//! rmcp-client [-n N] [--warmup W] --http URL              # streamable HTTP (JSON responses)
//! ```
//!
//! It connects with `server/discover` (2026-07-28, rmcp's `ClientLifecycleMode::Discover`, as
//! our client negotiates against a 2026-07-28 server), makes W warm-up calls (default 500, as
//! `client_bench`), then N calls (default 1000), checks every result's text and prints
//! `calls=N seconds=S calls_per_s=R`. Under callgrind (without `--trace-children`) the
//! difference between two N is the client's own cost per call.

use std::time::Instant;

use rmcp::model::{CallToolRequestParams, ContentBlock, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService, serve_client_with_lifecycle};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

const TEXT: &str = "hello";

fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

async fn call(client: &RunningService<RoleClient, ()>) -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".to_owned(), TEXT.into());
    let result = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await?;
    match result.content.first() {
        Some(ContentBlock::Text(block)) if block.text == TEXT => Ok(()),
        other => Err(format!("unexpected echo result: {other:?}").into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut n = 1000usize;
    let mut warmup = 500usize;
    let mut i = 0;
    let mut client = None;
    while i < args.len() {
        match args[i].as_str() {
            "-n" => {
                n = args.get(i + 1).ok_or("-n N")?.parse()?;
                i += 2;
            }
            "--warmup" => {
                warmup = args.get(i + 1).ok_or("--warmup W")?.parse()?;
                i += 2;
            }
            "--stdio" => {
                let command = args
                    .get(i + 1..)
                    .filter(|c| !c.is_empty())
                    .ok_or("--stdio CMD")?;
                let mut child = tokio::process::Command::new(&command[0]);
                child.args(&command[1..]);
                let transport = TokioChildProcess::new(child)?;
                client = Some(serve_client_with_lifecycle((), transport, lifecycle()).await?);
                break;
            }
            "--http" => {
                let url = args.get(i + 1).ok_or("--http URL")?.clone();
                let transport = StreamableHttpClientTransport::from_uri(url);
                client = Some(serve_client_with_lifecycle((), transport, lifecycle()).await?);
                break;
            }
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let client = client
        .ok_or("usage: rmcp-client [-n N] [--warmup W] (--stdio CMD [ARGS...] | --http URL)")?;
    for _ in 0..warmup {
        call(&client).await?;
    }
    let start = Instant::now();
    for _ in 0..n {
        call(&client).await?;
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "calls={n} seconds={seconds:.3} calls_per_s={:.0}",
        n as f64 / seconds
    );
    client.cancel().await?;
    Ok(())
}
