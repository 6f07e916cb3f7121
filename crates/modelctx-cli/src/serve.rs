//! `mcp serve demo`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use modelctx::seal::RequestStateSecurity;
use modelctx::server::auth::{Dpop, JwksSource, JwtVerifier, ResourceServer};
use modelctx::server::bus::RedisBus;
use modelctx::server::http::{HttpConfig, SseConfig};
use modelctx::server::tasks::{MemoryTaskStore, SqliteTaskStore, TaskStore};
use modelctx::server::{DEFAULT_SHUTDOWN_GRACE, StdioConfig, shutdown_signal};
use serde_json::Value;

use crate::cli::{DemoArgs, DpopPolicyArg, ProtocolArg};
use crate::demo::server_with_tasks;
use crate::error::{CliError, Result};
use crate::telemetry::Exporting;

/// Serves the demo server on stdio, or on HTTP with `--http ADDR` (behind OAuth with
/// `--auth-issuer`), until SIGTERM or SIGINT (or stdin's end on stdio), then drains: listen
/// streams end with their closing result, the requests in flight have `--shutdown-grace` to
/// answer, and the caller flushes the telemetry; exit 0.
pub(crate) async fn demo(args: DemoArgs, exporting: Option<&Exporting>) -> Result<ExitCode> {
    // First: from here on SIGTERM and SIGINT start the drain instead of killing the process.
    let signal = shutdown_signal()
        .map_err(|e| CliError::failed(format!("cannot handle SIGTERM and SIGINT: {e}")))?;
    let grace = args.shutdown_grace.unwrap_or(DEFAULT_SHUTDOWN_GRACE);
    let shutdown = async move {
        signal.await;
        // Printed when the server sees the signal: from here on it takes no new requests.
        eprintln!(
            "stopping: no new requests are taken; those in flight have {} to answer",
            humantime::format_duration(grace)
        );
    };
    // Unset means warn; set but unreadable is a mistake to report, not to ignore.
    let filter = match std::env::var_os("MCP_LOG") {
        None => tracing_subscriber::EnvFilter::new("warn"),
        Some(_) => tracing_subscriber::EnvFilter::try_from_env("MCP_LOG")
            .map_err(|e| CliError::usage(format!("MCP_LOG: {e}")))?,
    };
    match exporting {
        None => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .try_init();
        }
        Some(exporting) => {
            // Per-layer filters: MCP_LOG chooses what is printed, not what is exported.
            use tracing_subscriber::Layer as _;
            use tracing_subscriber::layer::SubscriberExt as _;
            use tracing_subscriber::util::SubscriberInitExt as _;
            let _ = tracing_subscriber::registry()
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::io::stderr)
                        .with_filter(filter),
                )
                .with(exporting.layer())
                .try_init();
        }
    }
    // A configuration mistake, reported as such (exit 2), never a panic or a silent fallback
    // to a per-process key.
    let security = RequestStateSecurity::from_env()
        .map_err(|e| CliError::usage(format!("MCP_REQUEST_STATE_KEYS / _TTL: {e}")))?;
    let store: Arc<dyn TaskStore> = match &args.tasks_db {
        Some(path) => Arc::new(
            SqliteTaskStore::open(path)
                .map_err(|e| CliError::failed(format!("--tasks-db {}: {e}", path.display())))?,
        ),
        None => Arc::new(MemoryTaskStore::new()),
    };
    let bus = match &args.bus {
        Some(url) => Some(
            RedisBus::connect(url, &args.bus_prefix)
                .await
                .map_err(|e| CliError::failed(format!("--bus {url}: {e}")))?,
        ),
        None => None,
    };
    let server = server_with_tasks(security, store, bus, args.protocol.map(ProtocolArg::era))
        .map_err(|e| CliError::failed(e.to_string()))?;
    if args.sse && args.protocol == Some(ProtocolArg::Modern) {
        return Err(CliError::usage(
            "--sse serves the 2024-11-05 transport, which a 2026-07-28-only server does not speak",
        ));
    }
    let Some(addr) = args.http else {
        let mut config = StdioConfig::default();
        config.shutdown_grace = grace;
        server.serve_stdio_until(config, shutdown).await?;
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
    let config = HttpConfig::default().shutdown_grace(grace);
    let mut config = if args.allow_remote {
        config.allow_any_host()
    } else {
        config
    };
    // In addition to the loopback pages, never instead of the check.
    config
        .allowed_origins
        .get_or_insert_default()
        .extend(args.allowed_origins.iter().cloned());
    if let Some(issuer) = &args.auth_issuer {
        let issuer = issuer.trim_end_matches('/').to_owned();
        let resource = args
            .auth_resource
            .clone()
            .unwrap_or_else(|| format!("http://{bound}/mcp"));
        let jwks = match &args.auth_jwks {
            Some(url) => url.clone(),
            None => discover_jwks(&issuer).await?,
        };
        let verifier = JwtVerifier::new(&issuer, &resource, JwksSource::Url(jwks));
        let mut resource_server = ResourceServer::new(&resource, verifier)
            .authorization_server(&issuer)
            .require_scopes(args.auth_scopes.iter().cloned())
            .resource_name("mcp demo server");
        if let Some(mode) = args.auth_dpop {
            let mut dpop = match mode {
                DpopPolicyArg::Allowed => Dpop::allowed(),
                DpopPolicyArg::Required => Dpop::required(),
            };
            if args.auth_dpop_nonce {
                dpop = dpop.require_nonce(Duration::from_secs(300));
            }
            resource_server = resource_server.dpop(dpop);
        }
        eprintln!("tokens of {issuer} required for {resource}");
        config = config.auth(resource_server);
    }
    eprintln!("listening on http://{bound}/mcp");
    if args.sse {
        config = config.sse(SseConfig::default());
        eprintln!("HTTP+SSE (2024-11-05) on http://{bound}/sse");
    }
    server.serve_http_on(listener, config, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// The `jwks_uri` of `issuer`'s metadata: RFC 8414, then OpenID Connect discovery (path
/// insertion, then appending for an issuer with a path). The document's `issuer` must be
/// `issuer`.
async fn discover_jwks(issuer: &str) -> Result<String> {
    let (origin, path) = match issuer.find("://").map(|i| i + 3) {
        Some(start) => match issuer[start..].find('/') {
            Some(slash) => issuer.split_at(start + slash),
            None => (issuer, ""),
        },
        None => {
            return Err(CliError::usage(format!(
                "--auth-issuer {issuer:?}: expected an http(s) URL"
            )));
        }
    };
    let mut candidates = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
    ];
    if !path.is_empty() {
        candidates.push(format!("{issuer}/.well-known/openid-configuration"));
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| CliError::failed(format!("HTTP client: {e}")))?;
    let mut tried = Vec::new();
    for url in candidates {
        let document = match http.get(&url).send().await {
            Ok(response) if response.status().is_success() => response
                .bytes()
                .await
                .ok()
                .and_then(|body| serde_json::from_slice::<Value>(&body).ok()),
            Ok(response) => {
                tried.push(format!("{url}: HTTP {}", response.status()));
                continue;
            }
            Err(error) => {
                tried.push(format!("{url}: {error}"));
                continue;
            }
        };
        let Some(document) = document else {
            tried.push(format!("{url}: not a JSON document"));
            continue;
        };
        if document["issuer"].as_str() != Some(issuer) {
            return Err(CliError::failed(format!(
                "{url} names issuer {} instead of {issuer}",
                document["issuer"]
            )));
        }
        return document["jwks_uri"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                CliError::failed(format!("{url} has no jwks_uri; pass --auth-jwks URL"))
            });
    }
    Err(CliError::failed(format!(
        "cannot discover the metadata of {issuer} ({}); pass --auth-jwks URL",
        tried.join("; ")
    )))
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
