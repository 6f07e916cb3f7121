//! OAuth 2.1 resource server: every HTTP request is authenticated on its own (2026-07-28 has no
//! handshake to authenticate once), the validated principal binds sealed request state, and
//! unauthenticated clients are told where to sign in.
//!
//! * A [`TokenVerifier`] checks bearer tokens: [`JwtVerifier`] (signed JWTs, keys from a JWKS
//!   document, refreshed when an unknown key id appears) or [`IntrospectionVerifier`]
//!   (RFC 7662). Both check the audience against this server's canonical URI (RFC 8707):
//!   tokens minted for another resource are refused.
//! * [`ResourceServer`] is what [`super::http::HttpConfig::auth`] takes: the canonical resource
//!   URI, the authorization servers, the scopes required. It serves RFC 9728 protected resource
//!   metadata at `/.well-known/oauth-protected-resource{path}` and answers `401` (no or invalid
//!   token) / `403` (insufficient scope) with a `WWW-Authenticate` challenge naming that
//!   document and the scope.
//! * [`Dpop`] (RFC 9449), when configured with [`ResourceServer::dpop`]: DPoP-bound tokens are
//!   accepted with a proof of their key on every request, optionally with server-issued nonces;
//!   a DPoP-bound token sent as Bearer is refused whatever the configuration (see the `dpop`
//!   module's documentation for what each proof is checked against).
//! * On success the request carries the [`AccessToken`] and its [`modelctx_seal::Principal`] in its
//!   extensions: handlers read them through `RequestContext::http_parts`, and sealed
//!   `requestState` is bound to the principal (client id, issuer, subject), so a flow started by
//!   one user cannot be finished by another, even through the same OAuth client.

mod dpop;
mod introspection;
mod jwt;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, StatusCode, header};
use modelctx_seal::Principal;
use serde_json::Value;

pub use dpop::{DEFAULT_REPLAY_CAPACITY, Dpop, DpopPolicy};
pub use introspection::IntrospectionVerifier;
pub use jwt::{JwksSource, JwtVerifier};

/// A validated access token.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccessToken {
    /// The OAuth client the token was issued to (`client_id` or `azp`).
    pub client_id: Option<String>,
    /// The issuer (`iss`).
    pub issuer: Option<String>,
    /// The user (`sub`).
    pub subject: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Audiences (`aud`).
    pub audience: Vec<String>,
    /// Expiry, seconds since the epoch.
    pub expires_at: Option<u64>,
    /// Every claim, for application-specific checks.
    pub claims: serde_json::Map<String, Value>,
}

impl AccessToken {
    /// The principal sealed request state is bound to: the compact JSON of
    /// `[client_id, issuer, subject]`, as the Python SDK computes it.
    pub fn principal(&self) -> Principal {
        Principal::from_oauth(
            self.client_id.as_deref().unwrap_or_default(),
            self.issuer.as_deref(),
            self.subject.as_deref(),
        )
    }

    /// The thumbprint of the key the token is bound to (`cnf.jkt`, RFC 9449 §6): such a token
    /// is accepted only with a DPoP proof signed by that key.
    pub fn dpop_thumbprint(&self) -> Option<&str> {
        self.claims.get("cnf")?.get("jkt")?.as_str()
    }

    /// Whether every scope in `required` was granted.
    pub fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|scope| self.scopes.contains(scope))
    }

    /// Reads the standard members of a JWT claim set or an introspection response.
    pub(crate) fn from_claims(claims: serde_json::Map<String, Value>) -> Self {
        let text = |key: &str| claims.get(key).and_then(Value::as_str).map(str::to_owned);
        let scopes = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(scope)), _) => {
                scope.split_whitespace().map(str::to_owned).collect()
            }
            (_, Some(Value::Array(scp))) => scp
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            (_, Some(Value::String(scp))) => scp.split_whitespace().map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let audience = match claims.get("aud") {
            Some(Value::String(aud)) => vec![aud.clone()],
            Some(Value::Array(aud)) => aud
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Self {
            client_id: text("client_id").or_else(|| text("azp")),
            issuer: text("iss"),
            subject: text("sub"),
            scopes,
            audience,
            expires_at: claims.get("exp").and_then(Value::as_u64),
            claims,
        }
    }
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a valid token: bad signature, wrong issuer, expired, malformed, inactive.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// Issued for another resource (RFC 8707).
    #[error("token audience does not include this resource")]
    WrongAudience,
    /// The token could not be checked (the authorization server is unreachable).
    #[error("token could not be verified: {0}")]
    Unavailable(String),
}

