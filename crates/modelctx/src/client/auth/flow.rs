//! The OAuth client behind the HTTP transport: which token a request carries, and what a 401
//! or a 403 `insufficient_scope` sets in motion (see the module docs of `auth`).
//!
//! One concern per file: this one holds the token slot and the answers to 401/403;
//! [`discover`] finds the protected resource and its authorization server, [`registration`]
//! picks or registers the client, [`token`] runs the grants and the token endpoint requests, and
//! [`client_auth`] authenticates the client there.

use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};

use super::challenge::BearerChallenge;
use super::clock::now;
use super::discovery::{ServerMetadata, is_loopback};
use super::egress::{Egress, REQUEST_WAIT};
use super::error::AuthError;
use super::pause::PauseClock;
use super::proof::{NonceBook, ProofKey};
use super::store::StoredTokens;
use super::{Grant, OAuthConfig};
use crate::client::error::ClientError;
use crate::sync::{read, write};

mod client_auth;
mod discover;
mod registration;
mod token;

/// The most requests one call may send (sign-in, refresh and step-up retries included).
const MAX_SENDS: u32 = 6;
/// The largest metadata or token response read.
const MAX_DOCUMENT: usize = 1024 * 1024;

/// What the transport calls around every HTTP request.
pub(crate) struct OAuthClient {
    config: OAuthConfig,
    /// The server URL as given to `connect_http` (the token store's key).
    server_url: String,
    /// The HTTP clients, and which URLs each may fetch.
    egress: Egress,
    /// The issuer of the first successful discovery ([`IssuerBinding::FirstDiscovered`]).
    first_issuer: OnceLock<String>,
    slot: RwLock<TokenSlot>,
    loaded: tokio::sync::OnceCell<()>,
    flow: tokio::sync::Mutex<FlowState>,
    clock: PauseClock,
    /// The key DPoP proofs are signed with: made on the first DPoP token request, or the
    /// key stored with the tokens.
    proof_key: RwLock<Option<Arc<ProofKey>>>,
    /// The latest DPoP nonce of each authorization server, and of the MCP server, by origin.
    as_nonces: NonceBook,
    rs_nonces: NonceBook,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server_url", &self.server_url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The token requests are sent with; `generation` changes whenever it does, so a request
/// refused with an old token does not start a second sign-in.
#[derive(Default)]
struct TokenSlot {
    tokens: Option<Credentials>,
    generation: u64,
}

/// An access token as requests present it: for a DPoP-bound token, with the key it is bound
/// to.
#[derive(Clone)]
struct Credentials {
    tokens: Arc<StoredTokens>,
    key: Option<Arc<ProofKey>>,
}

impl Credentials {
    /// `Authorization: Bearer …` or `DPoP …`, marked sensitive so that it is never logged.
    fn authorization(&self) -> Option<HeaderValue> {
        let scheme = if self.key.is_some() { "DPoP" } else { "Bearer" };
        let mut value =
            HeaderValue::from_str(&format!("{scheme} {}", self.tokens.access_token)).ok()?;
        value.set_sensitive(true);
        Some(value)
    }
}

/// What the last discovery found, and the scopes asked for so far.
#[derive(Default)]
struct FlowState {
    discovered: Option<Arc<Discovered>>,
    requested_scope: Option<String>,
}

/// The protected resource and its authorization server.
struct Discovered {
    /// The resource indicator sent in authorization and token requests: the metadata's
    /// `resource` verbatim (checked to cover the server), else the canonical server URI.
    resource: String,
    /// The authorization server's issuer identifier (as the protected resource names it, and
    /// as its metadata confirmed it).
    issuer: String,
    metadata: ServerMetadata,
    resource_scopes: Option<Vec<String>>,
}

/// What handling a refusal achieved.
enum Recovery {
    /// Another request already replaced the token: just retry.
    Retry,
    /// The token was refreshed.
    Refreshed,
    /// A new authorization produced a token.
    SignedIn,
}

impl OAuthClient {
    /// The OAuth client for the server at `server_url`.
    pub(crate) fn new(config: OAuthConfig, server_url: &str) -> Result<Self, AuthError> {
        if let Some(url) = &config.client_metadata_url {
            let parsed = Url::parse(url).ok();
            let valid = parsed
                .as_ref()
                .is_some_and(|u| u.scheme() == "https" && !matches!(u.path(), "" | "/"));
            if !valid {
                return Err(AuthError::InvalidConfig(format!(
                    "the client metadata URL {url:?} must be an https URL with a path"
                )));
            }
        }
        if let Grant::AuthorizationCode(handler) = &config.grant {
            check_redirect_uri(&handler.redirect_uri())?;
        }
        let http = match &config.http {
            Some(client) => client.clone(),
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(REQUEST_WAIT)
                .build()?,
        };
        Ok(Self {
            egress: Egress::new(http, server_url)?,
            config,
            server_url: server_url.to_owned(),
            first_issuer: OnceLock::new(),
            slot: RwLock::new(TokenSlot::default()),
            loaded: tokio::sync::OnceCell::new(),
            flow: tokio::sync::Mutex::new(FlowState::default()),
            clock: PauseClock::default(),
            proof_key: RwLock::new(None),
            as_nonces: NonceBook::default(),
            rs_nonces: NonceBook::default(),
        })
    }

