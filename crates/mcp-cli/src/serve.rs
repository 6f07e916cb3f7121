//! `mcp serve demo`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use mcp::server::http::HttpConfig;

use crate::cli::DemoArgs;
use crate::demo::{Sealing, server};
use crate::error::{CliError, Result};

/// Serves the demo server on stdio, or on HTTP with `--http ADDR`.
pub(crate) async fn demo(args: DemoArgs) -> Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCP_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let server = server(&Sealing::from_env()).map_err(|e| CliError::failed(e.to_string()))?;
    let Some(addr) = args.http else {
        server.serve_stdio().await?;
        return Ok(ExitCode::SUCCESS);
    };
    let addr = parse_addr(&addr)?;
    if !addr.ip().is_loopback() && !args.allow_remote {
        return Err(CliError::usage(format!(
            "{addr} is not a loopback address; pass --allow-remote to serve other hosts"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let config = if args.allow_remote {
        HttpConfig::default().allow_any_host()
    } else {
        HttpConfig::default()
    };
    eprintln!("listening on http://{bound}/mcp");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server.serve_http_on(listener, config, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// `PORT` (on 127.0.0.1) or `IP:PORT`.
fn parse_addr(text: &str) -> Result<SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = text.strip_prefix("localhost:").and_then(|p| p.parse().ok()) {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse()
        .map_err(|_| CliError::usage(format!("--http {text:?}: expected PORT or IP:PORT")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_addr("localhost:8000").unwrap().to_string(),
            "127.0.0.1:8000"
        );
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_addr("nope").is_err());
    }
}