/// The future of [`TokenVerifier::verify`].
pub type VerifyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AccessToken, TokenError>> + Send + 'a>>;

/// Checks bearer tokens.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` and returns what it grants.
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;
}

/// The OAuth side of an HTTP endpoint: who may call it and where clients sign in.
#[derive(Clone)]
pub struct ResourceServer {
    verifier: Arc<dyn TokenVerifier>,
    resource: String,
    authorization_servers: Vec<String>,
    required_scopes: Vec<String>,
    scopes_supported: Vec<String>,
    resource_name: Option<String>,
    dpop: Option<Dpop>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("required_scopes", &self.required_scopes)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// Protects the endpoint whose canonical URI is `resource` (e.g.
    /// `https://mcp.example.com/mcp`), checking tokens with `verifier`.
    pub fn new(resource: impl Into<String>, verifier: impl TokenVerifier) -> Self {
        Self {
            verifier: Arc::new(verifier),
            resource: resource.into(),
            authorization_servers: Vec::new(),
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            resource_name: None,
            dpop: None,
        }
    }

    /// Accepts DPoP-bound tokens (RFC 9449) as configured, and advertises it in the metadata.
    /// Without it, only Bearer tokens are accepted (DPoP-bound ones never are: their proofs
    /// would go unchecked).
    #[must_use]
    pub fn dpop(mut self, dpop: Dpop) -> Self {
        self.dpop = Some(dpop);
        self
    }

    /// Adds an authorization server (its issuer URL) to the protected resource metadata.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Scopes every request needs (missing ones get 403 `insufficient_scope`).
    #[must_use]
    pub fn require_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes advertised in the metadata (defaults to the required ones).
    #[must_use]
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A human-readable name for the metadata.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The canonical resource URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The path of the protected resource metadata (RFC 9728 §3.1: the well-known prefix, then
    /// the resource's path).
    pub fn metadata_path(&self) -> String {
        let path = resource_path(&self.resource);
        format!(
            "/.well-known/oauth-protected-resource{}",
            if path == "/" { "" } else { path }
        )
    }

    /// The absolute URL of the protected resource metadata.
    pub fn metadata_url(&self) -> String {
        format!("{}{}", origin(&self.resource), self.metadata_path())
    }

    /// The protected resource metadata document.
    pub fn metadata(&self) -> Value {
        let scopes = if self.scopes_supported.is_empty() {
            &self.required_scopes
        } else {
            &self.scopes_supported
        };
        let mut document = serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = Value::from(scopes.clone());
        }
        if let Some(name) = &self.resource_name {
            document["resource_name"] = Value::from(name.clone());
        }
        if let Some(dpop) = &self.dpop {
            document["dpop_signing_alg_values_supported"] =
                serde_json::json!([crate::dpop::PROOF_ALG]);
            document["dpop_bound_access_tokens_required"] =
                Value::from(dpop.policy == DpopPolicy::Required);
        }
        document
    }