    /// Sends a request built by `build` (given the `Authorization` value, if any); signs in,
    /// refreshes or steps up and sends it again as the server's answers require. With a
    /// DPoP-bound token every attempt carries a fresh proof, and a `use_dpop_nonce` challenge
    /// is answered once with the server's nonce.
    pub(crate) async fn send<F>(&self, build: F) -> Result<Response, ClientError>
    where
        F: Fn(Option<&HeaderValue>) -> Result<RequestBuilder, ClientError>,
    {
        let mut signed_in = false;
        let mut refreshed = false;
        let mut nonce_retried = false;
        let mut step_ups = 0u32;
        for _ in 0..MAX_SENDS {
            let (credentials, generation) = self.credentials().await?;
            let authorization = credentials.as_ref().and_then(Credentials::authorization);
            let request = build(authorization.as_ref())?;
            let (response, proved) = match credentials {
                Some(Credentials {
                    tokens,
                    key: Some(key),
                }) => (self.send_proved(request, &key, &tokens).await?, true),
                _ => (request.send().await?, false),
            };
            match response.status() {
                StatusCode::UNAUTHORIZED => {
                    let challenge = BearerChallenge::from_headers(response.headers());
                    if proved && challenge.wants_dpop_nonce() && !nonce_retried {
                        // RFC 9449 §9: once more with the nonce just learned (send_proved
                        // kept it); never a second time for the same request.
                        nonce_retried = true;
                        continue;
                    }
                    if signed_in {
                        return Err(AuthError::Unauthorized.into());
                    }
                    drop(response);
                    match self
                        .on_unauthorized(&challenge, generation, refreshed)
                        .await?
                    {
                        Recovery::Retry => {}
                        Recovery::Refreshed => refreshed = true,
                        Recovery::SignedIn => signed_in = true,
                    }
                }
                StatusCode::FORBIDDEN => {
                    let challenge = BearerChallenge::from_headers(response.headers());
                    if !challenge.is_insufficient_scope() {
                        return Ok(response);
                    }
                    drop(response);
                    match self
                        .on_insufficient_scope(&challenge, generation, step_ups)
                        .await?
                    {
                        Recovery::Retry => {}
                        Recovery::Refreshed | Recovery::SignedIn => {
                            step_ups += 1;
                            signed_in = true;
                        }
                    }
                }
                _ => return Ok(response),
            }
        }
        Err(AuthError::Unauthorized.into())
    }

    /// Sends `request` to the MCP server with a DPoP proof of `key` for it (its method and
    /// URL, `ath` of the token, the server's latest nonce), and remembers the nonce the
    /// response hands out.
    async fn send_proved(
        &self,
        request: RequestBuilder,
        key: &ProofKey,
        tokens: &StoredTokens,
    ) -> Result<Response, ClientError> {
        let (client, request) = request.build_split();
        let mut request = request?;
        let url = request.url().clone();
        let proof = key.proof(
            request.method().as_str(),
            &url,
            Some(&tokens.access_token),
            self.rs_nonces.get(&url),
        )?;
        request
            .headers_mut()
            .insert(crate::dpop::PROOF_HEADER, proof);
        let response = client.execute(request).await?;
        self.rs_nonces.learn(&url, response.headers());
        Ok(response)
    }

    /// The clock request time bounds exclude the user's time from.
    pub(crate) fn clock(&self) -> &PauseClock {
        &self.clock
    }

