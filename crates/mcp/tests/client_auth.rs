//! The OAuth client end to end: our `Client` against our `ResourceServer`-protected server and
//! the local authorization server of `mcp-conformance` (included below), all on 127.0.0.1.
//! Sign-in in both eras, stored and refreshed tokens, scope step-up and its limit, the loopback
//! redirect, pre-registered and metadata-document clients, and the refusals: wrong or missing
//! `iss`, wrong `state`, a resource that is not this server, an authorization server without
//! PKCE or with a mismatched issuer, a new authorization server (re-registration). And what a
//! hostile MCP or authorization server cannot do: obtain credentials issued by another
//! authorization server, or make the client request other hosts (a logger that must receive
//! nothing stands for the user's internal network).

// The authorization server of the `test-auth-server` binary, compiled into this test.
#[path = "../../mcp-conformance/src/auth_server.rs"]
#[allow(dead_code, unreachable_pub)]
mod auth_server;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use auth_server::{AuthServer, AuthServerConfig, IssMode};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp::client::auth::{
    AuthError, AuthorizationHandler, ClientRegistration, InMemoryTokenStore, IssuerBinding,
    LoopbackRedirect, OAuthConfig, RedirectFetcher, TokenStore, handler_fn,
};
use mcp::client::{Client, ClientError, Mode};
use mcp::server::auth::{AccessToken, JwksSource, JwtVerifier, ResourceServer};
use mcp::server::http::HttpConfig;
use mcp::server::{RequestContext, Server};
use mcp::types::*;
use serde_json::{Value, json};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// What the MCP endpoint saw.
#[derive(Default)]
struct Seen {
    requests: AtomicU32,
    with_bearer: AtomicU32,
    token_in_query: AtomicU32,
}

