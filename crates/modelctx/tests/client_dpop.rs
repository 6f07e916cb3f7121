//! DPoP (RFC 9449) and workload identity federation in the OAuth client, against a mock
//! authorization server and a mock resource server (axum on 127.0.0.1) that check every proof
//! on their own: its signature with the `jwk` of its header, `htm`, `htu`, `ath`, `nonce`, and
//! the key's RFC 7638 thumbprint (computed here, independently of the crate).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use axum::extract::{Form, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx::client::auth::{
    AuthError, ClientRegistration, DpopUse, FileTokenStore, IdentityTokenSource, MemoryTokenStore,
    OAuthConfig, StoredTokens, TokenStore,
};
use modelctx::client::{Client, ClientError, Mode};
use modelctx::server::http::HttpConfig;
use modelctx_test_support::client::auth::{serve, server, whoami};
use serde_json::{Value, json};

/// A DPoP proof as a server sees it, after checking its signature against its own `jwk`.
#[derive(Debug, Clone)]
struct Proof {
    claims: Value,
    /// The RFC 7638 thumbprint of the `jwk` header.
    jkt: String,
}

/// Checks a proof's shape and signature; `None` for anything malformed.
fn verify(proof: &str) -> Option<Proof> {
    let mut parts = proof.split('.');
    let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" || header["jwk"].get("d").is_some() {
        return None;
    }
    let (x, y) = (header["jwk"]["x"].as_str()?, header["jwk"]["y"].as_str()?);
    let mut point = vec![4u8];
    point.extend(URL_SAFE_NO_PAD.decode(x).ok()?);
    point.extend(URL_SAFE_NO_PAD.decode(y).ok()?);
    let signed = &proof[..proof.rfind('.')?];
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).ok()?)
        .ok()?;
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    Some(Proof {
        claims: serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()?,
        jkt: URL_SAFE_NO_PAD.encode(digest(&SHA256, canonical.as_bytes())),
    })
}

fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, token.as_bytes()))
}

fn proof_of(headers: &HeaderMap) -> Option<Proof> {
    headers
        .get("dpop")
        .map(|value| verify(value.to_str().unwrap()).expect("a well-formed, signed proof"))
}

/// How the mock authorization server behaves.
#[derive(Clone, Default)]
struct AsConfig {
    /// `dpop_signing_alg_values_supported`.
    advertise: Option<Vec<&'static str>>,
    /// A proof must carry this nonce (`None`: no nonce needed); `Some("")`: every nonce is
    /// stale.
    nonce: Option<&'static str>,
    /// Answer a proof with a Bearer token anyway.
    bearer_only: bool,
}

/// What the mock authorization server saw at its token endpoint.
#[derive(Debug, Clone)]
struct TokenRequest {
    form: Vec<(String, String)>,
    proof: Option<Proof>,
}

struct AsState {
    config: AsConfig,
    issuer: String,
    requests: Mutex<Vec<TokenRequest>>,
    metadata_requests: Mutex<u32>,
    issued: Mutex<u32>,
}

struct MockAs {
    issuer: String,
    state: Arc<AsState>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl MockAs {
    async fn start(config: AsConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let state = Arc::new(AsState {
            config,
            issuer: issuer.clone(),
            requests: Mutex::default(),
            metadata_requests: Mutex::default(),
            issued: Mutex::default(),
        });
        let router = Router::new()
            .route("/.well-known/oauth-authorization-server", get(as_metadata))
            .route("/token", post(as_token))
            .with_state(Arc::clone(&state));
        let (stop, _task) = serve(listener, router);
        Self {
            issuer,
            state,
            _stop: stop,
        }
    }

    fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer)
    }

    fn requests(&self) -> Vec<TokenRequest> {
        self.state.requests.lock().unwrap().clone()
    }
}

async fn as_metadata(State(state): State<Arc<AsState>>) -> Json<Value> {
    *state.metadata_requests.lock().unwrap() += 1;
    let mut metadata = json!({
        "issuer": state.issuer,
        "token_endpoint": format!("{}/token", state.issuer),
        "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
    });
    if let Some(algs) = &state.config.advertise {
        metadata["dpop_signing_alg_values_supported"] = json!(algs);
    }
    Json(metadata)
}

