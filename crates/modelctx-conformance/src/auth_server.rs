//! A local OAuth 2.1 authorization server for tests and demos (never for production): RFC 8414
//! metadata (also at the OpenID Connect location), a JWKS, dynamic client registration
//! (RFC 7591), client ID metadata documents (preloaded), pre-registered clients, an
//! authorization endpoint that approves a configured user at once (PKCE `S256` required,
//! `resource` required, RFC 9207 `iss` in the redirect), and a token endpoint issuing ES256 JWT
//! access tokens whose audience is the `resource` (RFC 8707), with refresh tokens (rotated) and
//! the client credentials grant. With [`AuthServerConfig::dpop`], a token request carrying a
//! valid DPoP proof (RFC 9449) gets a DPoP-bound token (`token_type` `DPoP`, `cnf.jkt`), and with
//! [`AuthServerConfig::dpop_nonce`] the proof must carry the server's nonce (`use_dpop_nonce`).
//!
//! It binds 127.0.0.1 only. Behaviours a client must reject can be switched on
//! ([`AuthServerConfig::iss_in_redirect`], [`AuthServerConfig::advertise_pkce`]…), and
//! [`AuthServer::stats`] tells a test what the client did.
//!
//! This file is self-contained (axum, jsonwebtoken, aws-lc-rs, base64, serde_json, tokio) so
//! that `crates/modelctx/tests` can include it with `#[path]`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// What the redirect after authorization says in `iss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssMode {
    /// The issuer (RFC 9207).
    Correct,
    /// Another issuer.
    Wrong,
    /// Nothing.
    Omit,
}

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct AuthServerConfig {
    /// The user every authorization request is approved for (`sub`).
    pub user: String,
    /// `scopes_supported`.
    pub scopes_supported: Vec<String>,
    /// Access token lifetime, seconds.
    pub access_token_ttl: u64,
    /// Whether authorization code grants get a refresh token.
    pub refresh_tokens: bool,
    /// Whether dynamic registration is offered.
    pub registration: bool,
    /// Whether client ID metadata documents are accepted (the preloaded ones).
    pub client_id_metadata_documents: bool,
    /// Preloaded client ID metadata documents (client id URL → document).
    pub metadata_documents: HashMap<String, Value>,
    /// Pre-registered clients: id → (secret, redirect URIs; empty: any loopback).
    pub clients: HashMap<String, (Option<String>, Vec<String>)>,
    /// Whether `code_challenge_methods_supported: ["S256"]` is advertised.
    pub advertise_pkce: bool,
    /// Whether `authorization_response_iss_parameter_supported` is advertised.
    pub advertise_iss: bool,
    /// What the redirect carries in `iss`.
    pub iss_in_redirect: IssMode,
    /// Overrides the `issuer` of the metadata document (a mismatch test).
    pub metadata_issuer: Option<String>,
    /// `token_endpoint_auth_methods_supported`.
    pub token_endpoint_auth_methods: Vec<String>,
    /// Resources tokens may be issued for (empty: any).
    pub resources: Vec<String>,
    /// Where the metadata says the authorization, token and registration endpoints are,
    /// instead of this server (a hostile server sending the client elsewhere).
    pub endpoints_base: Option<String>,
    /// Answers every authorization request with a redirect to this URL instead (a hostile
    /// server sending a headless sign-in elsewhere).
    pub authorize_redirect: Option<String>,
    /// Advertises `dpop_signing_alg_values_supported: ["ES256"]` and binds the tokens of
    /// requests that carry a DPoP proof to its key (off: proofs are ignored, tokens are Bearer).
    pub dpop: bool,
    /// Demands the server's nonce in every DPoP proof (400 `use_dpop_nonce` + `DPoP-Nonce`).
    pub dpop_nonce: bool,
}