    /// Authenticates one request: its `Authorization` header, and for a DPoP-bound token the
    /// `DPoP` proof, checked against the request's method and path.
    ///
    /// # Errors
    /// The `401` / `403` / `503` response to send instead.
    pub async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<AccessToken, AuthRejection> {
        let Some((scheme, token)) = credentials(&request.headers) else {
            return Err(self.reject(StatusCode::UNAUTHORIZED, None));
        };
        let dpop = match (scheme, &self.dpop) {
            (Scheme::Bearer, Some(dpop)) if dpop.policy == DpopPolicy::Required => {
                return Err(self.refuse_token(Scheme::Dpop, "this resource requires DPoP"));
            }
            (Scheme::Bearer, _) => None,
            (Scheme::Dpop, Some(dpop)) => Some(dpop),
            // Not configured: the scheme is unknown here, as if no token came.
            (Scheme::Dpop, None) => return Err(self.reject(StatusCode::UNAUTHORIZED, None)),
        };
        // The proof is checked before the token: it costs no network call, the token may.
        let proof = match dpop {
            Some(dpop) => Some(
                dpop.check_proof(
                    &request.headers,
                    &request.method,
                    &self.target_uri(request),
                    token,
                )
                .map_err(|refusal| self.refuse_proof(refusal))?,
            ),
            None => None,
        };
        let access = match self.verifier.verify(token).await {
            Ok(access) => access,
            Err(TokenError::Unavailable(reason)) => {
                tracing::warn!(%reason, "token could not be verified");
                return Err(unavailable());
            }
            Err(error) => {
                tracing::info!(%error, "access token refused");
                return Err(self.refuse_token(scheme, "the access token is invalid"));
            }
        };
        // A bound token proves nothing without its key: never accepted as Bearer.
        let confirmation = access.claims.get("cnf");
        let thumbprint = confirmation.and_then(|cnf| cnf.get("jkt")?.as_str());
        match (&proof, thumbprint) {
            // Bound some other way (a certificate, RFC 8705): nothing here can check it.
            (None, None) if confirmation.is_some() => {
                return Err(self.refuse_token(scheme, "the token is bound to a key"));
            }
            (None, None) => {}
            (None, Some(_)) => {
                tracing::info!("a DPoP-bound token was sent as a bearer token");
                return Err(self.refuse_token(scheme, "the token is DPoP-bound: send it with DPoP"));
            }
            (Some(_), None) => {
                return Err(self.refuse_token(scheme, "the token is not DPoP-bound"));
            }
            (Some(proof), Some(thumbprint)) => {
                if proof.key.thumbprint() != thumbprint {
                    return Err(self.refuse_proof(dpop::ProofRefusal::Invalid(
                        "the proof is signed by another key than the token is bound to",
                    )));
                }
            }
        }
        if !access.has_scopes(&self.required_scopes) {
            return Err(self.reject(
                StatusCode::FORBIDDEN,
                Some(Refusal {
                    scheme,
                    error: "insufficient_scope",
                    description: "the token lacks a required scope",
                }),
            ));
        }
        if let (Some(dpop), Some(proof)) = (dpop, &proof) {
            dpop.redeem(proof)
                .await
                .map_err(|refusal| self.refuse_proof(refusal))?;
        }
        Ok(access)
    }

    /// What a proof's `htu` must name: the configured resource's scheme and authority, and the
    /// path the request arrived on (a router that nests the endpoint under a prefix strips it
    /// from that path: serve it unnested, at the resource URI's path).
    fn target_uri(&self, request: &http::request::Parts) -> String {
        format!("{}{}", origin(&self.resource), request.uri.path())
    }

    fn refuse_token(&self, scheme: Scheme, description: &'static str) -> AuthRejection {
        self.reject(
            StatusCode::UNAUTHORIZED,
            Some(Refusal {
                scheme,
                error: "invalid_token",
                description,
            }),
        )
    }

    fn refuse_proof(&self, refusal: dpop::ProofRefusal) -> AuthRejection {
        let (error, description) = match refusal {
            dpop::ProofRefusal::Invalid(description) => ("invalid_dpop_proof", description),
            dpop::ProofRefusal::UseNonce(description) => {
                let mut rejection = self.reject(
                    StatusCode::UNAUTHORIZED,
                    Some(Refusal {
                        scheme: Scheme::Dpop,
                        error: crate::dpop::USE_NONCE_ERROR,
                        description,
                    }),
                );
                let nonce = self.dpop.as_ref().and_then(Dpop::fresh_nonce);
                if let Some(nonce) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
                    rejection.headers.insert(crate::dpop::NONCE_HEADER, nonce);
                }
                return rejection;
            }
            dpop::ProofRefusal::Unavailable(reason) => {
                tracing::warn!(%reason, "the DPoP replay guard could not answer");
                return unavailable();
            }
        };
        tracing::info!(description, "DPoP proof refused");
        self.reject(
            StatusCode::UNAUTHORIZED,
            Some(Refusal {
                scheme: Scheme::Dpop,
                error,
                description,
            }),
        )
    }

    /// The challenges of every scheme accepted (RFC 9449 §7.1: Bearer and DPoP side by side
    /// when both are); the error, if any, goes on the scheme the client used, listed first.
    fn reject(&self, status: StatusCode, refusal: Option<Refusal>) -> AuthRejection {
        let schemes: &[Scheme] = match self.dpop.as_ref().map(|dpop| dpop.policy) {
            None => &[Scheme::Bearer],
            Some(DpopPolicy::Allowed) => match refusal.as_ref().map(|r| r.scheme) {
                Some(Scheme::Dpop) => &[Scheme::Dpop, Scheme::Bearer],
                _ => &[Scheme::Bearer, Scheme::Dpop],
            },
            Some(DpopPolicy::Required) => &[Scheme::Dpop],
        };
        let mut headers = HeaderMap::new();
        for &scheme in schemes {
            let mut challenge = format!(
                "{} resource_metadata=\"{}\"",
                scheme.name(),
                self.metadata_url()
            );
            if !self.required_scopes.is_empty() {
                challenge.push_str(&format!(", scope=\"{}\"", self.required_scopes.join(" ")));
            }
            if scheme == Scheme::Dpop {
                challenge.push_str(&format!(", algs=\"{}\"", crate::dpop::PROOF_ALG));
            }
            if let Some(refusal) = refusal.as_ref().filter(|r| r.scheme == scheme) {
                challenge.push_str(&format!(
                    ", error=\"{}\", error_description=\"{}\"",
                    refusal.error, refusal.description
                ));
            }
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                headers.append(header::WWW_AUTHENTICATE, value);
            }
        }
        AuthRejection { status, headers }
    }
}