async fn as_token(
    State(state): State<Arc<AsState>>,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let proof = proof_of(&headers);
    state.requests.lock().unwrap().push(TokenRequest {
        form,
        proof: proof.clone(),
    });
    if let (Some(proof), Some(wanted)) = (&proof, state.config.nonce) {
        let issued = {
            let mut issued = state.issued.lock().unwrap();
            *issued += 1;
            *issued
        };
        // "" stands for a server whose every nonce is already stale: a new one each time.
        let fresh = if wanted.is_empty() {
            format!("stale-{issued}")
        } else {
            wanted.to_owned()
        };
        if wanted.is_empty() || proof.claims["nonce"] != wanted {
            return (
                StatusCode::BAD_REQUEST,
                [("dpop-nonce", fresh)],
                Json(json!({"error": "use_dpop_nonce"})),
            )
                .into_response();
        }
    }
    let n = state.requests.lock().unwrap().len();
    let token_type = if proof.is_some() && !state.config.bearer_only {
        "DPoP"
    } else {
        "Bearer"
    };
    Json(json!({
        "access_token": format!("tok-{n}"),
        "token_type": token_type,
        "expires_in": 3600,
    }))
    .into_response()
}

/// One request as the mock resource server saw it.
#[derive(Debug, Clone)]
struct Presented {
    method: String,
    authorization: Option<String>,
    proof: Option<Proof>,
}

struct RsState {
    metadata_url: String,
    /// The nonce proofs must carry (`None`: none needed; `Some("")`: always stale).
    nonce: Option<&'static str>,
    seen: Mutex<Vec<Presented>>,
    nonce_challenges: Mutex<u32>,
    /// Access tokens answered with 401 `invalid_token`.
    revoked: Mutex<HashSet<String>>,
}

struct MockRs {
    url: String,
    state: Arc<RsState>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl MockRs {
    /// An MCP server at `/mcp` whose protected resource metadata names `issuer`.
    async fn start(issuer: &str, nonce: Option<&'static str>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let url = format!("{origin}/mcp");
        let state = Arc::new(RsState {
            metadata_url: format!("{origin}/.well-known/oauth-protected-resource/mcp"),
            nonce,
            seen: Mutex::default(),
            nonce_challenges: Mutex::default(),
            revoked: Mutex::default(),
        });
        let prm = json!({"resource": url, "authorization_servers": [issuer]});
        let judge = {
            let state = Arc::clone(&state);
            move |request: Request, next: Next| {
                let state = Arc::clone(&state);
                async move { rs_judge(&state, request, next).await }
            }
        };
        let router = server()
            .http_router(HttpConfig::default())
            .layer(axum::middleware::from_fn(judge))
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(move || async move { Json(prm.clone()) }),
            );
        let (stop, _task) = serve(listener, router);
        Self {
            url,
            state,
            _stop: stop,
        }
    }

    fn seen(&self) -> Vec<Presented> {
        self.state.seen.lock().unwrap().clone()
    }
}

/// Lets requests with a token (any) through, after recording them; a DPoP proof must carry
/// the configured nonce.
async fn rs_judge(state: &RsState, request: Request, next: Next) -> Response {
    let authorization = request
        .headers()
        .get("authorization")
        .map(|v| v.to_str().unwrap().to_owned());
    let proof = proof_of(request.headers());
    state.seen.lock().unwrap().push(Presented {
        method: request.method().to_string(),
        authorization: authorization.clone(),
        proof: proof.clone(),
    });
    let Some(authorization) = authorization else {
        let challenge = format!("DPoP resource_metadata=\"{}\"", state.metadata_url);
        return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response();
    };
    if state
        .revoked
        .lock()
        .unwrap()
        .contains(split(&authorization).1)
    {
        let challenge = format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}\"",
            state.metadata_url
        );
        return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response();
    }
    if let (Some(proof), Some(wanted)) = (&proof, state.nonce)
        && (wanted.is_empty() || proof.claims["nonce"] != wanted)
    {
        let fresh = {
            let mut challenges = state.nonce_challenges.lock().unwrap();
            *challenges += 1;
            if wanted.is_empty() {
                format!("stale-{challenges}")
            } else {
                wanted.to_owned()
            }
        };
        let challenge = format!(
            "DPoP error=\"use_dpop_nonce\", resource_metadata=\"{}\"",
            state.metadata_url
        );
        return (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", challenge), ("dpop-nonce", fresh)],
        )
            .into_response();
    }
    next.run(request).await
}

