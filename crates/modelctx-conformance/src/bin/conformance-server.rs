//! The conformance fixture server: `PORT=3000 conformance-server` serves
//! `http://localhost:3000/mcp` on 127.0.0.1. `MCP_REQUEST_STATE_KEYS` (comma-separated secrets)
//! and `MCP_REQUEST_STATE_TTL` (seconds) configure request-state sealing. With `--stdio` it
//! serves the same fixtures on stdin/stdout instead.

use modelctx::seal::RequestStateSecurity;
use modelctx::server::http::HttpConfig;
use modelctx_conformance::server::build;

/// `PORT` and the sealing policy of the environment. A setting that is present but unusable is
/// an error, never a silent fallback (to port 3000, or to a per-process key).
fn settings() -> Result<(u16, Option<RequestStateSecurity>), String> {
    let port = match std::env::var("PORT") {
        Ok(port) => port
            .trim()
            .parse()
            .map_err(|e| format!("PORT={port}: {e}"))?,
        Err(std::env::VarError::NotPresent) => 3000,
        Err(e) => return Err(format!("PORT: {e}")),
    };
    let policy = RequestStateSecurity::from_env()
        .map_err(|e| format!("MCP_REQUEST_STATE_KEYS / _TTL: {e}"))?;
    Ok((port, policy))
}

// A configuration error is for the operator, on stderr.
#[allow(clippy::print_stderr)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let (port, policy) = match settings() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("conformance-server: {error}");
            std::process::exit(2);
        }
    };
    let server = build(policy)?;
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
