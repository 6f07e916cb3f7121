//! The OAuth end-to-end tests' pieces (tests/client_auth.rs, tests/client_auth_hostile.rs): the
//! local authorization server of `modelctx-conformance` (included below), an MCP server on 127.0.0.1
//! protected by `ResourceServer`, and the client side's shorthands.

// The authorization server of the `test-auth-server` binary, compiled into the tests.
#[path = "../../../modelctx-conformance/src/auth_server.rs"]
pub mod auth_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use auth_server::AuthServerConfig;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx::client::auth::{AuthError, ClientRegistration, OAuthConfig, RedirectFetcher};
use modelctx::client::{Client, ClientError};
use modelctx::server::auth::{AccessToken, JwksSource, JwtVerifier, ResourceServer};
use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use serde_json::{Value, json};

/// The redirect URI the tests register; nothing listens there (the fetcher follows it).
pub const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// What the MCP endpoint saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Requests that reached the server.
    pub requests: AtomicU32,
    /// Requests with an `Authorization: Bearer` header.
    pub with_bearer: AtomicU32,
    /// Requests carrying a token in the query string (never allowed).
    pub token_in_query: AtomicU32,
}

/// An MCP server on 127.0.0.1 protected by `ResourceServer` (tokens of `issuer`, JWKS fetched
/// from it); `tools/call` additionally needs `step_up` when set (a 403 challenge otherwise).
#[derive(Debug)]
pub struct Protected {
    /// The protected MCP endpoint.
    pub url: String,
    /// What the server has been sent.
    pub seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Protected {
    /// Starts a protected server on a free port, trusting `issuer` and its `jwks`.
    pub async fn start(
        issuer: &str,
        jwks: &str,
        require: &[&str],
        step_up: Option<&'static str>,
    ) -> Self {
        Self::start_on(0, issuer, jwks, None, require, step_up).await
    }

    /// [`Protected::start`] on a given port (0: a free one).
    pub async fn start_on(
        port: u16,
        issuer: &str,
        jwks: &str,
        resource_override: Option<&str>,
        require: &[&str],
        step_up: Option<&'static str>,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let resource = resource_override.map_or_else(|| url.clone(), str::to_owned);
        let rs = ResourceServer::new(
            &resource,
            JwtVerifier::new(issuer, &resource, JwksSource::Url(jwks.to_owned())),
        )
        .authorization_server(issuer)
        .require_scopes(require.iter().copied());
        let metadata_url = rs.metadata_url();
        let seen = Arc::new(Seen::default());
        let observer = {
            let seen = Arc::clone(&seen);
            move |request: Request, next: Next| {
                let seen = Arc::clone(&seen);
                let metadata_url = metadata_url.clone();
                async move { observe(&seen, step_up, &metadata_url, request, next).await }
            }
        };
        let router = server()
            .http_router(HttpConfig::default().auth(rs))
            .layer(axum::middleware::from_fn(observer));
        let (stop, task) = serve(listener, router);
        Self {
            url,
            seen,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Starts again on `port` (after [`Self::shutdown`]), trusting `issuer` with `jwks`.
    pub async fn restart_on(port: u16, issuer: &str, jwks: &str) -> Self {
        Self::start_on(port, issuer, jwks, None, &["mcp:tools"], None).await
    }

    /// Stops and waits until the port is free.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap()
    }
}

impl Drop for Protected {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves `router` on `listener` until the sender is used or dropped.
pub fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (stop, task)
}

/// An authorization server that knows the confidential client `svc` (secret `svc-secret`).
pub fn with_service_client(mut config: AuthServerConfig) -> AuthServerConfig {
    config.clients.insert(
        "svc".to_owned(),
        (Some("svc-secret".to_owned()), Vec::new()),
    );
    config
}

/// The pre-registered confidential client of [`with_service_client`].
pub fn service_client() -> ClientRegistration {
    ClientRegistration::new("svc").with_secret("svc-secret")
}

/// Counts requests and where their token was; answers 403 `insufficient_scope` to a
/// `tools/call` whose token lacks `step_up`.
async fn observe(
    seen: &Seen,
    step_up: Option<&'static str>,
    metadata_url: &str,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() != "/mcp" {
        return next.run(request).await;
    }
    seen.requests.fetch_add(1, Ordering::SeqCst);
    if request
        .uri()
        .query()
        .is_some_and(|q| q.contains("access_token"))
    {
        seen.token_in_query.fetch_add(1, Ordering::SeqCst);
    }
    let bearer = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    if bearer.is_some() {
        seen.with_bearer.fetch_add(1, Ordering::SeqCst);
    }
    let is_call = request
        .headers()
        .get("mcp-method")
        .is_some_and(|m| m == "tools/call");
    if let (Some(needed), true, Some(token)) = (step_up, is_call, &bearer) {
        // `!scope`: challenge for it even when the token has it.
        let (needed, always) = match needed.strip_prefix('!') {
            Some(scope) => (scope, true),
            None => (needed, false),
        };
        // The signature is checked by the ResourceServer behind this layer; here only the
        // scope matters.
        let scopes = token
            .split('.')
            .nth(1)
            .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
            .and_then(|json| serde_json::from_slice::<Value>(&json).ok())
            .and_then(|claims| claims["scope"].as_str().map(str::to_owned))
            .unwrap_or_default();
        if always || !scopes.split_whitespace().any(|s| s == needed) {
            let challenge = format!(
                "Bearer error=\"insufficient_scope\", scope=\"{needed}\", resource_metadata=\"{metadata_url}\""
            );
            return (StatusCode::FORBIDDEN, [("www-authenticate", challenge)]).into_response();
        }
    }
    next.run(request).await
}

/// `whoami` answers with the validated token's subject and scopes.
pub fn server() -> Server {
    Server::builder("Protected", "1.0.0")
        .tool(
            Tool::new("whoami", Tool::empty_input_schema()),
            |ctx: RequestContext, _p: CallToolRequestParams| async move {
                let token = ctx
                    .http_parts()
                    .and_then(|parts| parts.extensions.get::<AccessToken>())
                    .cloned()
                    .unwrap_or_default();
                Outcome::Complete(CallToolResult::text(format!(
                    "{} {}",
                    token.subject.unwrap_or_default(),
                    token.scopes.join(",")
                )))
            },
        )
        .build()
        .unwrap()
}

/// A handler that follows the authorization redirect without a browser.
pub fn fetcher() -> RedirectFetcher {
    RedirectFetcher::new(REDIRECT)
}

/// Connects to `url` over streamable HTTP, signing in with `config`.
pub async fn connect(url: &str, config: OAuthConfig) -> Result<Client, ClientError> {
    Client::builder().oauth(config).connect_http(url).await
}

/// The subject the server saw, from its `whoami` tool.
pub async fn whoami(client: &Client) -> String {
    client
        .call_tool("whoami", json!({}))
        .await
        .unwrap()
        .first_text()
        .unwrap_or_default()
        .to_owned()
}

/// The authorization error of a connection that must fail; panics otherwise.
pub fn auth_error(result: Result<Client, ClientError>) -> AuthError {
    match result {
        Err(ClientError::Auth(error)) => error,
        Err(other) => panic!("expected an authorization error, got {other}"),
        Ok(_) => panic!("expected an authorization error, the client connected"),
    }
}