fn machine(issuer: &str) -> OAuthConfig {
    OAuthConfig::client_credentials(issuer, ClientRegistration::new("svc").with_secret("s3cret"))
}

async fn connect(url: &str, config: OAuthConfig) -> Result<Client, ClientError> {
    Client::builder().oauth(config).connect_http(url).await
}

/// The access token of an `Authorization` value, and its scheme.
fn split(authorization: &str) -> (&str, &str) {
    authorization.split_once(' ').unwrap()
}

#[tokio::test]
async fn proofs_bind_token_requests_and_every_mcp_request_to_one_key() {
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, None).await;
    let client = connect(&rs.url, machine(&auth.issuer)).await.unwrap();
    whoami(&client).await;
    whoami(&client).await;
    client.close().await.unwrap();

    let requests = auth.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let token_proof = requests[0]
        .proof
        .clone()
        .expect("a proof at the token endpoint");
    assert_eq!(token_proof.claims["htm"], "POST");
    assert_eq!(token_proof.claims["htu"], auth.token_endpoint());
    assert!(token_proof.claims.get("ath").is_none());
    assert!(token_proof.claims["iat"].as_u64().is_some());

    let presented: Vec<Presented> = rs
        .seen()
        .into_iter()
        .filter(|p| p.authorization.is_some())
        .collect();
    assert!(presented.len() >= 3, "{presented:?}");
    let mut jtis = HashSet::new();
    for request in &presented {
        let (scheme, token) = split(request.authorization.as_deref().unwrap());
        assert_eq!(scheme, "DPoP");
        assert_eq!(token, "tok-1");
        let proof = request
            .proof
            .as_ref()
            .expect("every request carries a proof");
        assert_eq!(proof.claims["htm"], request.method.as_str());
        assert_eq!(proof.claims["htu"], rs.url.as_str());
        assert_eq!(proof.claims["ath"], ath(token).as_str());
        assert_eq!(proof.jkt, token_proof.jkt, "one key for token and resource");
        assert!(jtis.insert(proof.claims["jti"].as_str().unwrap().to_owned()));
    }

    // The handshake era: the session's DELETE carries a proof for DELETE.
    let handshake = Client::builder()
        .mode(Mode::Handshake)
        .oauth(machine(&auth.issuer))
        .connect_http(&rs.url)
        .await
        .unwrap();
    whoami(&handshake).await;
    handshake.close().await.unwrap();
    let other: Vec<Presented> = rs
        .seen()
        .into_iter()
        .filter(|p| p.method != "POST" && p.authorization.is_some())
        .collect();
    assert!(!other.is_empty(), "a GET or DELETE was sent");
    for request in other {
        let proof = request.proof.expect("a proof");
        assert_eq!(proof.claims["htm"], request.method.as_str());
        assert!(request.authorization.unwrap().starts_with("DPoP "));
    }
}

#[tokio::test]
async fn the_nonce_is_retried_once_and_remembered_at_both_servers() {
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        nonce: Some("as-nonce"),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, Some("rs-nonce")).await;
    let client = connect(&rs.url, machine(&auth.issuer)).await.unwrap();
    whoami(&client).await;
    whoami(&client).await;

    // The token endpoint: refused once for the nonce, then answered with it.
    let requests = auth.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests[0]
            .proof
            .as_ref()
            .unwrap()
            .claims
            .get("nonce")
            .is_none()
    );
    assert_eq!(
        requests[1].proof.as_ref().unwrap().claims["nonce"],
        "as-nonce"
    );
    let (first, second) = (
        requests[0].proof.as_ref().unwrap(),
        requests[1].proof.as_ref().unwrap(),
    );
    assert_ne!(first.claims["jti"], second.claims["jti"], "a fresh proof");

    // The resource server: one challenge; every later request carries its nonce (the AS
    // nonce never goes there, nor the RS nonce to the AS).
    assert_eq!(*rs.state.nonce_challenges.lock().unwrap(), 1);
    let proved: Vec<Proof> = rs.seen().into_iter().filter_map(|p| p.proof).collect();
    assert!(proved.len() >= 4, "{proved:?}");
    assert!(proved[0].claims.get("nonce").is_none());
    assert!(proved[1..].iter().all(|p| p.claims["nonce"] == "rs-nonce"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_always_wants_a_new_nonce_gets_one_retry() {
    // The token endpoint: two requests per sign-in, then the refusal.
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        nonce: Some(""),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, None).await;
    let error = connect(&rs.url, machine(&auth.issuer)).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::Token { status: 400, error: Some(e), .. }) if e == "use_dpop_nonce"),
        "{error}"
    );
    assert_eq!(auth.requests().len(), 2);

    // The resource server: one nonce retry per request, and a sign-in that does not help
    // ends the request.
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, Some("")).await;
    let error = connect(&rs.url, machine(&auth.issuer)).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::Unauthorized)),
        "{error}"
    );
    // First without a token (sign in), then a proof and its one nonce retry; the retry's
    // refusal after a sign-in ends the request.
    assert_eq!(*rs.state.nonce_challenges.lock().unwrap(), 2);
    assert_eq!(auth.requests().len(), 1, "one sign-in");
}

