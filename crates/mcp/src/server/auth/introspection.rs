//! Opaque access tokens, verified by RFC 7662 token introspection.

use serde_json::Value;

use super::{AccessToken, TokenError, TokenVerifier, VerifyFuture, form_encode};

/// Verifies tokens by asking the authorization server's introspection endpoint, authenticating
/// as this resource server (HTTP Basic). The token must be `active` and its audience must name
/// this resource (RFC 8707); an introspection response without `aud` is refused unless
/// [`IntrospectionVerifier::allow_missing_audience`] is set.
pub struct IntrospectionVerifier {
    endpoint: String,
    client_id: String,
    client_secret: String,
    audience: String,
    allow_missing_audience: bool,
    http: reqwest::Client,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Introspects at `endpoint` with these credentials; tokens must be for `audience`.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        audience: impl Into<String>,
    ) -> Self {
        Self {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            audience: audience.into(),
            allow_missing_audience: false,
            http: reqwest::Client::new(),
        }
    }

    /// Accepts introspection responses without `aud` (for authorization servers that issue
    /// tokens for one resource only).
    #[must_use]
    pub fn allow_missing_audience(mut self) -> Self {
        self.allow_missing_audience = true;
        self
    }

    /// The HTTP client used to reach the endpoint.
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    async fn check(&self, token: &str) -> Result<AccessToken, TokenError> {
        let response = self
            .http
            .post(&self.endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(format!(
                "token={}&token_type_hint=access_token",
                form_encode(token)
            ))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| TokenError::Unavailable(format!("introspection failed: {e}")))?;
        let body = response
            .bytes()
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection failed: {e}")))?;
        let claims: serde_json::Map<String, Value> =
            serde_json::from_slice(&body).map_err(|e| {
                TokenError::Unavailable(format!("introspection response is malformed: {e}"))
            })?;
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Invalid("inactive".into()));
        }
        let token = AccessToken::from_claims(claims);
        if token.audience.is_empty() {
            if !self.allow_missing_audience {
                return Err(TokenError::WrongAudience);
            }
        } else if !token.audience.contains(&self.audience) {
            return Err(TokenError::WrongAudience);
        }
        if let Some(expires_at) = token.expires_at {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            if expires_at <= now {
                return Err(TokenError::Invalid("expired".into()));
            }
        }
        Ok(token)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }
}
