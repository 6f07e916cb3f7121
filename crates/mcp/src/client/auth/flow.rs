//! The OAuth client behind the HTTP transport: which token a request carries, and what a 401
//! or a 403 `insufficient_scope` sets in motion (see the module docs of `auth`).

use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::header::{ACCEPT, HeaderValue};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use serde::Deserialize;
use serde_json::Value;

use super::challenge::BearerChallenge;
use super::discovery::{
    ResourceMetadata, ServerMetadata, canonical_resource, is_loopback, resource_covers,
    resource_metadata_urls, secure_url, server_metadata_urls,
};
use super::egress::{Egress, REQUEST_WAIT, request_error};
use super::error::AuthError;
use super::handler::{AuthorizationHandler, AuthorizationRequest};
use super::pause::PauseClock;
use super::pkce::{Pkce, constant_time_eq, random_token};
use super::store::StoredTokens;
use super::{AssertionRequest, Grant, IssuerBinding, OAuthConfig};
use crate::client::error::ClientError;
use crate::sync::{read, write};

mod endpoints;

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
    tokens: Option<Arc<StoredTokens>>,
    generation: u64,
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

/// A token endpoint response (RFC 6749 §5.1).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default, deserialize_with = "number_or_string")]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

fn number_or_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
        })
    }

    /// Sends a request built by `build` (given the `Authorization` value, if any); signs in,
    /// refreshes or steps up and sends it again as the server's answers require.
    pub(crate) async fn send<F>(&self, build: F) -> Result<Response, ClientError>
    where
        F: Fn(Option<&HeaderValue>) -> Result<RequestBuilder, ClientError>,
    {
        let mut signed_in = false;
        let mut refreshed = false;
        let mut step_ups = 0u32;
        for _ in 0..MAX_SENDS {
            let (authorization, generation) = self.authorization().await?;
            let response = build(authorization.as_ref())?.send().await?;
            match response.status() {
                StatusCode::UNAUTHORIZED => {
                    if signed_in {
                        return Err(AuthError::Unauthorized.into());
                    }
                    let challenge = BearerChallenge::from_headers(response.headers());
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

    /// The clock request time bounds exclude the user's time from.
    pub(crate) fn clock(&self) -> &PauseClock {
        &self.clock
    }

    /// The `Authorization` value for requests that are not retried (the handshake era's GET
    /// stream and session `DELETE`).
    pub(crate) async fn current_authorization(&self) -> Option<HeaderValue> {
        self.authorization().await.ok().and_then(|(value, _)| value)
    }

    /// The current token as an `Authorization` value (refreshed first when it is about to
    /// expire and can be), and its generation.
    async fn authorization(&self) -> Result<(Option<HeaderValue>, u64), AuthError> {
        self.loaded
            .get_or_try_init(|| async {
                if let Some(tokens) = self.config.store.load_tokens(&self.server_url).await? {
                    let mut slot = write(&self.slot);
                    slot.tokens = Some(Arc::new(tokens));
                    slot.generation += 1;
                }
                Ok::<_, AuthError>(())
            })
            .await?;
        let (tokens, generation) = self.snapshot();
        let margin = self.config.refresh_margin.as_secs();
        let Some(tokens) = tokens else {
            return Ok((None, generation));
        };
        if !tokens.expires_within(now(), margin) {
            return Ok((bearer(&tokens), generation));
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
            let (tokens, generation) = self.snapshot();
            return Ok((
                tokens
                    .filter(|t| !t.expires_within(now(), 0))
                    .and_then(|t| bearer(&t)),
                generation,
            ));
        }
        // Expired and not refreshable now: the server's 401 starts a new authorization.
        Ok((None, generation))
    }

    fn snapshot(&self) -> (Option<Arc<StoredTokens>>, u64) {
        let slot = read(&self.slot);
        (slot.tokens.clone(), slot.generation)
    }

    async fn install(&self, tokens: StoredTokens) -> Result<(), AuthError> {
        self.config
            .store
            .save_tokens(&self.server_url, tokens.clone())
            .await?;
        let mut slot = write(&self.slot);
        slot.tokens = Some(Arc::new(tokens));
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
        let mut current = self.snapshot().0;
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
        let current = self.snapshot().0;
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

    /// Protected resource metadata, then the authorization server's.
    async fn discover(&self, challenge_url: Option<&str>) -> Result<Discovered, AuthError> {
        let mut resource_metadata = None;
        let mut refused = None;
        for url in resource_metadata_urls(challenge_url, &self.server_url) {
            let fetched = match self
                .egress
                .resource_metadata_client(&url, self.config.cross_origin_resource_metadata)
            {
                Ok((client, url)) => self.fetch_json::<ResourceMetadata>(client, &url).await,
                Err(error) => {
                    refused.get_or_insert(error);
                    continue;
                }
            };
            // An unreachable location is one more that has nothing: try the next.
            match fetched {
                Ok(Some(document)) if !document.authorization_servers.is_empty() => {
                    resource_metadata = Some(document);
                    break;
                }
                Ok(_) => tracing::debug!(%url, "no usable protected resource metadata"),
                Err(error @ AuthError::ForbiddenUrl { .. }) => {
                    refused.get_or_insert(error);
                }
                Err(error) => {
                    tracing::debug!(%url, %error, "protected resource metadata unreachable");
                }
            }
        }
        let Some(prm) = resource_metadata else {
            // A location that was not fetched explains more than "nothing found".
            return Err(refused.unwrap_or_else(|| {
                AuthError::Discovery(format!(
                    "no protected resource metadata for {}",
                    self.server_url
                ))
            }));
        };
        let resource = match &prm.resource {
            Some(resource) if resource_covers(resource, &self.server_url) => resource.clone(),
            Some(resource) => {
                return Err(AuthError::ResourceMismatch {
                    resource: resource.clone(),
                    server: self.server_url.clone(),
                });
            }
            None => canonical_resource(&self.server_url),
        };
        let allowed: Vec<&String> = prm
            .authorization_servers
            .iter()
            .filter(|issuer| self.may_sign_in_with(issuer))
            .collect();
        if allowed.is_empty() {
            return Err(AuthError::IssuerNotAllowed {
                expected: self.bound_issuer().unwrap_or_default(),
                named: prm.authorization_servers,
            });
        }
        let mut first_error = None;
        for issuer in allowed {
            match self.server_metadata(issuer).await {
                Ok(metadata) => {
                    self.first_issuer.get_or_init(|| issuer.clone());
                    return Ok(Discovered {
                        resource,
                        issuer: issuer.clone(),
                        metadata,
                        resource_scopes: prm.scopes_supported,
                    });
                }
                Err(error) => {
                    tracing::debug!(%issuer, %error, "authorization server unusable");
                    first_error.get_or_insert(error);
                }
            }
        }
        Err(first_error
            .unwrap_or_else(|| AuthError::Discovery("no authorization server".to_owned())))
    }

    /// Whether `binding` names `issuer`.
    fn binds(&self, binding: &IssuerBinding, issuer: &str) -> bool {
        match binding {
            IssuerBinding::Issuer(bound) => bound == issuer,
            IssuerBinding::FirstDiscovered => self.first_issuer.get().is_some_and(|f| f == issuer),
        }
    }

    /// Whether sign-in may use the authorization server `issuer` ([`OAuthConfig::issuer`]).
    fn may_sign_in_with(&self, issuer: &str) -> bool {
        match &self.config.issuer {
            None => true,
            Some(IssuerBinding::FirstDiscovered) if self.first_issuer.get().is_none() => true,
            Some(binding) => self.binds(binding, issuer),
        }
    }

    /// The issuer sign-in is bound to, when it is known.
    fn bound_issuer(&self) -> Option<String> {
        match self.config.issuer.as_ref()? {
            IssuerBinding::Issuer(issuer) => Some(issuer.clone()),
            IssuerBinding::FirstDiscovered => self.first_issuer.get().cloned(),
        }
    }

    /// Whether the user named the authorization server `issuer` (so that it may be anywhere,
    /// a private network included).
    fn user_named(&self, issuer: &str) -> bool {
        let named =
            |binding: &IssuerBinding| matches!(binding, IssuerBinding::Issuer(i) if i == issuer);
        self.config.issuer.as_ref().is_some_and(named)
            || self
                .config
                .pre_registered
                .iter()
                .any(|(binding, _)| named(binding))
    }

    /// The client to request `url` of the authorization server `issuer` with.
    fn client_for_issuer(&self, url: &Url, issuer: &str) -> Result<&reqwest::Client, AuthError> {
        self.egress.client_for(url, self.user_named(issuer))
    }

    /// The metadata of the authorization server `issuer`, its `issuer` checked.
    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        secure_url(issuer, self.config.allow_insecure_http)?;
        for url in server_metadata_urls(issuer) {
            let Ok(parsed) = Url::parse(&url) else {
                continue;
            };
            let client = self.client_for_issuer(&parsed, issuer)?;
            if let Some(metadata) = self.fetch_json::<ServerMetadata>(client, &parsed).await? {
                if metadata.issuer != issuer {
                    return Err(AuthError::IssuerMismatch {
                        expected: issuer.to_owned(),
                        found: metadata.issuer,
                        url,
                    });
                }
                return Ok(metadata);
            }
        }
        Err(AuthError::Discovery(format!(
            "no authorization server metadata for {issuer}"
        )))
    }

    /// `GET`s a JSON document; `None` when the answer is not a 200 with such a document.
    async fn fetch_json<T: serde::de::DeserializeOwned>(
        &self,
        client: &reqwest::Client,
        url: &Url,
    ) -> Result<Option<T>, AuthError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Ok(None);
        }
        let mut response = client
            .get(url.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| request_error(e, url))?;
        if response.status() != StatusCode::OK {
            return Ok(None);
        }
        let body = read_limited(&mut response).await?;
        Ok(serde_json::from_slice(&body).ok())
    }

    /// Obtains tokens with the configured grant.
    async fn sign_in(
        &self,
        discovered: &Discovered,
        scope: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        match &self.config.grant {
            Grant::AuthorizationCode(handler) => {
                self.authorization_code(handler.as_ref(), discovered, scope)
                    .await
            }
            Grant::ClientCredentials => {
                let client = self.client_for(discovered, None, scope.as_deref()).await?;
                let mut form = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    ("resource", discovered.resource.clone()),
                ];
                if let Some(scope) = &scope {
                    form.push(("scope", scope.clone()));
                }
                let response = self.token_request(discovered, &client, form).await?;
                Ok(tokens_from(response, discovered, scope, None))
            }
            Grant::IdentityAssertion(provider) => {
                let client = self.client_for(discovered, None, scope.as_deref()).await?;
                let assertion = {
                    let _user_time = self.clock.pause();
                    provider
                        .assertion(AssertionRequest {
                            audience: discovered.issuer.clone(),
                            resource: discovered.resource.clone(),
                            scope: scope.clone(),
                        })
                        .await?
                };
                let mut form = vec![
                    (
                        "grant_type",
                        "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
                    ),
                    ("assertion", assertion),
                    ("resource", discovered.resource.clone()),
                ];
                if let Some(scope) = &scope {
                    form.push(("scope", scope.clone()));
                }
                let response = self.token_request(discovered, &client, form).await?;
                Ok(tokens_from(response, discovered, scope, None))
            }
        }
    }

    /// The authorization code flow with PKCE.
    async fn authorization_code(
        &self,
        handler: &dyn AuthorizationHandler,
        discovered: &Discovered,
        scope: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let metadata = &discovered.metadata;
        if !metadata.supports_s256() {
            return Err(AuthError::PkceUnsupported {
                issuer: discovered.issuer.clone(),
            });
        }
        let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Discovery(format!(
                "{} has no authorization_endpoint",
                discovered.issuer
            ))
        })?;
        let mut url = secure_url(endpoint, self.config.allow_insecure_http)?;
        let public_only = self
            .egress
            .hand_over(&url, self.user_named(&discovered.issuer))
            .await?;
        let redirect_uri = handler.redirect_uri();
        let client = self
            .client_for(discovered, Some(&redirect_uri), scope.as_deref())
            .await?;
        let pkce = Pkce::new()?;
        let state = random_token()?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &discovered.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
                if scope.split_whitespace().any(|s| s == "offline_access") {
                    // OpenID Connect issues refresh tokens for offline_access after consent.
                    query.append_pair("prompt", "consent");
                }
            }
        }
        let request = AuthorizationRequest {
            url,
            redirect_uri: redirect_uri.clone(),
            state: state.clone(),
            issuer: discovered.issuer.clone(),
            scope: scope.clone(),
            public_only,
        };
        let response = {
            let _user_time = self.clock.pause();
            handler.authorize(request).await?
        };
        // RFC 9207 before anything else in the response: from another issuer, even an error
        // is not to be acted on.
        match &response.iss {
            Some(iss) if iss != &discovered.issuer => {
                return Err(AuthError::ResponseIssuer {
                    expected: discovered.issuer.clone(),
                    found: Some(iss.clone()),
                });
            }
            None if metadata.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(AuthError::ResponseIssuer {
                    expected: discovered.issuer.clone(),
                    found: None,
                });
            }
            _ => {}
        }
        if let Some(error) = response.error {
            return Err(AuthError::Denied {
                error,
                description: response.error_description,
            });
        }
        if !response
            .state
            .as_deref()
            .is_some_and(|s| constant_time_eq(s, &state))
        {
            return Err(AuthError::StateMismatch);
        }
        let code = response.code.ok_or(AuthError::MissingCode)?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier),
            ("resource", discovered.resource.clone()),
        ];
        let response = self.token_request(discovered, &client, form).await?;
        Ok(tokens_from(response, discovered, scope, None))
    }

    /// A refresh token grant for `tokens`.
    async fn refresh(
        &self,
        discovered: &Discovered,
        tokens: &StoredTokens,
    ) -> Result<StoredTokens, AuthError> {
        let refresh_token = tokens
            .refresh_token
            .clone()
            .ok_or_else(|| AuthError::Token {
                status: 0,
                error: Some("no refresh token".to_owned()),
                description: None,
            })?;
        let redirect_uri = match &self.config.grant {
            Grant::AuthorizationCode(handler) => Some(handler.redirect_uri()),
            Grant::ClientCredentials | Grant::IdentityAssertion(_) => None,
        };
        let client = self
            .client_for(discovered, redirect_uri.as_deref(), None)
            .await?;
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
            ("resource", discovered.resource.clone()),
        ];
        let response = self.token_request(discovered, &client, form).await?;
        Ok(tokens_from(response, discovered, None, Some(tokens)))
    }
}

