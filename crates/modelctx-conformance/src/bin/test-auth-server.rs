//! A local OAuth 2.1 authorization server for tests and demos (see
//! `modelctx_conformance::auth_server`): approves every authorization request for one user at once,
//! issues ES256 JWT access tokens (audience = the `resource` indicator) verifiable with the
//! JWKS at `<issuer>/jwks`, refresh tokens, dynamic registration; with `--dpop`, DPoP-bound
//! tokens for token requests that carry a proof (`--dpop-nonce`: the proof must carry the
//! server's nonce). Binds 127.0.0.1 only.
//!
//! ```text
//! test-auth-server [--port N] [--user NAME] [--scopes "a b"] [--token-ttl SECS]
//!                  [--client ID[:SECRET]]... [--resource URL]... [--no-refresh-tokens]
//!                  [--dpop [--dpop-nonce]]
//! ```
//!
//! Prints `listening on http://127.0.0.1:<port>` (the issuer) on stdout once it accepts
//! connections, then serves until SIGINT or SIGTERM.

use std::io::Write as _;
use std::process::ExitCode;

use modelctx_conformance::auth_server::{AuthServer, AuthServerConfig};

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "test-auth-server: {line}");
}

fn usage() -> ExitCode {
    say(
        "usage: test-auth-server [--port N] [--user NAME] [--scopes \"a b\"] [--token-ttl SECS] \
         [--client ID[:SECRET]]... [--resource URL]... [--no-refresh-tokens] \
         [--dpop [--dpop-nonce]]",
    );
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut config = AuthServerConfig::default();
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next();
        match arg.as_str() {
            "--port" => match value().and_then(|v| v.parse().ok()) {
                Some(p) => port = p,
                None => return usage(),
            },
            "--user" => match value() {
                Some(user) => config.user = user,
                None => return usage(),
            },
            "--scopes" => match value() {
                Some(scopes) => {
                    config.scopes_supported =
                        scopes.split_whitespace().map(str::to_owned).collect();
                }
                None => return usage(),
            },
            "--token-ttl" => match value().and_then(|v| v.parse().ok()) {
                Some(ttl) => config.access_token_ttl = ttl,
                None => return usage(),
            },
            "--client" => match value() {
                Some(client) => {
                    let (id, secret) = match client.split_once(':') {
                        Some((id, secret)) => (id.to_owned(), Some(secret.to_owned())),
                        None => (client, None),
                    };
                    config.clients.insert(id, (secret, Vec::new()));
                }
                None => return usage(),
            },
            "--resource" => match value() {
                Some(resource) => config.resources.push(resource),
                None => return usage(),
            },
            "--no-refresh-tokens" => config.refresh_tokens = false,
            "--dpop" => config.dpop = true,
            "--dpop-nonce" => config.dpop_nonce = true,
            "-h" | "--help" => {
                usage();
                return ExitCode::SUCCESS;
            }
            _ => return usage(),
        }
    }
    let server = match AuthServer::start(config, port).await {
        Ok(server) => server,
        Err(error) => {
            say(&format!("cannot listen: {error}"));
            return ExitCode::FAILURE;
        }
    };
    // The readiness line: whoever started us reads the issuer from it.
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "listening on {}", server.issuer());
    let _ = stdout.flush();
    say(&format!("JWKS at {}", server.jwks_url()));
    wait_for_shutdown().await;
    drop(server);
    ExitCode::SUCCESS
}

async fn wait_for_shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