impl Default for AuthServerConfig {
    fn default() -> Self {
        Self {
            user: "alice".to_owned(),
            scopes_supported: vec![
                "mcp:tools".to_owned(),
                "mcp:write".to_owned(),
                "offline_access".to_owned(),
            ],
            access_token_ttl: 3600,
            refresh_tokens: true,
            registration: true,
            client_id_metadata_documents: true,
            metadata_documents: HashMap::new(),
            clients: HashMap::new(),
            advertise_pkce: true,
            advertise_iss: true,
            iss_in_redirect: IssMode::Correct,
            metadata_issuer: None,
            token_endpoint_auth_methods: vec![
                "none".to_owned(),
                "client_secret_basic".to_owned(),
                "client_secret_post".to_owned(),
            ],
            resources: Vec::new(),
            endpoints_base: None,
            authorize_redirect: None,
            dpop: false,
            dpop_nonce: false,
        }
    }
}

/// What clients did, for tests.
#[derive(Debug, Clone, Default)]
pub struct AuthStats {
    /// Every HTTP request received, whatever its path (a test of a server that must not be
    /// contacted at all).
    pub requests: u32,
    /// Token endpoint requests, granted or not.
    pub token_requests: u32,
    /// Metadata documents served.
    pub metadata_requests: u32,
    /// Dynamic registrations.
    pub registrations: u32,
    /// `application_type` of the last registration.
    pub last_application_type: Option<String>,
    /// Authorization requests (approved or not).
    pub authorization_requests: u32,
    /// The `scope` of the last authorization request.
    pub last_scope: Option<String>,
    /// The `resource` of the last authorization request.
    pub last_resource: Option<String>,
    /// The `client_id` of the last authorization request.
    pub last_client_id: Option<String>,
    /// Authorization code exchanges.
    pub code_exchanges: u32,
    /// Refresh token grants.
    pub refreshes: u32,
    /// Client credentials grants.
    pub client_credentials: u32,
    /// Token requests refused.
    pub token_errors: u32,
    /// DPoP-bound access tokens issued.
    pub dpop_tokens: u32,
}

struct Registered {
    secret: Option<String>,
    redirect_uris: Vec<String>,
    auth_method: String,
}

struct CodeGrant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
    scope: Option<String>,
    expires: u64,
}

struct RefreshGrant {
    client_id: String,
    resource: String,
    scope: Option<String>,
    /// The DPoP key thumbprint the grant is bound to (RFC 9449 §5: for public clients the
    /// refresh token is bound too).
    jkt: Option<String>,
}

struct Inner {
    config: AuthServerConfig,
    issuer: String,
    kid: String,
    key: EncodingKey,
    jwk: Value,
    random: SystemRandom,
    /// The nonce DPoP proofs must carry when `dpop_nonce` is on (one per server run).
    dpop_nonce: String,
    clients: Mutex<HashMap<String, Registered>>,
    codes: Mutex<HashMap<String, CodeGrant>>,
    refresh: Mutex<HashMap<String, RefreshGrant>>,
    stats: Mutex<AuthStats>,
}

