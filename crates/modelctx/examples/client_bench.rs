//! Client throughput: sequential `tools/call echo` through `modelctx::client::Client` against
//! `modelctx::server::Server`, over stdio (a child process), streamable HTTP (a child process on
//! 127.0.0.1) and the in-memory pipe; plus full two-round input-required flows.
//!
//! ```sh
//! cargo run --release -p modelctx --example client_bench -- [--n 20000] [--runs 3]
//!     [--only stdio|http|memory] [--flow echo|provision]
//! ```
//!
//! Each figure is the median of `--runs` runs of `--n` sequential calls on one connection
//! (after 500 warm-up calls). The server is this binary re-run with `--serve-stdio` or
//! `--serve-http`, so client and server do not share a runtime (and a profiler attached to
//! this process, e.g. callgrind without `--trace-children`, measures the client alone). Prints
//! a Markdown table.

use std::io::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use modelctx::client::{Client, ClientBuilder};
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitResult,
    ErrorObject, InputRequest, InputRequiredResult, Outcome, Tool,
};
use serde_json::{Map, Value, json};
use tokio::io::AsyncBufReadExt as _;

const WARMUP: usize = 500;

fn server() -> Server {
    let schema = |props: Value| -> modelctx::types::Extra {
        serde_json::from_value(json!({"type": "object", "properties": props})).unwrap_or_default()
    };
    Server::builder("bench", "0.0.1")
        .tool(
            Tool::new("echo", schema(json!({"text": {"type": "string"}}))),
            |_ctx, params: CallToolRequestParams| async move {
                let text = params
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                CallToolResult::text(text)
            },
        )
        .tool(
            Tool::new("provision", schema(json!({"name": {"type": "string"}}))),
            provision,
        )
        .seal_request_state_ephemeral()
        .build()
        .expect("a valid server")
}

/// Round 1 asks for a region; the retry completes.
async fn provision(
    _ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let answered = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("region"))
        .and_then(|a| a.as_elicit().ok())
        .is_some_and(|a| a.action == ElicitAction::Accept);
    if answered {
        return Ok(Outcome::Complete(CallToolResult::text("provisioned")));
    }
    let schema = serde_json::from_value(json!({"type": "object",
        "properties": {"region": {"type": "string"}}, "required": ["region"]}))
    .map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Outcome::InputRequired(
        InputRequiredResult::new()
            .with_request(
                "region",
                InputRequest::elicit(ElicitRequestFormParams::new("Region?", schema)),
            )
            .with_state("provision-v1"),
    ))
}

fn builder() -> ClientBuilder {
    Client::builder().on_elicitation(|_context, _params| async {
        let mut content = Map::new();
        content.insert("region".to_owned(), Value::from("eu-west-1"));
        Ok::<_, ErrorObject>(ElicitResult::accept(content))
    })
}

/// Runs `n` sequential calls of `tool`; returns the elapsed time.
async fn measure(client: &Client, tool: &str, n: usize) -> Duration {
    let arguments = json!({"text": "hello, bench!!!!", "name": "db"});
    let expected = if tool == "echo" {
        "hello, bench!!!!"
    } else {
        "provisioned"
    };
    let started = Instant::now();
    for _ in 0..n {
        let result = client
            .call_tool(tool, arguments.clone())
            .await
            .expect("the call succeeds");
        assert_eq!(result.first_text(), Some(expected));
    }
    started.elapsed()
}

enum Target {
    Stdio,
    Http(String),
    Memory,
}

async fn connect(target: &Target) -> Client {
    match target {
        Target::Stdio => {
            let mut command =
                tokio::process::Command::new(std::env::current_exe().expect("own path"));
            command.arg("--serve-stdio");
            builder().connect_stdio(command).await.expect("connect")
        }
        Target::Http(url) => builder().connect_http(url).await.expect("connect"),
        Target::Memory => {
            let pipe = modelctx::memory::pipe();
            let server = server();
            tokio::spawn(async move {
                server
                    .serve_io(pipe.server.reader, pipe.server.writer)
                    .await
            });
            builder()
                .connect_io(pipe.client.reader, pipe.client.writer)
                .await
                .expect("connect")
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve-stdio") {
        server().serve_stdio().await?;
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("--serve-http") {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        writeln!(std::io::stdout(), "http://{}/mcp", listener.local_addr()?)?;
        std::io::stdout().flush()?;
        // Ends when the parent closes our stdin.
        let shutdown = async {
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(_)) = lines.next_line().await {}
        };
        server()
            .serve_http_on(
                listener,
                modelctx::server::http::HttpConfig::default(),
                shutdown,
            )
            .await?;
        return Ok(());
    }
    let option = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let n = option("--n", 20_000);
    let runs = option("--runs", 3).max(1);
    let text_option = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let only = text_option("--only");
    let flow = text_option("--flow");

    let mut http_server = tokio::process::Command::new(std::env::current_exe()?)
        .arg("--serve-http")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = http_server.stdout.take().ok_or("no stdout")?;
    let url = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await?
        .ok_or("the HTTP server did not start")?;

    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "| transport | call | calls/s (median of {runs}) | µs per call | range calls/s |"
    )?;
    writeln!(out, "|---|---|---:|---:|---|")?;
    let targets = [
        ("stdio", "stdio (child process)", Target::Stdio),
        (
            "http",
            "HTTP/1.1 (child process, 127.0.0.1)",
            Target::Http(url),
        ),
        ("memory", "in-memory pipe (same process)", Target::Memory),
    ];
    for (key, label, target) in &targets {
        if only.as_deref().is_some_and(|o| o != *key) {
            continue;
        }
        for (tool, what, calls_per_op) in [
            ("echo", "`tools/call echo`", 1),
            ("provision", "input-required flow (2 requests)", 2),
        ] {
            if flow.as_deref().is_some_and(|f| f != tool) {
                continue;
            }
            let count = if calls_per_op == 1 || flow.is_some() {
                n
            } else {
                n / 4
            };
            let mut rates = Vec::new();
            for _ in 0..runs {
                let client = connect(target).await;
                measure(&client, tool, WARMUP.min(count)).await;
                let elapsed = measure(&client, tool, count).await;
                rates.push(count as f64 / elapsed.as_secs_f64());
                client.close().await?;
            }
            let rate = median(rates.clone());
            let (low, high) = (
                rates.iter().copied().fold(f64::INFINITY, f64::min),
                rates.iter().copied().fold(0.0, f64::max),
            );
            let unit = if calls_per_op == 1 { "calls" } else { "flows" };
            writeln!(
                out,
                "| {label} | {what} | {rate:.0} {unit}/s | {:.1} | {low:.0}–{high:.0} |",
                1e6 / rate
            )?;
        }
    }
    drop(http_server.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(5), http_server.wait()).await;
    Ok(())
}
