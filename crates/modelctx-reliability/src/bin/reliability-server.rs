//! The server of the reliability suite: the conformance fixtures (`modelctx_conformance::server`)
//! plus an `echo` tool, with the SDK's default limits.
//!
//! * `reliability-server --stdio` serves stdin/stdout;
//! * `PORT=<port> reliability-server` serves `http://127.0.0.1:<port>/mcp` (`PORT=0`: any free
//!   port) and prints `listening http://127.0.0.1:<port>/mcp` on stdout once bound; SIGTERM or
//!   SIGINT stops it gracefully (no new connections, requests in flight finish).
//!
//! `MCP_REQUEST_STATE_KEYS` (comma-separated secrets, the first one mints) and
//! `MCP_REQUEST_STATE_TTL` (seconds) configure sealing, as for `conformance-server`; without
//! keys each process seals under its own random key. `MCP_BUS_REDIS=redis://…` joins the change
//! bus of the fleet (channel `mcp-fleet:changes`) and keeps the tasks in the same Redis (prefix
//! `mcp-fleet-tasks`); the `touch {uri}` tool announces an update
//! of any resource URI, for the fleet's bus phase. `MCP_LISTEN_STREAMS_PER_CLIENT` raises how
//! many listen streams one peer address may hold, and gives it the whole budget as its share
//! (`mcp-listeners` holds 10 000 from 127.0.0.1).

use std::io::Write as _;
use std::sync::Arc;

use modelctx::seal::RequestStateSecurity;
use modelctx::server::bus::RedisBus;
use modelctx::server::http::HttpConfig;
use modelctx::server::tasks::{RedisTaskStore, TaskStore};
use modelctx::server::{Change, RequestContext, SubscriptionLimits};
use modelctx::types::{CallToolRequestParams, CallToolResult, Tool};
use modelctx_conformance::server::builder_with_task_store;
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let security = match RequestStateSecurity::from_env() {
        Ok(security) => security,
        Err(error) => {
            // A configuration mistake: one line and exit 2, as `mcp serve demo` does.
            let _ = writeln!(
                std::io::stderr(),
                "reliability-server: MCP_REQUEST_STATE_KEYS / _TTL: {error}"
            );
            std::process::exit(2);
        }
    };
    // A fleet on a bus keeps its tasks in the same Redis, so that a task running on one
    // instance is followed (and answered) on any other.
    let bus = std::env::var(modelctx_reliability::server::BUS_VAR).ok();
    let tasks: Option<Arc<dyn TaskStore>> = match &bus {
        Some(url) => Some(Arc::new(
            RedisTaskStore::connect(url, "mcp-fleet-tasks").await?,
        )),
        None => None,
    };
    let mut server = builder_with_task_store(security, tasks);
    if let Ok(streams) = std::env::var(modelctx_reliability::server::STREAMS_PER_CLIENT_VAR) {
        let Ok(streams) = streams.trim().parse::<usize>() else {
            let _ = writeln!(
                std::io::stderr(),
                "reliability-server: {}: not a number: {streams:?}",
                modelctx_reliability::server::STREAMS_PER_CLIENT_VAR
            );
            std::process::exit(2);
        };
        // One client holding that many streams needs the whole budget as its share too.
        let limits = SubscriptionLimits::default();
        let budget = limits.max_held_bytes;
        server = server.subscription_limits(
            limits
                .max_streams_per_client(streams)
                .max_held_bytes_per_client(budget),
        );
    }
    if let Some(url) = &bus {
        server = server.bus(RedisBus::connect(url, "mcp-fleet").await?);
    }
    let server = server.build()?;
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let echo = Tool::new(
        "echo",
        serde_json::from_value(schema).map_err(|e| e.to_string())?,
    );
    server.add_tool(echo, |_ctx, params: CallToolRequestParams| async move {
        // Moved out, not copied: the hostile suite measures the SDK's copies of a huge message.
        let text = match params.arguments.and_then(|mut a| a.remove("text")) {
            Some(serde_json::Value::String(text)) => text,
            _ => String::new(),
        };
        CallToolResult::text(text)
    })?;
    let touch = Tool::new(
        "touch",
        serde_json::from_value(
            json!({"type": "object", "properties": {"uri": {"type": "string"}},
            "required": ["uri"]}),
        )
        .map_err(|e| e.to_string())?,
    );
    server.add_tool(
        touch,
        |ctx: RequestContext, params: CallToolRequestParams| async move {
            let uri = params
                .arguments
                .and_then(|mut a| a.remove("uri"))
                .and_then(|u| u.as_str().map(str::to_owned))
                .unwrap_or_default();
            ctx.server().notify(Change::ResourceUpdated(uri.clone()));
            CallToolResult::text(format!("touched {uri}"))
        },
    )?;
    // Whether this process's own stdin and stdout are in non-blocking mode: serving stdio must
    // not switch the descriptions it shares with its parent and children.
    server.add_tool(
        Tool::new("stdio_modes", Tool::empty_input_schema()),
        |_ctx, _params: CallToolRequestParams| async move {
            let nonblocking = |fd: std::os::fd::BorrowedFd<'_>| {
                rustix::fs::fcntl_getfl(fd)
                    .map(|flags| flags.contains(rustix::fs::OFlags::NONBLOCK).to_string())
                    .unwrap_or_else(|error| error.to_string())
            };
            use std::os::fd::AsFd as _;
            CallToolResult::text(format!(
                "stdin nonblocking: {}, stdout nonblocking: {}",
                nonblocking(std::io::stdin().as_fd()),
                nonblocking(std::io::stdout().as_fd())
            ))
        },
    )?;
    if std::env::args().any(|a| a == "--stdio") {
        server.serve_stdio().await?;
        return Ok(());
    }
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port.parse()?,
        Err(_) => 0,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let shutdown = async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    };
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening http://127.0.0.1:{port}/mcp")?;
        stdout.flush()?;
    }
    server
        .serve_http_on(listener, HttpConfig::default(), shutdown)
        .await?;
    Ok(())
}