/// A running authorization server; stops when dropped.
pub struct AuthServer {
    inner: Arc<Inner>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for AuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthServer")
            .field("issuer", &self.inner.issuer)
            .finish_non_exhaustive()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl AuthServer {
    /// Starts on 127.0.0.1 at `port` (0: a free one).
    ///
    /// # Errors
    /// Binding failed.
    pub async fn start(config: AuthServerConfig, port: u16) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let issuer = format!("http://127.0.0.1:{}", addr.port());
        let random = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random)
            .map_err(|_| std::io::Error::other("key generation failed"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .map_err(|_| std::io::Error::other("key parsing failed"))?;
        let point = pair.public_key().as_ref();
        let kid = "test-as-1".to_owned();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        let clients = config
            .clients
            .iter()
            .map(|(id, (secret, redirect_uris))| {
                let auth_method = if secret.is_some() {
                    "client_secret_basic"
                } else {
                    "none"
                };
                (
                    id.clone(),
                    Registered {
                        secret: secret.clone(),
                        redirect_uris: redirect_uris.clone(),
                        auth_method: auth_method.to_owned(),
                    },
                )
            })
            .collect();
        let inner = Arc::new(Inner {
            config,
            issuer,
            kid,
            key: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
            dpop_nonce: {
                let mut bytes = [0u8; 16];
                let _ = random.fill(&mut bytes);
                URL_SAFE_NO_PAD.encode(bytes)
            },
            random,
            clients: Mutex::new(clients),
            codes: Mutex::new(HashMap::new()),
            refresh: Mutex::new(HashMap::new()),
            stats: Mutex::new(AuthStats::default()),
        });
        let router = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/.well-known/openid-configuration", get(metadata))
            .route("/jwks", get(jwks))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(Arc::clone(&inner))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&inner),
                count_request,
            ));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            inner,
            addr,
            stop: Some(stop),
        })
    }

    /// The issuer identifier (`http://127.0.0.1:<port>`, no trailing slash).
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// Where the signing keys are.
    pub fn jwks_url(&self) -> String {
        format!("{}/jwks", self.inner.issuer)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What clients did so far.
    pub fn stats(&self) -> AuthStats {
        lock(&self.inner.stats).clone()
    }

    /// Forgets every refresh token (as a revocation would).
    pub fn revoke_refresh_tokens(&self) {
        lock(&self.inner.refresh).clear();
    }

    /// A signed access token for `resource`, as the token endpoint would issue it.
    pub fn mint(&self, client_id: &str, resource: &str, scope: Option<&str>, ttl: u64) -> String {
        self.inner
            .access_token(client_id, resource, scope, ttl, None)
    }

    /// A signed access token bound to the DPoP key whose RFC 7638 thumbprint is `jkt`.
    pub fn mint_dpop(
        &self,
        client_id: &str,
        resource: &str,
        scope: Option<&str>,
        jkt: &str,
    ) -> String {
        let ttl = self.inner.config.access_token_ttl;
        self.inner
            .access_token(client_id, resource, scope, ttl, Some(jkt))
    }
}

