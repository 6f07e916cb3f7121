//! Signed JWT access tokens, verified against the authorization server's JWKS.
//!
//! Fetching the JWKS is the one thing a token can make us do on the network, so it is bounded
//! three ways: each fetch has a deadline ([`JwtVerifier::fetch_timeout`]) and a size limit, only
//! one fetch runs at a time (requests that need keys meanwhile wait for it and use its result),
//! and a fetch — failed, or successful but without the key a token names — is not repeated
//! before [`JwtVerifier::refresh_interval`] has passed. A flood of tokens with made-up key ids,
//! or a JWKS endpoint that fails or never answers, therefore costs at most one fetch per
//! interval, and no request waits longer than one fetch timeout.

use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;

use super::{AccessToken, TokenError, TokenVerifier, VerifyFuture};
use crate::http::body::read_limited;

/// The largest JWKS document accepted (real ones are a few KiB).
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// Where the verification keys come from.
#[derive(Debug, Clone)]
pub enum JwksSource {
    /// A fixed key set.
    Static(JwkSet),
    /// The authorization server's `jwks_uri`, fetched on first use, again when a token names
    /// a key id that is not cached (key rotation), at most once per refresh interval, and again
    /// when the keys are older than [`JwtVerifier::max_key_age`] (a key the authorization
    /// server withdrew stops being trusted).
    Url(String),
}

struct Cache {
    keys: JwkSet,
    /// The last fetch attempt, successful or not: the next waits a refresh interval after it.
    attempted: Option<Instant>,
    /// Whether that attempt failed: a key missing meanwhile is then "cannot verify" (503), not
    /// "invalid" (401).
    failed: bool,
    /// How many fetches were attempted, so that a request that waited for another's fetch uses
    /// its result instead of fetching again.
    attempts: u64,
    /// When the keys were last fetched successfully.
    loaded: Option<Instant>,
}

