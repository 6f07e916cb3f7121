//! OAuth 2.1 for the HTTP client: a [`Client`](super::Client) configured with
//! [`ClientBuilder::oauth`](super::ClientBuilder::oauth) signs in by itself when the server asks.
//!
//! # How a client signs in
//!
//! Every HTTP request carries the current access token in `Authorization: Bearer …` (and
//! nowhere else). When the server answers **401**, the client:
//!
//! 1. **discovers** the protected resource metadata (RFC 9728): the `resource_metadata` URL of
//!    the `WWW-Authenticate` challenge, else `/.well-known/oauth-protected-resource{path}`,
//!    else the root well-known URL. Its `resource` must be this server (same origin, the
//!    server's path at or below the resource's), or the client stops: a token is never
//!    requested for another resource;
//! 2. fetches the **authorization server metadata** in the specification's order (RFC 8414
//!    path insertion, OpenID Connect path insertion, OpenID Connect path appending; for an
//!    issuer without a path, RFC 8414 then OpenID Connect), and refuses a document whose
//!    `issuer` is not exactly the issuer the URL was built from, and a server that does not
//!    advertise PKCE `S256`;
//! 3. **registers**, in this order: credentials given with [`OAuthConfig::pre_registered`], an
//!    earlier registration with that issuer from the [`TokenStore`], a client ID metadata
//!    document ([`OAuthConfig::client_metadata_url`]) when the server supports them, then
//!    dynamic client registration (with `application_type`). Registrations are kept per
//!    issuer and never presented to another authorization server: when the protected resource
//!    moves to a new authorization server the client registers again;
//! 4. **authorizes** with PKCE `S256`, a random `state`, the `resource` indicator (RFC 8707)
//!    and the scopes of the challenge (else the metadata's `scopes_supported`, else none; plus
//!    `offline_access` when the authorization server lists it), through the
//!    [`AuthorizationHandler`]; the response's `iss` is checked (RFC 9207: exact string
//!    comparison; required when the server advertises it; an `error` in a response whose `iss`
//!    does not match is not acted on), then `state`;
//! 5. exchanges the code at the token endpoint (`client_secret_basic`, `client_secret_post` or
//!    `none`, as registered or as the metadata allows; `resource` again), stores the tokens
//!    in the [`TokenStore`], and **retries** the request.
//!
//! An expired token is **refreshed** before it is sent (and once more on a 401) when a refresh
//! token was issued. A **403** with `error="insufficient_scope"` triggers a step-up: a new
//! authorization for the union of the scopes requested so far, those granted and those
//! challenged — unless the challenged scopes were already granted, or
//! [`OAuthConfig::max_step_ups`] step-ups were made for the request; then the call fails with
//! [`AuthError::InsufficientScope`].
//!
//! The time the [`AuthorizationHandler`] takes (the user in the browser) does not count
//! against [`ClientBuilder::request_timeout`](super::ClientBuilder::request_timeout) or the
//! `server/discover` probe timeout; it does count against
//! [`ClientBuilder::loop_timeout`](super::ClientBuilder::loop_timeout).
//!
//! # Handlers
//!
//! * [`LoopbackRedirect`]: opens the browser (through a callback, e.g. [`open_in_browser`]) and
//!   receives the redirect on `http://127.0.0.1:<port>/callback`.
//! * [`RedirectFetcher`]: no user; follows the authorization server's redirect itself (tests,
//!   servers that approve at once).
//! * [`handler_fn`]: anything else (an embedded web view, a device prompt…).
//!
//! # Example
//!
//! ```no_run
//! use mcp::client::Client;
//! use mcp::client::auth::{LoopbackRedirect, OAuthConfig, open_in_browser};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let redirect = LoopbackRedirect::bind(|url| open_in_browser(url)).await?;
//! let client = Client::builder()
//!     .oauth(OAuthConfig::new(redirect).client_name("notes"))
//!     .connect_http("https://mcp.example.com/mcp")
//!     .await?;
//! let tools = client.list_tools().await?;
//! # drop(tools); Ok(()) }
//! ```

mod challenge;
mod discovery;
mod error;
mod flow;
mod handler;
mod loopback;
mod pause;
mod pkce;
mod store;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

pub use error::AuthError;
pub use handler::{
    AuthorizationHandler, AuthorizationRequest, AuthorizationResponse, RedirectFetcher, handler_fn,
};
pub use loopback::{LoopbackRedirect, open_in_browser};
pub use store::{ClientRegistration, FileTokenStore, InMemoryTokenStore, StoredTokens, TokenStore};

pub(crate) use flow::OAuthClient;
pub(crate) use pause::{PauseClock, bounded};

/// The kind of application, sent as `application_type` in dynamic client registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplicationType {
    /// Runs on the user's device (loopback or custom-scheme redirect URIs).
    Native,
    /// A web application (`https` redirect URIs).
    Web,
}

