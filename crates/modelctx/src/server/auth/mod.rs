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
//! * On success the request carries the [`AccessToken`] and its [`modelctx_seal::Principal`] in its
//!   extensions: handlers read them through `RequestContext::http_parts`, and sealed
//!   `requestState` is bound to the principal (client id, issuer, subject), so a flow started by
//!   one user cannot be finished by another, even through the same OAuth client.

mod introspection;
mod jwt;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, StatusCode, header};
use modelctx_seal::Principal;
use serde_json::Value;

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
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("required_scopes", &self.required_scopes)
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
        }
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
        document
    }

    /// Authenticates one request from its headers.
    ///
    /// # Errors
    /// The `401` / `403` / `503` response to send instead.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<AccessToken, AuthRejection> {
        let Some(token) = bearer(headers) else {
            return Err(self.reject(StatusCode::UNAUTHORIZED, None, None));
        };
        match self.verifier.verify(token).await {
            Ok(access) if !access.has_scopes(&self.required_scopes) => Err(self.reject(
                StatusCode::FORBIDDEN,
                Some("insufficient_scope"),
                Some("the token lacks a required scope"),
            )),
            Ok(access) => Ok(access),
            Err(TokenError::Unavailable(reason)) => {
                tracing::warn!(%reason, "token could not be verified");
                Err(AuthRejection {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    challenge: None,
                })
            }
            Err(error) => {
                tracing::info!(%error, "bearer token refused");
                Err(self.reject(
                    StatusCode::UNAUTHORIZED,
                    Some("invalid_token"),
                    Some("the access token is invalid"),
                ))
            }
        }
    }

    fn reject(
        &self,
        status: StatusCode,
        error: Option<&str>,
        description: Option<&str>,
    ) -> AuthRejection {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        if !self.required_scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", self.required_scopes.join(" ")));
        }
        if let Some(error) = error {
            challenge.push_str(&format!(", error=\"{error}\""));
        }
        if let Some(description) = description {
            challenge.push_str(&format!(", error_description=\"{description}\""));
        }
        AuthRejection {
            status,
            challenge: HeaderValue::from_str(&challenge).ok(),
        }
    }
}

/// A refused request: the status and the `WWW-Authenticate` challenge to answer with.
#[derive(Debug, Clone)]
pub struct AuthRejection {
    /// 401, 403 or 503.
    pub status: StatusCode,
    /// The challenge (absent for 503).
    pub challenge: Option<HeaderValue>,
}

impl AuthRejection {
    pub(crate) fn into_response(self) -> axum::response::Response {
        let mut response = axum::response::Response::new(axum::body::Body::empty());
        *response.status_mut() = self.status;
        if let Some(challenge) = self.challenge {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// The bearer token of `Authorization` (tokens are accepted only there, never in the query).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
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