#[tokio::test]
async fn a_restored_token_store_signs_with_the_same_key() {
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, None).await;
    let dir = modelctx_test_support::tempdir::TempDir::new("client-dpop");
    let path = dir.path().join("tokens.json");
    let client = connect(
        &rs.url,
        machine(&auth.issuer).token_store(FileTokenStore::new(&path)),
    )
    .await
    .unwrap();
    whoami(&client).await;
    client.close().await.unwrap();
    let jkt = auth.requests()[0].proof.clone().unwrap().jkt;

    // Another process: the stored token and its key, no new token request.
    let stored = FileTokenStore::new(&path)
        .load_tokens(&rs.url)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.token_type, "DPoP");
    assert!(stored.dpop_key.is_some());
    let seen_before = rs.seen().len();
    let again = connect(
        &rs.url,
        machine(&auth.issuer).token_store(FileTokenStore::new(&path)),
    )
    .await
    .unwrap();
    whoami(&again).await;
    again.close().await.unwrap();
    assert_eq!(auth.requests().len(), 1, "the stored token was used");
    let later = &rs.seen()[seen_before..];
    assert!(!later.is_empty());
    for request in later {
        assert_eq!(request.authorization.as_deref(), Some("DPoP tok-1"));
        assert_eq!(request.proof.as_ref().unwrap().jkt, jkt, "the same key");
    }
}

#[tokio::test]
async fn a_dpop_token_without_its_key_is_never_sent_as_bearer() {
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, None).await;
    let store = Arc::new(MemoryTokenStore::new());
    let mut keyless = StoredTokens::new("stolen-dpop-token", &auth.issuer, &rs.url);
    keyless.token_type = "DPoP".to_owned();
    store.save_tokens(&rs.url, keyless).await.unwrap();
    let client = connect(
        &rs.url,
        machine(&auth.issuer).shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    whoami(&client).await;
    client.close().await.unwrap();
    assert!(
        rs.seen().iter().all(|p| !p
            .authorization
            .as_deref()
            .is_some_and(|a| a.contains("stolen-dpop-token"))),
        "{:?}",
        rs.seen()
    );
    assert_eq!(auth.requests().len(), 1, "signed in again");
}