/// The authorization schemes a token may come with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Bearer,
    Dpop,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Self::Bearer => "Bearer",
            Self::Dpop => "DPoP",
        }
    }
}

/// The error of a challenge, and the scheme it answers.
#[derive(Clone, Copy)]
struct Refusal {
    scheme: Scheme,
    error: &'static str,
    description: &'static str,
}

fn unavailable() -> AuthRejection {
    AuthRejection {
        status: StatusCode::SERVICE_UNAVAILABLE,
        headers: HeaderMap::new(),
    }
}

/// A refused request: the status and the headers to answer with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthRejection {
    /// 401, 403 or 503.
    pub status: StatusCode,
    /// The `WWW-Authenticate` challenges, one per scheme accepted (none for 503), and a fresh
    /// `DPoP-Nonce` when a proof lacked a current nonce.
    pub headers: HeaderMap,
}

impl AuthRejection {
    pub(crate) fn into_response(self) -> axum::response::Response {
        let mut response = axum::response::Response::new(axum::body::Body::empty());
        *response.status_mut() = self.status;
        *response.headers_mut() = self.headers;
        response
    }
}

/// The scheme and token of `Authorization` (tokens are accepted only there, never in the query).
fn credentials(headers: &HeaderMap) -> Option<(Scheme, &str)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Scheme::Dpop
    } else {
        return None;
    };
    let token = token.trim();
    (!token.is_empty()).then_some((scheme, token))
}

/// `scheme://authority` of a URL.
fn origin(url: &str) -> &str {
    match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            let end = rest.find('/').map_or(url.len(), |j| i + 3 + j);
            &url[..end]
        }
        None => url,
    }
}

/// The path of a URL (`/` when it has none).
fn resource_path(url: &str) -> &str {
    let path = &url[origin(url).len()..];
    let path = path.split(['?', '#']).next().unwrap_or_default();
    if path.is_empty() { "/" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_location() {
        struct Never;
        impl TokenVerifier for Never {
            fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> {
                Box::pin(async { Err(TokenError::Invalid("never".into())) })
            }
        }
        let rs = ResourceServer::new("https://mcp.example.com/api/mcp", Never);
        assert_eq!(
            rs.metadata_path(),
            "/.well-known/oauth-protected-resource/api/mcp"
        );
        assert_eq!(
            rs.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
        );
        let root = ResourceServer::new("http://localhost:3000", Never);
        assert_eq!(
            root.metadata_path(),
            "/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn claims() {
        let token = AccessToken::from_claims(
            serde_json::json!({"azp":"app","iss":"https://idp","sub":"alice","scope":"read write","aud":["https://x"]})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        assert_eq!(token.client_id.as_deref(), Some("app"));
        assert_eq!(token.scopes, ["read", "write"]);
        assert!(token.has_scopes(&["read".to_owned()]));
        assert_eq!(
            token.principal().as_str(),
            r#"["app","https://idp","alice"]"#
        );
    }
}