// The crate's one lock helper (clippy.toml disallows `PoisonError::into_inner` elsewhere).
#[allow(clippy::disallowed_methods)]
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Inner {
    fn random(&self) -> String {
        let mut bytes = [0u8; 24];
        let _ = self.random.fill(&mut bytes);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn access_token(
        &self,
        client_id: &str,
        resource: &str,
        scope: Option<&str>,
        ttl: u64,
        jkt: Option<&str>,
    ) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".to_owned());
        let issued = now();
        let mut claims = json!({
            "iss": self.issuer, "aud": resource, "sub": self.config.user, "client_id": client_id,
            "iat": issued, "exp": issued + ttl, "jti": self.random(),
        });
        if let Some(scope) = scope {
            claims["scope"] = Value::from(scope);
        }
        if let Some(jkt) = jkt {
            claims["cnf"] = json!({"jkt": jkt});
        }
        jsonwebtoken::encode(&header, &claims, &self.key).unwrap_or_default()
    }

    /// The client's registration: registered, pre-registered, or a preloaded metadata document.
    fn client(&self, client_id: &str) -> Option<(Option<String>, Vec<String>, String)> {
        if let Some(client) = lock(&self.clients).get(client_id) {
            return Some((
                client.secret.clone(),
                client.redirect_uris.clone(),
                client.auth_method.clone(),
            ));
        }
        if self.config.client_id_metadata_documents
            && let Some(document) = self.config.metadata_documents.get(client_id)
            && document.get("client_id").and_then(Value::as_str) == Some(client_id)
        {
            return Some((None, metadata_redirect_uris(document), "none".to_owned()));
        }
        None
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    json_response(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

/// Decodes `application/x-www-form-urlencoded` (first occurrence of a name wins).
fn decode_form(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        out.entry(percent_decode(name))
            .or_insert_with(|| percent_decode(value));
    }
    out
}

fn percent_decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode_component(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char);
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

fn is_loopback_uri(uri: &str) -> bool {
    [
        "http://127.0.0.1:",
        "http://127.0.0.1/",
        "http://localhost:",
        "http://localhost/",
        "http://[::1]:",
    ]
    .iter()
    .any(|prefix| uri.starts_with(prefix))
}

/// RFC 8252 §7.3: a loopback redirect URI matches whatever its port.
fn redirect_matches(registered: &[String], uri: &str) -> bool {
    if registered.is_empty() {
        return is_loopback_uri(uri);
    }
    let strip_port = |u: &str| -> String {
        if !is_loopback_uri(u) {
            return u.to_owned();
        }
        let rest = u.trim_start_matches("http://");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let host = authority
            .rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(authority, |(host, _)| host);
        format!("http://{host}{path}")
    };
    registered
        .iter()
        .any(|r| r == uri || strip_port(r) == strip_port(uri))
}

async fn metadata(State(inner): State<Arc<Inner>>) -> Response {
    lock(&inner.stats).metadata_requests += 1;
    let issuer = &inner.issuer;
    let base = inner.config.endpoints_base.as_ref().unwrap_or(issuer);
    let mut document = json!({
        "issuer": inner.config.metadata_issuer.clone().unwrap_or_else(|| issuer.clone()),
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": inner.config.token_endpoint_auth_methods,
        "scopes_supported": inner.config.scopes_supported,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
    });
    if inner.config.registration {
        document["registration_endpoint"] = Value::from(format!("{base}/register"));
    }
    if inner.config.advertise_pkce {
        document["code_challenge_methods_supported"] = json!(["S256"]);
    }
    if inner.config.advertise_iss {
        document["authorization_response_iss_parameter_supported"] = Value::from(true);
    }
    if inner.config.client_id_metadata_documents {
        document["client_id_metadata_document_supported"] = Value::from(true);
    }
    if inner.config.dpop {
        document["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    json_response(StatusCode::OK, &document)
}

async fn jwks(State(inner): State<Arc<Inner>>) -> Response {
    json_response(StatusCode::OK, &json!({"keys": [inner.jwk]}))
}

/// The string entries of client metadata's `redirect_uris` (none when it is not an array).
fn metadata_redirect_uris(metadata: &Value) -> Vec<String> {
    metadata
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|uris| {
            uris.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

async fn register(State(inner): State<Arc<Inner>>, body: Bytes) -> Response {
    if !inner.config.registration {
        return oauth_error(StatusCode::NOT_FOUND, "invalid_request", "no registration");
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "not JSON",
        );
    };
    let redirect_uris = metadata_redirect_uris(&request);
    if redirect_uris
        .iter()
        .any(|uri| !is_loopback_uri(uri) && !uri.starts_with("https://"))
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect URIs must be loopback or https",
        );
    }
    let application_type = request
        .get("application_type")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let auth_method = request
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .unwrap_or("client_secret_basic")
        .to_owned();
    if !inner
        .config
        .token_endpoint_auth_methods
        .contains(&auth_method)
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "unsupported token_endpoint_auth_method",
        );
    }
    let client_id = format!("client-{}", inner.random());
    let secret = (auth_method != "none").then(|| inner.random());
    {
        let mut stats = lock(&inner.stats);
        stats.registrations += 1;
        stats.last_application_type = application_type;
    }
    lock(&inner.clients).insert(
        client_id.clone(),
        Registered {
            secret: secret.clone(),
            redirect_uris: redirect_uris.clone(),
            auth_method: auth_method.clone(),
        },
    );
    let mut response = json!({
        "client_id": client_id,
        "client_id_issued_at": now(),
        "redirect_uris": redirect_uris,
        "token_endpoint_auth_method": auth_method,
        "grant_types": request.get("grant_types").cloned().unwrap_or(json!(["authorization_code"])),
        "client_name": request.get("client_name").cloned().unwrap_or(Value::Null),
    });
    if let Some(secret) = secret {
        response["client_secret"] = Value::from(secret);
        response["client_secret_expires_at"] = Value::from(0);
    }
    json_response(StatusCode::CREATED, &response)
}

async fn authorize(State(inner): State<Arc<Inner>>, RawQuery(query): RawQuery) -> Response {
    let params = decode_form(query.as_deref().unwrap_or_default());
    let param = |name: &str| params.get(name).cloned();
    {
        let mut stats = lock(&inner.stats);
        stats.authorization_requests += 1;
        stats.last_scope = param("scope");
        stats.last_resource = param("resource");
        stats.last_client_id = param("client_id");
    }
    if let Some(elsewhere) = &inner.config.authorize_redirect {
        return (StatusCode::FOUND, [(header::LOCATION, elsewhere.clone())]).into_response();
    }
    let page = |text: &str| (StatusCode::BAD_REQUEST, text.to_owned()).into_response();
    // Without a known client and a registered redirect URI there is nowhere safe to redirect.
    let Some(client_id) = param("client_id") else {
        return page("missing client_id");
    };
    let Some((_, redirect_uris, _)) = inner.client(&client_id) else {
        return page("unknown client");
    };
    let Some(redirect_uri) = param("redirect_uri") else {
        return page("missing redirect_uri");
    };
    if !redirect_matches(&redirect_uris, &redirect_uri) {
        return page("unregistered redirect_uri");
    }
    let state = param("state");
    let iss = match inner.config.iss_in_redirect {
        IssMode::Correct => Some(inner.issuer.clone()),
        IssMode::Wrong => Some("https://evil.example.com".to_owned()),
        IssMode::Omit => None,
    };
    let redirect = |pairs: Vec<(&str, String)>| {
        let mut location = redirect_uri.clone();
        location.push(if location.contains('?') { '&' } else { '?' });
        let mut all = pairs;
        if let Some(state) = &state {
            all.push(("state", state.clone()));
        }
        if let Some(iss) = &iss {
            all.push(("iss", iss.clone()));
        }
        location.push_str(
            &all.iter()
                .map(|(k, v)| format!("{k}={}", encode_component(v)))
                .collect::<Vec<_>>()
                .join("&"),
        );
        (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
    };
    let fail = |error: &str, description: &str| {
        redirect(vec![
            ("error", error.to_owned()),
            ("error_description", description.to_owned()),
        ])
    };
    if param("response_type").as_deref() != Some("code") {
        return fail("unsupported_response_type", "only code");
    }
    let (Some(challenge), Some("S256")) = (
        param("code_challenge"),
        param("code_challenge_method").as_deref(),
    ) else {
        return fail("invalid_request", "PKCE with S256 is required");
    };
    let Some(resource) = param("resource") else {
        return fail("invalid_target", "the resource parameter is required");
    };
    if !inner.config.resources.is_empty() && !inner.config.resources.contains(&resource) {
        return fail("invalid_target", "unknown resource");
    }
    let scope = param("scope");
    if let Some(scope) = &scope
        && scope
            .split_whitespace()
            .any(|s| !inner.config.scopes_supported.iter().any(|known| known == s))
    {
        return fail("invalid_scope", "unknown scope");
    }
    let code = inner.random();
    lock(&inner.codes).insert(
        code.clone(),
        CodeGrant {
            client_id,
            redirect_uri: redirect_uri.clone(),
            challenge,
            resource,
            scope,
            expires: now() + 60,
        },
    );
    redirect(vec![("code", code)])
}

/// Authenticates the client of a token request; its id (`None`: `invalid_client`).
fn authenticate_client(
    inner: &Inner,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Option<String> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| STANDARD.decode(b.trim()).ok())
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|text| {
            text.split_once(':')
                .map(|(id, secret)| (percent_decode(id), percent_decode(secret)))
        });
    let (client_id, presented, method) = match (basic, form.get("client_secret")) {
        (Some((id, secret)), None) => (id, Some(secret), "client_secret_basic"),
        (None, Some(secret)) => (
            form.get("client_id").cloned()?,
            Some(secret.clone()),
            "client_secret_post",
        ),
        (None, None) => (form.get("client_id").cloned()?, None, "none"),
        (Some(_), Some(_)) => return None,
    };
    let (secret, _, registered_method) = inner.client(&client_id)?;
    let ok = match (&secret, &presented) {
        (Some(expected), Some(given)) => {
            expected.len() == given.len()
                && expected
                    .bytes()
                    .zip(given.bytes())
                    .fold(0u8, |a, (x, y)| a | (x ^ y))
                    == 0
                && (registered_method == method || registered_method != "none")
        }
        (None, None) => true,
        _ => false,
    };
    ok.then_some(client_id)
}