/// An MCP server on 127.0.0.1 protected by `ResourceServer` (tokens of `issuer`, JWKS fetched
/// from it); `tools/call` additionally needs `step_up` when set (a 403 challenge otherwise).
struct Protected {
    url: String,
    seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Protected {
    async fn start(
        issuer: &str,
        jwks: &str,
        require: &[&str],
        step_up: Option<&'static str>,
    ) -> Self {
        Self::start_on(0, issuer, jwks, None, require, step_up).await
    }

    async fn start_on(
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
    async fn restart_on(port: u16, issuer: &str, jwks: &str) -> Self {
        Self::start_on(port, issuer, jwks, None, &["mcp:tools"], None).await
    }

    /// Stops and waits until the port is free.
    async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    fn port(&self) -> u16 {
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
fn serve(
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
fn with_service_client(mut config: AuthServerConfig) -> AuthServerConfig {
    config.clients.insert(
        "svc".to_owned(),
        (Some("svc-secret".to_owned()), Vec::new()),
    );
    config
}

fn service_client() -> ClientRegistration {
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
fn server() -> Server {
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

fn fetcher() -> RedirectFetcher {
    RedirectFetcher::new(REDIRECT)
}

async fn connect(url: &str, config: OAuthConfig) -> Result<Client, ClientError> {
    Client::builder().oauth(config).connect_http(url).await
}

async fn whoami(client: &Client) -> String {
    client
        .call_tool("whoami", json!({}))
        .await
        .unwrap()
        .first_text()
        .unwrap_or_default()
        .to_owned()
}

fn auth_error(result: Result<Client, ClientError>) -> AuthError {
    match result {
        Err(ClientError::Auth(error)) => error,
        Err(other) => panic!("expected an authorization error, got {other}"),
        Ok(_) => panic!("expected an authorization error, the client connected"),
    }
}

#[tokio::test]
async fn signs_in_on_401_in_both_eras() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let store = Arc::new(InMemoryTokenStore::new());

    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher())
            .client_name("tests")
            .shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    assert_eq!(client.protocol_version().as_ref(), "2026-07-28");
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");

    let stats = auth.stats();
    assert_eq!(stats.registrations, 1);
    assert_eq!(stats.last_application_type.as_deref(), Some("native"));
    assert_eq!(stats.authorization_requests, 1);
    assert_eq!(stats.code_exchanges, 1);
    // The challenge's scope, plus offline_access because the AS lists it.
    assert_eq!(
        stats.last_scope.as_deref(),
        Some("mcp:tools offline_access")
    );
    assert_eq!(stats.last_resource.as_deref(), Some(rs.url.as_str()));
    let tokens = store.load_tokens(&rs.url).await.unwrap().unwrap();
    assert_eq!(tokens.issuer, auth.issuer());
    assert_eq!(tokens.resource, rs.url);
    assert!(tokens.refresh_token.is_some());
    let registration = store.load_client(auth.issuer()).await.unwrap().unwrap();
    assert_eq!(registration.redirect_uris, [REDIRECT]);
    // Every request after the first carried the token, in the header only.
    assert_eq!(rs.seen.token_in_query.load(Ordering::SeqCst), 0);
    assert_eq!(
        rs.seen.with_bearer.load(Ordering::SeqCst) + 1,
        rs.seen.requests.load(Ordering::SeqCst)
    );
    client.close().await.unwrap();

    // The handshake era: `initialize` is refused first; the stored token is reused by a new
    // client without asking the user again.
    let legacy = Client::builder()
        .mode(Mode::Legacy)
        .oauth(OAuthConfig::new(fetcher()).shared_token_store(store.clone()))
        .connect_http(&rs.url)
        .await
        .unwrap();
    assert_eq!(legacy.protocol_version().as_ref(), "2025-11-25");
    assert_eq!(whoami(&legacy).await, "alice mcp:tools,offline_access");
    assert_eq!(auth.stats().authorization_requests, 1);
    legacy.close().await.unwrap();

    // A new store: a new sign-in, in the handshake era from the start.
    let fresh = Client::builder()
        .mode(Mode::Legacy)
        .oauth(OAuthConfig::new(fetcher()))
        .connect_http(&rs.url)
        .await
        .unwrap();
    assert_eq!(whoami(&fresh).await, "alice mcp:tools,offline_access");
    assert_eq!(auth.stats().authorization_requests, 2);
    assert_eq!(auth.stats().registrations, 2);
    fresh.close().await.unwrap();
}

#[tokio::test]
async fn refreshes_tokens_before_they_expire() {
    let auth = AuthServer::start(
        AuthServerConfig {
            access_token_ttl: 120,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    // Every token "expires" within the margin: each request refreshes first.
    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher()).refresh_margin(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    let stats = auth.stats();
    assert_eq!(stats.authorization_requests, 1);
    assert!(stats.refreshes >= 2, "{stats:?}");

    // A refused refresh (revoked) drops the tokens; the server's 401 starts a new sign-in.
    auth.revoke_refresh_tokens();
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    assert_eq!(auth.stats().authorization_requests, 2);
    client.close().await.unwrap();
}

#[tokio::test]
async fn steps_up_with_the_union_of_scopes() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(
        auth.issuer(),
        &auth.jwks_url(),
        &["mcp:tools"],
        Some("mcp:write"),
    )
    .await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(auth.stats().authorization_requests, 1);
    assert_eq!(
        whoami(&client).await,
        "alice mcp:tools,offline_access,mcp:write"
    );
    let stats = auth.stats();
    assert_eq!(stats.authorization_requests, 2);
    assert_eq!(
        stats.last_scope.as_deref(),
        Some("mcp:tools offline_access mcp:write")
    );
    // The step-up reused the registration.
    assert_eq!(stats.registrations, 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn step_up_stops_when_it_cannot_help() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    // The layer wants a scope the authorization server will not put in tokens ("mcp:admin"
    // is not among its scopes: the authorization is refused), so step-up fails; a scope
    // already granted is not asked for again.
    let rs = Protected::start(
        auth.issuer(),
        &auth.jwks_url(),
        &["mcp:tools"],
        Some("mcp:admin"),
    )
    .await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    let error = client.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::Denied { error, .. }) if error == "invalid_scope"),
        "{error}"
    );
    assert_eq!(auth.stats().authorization_requests, 2);

    // With max_step_ups(0) the 403 is final at once.
    let strict = connect(&rs.url, OAuthConfig::new(fetcher()).max_step_ups(0))
        .await
        .unwrap();
    let before = auth.stats().authorization_requests;
    let error = strict.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::InsufficientScope { scope }) if scope == "mcp:admin"),
        "{error}"
    );
    assert_eq!(auth.stats().authorization_requests, before);
    client.close().await.unwrap();
    strict.close().await.unwrap();
}

#[tokio::test]
async fn a_granted_scope_is_not_asked_for_again() {
    // The server keeps challenging for mcp:write even once the token has it.
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(
        auth.issuer(),
        &auth.jwks_url(),
        &["mcp:tools"],
        Some("!mcp:write"),
    )
    .await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    let error = client.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::InsufficientScope { scope }) if scope == "mcp:write"),
        "{error}"
    );
    // The sign-in, and one step-up that obtained mcp:write: no third authorization.
    assert_eq!(auth.stats().authorization_requests, 2);
    assert_eq!(
        auth.stats().last_scope.as_deref(),
        Some("mcp:tools offline_access mcp:write")
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn refuses_a_wrong_or_missing_iss() {
    for (mode, found) in [
        (IssMode::Wrong, Some("https://evil.example.com")),
        (IssMode::Omit, None),
    ] {
        let auth = AuthServer::start(
            AuthServerConfig {
                iss_in_redirect: mode,
                ..AuthServerConfig::default()
            },
            0,
        )
        .await
        .unwrap();
        let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
        let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
        match error {
            AuthError::ResponseIssuer {
                expected,
                found: got,
            } => {
                assert_eq!(expected, auth.issuer());
                assert_eq!(got.as_deref(), found);
            }
            other => panic!("{other}"),
        }
        let stats = auth.stats();
        assert_eq!(stats.authorization_requests, 1);
        assert_eq!(stats.code_exchanges, 0, "the code must not be exchanged");
    }
}

#[tokio::test]
async fn accepts_a_missing_iss_when_not_advertised() {
    let auth = AuthServer::start(
        AuthServerConfig {
            iss_in_redirect: IssMode::Omit,
            advertise_iss: false,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn refuses_a_wrong_state() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let inner = Arc::new(fetcher());
    let tampering = handler_fn(REDIRECT, move |request| {
        let inner = Arc::clone(&inner);
        async move {
            let mut response = inner.authorize(request).await?;
            response.state = Some("forged".to_owned());
            Ok(response)
        }
    });
    let error = auth_error(connect(&rs.url, OAuthConfig::new(tampering)).await);
    assert!(matches!(error, AuthError::StateMismatch), "{error}");
    assert_eq!(auth.stats().code_exchanges, 0);
}

#[tokio::test]
async fn refuses_metadata_for_another_resource() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start_on(
        0,
        auth.issuer(),
        &auth.jwks_url(),
        Some("http://127.0.0.1:1/mcp"),
        &["mcp:tools"],
        None,
    )
    .await;
    // The challenge points at the other resource's origin (nothing listens there); the
    // well-known location of this server serves metadata naming the other resource.
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::ResourceMismatch { resource, .. } if resource == "http://127.0.0.1:1/mcp"),
        "{error}"
    );
    let stats = auth.stats();
    assert_eq!(
        stats.metadata_requests, 0,
        "no authorization server was contacted"
    );
    assert_eq!(stats.authorization_requests, 0);
}