#[tokio::test]
async fn bearer_when_dpop_is_off_or_refused() {
    // Off: no proof anywhere, a Bearer token.
    let auth = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&auth.issuer, None).await;
    let client = connect(&rs.url, machine(&auth.issuer).dpop(DpopUse::Off))
        .await
        .unwrap();
    whoami(&client).await;
    client.close().await.unwrap();
    assert!(auth.requests()[0].proof.is_none());
    let presented: Vec<_> = rs
        .seen()
        .into_iter()
        .filter(|p| p.authorization.is_some())
        .collect();
    assert!(!presented.is_empty());
    assert!(
        presented
            .iter()
            .all(|p| p.authorization.as_deref() == Some("Bearer tok-1") && p.proof.is_none())
    );

    // Not advertised (default mode): no proof either.
    let plain = MockAs::start(AsConfig::default()).await;
    let rs = MockRs::start(&plain.issuer, None).await;
    let client = connect(&rs.url, machine(&plain.issuer)).await.unwrap();
    whoami(&client).await;
    client.close().await.unwrap();
    assert!(plain.requests()[0].proof.is_none());

    // A server that answers a proof with a Bearer token: used as Bearer, without proofs...
    let bearer = MockAs::start(AsConfig {
        advertise: Some(vec!["ES256"]),
        bearer_only: true,
        ..AsConfig::default()
    })
    .await;
    let rs = MockRs::start(&bearer.issuer, None).await;
    let client = connect(&rs.url, machine(&bearer.issuer)).await.unwrap();
    whoami(&client).await;
    client.close().await.unwrap();
    assert!(bearer.requests()[0].proof.is_some());
    let presented: Vec<_> = rs
        .seen()
        .into_iter()
        .filter(|p| p.authorization.is_some())
        .collect();
    assert!(
        presented
            .iter()
            .all(|p| p.authorization.as_deref() == Some("Bearer tok-1"))
    );

    // ...unless DPoP is required.
    let rs = MockRs::start(&bearer.issuer, None).await;
    let error = connect(&rs.url, machine(&bearer.issuer).dpop(DpopUse::Required))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::UnsupportedTokenType(t)) if t == "Bearer"),
        "{error}"
    );
}

fn workload(issuer: &str, path: &std::path::Path) -> OAuthConfig {
    OAuthConfig::workload_identity(
        issuer,
        ClientRegistration::new("workload"),
        IdentityTokenSource::file(path),
    )
}

fn assertions(auth: &MockAs) -> Vec<String> {
    auth.requests()
        .iter()
        .map(|r| {
            let grant = r.form.iter().find(|(k, _)| k == "grant_type").unwrap();
            assert_eq!(grant.1, "urn:ietf:params:oauth:grant-type:jwt-bearer");
            r.form
                .iter()
                .find(|(k, _)| k == "assertion")
                .map(|(_, v)| v.clone())
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn workload_identity_reads_the_rotated_token_file() {
    let auth = MockAs::start(AsConfig::default()).await;
    let rs = MockRs::start(&auth.issuer, None).await;
    let dir = modelctx_test_support::tempdir::TempDir::new("client-dpop");
    let path = dir.path().join("token");
    std::fs::write(&path, "identity-1\n").unwrap();
    let client = connect(&rs.url, workload(&auth.issuer, &path))
        .await
        .unwrap();
    assert_eq!(assertions(&auth), ["identity-1"]);
    // The platform rotates the token; the access token is revoked: the next sign-in
    // presents the new identity token.
    std::fs::write(&path, "identity-2").unwrap();
    rs.state.revoked.lock().unwrap().insert("tok-1".to_owned());
    whoami(&client).await;
    assert_eq!(assertions(&auth), ["identity-1", "identity-2"]);
    client.close().await.unwrap();

    // From an environment variable the test runner sets for nobody else: absent, a clear error.
    let error = connect(
        &rs.url,
        OAuthConfig::workload_identity(
            auth.issuer.as_str(),
            ClientRegistration::new("workload"),
            IdentityTokenSource::env("MCP_TEST_NO_SUCH_IDENTITY_TOKEN_VARIABLE"),
        ),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::InvalidConfig(m)) if m.contains("MCP_TEST_NO_SUCH_IDENTITY_TOKEN_VARIABLE")),
        "{error}"
    );
}

#[tokio::test]
async fn the_identity_token_never_goes_to_another_issuer() {
    let ours = MockAs::start(AsConfig::default()).await;
    let theirs = MockAs::start(AsConfig::default()).await;
    // The MCP server names another authorization server than the one the workload trusts.
    let rs = MockRs::start(&theirs.issuer, None).await;
    let dir = modelctx_test_support::tempdir::TempDir::new("client-dpop");
    let path = dir.path().join("token");
    std::fs::write(&path, "identity-secret").unwrap();
    let error = connect(&rs.url, workload(&ours.issuer, &path))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Auth(AuthError::IssuerNotAllowed { .. })
        ),
        "{error}"
    );
    assert!(theirs.requests().is_empty());
    assert_eq!(*theirs.state.metadata_requests.lock().unwrap(), 0);
    assert!(ours.requests().is_empty());
}
