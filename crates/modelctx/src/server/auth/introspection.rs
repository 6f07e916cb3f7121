//! Opaque access tokens, verified by RFC 7662 token introspection.
//!
//! Every request with a bearer token costs one call to the introspection endpoint, so what a
//! slow or hostile endpoint (or a flood of made-up tokens) can make us spend is bounded: each
//! verification has a deadline ([`IntrospectionVerifier::timeout`], waiting for a slot
//! included), at most [`IntrospectionVerifier::max_concurrent`] calls are in flight, an answer
//! is read up to a size limit, and redirects are not followed (the token travels in the body,
//! and a redirect would carry it to another host).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use super::{AccessToken, TokenError, TokenVerifier, VerifyFuture};
use crate::http::body::read_limited;

/// The largest introspection response accepted (real ones are well under 4 KiB).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

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
    timeout: Duration,
    slots: Arc<Semaphore>,
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
            timeout: Duration::from_secs(10),
            slots: Arc::new(Semaphore::new(32)),
            http: no_redirects(),
        }
    }

    /// Accepts introspection responses without `aud` (for authorization servers that issue
    /// tokens for one resource only).
    #[must_use]
    pub fn allow_missing_audience(mut self) -> Self {
        self.allow_missing_audience = true;
        self
    }

    /// The deadline of one verification, waiting for a free slot included (default 10 s); past
    /// it the request gets 503.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many introspection calls may be in flight at once (default 32, at least 1); further
    /// verifications wait for a slot within their [timeout](Self::timeout).
    #[must_use]
    pub fn max_concurrent(mut self, calls: usize) -> Self {
        self.slots = Arc::new(Semaphore::new(calls.max(1)));
        self
    }

    /// The HTTP client used to reach the endpoint. It should not follow redirects (the
    /// default client does not): the token is in the request body.
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    async fn check(&self, token: &str) -> Result<AccessToken, TokenError> {
        let body = tokio::time::timeout(self.timeout, self.introspect(token))
            .await
            .map_err(|_| {
                TokenError::Unavailable(format!(
                    "introspection: no answer within {:?}",
                    self.timeout
                ))
            })??;
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

    /// One call to the endpoint, once a slot is free; the raw answer.
    async fn introspect(&self, token: &str) -> Result<Vec<u8>, TokenError> {
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| TokenError::Unavailable("introspection is shut down".into()))?;
        let mut response = self
            .http
            .post(&self.endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(request_body(token))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| TokenError::Unavailable(format!("introspection failed: {e}")))?;
        if !response.status().is_success() {
            // A redirect, which is not followed.
            return Err(TokenError::Unavailable(format!(
                "introspection answered {}",
                response.status()
            )));
        }
        read_limited(&mut response, MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| TokenError::Unavailable(format!("introspection failed: {e}")))
    }
}

/// The default client: redirects are not followed.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }
}

/// The introspection request (RFC 7662 §2.1), `application/x-www-form-urlencoded` (RFC 6749
/// appendix B).
fn request_body(token: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", token)
        .append_pair("token_type_hint", "access_token")
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_body_is_form_encoded() {
        assert_eq!(
            request_body("a b&c=d/é"),
            "token=a+b%26c%3Dd%2F%C3%A9&token_type_hint=access_token"
        );
        // WHATWG's serializer, which RFC 6749 appendix B's algorithm is in practice: `*` as is,
        // `~` escaped.
        assert_eq!(
            request_body("*~"),
            "token=*%7E&token_type_hint=access_token"
        );
    }
}