#[tokio::test]
async fn refuses_servers_without_pkce_or_with_a_mismatched_issuer() {
    let auth = AuthServer::start(
        AuthServerConfig {
            advertise_pkce: false,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(error, AuthError::PkceUnsupported { .. }),
        "{error}"
    );
    assert_eq!(auth.stats().authorization_requests, 0);
    assert_eq!(auth.stats().registrations, 0);

    let auth = AuthServer::start(
        AuthServerConfig {
            metadata_issuer: Some("https://attacker.example.com".to_owned()),
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::IssuerMismatch { found, .. } if found == "https://attacker.example.com"),
        "{error}"
    );
    assert_eq!(auth.stats().registrations, 0);
    assert_eq!(auth.stats().authorization_requests, 0);
}

#[tokio::test]
async fn pre_registered_and_metadata_document_clients() {
    // A confidential pre-registered client, no dynamic registration offered.
    let mut config = AuthServerConfig {
        registration: false,
        ..AuthServerConfig::default()
    };
    config
        .clients
        .insert("cli".to_owned(), (Some("s3cret".to_owned()), Vec::new()));
    let cimd = "https://app.example.com/oauth/client.json";
    config.metadata_documents.insert(
        cimd.to_owned(),
        json!({"client_id": cimd, "client_name": "app", "redirect_uris": [REDIRECT]}),
    );
    let auth = AuthServer::start(config, 0).await.unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;

    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher()).pre_registered_for(
            auth.issuer(),
            ClientRegistration::new("cli").with_secret("s3cret"),
        ),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    assert_eq!(auth.stats().last_client_id.as_deref(), Some("cli"));
    client.close().await.unwrap();

    // Credentials registered with another issuer are not presented here: the client falls
    // back to its metadata document.
    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher())
            .pre_registered_for(
                "https://elsewhere.example.com",
                ClientRegistration::new("cli"),
            )
            .client_metadata_url(cimd),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    assert_eq!(auth.stats().last_client_id.as_deref(), Some(cimd));
    assert_eq!(auth.stats().registrations, 0);
    client.close().await.unwrap();

    // Nothing usable: a registration error before any authorization request.
    let before = auth.stats().authorization_requests;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(matches!(error, AuthError::Registration(_)), "{error}");
    assert_eq!(auth.stats().authorization_requests, before);
}