/// Verifies JWT access tokens: signature (by key id), algorithm, issuer, audience = this
/// resource, expiry and not-before (with a small leeway). `exp`, `iss` and `aud` are required:
/// a token without an audience could have been minted for any service of the same issuer.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    source: JwksSource,
    algorithms: Vec<Algorithm>,
    leeway: u64,
    refresh: Duration,
    max_key_age: Duration,
    fetch_timeout: Duration,
    http: reqwest::Client,
    cache: RwLock<Cache>,
    /// Held while a JWKS fetch runs (single flight).
    fetching: tokio::sync::Mutex<()>,
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
            max_key_age: Duration::from_secs(15 * 60),
            fetch_timeout: Duration::from_secs(10),
            http: reqwest::Client::new(),
            cache: RwLock::new(Cache {
                keys,
                attempted: None,
                failed: false,
                attempts: 0,
                loaded: None,
            }),
            fetching: tokio::sync::Mutex::new(()),
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

    /// The least time between two JWKS fetches (default 30 s), whether the last one failed or
    /// did not have the key a token named: rotation is picked up, while a flood of tokens with
    /// made-up key ids, or a failing JWKS endpoint, cannot turn into a flood of fetches. Until
    /// the next fetch is due, a token whose key is unknown is refused — with 503 when the last
    /// fetch failed, 401 otherwise.
    #[must_use]
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh = interval;
        self
    }

    /// How long fetched keys are trusted without a fetch (default 15 minutes). A key the
    /// authorization server withdraws — rotated out, or compromised — would otherwise be
    /// trusted for as long as this process runs, since a token naming a cached key never causes
    /// a fetch. Once the keys are older, the next request refreshes them (one request, bounded
    /// by the fetch timeout; the others go on with the cached keys meanwhile). A failed refresh
    /// keeps the cached keys and is retried after the refresh interval.
    #[must_use]
    pub fn max_key_age(mut self, age: Duration) -> Self {
        self.max_key_age = age;
        self
    }

    /// The deadline of one JWKS fetch, connecting and reading the body included (default
    /// 10 s). Requests waiting for keys wait at most this long, then get 503.
    #[must_use]
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// The HTTP client used to fetch the JWKS (proxies, custom roots).
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    fn cache(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        crate::sync::read(&self.cache)
    }

    fn cached_key(&self, kid: Option<&str>) -> Option<DecodingKey> {
        let cache = self.cache();
        let jwk = match kid {
            Some(kid) => cache.keys.find(kid)?,
            // Without a key id only an unambiguous set will do.
            None if cache.keys.keys.len() == 1 => &cache.keys.keys[0],
            None => return None,
        };
        DecodingKey::from_jwk(jwk).ok()
    }

    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, TokenError> {
        let JwksSource::Url(url) = &self.source else {
            return self.cached_key(kid).ok_or_else(unknown_key);
        };
        if let Some(key) = self.cached_key(kid) {
            // Old keys are refreshed by one request; the others use them meanwhile.
            if self.keys_are_old()
                && let Ok(_flight) = self.fetching.try_lock()
                && self.keys_are_old()
            {
                // A failed refresh keeps the cached keys; a good one may withdraw this key.
                let _ = self.refetch(url).await;
                return self.cached_key(kid).ok_or_else(unknown_key);
            }
            return Ok(key);
        }
        let seen = self.cache().attempts;
        // One fetch at a time; whoever waited for it uses its keys.
        let _flight = self.fetching.lock().await;
        if let Some(key) = self.cached_key(kid) {
            return Ok(key);
        }
        {
            let cache = self.cache();
            if cache.attempts != seen || !self.fetch_due(&cache) {
                return Err(if cache.failed {
                    TokenError::Unavailable("the JWKS could not be fetched; not retried yet".into())
                } else {
                    unknown_key()
                });
            }
        }
        self.refetch(url).await?;
        self.cached_key(kid).ok_or_else(unknown_key)
    }

    /// Whether the refresh interval has passed since the last fetch attempt.
    fn fetch_due(&self, cache: &Cache) -> bool {
        cache
            .attempted
            .is_none_or(|at| at.elapsed() >= self.refresh)
    }

    /// Whether the cached keys are past their age and a refresh is due.
    fn keys_are_old(&self) -> bool {
        let cache = self.cache();
        cache
            .loaded
            .is_some_and(|at| at.elapsed() >= self.max_key_age)
            && self.fetch_due(&cache)
    }

    /// Fetches the key set and records the attempt (call with `fetching` held). The keys are
    /// replaced only by a successful fetch.
    async fn refetch(&self, url: &str) -> Result<(), TokenError> {
        let fetched = self.fetch(url).await;
        let mut cache = crate::sync::write(&self.cache);
        let now = Instant::now();
        cache.attempts += 1;
        cache.attempted = Some(now);
        cache.failed = fetched.is_err();
        cache.keys = fetched?;
        cache.loaded = Some(now);
        Ok(())
    }

    /// One bounded fetch of the key set (the previous keys stay in use when it fails).
    async fn fetch(&self, url: &str) -> Result<JwkSet, TokenError> {
        let unavailable = |e: &dyn std::fmt::Display| {
            TokenError::Unavailable(format!("JWKS fetch from {url} failed: {e}"))
        };
        let body = tokio::time::timeout(self.fetch_timeout, async {
            let mut response = self
                .http
                .get(url)
                .header("accept", "application/json")
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(|e| unavailable(&e))?;
            read_limited(&mut response, MAX_JWKS_BYTES)
                .await
                .map_err(|e| unavailable(&e))
        })
        .await
        .map_err(|_| unavailable(&format_args!("no answer within {:?}", self.fetch_timeout)))??;
        serde_json::from_slice(&body)
            .map_err(|e| TokenError::Unavailable(format!("the JWKS at {url} is malformed: {e}")))
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
        // jsonwebtoken checks `iss` and `aud` only when present unless they are required.
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let data = decode::<serde_json::Map<String, Value>>(token, &key, &validation).map_err(
            |e| match e.kind() {
                ErrorKind::InvalidAudience => TokenError::WrongAudience,
                ErrorKind::MissingRequiredClaim(claim) => {
                    TokenError::Invalid(format!("the token has no {claim:?} claim"))
                }
                ErrorKind::ExpiredSignature => TokenError::Invalid("expired".into()),
                ErrorKind::ImmatureSignature => TokenError::Invalid("not valid yet".into()),
                _ => TokenError::Invalid(e.to_string()),
            },
        )?;
        // RFC 7519 makes `iss` one string; jsonwebtoken would also take an array naming ours.
        if data.claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(TokenError::Invalid(
                "the issuer is not a single string".into(),
            ));
        }
        Ok(AccessToken::from_claims(data.claims))
    }
}

fn unknown_key() -> TokenError {
    TokenError::Invalid("unknown signing key".into())
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.check(token))
    }
}