impl ApplicationType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Web => "web",
        }
    }
}

/// How the client obtains tokens.
#[derive(Clone)]
pub(crate) enum Grant {
    /// Authorization code with PKCE, through a handler.
    AuthorizationCode(Arc<dyn AuthorizationHandler>),
    /// Client credentials (machine to machine; the OAuth client credentials extension).
    ClientCredentials,
    /// A JWT authorization grant (RFC 7523) from an identity assertion, e.g. the ID-JAG of
    /// enterprise-managed authorization.
    IdentityAssertion(Arc<dyn AssertionProvider>),
}

/// What an [`AssertionProvider`] is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AssertionRequest {
    /// The authorization server the assertion is for (its issuer identifier: the `audience`
    /// of a token exchange).
    pub audience: String,
    /// The resource indicator of the MCP server.
    pub resource: String,
    /// The scopes about to be requested, if any.
    pub scope: Option<String>,
}

/// Produces the JWT authorization grant (RFC 7523) the client presents at the token endpoint
/// with the `urn:ietf:params:oauth:grant-type:jwt-bearer` grant — for enterprise-managed
/// authorization (SEP-990), an identity assertion JWT authorization grant (ID-JAG) obtained
/// from the enterprise identity provider by an RFC 8693 token exchange.
pub trait AssertionProvider: Send + Sync + 'static {
    /// The assertion for `request`.
    fn assertion<'a>(
        &'a self,
        request: AssertionRequest,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
}

impl<F, Fut> AssertionProvider for F
where
    F: Fn(AssertionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, AuthError>> + Send + 'static,
{
    fn assertion<'a>(
        &'a self,
        request: AssertionRequest,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(self(request))
    }
}

/// A signing key for `private_key_jwt` client authentication (RFC 7523).
#[derive(Clone)]
pub(crate) struct AssertionKey {
    pub(crate) key: jsonwebtoken::EncodingKey,
    pub(crate) algorithm: jsonwebtoken::Algorithm,
}

