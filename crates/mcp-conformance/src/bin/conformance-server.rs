//! The conformance fixture server: `PORT=3000 conformance-server` serves
//! `http://localhost:3000/mcp` on 127.0.0.1. `MCP_REQUEST_STATE_KEYS` (comma-separated secrets)
//! and `MCP_REQUEST_STATE_TTL` (seconds) configure request-state sealing. With `--stdio` it
//! serves the same fixtures on stdin/stdout instead.

use mcp::seal::RequestStateSecurity;
use mcp::server::http::HttpConfig;
use mcp_conformance::server::build;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let server = build(RequestStateSecurity::from_env()?)?;
    if std::env::args().any(|a| a == "--stdio") {
        server.serve_stdio().await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    tracing::info!(
        port,
        "conformance server listening on http://localhost:{port}/mcp"
    );
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server
        .serve_http_on(listener, HttpConfig::default(), shutdown)
        .await?;
    Ok(())
}
