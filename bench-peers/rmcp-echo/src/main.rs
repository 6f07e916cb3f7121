//! An echo server on rmcp 3.11, the bench peer of `mcp bench` (see `scripts/bench-peers.sh`).
//!
//! `rmcp-echo [--pipes]` serves stdio (`--pipes`: rmcp's non-blocking `stdio_pipes()`);
//! `rmcp-echo --http PORT [--addr-file PATH]` serves streamable HTTP
//! at `http://127.0.0.1:PORT/mcp` (port 0 picks one), prints `listening on <url>` to stderr,
//! writes `127.0.0.1:PORT` to PATH when asked (as the benches' servers do, for
//! `scripts/bench-callgrind.sh` and `load --addr-file`) and exits cleanly on SIGTERM / SIGINT
//! (callgrind writes its profile only on a clean exit).
//! One tool, `echo {text}`, returns `text`, as the mcp and Python bench servers do.

use std::sync::Arc;

use axum::serve::ListenerExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl Echo {
    fn new() -> Self {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let schema = match schema {
            serde_json::Value::Object(map) => map,
            _ => unreachable!(),
        };
        Self {
            tools: Arc::new(vec![Tool::new(
                "echo",
                "Return the given text unchanged.",
                schema,
            )]),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-echo", "3.11.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}", request.name),
                None,
            ));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(i) = args.iter().position(|a| a == "--http") else {
        // `--pipes`: rmcp's opt-in non-blocking `stdio_pipes()` instead of the default `stdio()`.
        let service = if args.iter().any(|a| a == "--pipes") {
            Echo::new()
                .serve(rmcp::transport::io::stdio_pipes())
                .await?
        } else {
            Echo::new().serve(rmcp::transport::stdio()).await?
        };
        service.waiting().await?;
        return Ok(());
    };
    let port = args.get(i + 1).map_or("0", String::as_str);
    // JSON responses for plain request/response calls, as the mcp server answers.
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Echo::new()), Default::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    let addr = listener.local_addr()?;
    // TCP_NODELAY, as the mcp server sets it: without it the handshake era's SSE responses
    // (headers and events written separately) stall ~40 ms on Nagle + delayed ACK, and the
    // figures would measure that instead of rmcp.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    eprintln!("listening on http://{addr}/mcp");
    if let Some(path) = args
        .iter()
        .position(|a| a == "--addr-file")
        .and_then(|i| args.get(i + 1))
    {
        let tmp = format!("{path}.tmp");
        std::fs::write(&tmp, addr.to_string())?;
        std::fs::rename(&tmp, path)?;
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

/// SIGTERM or SIGINT.
async fn shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