async fn count_request(
    State(inner): State<Arc<Inner>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    lock(&inner.stats).requests += 1;
    next.run(request).await
}

async fn token(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    lock(&inner.stats).token_requests += 1;
    let form = decode_form(&String::from_utf8_lossy(&body));
    let response = token_grant(&inner, &headers, &form);
    if !response.status().is_success() {
        lock(&inner.stats).token_errors += 1;
    }
    response
}

fn token_grant(inner: &Inner, headers: &HeaderMap, form: &HashMap<String, String>) -> Response {
    let Some(client_id) = authenticate_client(inner, headers, form) else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client authentication failed",
        );
    };
    let grant =
        |error: &str, description: &str| oauth_error(StatusCode::BAD_REQUEST, error, description);
    let ttl = inner.config.access_token_ttl;
    let jkt = match dpop_key(inner, headers) {
        Ok(jkt) => jkt,
        Err(response) => return *response,
    };
    let token_type = if jkt.is_some() { "DPoP" } else { "Bearer" };
    if jkt.is_some() {
        lock(&inner.stats).dpop_tokens += 1;
    }
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(code) = form.get("code") else {
                return grant("invalid_request", "missing code");
            };
            // Single use: taken out whatever happens next.
            let Some(code_grant) = lock(&inner.codes).remove(code) else {
                return grant("invalid_grant", "unknown or used code");
            };
            if code_grant.client_id != client_id || code_grant.expires < now() {
                return grant("invalid_grant", "code of another client, or expired");
            }
            if form.get("redirect_uri") != Some(&code_grant.redirect_uri) {
                return grant("invalid_grant", "redirect_uri differs");
            }
            let verified = form.get("code_verifier").is_some_and(|verifier| {
                URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()).as_ref())
                    == code_grant.challenge
            });
            if !verified {
                return grant("invalid_grant", "PKCE verification failed");
            }
            if form.get("resource") != Some(&code_grant.resource) {
                return grant(
                    "invalid_target",
                    "resource differs from the authorization request",
                );
            }
            lock(&inner.stats).code_exchanges += 1;
            let access = inner.access_token(
                &client_id,
                &code_grant.resource,
                code_grant.scope.as_deref(),
                ttl,
                jkt.as_deref(),
            );
            let mut body =
                json!({"access_token": access, "token_type": token_type, "expires_in": ttl});
            if let Some(scope) = &code_grant.scope {
                body["scope"] = Value::from(scope.clone());
            }
            if inner.config.refresh_tokens {
                let refresh = inner.random();
                lock(&inner.refresh).insert(
                    refresh.clone(),
                    RefreshGrant {
                        client_id,
                        resource: code_grant.resource,
                        scope: code_grant.scope,
                        jkt,
                    },
                );
                body["refresh_token"] = Value::from(refresh);
            }
            json_response(StatusCode::OK, &body)
        }
        Some("refresh_token") => {
            let Some(token) = form.get("refresh_token") else {
                return grant("invalid_request", "missing refresh_token");
            };
            let Some(refresh) = lock(&inner.refresh).remove(token) else {
                return grant("invalid_grant", "unknown refresh token");
            };
            if refresh.client_id != client_id {
                return grant("invalid_grant", "refresh token of another client");
            }
            if refresh.jkt.is_some() && refresh.jkt != jkt {
                return grant(
                    "invalid_grant",
                    "the refresh token is bound to another DPoP key",
                );
            }
            if form.get("resource").is_some_and(|r| r != &refresh.resource) {
                return grant("invalid_target", "resource differs from the original grant");
            }
            lock(&inner.stats).refreshes += 1;
            let access = inner.access_token(
                &client_id,
                &refresh.resource,
                refresh.scope.as_deref(),
                ttl,
                jkt.as_deref(),
            );
            let rotated = inner.random();
            let mut body = json!({"access_token": access, "token_type": token_type, "expires_in": ttl, "refresh_token": rotated});
            if let Some(scope) = &refresh.scope {
                body["scope"] = Value::from(scope.clone());
            }
            lock(&inner.refresh).insert(rotated, refresh);
            json_response(StatusCode::OK, &body)
        }
        Some("client_credentials") => {
            let Some(resource) = form.get("resource") else {
                return grant("invalid_target", "the resource parameter is required");
            };
            lock(&inner.stats).client_credentials += 1;
            let scope = form.get("scope").map(String::as_str);
            let access = inner.access_token(&client_id, resource, scope, ttl, jkt.as_deref());
            json_response(
                StatusCode::OK,
                &json!({"access_token": access, "token_type": token_type, "expires_in": ttl}),
            )
        }
        _ => grant("unsupported_grant_type", "unsupported grant_type"),
    }
}

