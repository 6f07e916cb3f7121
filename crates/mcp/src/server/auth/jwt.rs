//! Signed JWT access tokens, verified against the authorization server's JWKS.

use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;

use super::{AccessToken, TokenError, TokenVerifier, VerifyFuture};

/// Where the verification keys come from.
#[derive(Debug, Clone)]
pub enum JwksSource {
    /// A fixed key set.
    Static(JwkSet),
    /// The authorization server's `jwks_uri`, fetched on first use and again when a token names
    /// a key id that is not cached (key rotation), at most once per refresh interval.
    Url(String),
}

struct Cache {
    keys: JwkSet,
    fetched: Option<Instant>,
}

/// Verifies JWT access tokens: signature (by key id), algorithm, issuer, audience = this
/// resource, expiry and not-before (with a small leeway).
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    source: JwksSource,
    algorithms: Vec<Algorithm>,
    leeway: u64,
    refresh: Duration,
    http: reqwest::Client,
    cache: RwLock<Cache>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Tokens issued by `issuer` for the resource `audience` (this server's canonical URI),
    /// signed with keys from `source`. Accepts RS256, PS256, ES256 and EdDSA by default.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>, source: JwksSource) -> Self {
        let keys = match &source {
            JwksSource::Static(keys) => keys.clone(),
            JwksSource::Url(_) => JwkSet { keys: Vec::new() },
        };
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            source,
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::PS256,
                Algorithm::ES256,
                Algorithm::EdDSA,
            ],
            leeway: 30,
            refresh: Duration::from_secs(30),
            http: reqwest::Client::new(),
            cache: RwLock::new(Cache {
                keys,
                fetched: None,
            }),
        }
    }

    /// The accepted signature algorithms.
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// The clock skew tolerated on `exp` / `nbf`, in seconds (default 30).
    #[must_use]
    pub fn leeway(mut self, seconds: u64) -> Self {
        self.leeway = seconds;
        self
    }

    /// The least time between two JWKS fetches triggered by unknown key ids (default 30 s):
    /// rotation is picked up, while a flood of tokens with made-up key ids cannot turn into a
    /// flood of fetches.
    #[must_use]
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh = interval;
        self
    }

    /// The HTTP client used to fetch the JWKS (proxies, custom roots).
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    fn cached_key(&self, kid: Option<&str>) -> Option<DecodingKey> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        let jwk = match kid {
            Some(kid) => cache.keys.find(kid)?,
            // Without a key id only an unambiguous set will do.
            None if cache.keys.keys.len() == 1 => &cache.keys.keys[0],
            None => return None,
        };
        DecodingKey::from_jwk(jwk).ok()
    }

    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, TokenError> {
        if let Some(key) = self.cached_key(kid) {
            return Ok(key);
        }
        let JwksSource::Url(url) = &self.source else {
            return Err(TokenError::Invalid("unknown signing key".into()));
        };
        let stale = {
            let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
            cache.fetched.is_none_or(|at| at.elapsed() >= self.refresh)
        };
        if !stale {
            return Err(TokenError::Invalid("unknown signing key".into()));
        }
        let keys: JwkSet = self
            .http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| TokenError::Unavailable(format!("JWKS fetch failed: {e}")))?
            .bytes()
            .await
            .map_err(|e| TokenError::Unavailable(format!("JWKS fetch failed: {e}")))
            .and_then(|body| {
                serde_json::from_slice(&body)
                    .map_err(|e| TokenError::Unavailable(format!("JWKS is malformed: {e}")))
            })?;
        {
            let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
            *cache = Cache {
                keys,
                fetched: Some(Instant::now()),
            };
        }
        self.cached_key(kid)
            .ok_or_else(|| TokenError::Invalid("unknown signing key".into()))
    }

    async fn check(&self, token: &str) -> Result<AccessToken, TokenError> {
        let header = decode_header(token).map_err(|e| TokenError::Invalid(e.to_string()))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::Invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let key = self.key(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let data = decode::<serde_json::Map<String, Value>>(token, &key, &validation).map_err(
            |e| match e.kind() {
                ErrorKind::InvalidAudience => TokenError::WrongAudience,
                ErrorKind::ExpiredSignature => TokenError::Invalid("expired".into()),
                _ => TokenError::Invalid(e.to_string()),
            },
        )?;
        Ok(AccessToken::from_claims(data.claims))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }
}