    /// The credential headers of a `method` request to `url` that is not retried (the
    /// handshake era's GET stream and session `DELETE`): `Authorization`, and a DPoP proof for
    /// a DPoP-bound token. Empty when there is no usable token.
    pub(crate) async fn credentials_for(&self, method: &Method, url: &Url) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let Ok((Some(credentials), _)) = self.credentials().await else {
            return headers;
        };
        let Some(authorization) = credentials.authorization() else {
            return headers;
        };
        if let Some(key) = &credentials.key {
            let nonce = self.rs_nonces.get(url);
            match key.proof(
                method.as_str(),
                url,
                Some(&credentials.tokens.access_token),
                nonce,
            ) {
                Ok(proof) => {
                    headers.insert(crate::dpop::PROOF_HEADER, proof);
                }
                // A DPoP token without its proof would be refused: send neither.
                Err(_) => return headers,
            }
        }
        headers.insert(AUTHORIZATION, authorization);
        headers
    }

    /// The current token (refreshed first when it is about to expire and can be), and its
    /// generation.
    async fn credentials(&self) -> Result<(Option<Credentials>, u64), AuthError> {
        self.loaded
            .get_or_try_init(|| async {
                if let Some(tokens) = self.config.store.load_tokens(&self.server_url).await?
                    && let Some(credentials) = self.credentials_of(tokens)
                {
                    let mut slot = write(&self.slot);
                    slot.tokens = Some(credentials);
                    slot.generation += 1;
                }
                Ok::<_, AuthError>(())
            })
            .await?;
        let (credentials, generation) = self.snapshot();
        let margin = self.config.refresh_margin.as_secs();
        let Some(credentials) = credentials else {
            return Ok((None, generation));
        };
        let tokens = Arc::clone(&credentials.tokens);
        if !tokens.expires_within(now(), margin) {
            return Ok((Some(credentials), generation));
        }
        if tokens.refresh_token.is_some() {
            let flow = self.flow.lock().await;
            if self.snapshot().1 == generation
                && let Some(discovered) = flow.discovered.clone()
                && discovered.issuer == tokens.issuer
                && discovered.resource == tokens.resource
            {
                match self.refresh(&discovered, &tokens).await {
                    Ok(fresh) => self.install(fresh).await?,
                    Err(error) => {
                        tracing::debug!(%error, "refreshing the access token failed");
                        self.clear_tokens().await?;
                    }
                }
            }
            drop(flow);
            let (credentials, generation) = self.snapshot();
            return Ok((
                credentials.filter(|c| !c.tokens.expires_within(now(), 0)),
                generation,
            ));
        }
        // Not refreshable: the margin is for refreshing ahead of time, so the token serves until
        // it really expires (a token living less than the margin would otherwise never be
        // used). Expired: the server's 401 starts a new authorization.
        if tokens.expires_within(now(), 0) {
            return Ok((None, generation));
        }
        Ok((Some(credentials), generation))
    }

    /// Stored tokens as requests present them. A DPoP-bound token comes with its key, which
    /// becomes the client's key (its refresh token is bound to it too); one whose key is
    /// missing or unusable is not presented at all (as a bearer token it would be refused,
    /// and would show the token to whoever accepts bearer tokens).
    fn credentials_of(&self, tokens: StoredTokens) -> Option<Credentials> {
        if !tokens.is_dpop() {
            return Some(Credentials {
                tokens: Arc::new(tokens),
                key: None,
            });
        }
        let stored = tokens.dpop_key.as_deref()?;
        let current = read(&self.proof_key).clone();
        let key = match current.filter(|key| key.pkcs8() == stored) {
            Some(key) => key,
            None => {
                let Some(key) = ProofKey::restore(stored) else {
                    tracing::debug!("the stored DPoP key is unusable; signing in again");
                    return None;
                };
                let key = Arc::new(key);
                *write(&self.proof_key) = Some(Arc::clone(&key));
                key
            }
        };
        Some(Credentials {
            tokens: Arc::new(tokens),
            key: Some(key),
        })
    }

    /// The key for a DPoP token request (made on first use).
    pub(super) fn proof_key(&self) -> Result<Arc<ProofKey>, AuthError> {
        if let Some(key) = read(&self.proof_key).clone() {
            return Ok(key);
        }
        let mut slot = write(&self.proof_key);
        if let Some(key) = slot.clone() {
            return Ok(key);
        }
        let key = Arc::new(ProofKey::generate()?);
        tracing::debug!(jkt = key.thumbprint(), "made a DPoP key");
        *slot = Some(Arc::clone(&key));
        Ok(key)
    }