/// The thumbprint of the key of the request's DPoP proof, when DPoP is on and a proof came
/// (RFC 9449 §4.3, as a test server checks it: form, ES256 signature by the header's `jwk`,
/// `htm` POST, `htu` this token endpoint, `iat` within 60 s, and the nonce when demanded).
fn dpop_key(inner: &Inner, headers: &HeaderMap) -> Result<Option<String>, Box<Response>> {
    let mut proofs = headers.get_all("dpop").iter();
    let proof = match (proofs.next(), proofs.next()) {
        _ if !inner.config.dpop => return Ok(None),
        (None, _) => return Ok(None),
        (Some(proof), None) if proof.len() <= 8 * 1024 => proof.to_str().unwrap_or_default(),
        _ => return Err(invalid_proof("one DPoP header of at most 8 KiB")),
    };
    let header = jsonwebtoken::decode_header(proof).map_err(|_| invalid_proof("malformed"))?;
    let (Some("dpop+jwt"), Algorithm::ES256, Some(jwk)) =
        (header.typ.as_deref(), header.alg, header.jwk.as_ref())
    else {
        return Err(invalid_proof(
            "typ dpop+jwt, alg ES256 and a jwk are required",
        ));
    };
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).map_err(|_| invalid_proof("bad jwk"))?;
    let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<Value>(proof, &key, &validation)
        .map_err(|_| invalid_proof("bad signature"))?
        .claims;
    let fits = claims["htm"] == "POST"
        && claims["htu"] == format!("{}/token", inner.issuer).as_str()
        && claims["jti"].as_str().is_some_and(|jti| !jti.is_empty())
        && claims["iat"]
            .as_u64()
            .is_some_and(|iat| iat + 60 >= now() && iat <= now() + 5);
    if !fits {
        return Err(invalid_proof(
            "htm, htu, jti or iat do not fit this request",
        ));
    }
    if inner.config.dpop_nonce && claims["nonce"] != inner.dpop_nonce.as_str() {
        let mut response = oauth_error(
            StatusCode::BAD_REQUEST,
            "use_dpop_nonce",
            "the proof must carry the server's nonce",
        );
        if let Ok(nonce) = inner.dpop_nonce.parse() {
            response.headers_mut().insert("dpop-nonce", nonce);
        }
        return Err(Box::new(response));
    }
    jwk.thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256)
        .map(Some)
        .map_err(|_| invalid_proof("bad jwk"))
}

fn invalid_proof(description: &str) -> Box<Response> {
    Box::new(oauth_error(
        StatusCode::BAD_REQUEST,
        "invalid_dpop_proof",
        description,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let form = decode_form("a=x+y&b=%C3%A9%26&a=second&c");
        assert_eq!(form["a"], "x y");
        assert_eq!(form["b"], "é&");
        assert_eq!(form["c"], "");
        assert_eq!(percent_decode("%2"), "%2");
    }

    #[test]
    fn loopback_redirects_match_any_port() {
        let registered = vec!["http://127.0.0.1:1000/callback".to_owned()];
        assert!(redirect_matches(
            &registered,
            "http://127.0.0.1:2000/callback"
        ));
        assert!(!redirect_matches(
            &registered,
            "http://127.0.0.1:2000/other"
        ));
        assert!(!redirect_matches(
            &["https://a.example/cb".to_owned()],
            "https://a.example/cb2"
        ));
        assert!(redirect_matches(&[], "http://localhost:3000/callback"));
    }
}