#[tokio::test]
async fn re_registers_when_the_authorization_server_changes() {
    let first = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let second = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(InMemoryTokenStore::new());

    let rs = Protected::start(first.issuer(), &first.jwks_url(), &["mcp:tools"], None).await;
    let port = rs.port();
    let url = rs.url.clone();
    let client = connect(
        &url,
        OAuthConfig::new(fetcher()).shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    client.close().await.unwrap();
    let first_client = first.stats().last_client_id.unwrap();
    rs.shutdown().await;

    // Same URL, now trusting the second authorization server only.
    let rs = Protected::restart_on(port, second.issuer(), &second.jwks_url()).await;
    let client = connect(
        &url,
        OAuthConfig::new(fetcher()).shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    let stats = second.stats();
    assert_eq!(
        stats.registrations, 1,
        "registered again with the new server"
    );
    assert_ne!(stats.last_client_id.as_deref(), Some(first_client.as_str()));
    assert_eq!(first.stats().authorization_requests, 1);
    // Registrations are kept per issuer.
    assert_eq!(
        store
            .load_client(first.issuer())
            .await
            .unwrap()
            .unwrap()
            .client_id,
        first_client
    );
    assert!(store.load_client(second.issuer()).await.unwrap().is_some());
    assert_eq!(
        store.load_tokens(&url).await.unwrap().unwrap().issuer,
        second.issuer()
    );
    client.close().await.unwrap();
    drop(rs);
}

#[tokio::test]
async fn loopback_redirect_signs_in_through_a_browser() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let opened = Arc::new(Mutex::new(Vec::new()));
    let redirect = {
        let opened = Arc::clone(&opened);
        LoopbackRedirect::bind(move |url| {
            opened.lock().unwrap().push(url.to_string());
            // The "browser": follows the authorization server's redirect to the listener.
            let url = url.clone();
            tokio::spawn(async move {
                let page = reqwest::get(url).await.unwrap().text().await.unwrap();
                assert!(page.contains("Signed in"), "{page}");
            });
            Ok(())
        })
        .await
        .unwrap()
    };
    let redirect_uri = redirect.redirect_uri().to_owned();
    let client = connect(&rs.url, OAuthConfig::new(redirect)).await.unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    let opened = opened.lock().unwrap().clone();
    assert_eq!(opened.len(), 1);
    let authorization = reqwest::Url::parse(&opened[0]).unwrap();
    let params: std::collections::HashMap<_, _> =
        authorization.query_pairs().into_owned().collect();
    assert_eq!(params["redirect_uri"], redirect_uri);
    assert_eq!(params["code_challenge_method"], "S256");
    assert_eq!(params["resource"], rs.url);
    assert_eq!(params["response_type"], "code");
    assert!(params["state"].len() >= 43);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_without_auth_is_unaffected() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server()
            .serve_http_on(listener, HttpConfig::default(), async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    let client = connect(&url, OAuthConfig::new(fetcher())).await.unwrap();
    assert_eq!(whoami(&client).await, " ");
    client.close().await.unwrap();
    drop(stop);
}

#[tokio::test]
async fn the_users_time_does_not_count_against_time_bounds() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let inner = Arc::new(fetcher());
    // The "user" takes longer than the probe and request bounds.
    let slow_user = handler_fn(REDIRECT, move |request| {
        let inner = Arc::clone(&inner);
        async move {
            tokio::time::sleep(Duration::from_millis(1200)).await;
            inner.authorize(request).await
        }
    });
    let client = Client::builder()
        .probe_timeout(Duration::from_millis(500))
        .request_timeout(Duration::from_millis(500))
        .oauth(OAuthConfig::new(slow_user))
        .connect_http(&rs.url)
        .await
        .unwrap();
    // The probe was not taken for a handshake-era server's silence.
    assert_eq!(client.protocol_version().as_ref(), "2026-07-28");
    assert_eq!(auth.stats().authorization_requests, 1);
    assert!(whoami(&client).await.starts_with("alice"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn client_credentials_sign_in_as_the_client() {
    let auth = AuthServer::start(with_service_client(AuthServerConfig::default()), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let client = connect(
        &rs.url,
        OAuthConfig::client_credentials(auth.issuer(), service_client()),
    )
    .await
    .unwrap();
    // No offline_access for a machine client: just the challenged scope.
    assert_eq!(whoami(&client).await, "alice mcp:tools");
    let stats = auth.stats();
    assert_eq!(stats.client_credentials, 1);
    assert_eq!(stats.authorization_requests, 0);
    assert_eq!(stats.registrations, 0);
    client.close().await.unwrap();

    // A wrong secret: the token endpoint's refusal is the error.
    let error = auth_error(
        connect(
            &rs.url,
            OAuthConfig::client_credentials(
                auth.issuer(),
                ClientRegistration::new("svc").with_secret("wrong"),
            ),
        )
        .await,
    );
    assert!(
        matches!(&error, AuthError::Token { status: 401, error: Some(code), .. } if code == "invalid_client"),
        "{error}"
    );
}

/// A host the client must not contact: answers every request with a 404, counting it first
/// (so a client that got an answer was counted).
struct Logger {
    url: String,
    hits: Arc<AtomicU32>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Logger {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let hits = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&hits);
        let router = axum::Router::new().fallback(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { StatusCode::NOT_FOUND }
        });
        let (stop, _) = serve(listener, router);
        Self {
            url,
            hits,
            _stop: stop,
        }
    }

    fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    fn hits(&self) -> u32 {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A hostile MCP server at `http://HOST:<port>/mcp` (bound to 127.0.0.1): every request to
/// `/mcp` is refused with a 401 whose challenge names `challenge_metadata`, when given; its
/// well-known location names `issuer` as the authorization server, when given.
async fn hostile_mcp(
    host: &str,
    challenge_metadata: Option<String>,
    issuer: Option<String>,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{host}:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let challenge = match challenge_metadata {
        Some(target) => format!("Bearer resource_metadata=\"{target}\""),
        None => "Bearer".to_owned(),
    };
    let metadata = issuer.map(|issuer| json!({"resource": url, "authorization_servers": [issuer]}));
    let router = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::any(move || {
                let challenge = challenge.clone();
                async move { (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]) }
            }),
        )
        .fallback(move || {
            let metadata = metadata.clone();
            async move {
                match metadata {
                    Some(document) => axum::Json(document).into_response(),
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            }
        });
    let (stop, _) = serve(listener, router);
    (url, stop)
}

/// Issue 17, item 1: credentials pre-registered with one authorization server are never sent
/// to another, whatever the MCP server names. A hostile MCP server names its own (hostile)
/// authorization server: the client refuses at once, and that server receives nothing — no
/// metadata request, no token request with `Authorization: Basic svc:svc-secret`.
#[tokio::test]
async fn credentials_go_to_their_issuer_only() {
    let legit = AuthServer::start(with_service_client(AuthServerConfig::default()), 0)
        .await
        .unwrap();
    let hostile = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    // The resource server checks tokens with the legitimate keys, so that only the client
    // could ever contact the hostile authorization server.
    let rs = Protected::start(hostile.issuer(), &legit.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(
        connect(
            &rs.url,
            OAuthConfig::client_credentials(legit.issuer(), service_client()),
        )
        .await,
    );
    match &error {
        AuthError::IssuerNotAllowed { expected, named } => {
            assert_eq!(expected, legit.issuer());
            assert_eq!(named, &[hostile.issuer().to_owned()]);
        }
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains(legit.issuer()), "{error}");
    let assertion = |_request| async { Ok::<_, AuthError>("id-jag".to_owned()) };
    let error = auth_error(
        connect(
            &rs.url,
            OAuthConfig::identity_assertion(legit.issuer(), service_client(), assertion),
        )
        .await,
    );
    assert!(
        matches!(error, AuthError::IssuerNotAllowed { .. }),
        "{error}"
    );
    // A sign-in bound with OAuthConfig::issuer refuses the same way.
    let error =
        auth_error(connect(&rs.url, OAuthConfig::new(fetcher()).issuer(legit.issuer())).await);
    assert!(
        matches!(error, AuthError::IssuerNotAllowed { .. }),
        "{error}"
    );
    assert_eq!(hostile.stats().requests, 0, "{:?}", hostile.stats());

    // Bound to the first authorization server discovered: the server cannot move the client
    // to another one later.
    let port = rs.port();
    rs.shutdown().await;
    let rs = Protected::restart_on(port, legit.issuer(), &legit.jwks_url()).await;
    let client = connect(
        &rs.url,
        OAuthConfig::client_credentials(IssuerBinding::FirstDiscovered, service_client()),
    )
    .await
    .unwrap();
    assert_eq!(whoami(&client).await, "alice mcp:tools");
    assert_eq!(legit.stats().client_credentials, 1);
    rs.shutdown().await;
    let _rs = Protected::restart_on(port, hostile.issuer(), &legit.jwks_url()).await;
    let error = client.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::IssuerNotAllowed { expected, .. }) if expected == legit.issuer()),
        "{error}"
    );
    assert_eq!(hostile.stats().requests, 0, "{:?}", hostile.stats());
}

/// Issue 17, item 3: the `resource_metadata` URL of a 401 challenge on another origin is not
/// fetched (RFC 9728 metadata lives on the resource's origin); with the opt-in only `https`
/// URLs at public addresses are. The logger on another port stands for an internal service.
#[tokio::test]
async fn a_challenge_cannot_send_the_client_elsewhere() {
    let logger = Logger::start().await;
    let cases = [
        (format!("{}/latest/meta-data", logger.url), false),
        (format!("{}/latest/meta-data", logger.url), true),
        (
            format!("https://127.0.0.1:{}/latest/meta-data", logger.port()),
            true,
        ),
        (
            format!("https://localhost:{}/latest/meta-data", logger.port()),
            true,
        ),
    ];
    for (target, opt_in) in cases {
        let (url, _stop) = hostile_mcp("127.0.0.1", Some(target.clone()), None).await;
        let config = OAuthConfig::new(fetcher()).cross_origin_resource_metadata(opt_in);
        let error = auth_error(connect(&url, config).await);
        assert!(
            matches!(&error, AuthError::ForbiddenUrl { url, .. } if url.contains(&logger.port().to_string())),
            "{target} ({opt_in}): {error}"
        );
    }
    assert_eq!(logger.hits(), 0);
}

/// Issue 17, item 3: an authorization server the MCP server names on another host must have
/// public addresses; the user can vouch for one elsewhere with OAuthConfig::issuer (then it is
/// contacted: the logger does count).
#[tokio::test]
async fn the_server_cannot_name_an_internal_authorization_server() {
    let logger = Logger::start().await;
    // The MCP server is `localhost`; the authorization server it names is 127.0.0.1, another
    // host, and not a public address.
    let (url, _stop) = hostile_mcp("localhost", None, Some(logger.url.clone())).await;
    let error = auth_error(connect(&url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::ForbiddenUrl { url, .. } if url.starts_with(&logger.url)),
        "{error}"
    );
    assert_eq!(logger.hits(), 0);

    let error = auth_error(connect(&url, OAuthConfig::new(fetcher()).issuer(&logger.url)).await);
    assert!(matches!(error, AuthError::Discovery(_)), "{error}");
    assert!(logger.hits() > 0);
}

/// Issue 17, item 3: the endpoints an authorization server names are held to the same rule
/// (here `localhost`, which resolves to loopback only: refused when connecting, whatever the
/// name resolves to by then); only an authorization server the user named is trusted with
/// endpoints anywhere.
#[tokio::test]
async fn an_authorization_server_cannot_name_internal_endpoints() {
    let logger = Logger::start().await;
    let config = with_service_client(AuthServerConfig {
        endpoints_base: Some(format!("http://localhost:{}", logger.port())),
        ..AuthServerConfig::default()
    });
    let hostile = AuthServer::start(config, 0).await.unwrap();
    let rs = Protected::start(hostile.issuer(), &hostile.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::ForbiddenUrl { url, .. } if url.contains("/authorize")),
        "{error}"
    );
    let error = auth_error(
        connect(
            &rs.url,
            OAuthConfig::client_credentials(IssuerBinding::FirstDiscovered, service_client()),
        )
        .await,
    );
    assert!(
        matches!(&error, AuthError::ForbiddenUrl { url, .. } if url.contains("/token")),
        "{error}"
    );
    assert_eq!(logger.hits(), 0);
}

/// Issue 17, item 3: a headless sign-in follows redirects within the authorization server only.
#[tokio::test]
async fn redirect_fetcher_follows_no_redirect_elsewhere() {
    let logger = Logger::start().await;
    let hostile = AuthServer::start(
        AuthServerConfig {
            authorize_redirect: Some(format!("{}/steal", logger.url)),
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(hostile.issuer(), &hostile.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::Handler(message) if message.contains("not followed")),
        "{error}"
    );
    assert_eq!(logger.hits(), 0);
    assert_eq!(hostile.stats().authorization_requests, 1);
}