    fn snapshot(&self) -> (Option<Credentials>, u64) {
        let slot = read(&self.slot);
        (slot.tokens.clone(), slot.generation)
    }

    /// The current tokens.
    fn current_tokens(&self) -> Option<Arc<StoredTokens>> {
        read(&self.slot)
            .tokens
            .as_ref()
            .map(|c| Arc::clone(&c.tokens))
    }

    async fn install(&self, tokens: StoredTokens) -> Result<(), AuthError> {
        self.config
            .store
            .save_tokens(&self.server_url, tokens.clone())
            .await?;
        let credentials = self.credentials_of(tokens);
        let mut slot = write(&self.slot);
        slot.tokens = credentials;
        slot.generation += 1;
        Ok(())
    }

    async fn clear_tokens(&self) -> Result<(), AuthError> {
        self.config.store.remove_tokens(&self.server_url).await?;
        let mut slot = write(&self.slot);
        slot.tokens = None;
        slot.generation += 1;
        Ok(())
    }

    /// A 401: rediscover, then refresh or authorize.
    async fn on_unauthorized(
        &self,
        challenge: &BearerChallenge,
        generation: u64,
        refreshed: bool,
    ) -> Result<Recovery, AuthError> {
        let mut flow = self.flow.lock().await;
        if self.snapshot().1 != generation {
            return Ok(Recovery::Retry);
        }
        let discovered = Arc::new(
            self.discover(challenge.resource_metadata.as_deref())
                .await?,
        );
        flow.discovered = Some(Arc::clone(&discovered));
        let mut current = self.current_tokens();
        if let Some(tokens) = &current
            && (tokens.issuer != discovered.issuer || tokens.resource != discovered.resource)
        {
            // Another authorization server (or resource) now: its tokens are worthless here
            // and must not be presented; neither may its refresh token.
            tracing::debug!(old = %tokens.issuer, new = %discovered.issuer, "the authorization server changed");
            self.clear_tokens().await?;
            flow.requested_scope = None;
            current = None;
        }
        if let Some(tokens) = current
            && tokens.refresh_token.is_some()
            && !refreshed
        {
            match self.refresh(&discovered, &tokens).await {
                Ok(fresh) => {
                    self.install(fresh).await?;
                    return Ok(Recovery::Refreshed);
                }
                Err(error) => tracing::debug!(%error, "refresh failed; authorizing again"),
            }
        }
        // With the same authorization server, what was asked for before (step-ups included)
        // is asked for again: losing a token must not lose its scopes.
        let scope = match (
            self.initial_scope(challenge.scope.as_deref(), &discovered),
            flow.requested_scope.as_deref(),
        ) {
            (Some(scope), Some(before)) => Some(union_scopes([Some(before), Some(scope.as_str())])),
            (scope, _) => scope,
        };
        let tokens = self.sign_in(&discovered, scope.clone()).await?;
        self.install(tokens).await?;
        flow.requested_scope = scope;
        Ok(Recovery::SignedIn)
    }

    /// A 403 `insufficient_scope`: authorize again for the union of scopes.
    async fn on_insufficient_scope(
        &self,
        challenge: &BearerChallenge,
        generation: u64,
        step_ups: u32,
    ) -> Result<Recovery, AuthError> {
        let mut flow = self.flow.lock().await;
        if self.snapshot().1 != generation {
            return Ok(Recovery::Retry);
        }
        let challenged = challenge.scope.clone().unwrap_or_default();
        let current = self.current_tokens();
        let granted: Vec<&str> = current
            .as_deref()
            .map(|t| t.scopes().collect())
            .unwrap_or_default();
        let nothing_new = challenged.split_whitespace().all(|s| granted.contains(&s));
        if nothing_new || step_ups >= self.config.max_step_ups {
            // Asking again for what was granted would loop: the server wants something this
            // client cannot obtain.
            return Err(AuthError::InsufficientScope { scope: challenged });
        }
        let discovered = match &flow.discovered {
            Some(discovered) => Arc::clone(discovered),
            None => {
                let discovered = Arc::new(
                    self.discover(challenge.resource_metadata.as_deref())
                        .await?,
                );
                flow.discovered = Some(Arc::clone(&discovered));
                discovered
            }
        };
        let union = union_scopes([
            flow.requested_scope.as_deref(),
            current.as_deref().and_then(|t| t.scope.as_deref()),
            Some(challenged.as_str()),
        ]);
        let scope = self.with_offline_access(Some(union), &discovered);
        let tokens = self.sign_in(&discovered, scope.clone()).await?;
        self.install(tokens).await?;
        flow.requested_scope = scope;
        Ok(Recovery::SignedIn)
    }