/// How a [`Client`](super::Client) signs in to OAuth-protected servers; see the [module
/// docs](self).
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) grant: Grant,
    pub(crate) client_name: String,
    pub(crate) client_uri: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) pre_registered: Vec<(Option<String>, ClientRegistration)>,
    pub(crate) application_type: Option<ApplicationType>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) refresh_tokens: bool,
    pub(crate) max_step_ups: u32,
    pub(crate) allow_insecure_http: bool,
    pub(crate) http: Option<reqwest::Client>,
    pub(crate) refresh_margin: Duration,
    pub(crate) assertion_key: Option<AssertionKey>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::AuthorizationCode(handler) => {
                format!("authorization_code ({})", handler.redirect_uri())
            }
            Grant::ClientCredentials => "client_credentials".to_owned(),
            Grant::IdentityAssertion(_) => "jwt-bearer".to_owned(),
        };
        f.debug_struct("OAuthConfig")
            .field("grant", &grant)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("pre_registered", &self.pre_registered)
            .field("refresh_tokens", &self.refresh_tokens)
            .field("max_step_ups", &self.max_step_ups)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// Signs users in with the authorization code flow through `handler`. Tokens are kept in
    /// memory unless [`Self::token_store`] says otherwise.
    pub fn new(handler: impl AuthorizationHandler) -> Self {
        Self::with_grant(Grant::AuthorizationCode(Arc::new(handler)))
    }

    /// Signs in as the client itself (the client credentials grant, for machine-to-machine
    /// use; an MCP authorization extension) with pre-registered credentials:
    /// `client_secret_basic` / `client_secret_post` with a secret, or `private_key_jwt` with
    /// [`Self::private_key_jwt`].
    pub fn client_credentials(client: ClientRegistration) -> Self {
        let mut config = Self::with_grant(Grant::ClientCredentials);
        config.pre_registered.push((None, client));
        config.refresh_tokens = false;
        config
    }

    /// Signs in with a JWT authorization grant from `provider` (RFC 7523, e.g. the ID-JAG of
    /// enterprise-managed authorization), as the pre-registered `client`.
    pub fn identity_assertion(
        client: ClientRegistration,
        provider: impl AssertionProvider,
    ) -> Self {
        let mut config = Self::with_grant(Grant::IdentityAssertion(Arc::new(provider)));
        config.pre_registered.push((None, client));
        config.refresh_tokens = false;
        config
    }

    fn with_grant(grant: Grant) -> Self {
        Self {
            grant,
            client_name: "mcp-rust".to_owned(),
            client_uri: None,
            client_metadata_url: None,
            pre_registered: Vec::new(),
            application_type: None,
            store: Arc::new(InMemoryTokenStore::new()),
            refresh_tokens: true,
            max_step_ups: 2,
            allow_insecure_http: false,
            http: None,
            refresh_margin: Duration::from_secs(60),
            assertion_key: None,
        }
    }

    /// The `client_name` registered (default `mcp-rust`).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The `client_uri` registered (the application's home page).
    #[must_use]
    pub fn client_uri(mut self, uri: impl Into<String>) -> Self {
        self.client_uri = Some(uri.into());
        self
    }

    /// The URL of this client's metadata document (an `https` URL with a path, serving
    /// `client_id`, `client_name` and `redirect_uris`, with `client_id` equal to the URL). It
    /// is the client id at authorization servers that advertise
    /// `client_id_metadata_document_supported`, instead of dynamic registration.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Credentials registered beforehand, used with any authorization server. Prefer
    /// [`Self::pre_registered_for`]: credentials should not be presented to an authorization
    /// server they were not issued by.
    #[must_use]
    pub fn pre_registered(mut self, client: ClientRegistration) -> Self {
        self.pre_registered.push((None, client));
        self
    }

    /// Credentials registered beforehand with the authorization server `issuer`.
    #[must_use]
    pub fn pre_registered_for(
        mut self,
        issuer: impl Into<String>,
        client: ClientRegistration,
    ) -> Self {
        self.pre_registered.push((Some(issuer.into()), client));
        self
    }

    /// The `application_type` of dynamic registration (default: `web` for an `https` redirect
    /// URI on a non-loopback host, `native` otherwise).
    #[must_use]
    pub fn application_type(mut self, kind: ApplicationType) -> Self {
        self.application_type = Some(kind);
        self
    }

    /// Where tokens and registrations are kept (default: [`InMemoryTokenStore`]; see also
    /// [`FileTokenStore`]).
    #[must_use]
    pub fn token_store(self, store: impl TokenStore) -> Self {
        self.shared_token_store(Arc::new(store))
    }

    /// Where tokens and registrations are kept, shared with the caller.
    #[must_use]
    pub fn shared_token_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// Whether to ask for refresh tokens: register the `refresh_token` grant and request
    /// `offline_access` when the authorization server lists it (default true).
    #[must_use]
    pub fn refresh_tokens(mut self, ask: bool) -> Self {
        self.refresh_tokens = ask;
        self
    }

    /// How many scope step-ups one request may trigger (default 2).
    #[must_use]
    pub fn max_step_ups(mut self, step_ups: u32) -> Self {
        self.max_step_ups = step_ups;
        self
    }

    /// Accepts plain `http` authorization server URLs on non-loopback hosts (default false:
    /// `https` is required except on loopback). For development only.
    #[must_use]
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_insecure_http = allow;
        self
    }

    /// The HTTP client for metadata, registration and token requests (default: a new one
    /// that does not follow redirects, with a 30 s timeout).
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// How long before its expiry an access token is refreshed (default 60 s).
    #[must_use]
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.refresh_margin = margin;
        self
    }

    /// Authenticates at the token endpoint with a JWT assertion signed by this PEM key
    /// (`private_key_jwt`, RFC 7523) whenever the registration has no secret: `algorithm` is a
    /// JWS name such as `ES256` or `RS256`.
    ///
    /// # Errors
    /// The algorithm is unknown or asymmetric, or the key is not PEM (PKCS#8 for EC and
    /// Ed25519 keys).
    pub fn private_key_jwt(mut self, pem: &str, algorithm: &str) -> Result<Self, AuthError> {
        use jsonwebtoken::Algorithm as A;
        let algorithm: jsonwebtoken::Algorithm = algorithm.parse().map_err(|_| {
            AuthError::InvalidConfig(format!("unknown JWS algorithm {algorithm:?}"))
        })?;
        let der = pem_body(pem)
            .ok_or_else(|| AuthError::InvalidConfig("the private key is not PEM".to_owned()))?;
        let key = match algorithm {
            A::ES256 | A::ES384 => jsonwebtoken::EncodingKey::from_ec_der(&der),
            A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => {
                jsonwebtoken::EncodingKey::from_rsa_der(&der)
            }
            A::EdDSA => jsonwebtoken::EncodingKey::from_ed_der(&der),
            _ => {
                return Err(AuthError::InvalidConfig(format!(
                    "{algorithm:?} is not an asymmetric algorithm"
                )));
            }
        };
        self.assertion_key = Some(AssertionKey { key, algorithm });
        Ok(self)
    }
}

/// The DER inside a PEM document (the first `-----BEGIN …-----` block).
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let mut inside = false;
    let mut body = String::new();
    for line in pem.lines().map(str::trim) {
        if line.starts_with("-----BEGIN ") {
            inside = true;
        } else if line.starts_with("-----END ") {
            break;
        } else if inside {
            body.push_str(line);
        }
    }
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}