/// Stored tokens from a token response (a refresh keeps what the response leaves out).
fn tokens_from(
    response: TokenResponse,
    discovered: &Discovered,
    requested_scope: Option<String>,
    previous: Option<&StoredTokens>,
) -> StoredTokens {
    StoredTokens {
        access_token: response.access_token,
        token_type: "Bearer".to_owned(),
        refresh_token: response
            .refresh_token
            .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
        expires_at: response.expires_in.map(|s| now().saturating_add(s)),
        scope: response
            .scope
            .or(requested_scope)
            .or_else(|| previous.and_then(|p| p.scope.clone())),
        issuer: discovered.issuer.clone(),
        resource: discovered.resource.clone(),
    }
}

/// `Authorization: Bearer …`, marked sensitive so that it is never logged.
fn bearer(tokens: &StoredTokens) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", tokens.access_token)).ok()?;
    value.set_sensitive(true);
    Some(value)
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

    #[test]
    fn expires_in_number_or_string() {
        let a: TokenResponse =
            serde_json::from_str(r#"{"access_token":"x","token_type":"bearer","expires_in":"60"}"#)
                .unwrap();
        assert_eq!(a.expires_in, Some(60));
        let b: TokenResponse =
            serde_json::from_str(r#"{"access_token":"x","token_type":"Bearer","expires_in":3600}"#)
                .unwrap();
        assert_eq!(b.expires_in, Some(3600));
    }
}