    /// The scopes of a first authorization: the challenge's, else the protected resource's
    /// `scopes_supported`, else none (the authorization server's default).
    fn initial_scope(&self, challenged: Option<&str>, discovered: &Discovered) -> Option<String> {
        let base = challenged
            .filter(|s| !s.trim().is_empty())
            .map(|s| union_scopes([Some(s)]))
            .or_else(|| {
                discovered
                    .resource_scopes
                    .as_ref()
                    .filter(|scopes| !scopes.is_empty())
                    .map(|scopes| scopes.join(" "))
            });
        self.with_offline_access(base.filter(|s| !s.is_empty()), discovered)
    }

    /// Adds `offline_access` (a refresh token) when wanted and listed by the authorization
    /// server, to a non-empty scope (alone it would replace the server's default scope).
    fn with_offline_access(
        &self,
        scope: Option<String>,
        discovered: &Discovered,
    ) -> Option<String> {
        let scope = scope?;
        let wanted = self.config.refresh_tokens
            && matches!(self.config.grant, Grant::AuthorizationCode(_))
            && discovered.metadata.lists_scope("offline_access")
            && !scope.split_whitespace().any(|s| s == "offline_access");
        Some(if wanted {
            format!("{scope} offline_access")
        } else {
            scope
        })
    }
}

/// Space-separated scopes, merged in order without duplicates.
fn union_scopes<'a>(parts: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut merged: Vec<&str> = Vec::new();
    for scope in parts.into_iter().flatten().flat_map(str::split_whitespace) {
        if !merged.contains(&scope) {
            merged.push(scope);
        }
    }
    merged.join(" ")
}

/// A redirect URI must be loopback `http` or `https` (or a private-use scheme of a native
/// app, which has no host).
fn check_redirect_uri(uri: &str) -> Result<(), AuthError> {
    let parsed = Url::parse(uri)
        .map_err(|_| AuthError::InvalidConfig(format!("the redirect URI {uri:?} is not a URL")))?;
    let ok = match parsed.scheme() {
        "https" => true,
        "http" => is_loopback(&parsed),
        // A private-use scheme (RFC 8252 §7.1), e.g. `com.example.app:/callback`.
        scheme => scheme.contains('.') && parsed.host_str().is_none_or(str::is_empty),
    };
    if ok {
        Ok(())
    } else {
        Err(AuthError::InvalidConfig(format!(
            "the redirect URI {uri:?} must be https or loopback"
        )))
    }
}

/// Reads a response body of at most [`MAX_DOCUMENT`] bytes.
async fn read_limited(response: &mut Response) -> Result<Vec<u8>, AuthError> {
    crate::http::body::read_limited(response, MAX_DOCUMENT)
        .await
        .map_err(|error| match error {
            crate::http::body::BodyError::Transport(error) => error.into(),
            too_large @ crate::http::body::BodyError::TooLarge(_) => {
                AuthError::Discovery(too_large.to_string())
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_union_in_order() {
        assert_eq!(
            union_scopes([
                Some("mcp:basic"),
                Some("mcp:basic offline_access"),
                Some("mcp:write")
            ]),
            "mcp:basic offline_access mcp:write"
        );
        assert_eq!(union_scopes([None, Some("  a  b ")]), "a b");
    }

    #[test]
    fn redirect_uris() {
        assert!(check_redirect_uri("http://127.0.0.1:1234/callback").is_ok());
        assert!(check_redirect_uri("http://localhost:3000/callback").is_ok());
        assert!(check_redirect_uri("https://app.example.com/cb").is_ok());
        assert!(check_redirect_uri("com.example.app:/callback").is_ok());
        assert!(check_redirect_uri("http://app.example.com/cb").is_err());
        assert!(check_redirect_uri("javascript:alert(1)").is_err());
    }
}
