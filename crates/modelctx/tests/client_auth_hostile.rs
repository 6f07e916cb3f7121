//! What a hostile MCP or authorization server cannot make the OAuth client do: obtain
//! credentials issued by another authorization server, or make the client request other hosts
//! (a logger that must receive nothing stands for the user's internal network). The pieces are
//! in `modelctx_test_support::client::auth`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use modelctx::client::ClientError;
use modelctx::client::auth::{AuthError, IssuerBinding, OAuthConfig};
use modelctx_test_support::client::auth::auth_server::{AuthServer, AuthServerConfig};
use modelctx_test_support::client::auth::{
    Protected, auth_error, connect, fetcher, serve, service_client, whoami, with_service_client,
};
use serde_json::json;

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

/// Credentials pre-registered with one authorization server are never sent
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

/// The `resource_metadata` URL of a 401 challenge on another origin is not
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

/// An authorization server the MCP server names on another host must have
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

/// The endpoints an authorization server names are held to the same rule
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

/// A headless sign-in follows redirects within the authorization server only.
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
