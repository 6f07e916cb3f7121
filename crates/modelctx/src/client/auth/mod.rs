//! OAuth 2.1 for the HTTP client: a [`Client`](super::Client) configured with
//! [`ClientBuilder::oauth`](super::ClientBuilder::oauth) signs in by itself when the server asks.
//!
//! # How a client signs in
//!
//! Every HTTP request carries the current access token in `Authorization: Bearer …` (and
//! nowhere else). When the server answers **401**, the client:
//!
//! 1. **discovers** the protected resource metadata (RFC 9728): the `resource_metadata` URL of
//!    the `WWW-Authenticate` challenge when it is on the server's origin (see
//!    [`OAuthConfig::cross_origin_resource_metadata`]), else
//!    `/.well-known/oauth-protected-resource{path}`, else the root well-known URL. Its
//!    `resource` must be this server (same origin, the server's path at or below the
//!    resource's), or the client stops: a token is never requested for another resource;
//! 2. picks the first authorization server the metadata names that the client may use (with
//!    [`OAuthConfig::issuer`], that one only) and fetches its **metadata** in the
//!    specification's order (RFC 8414
//!    path insertion, OpenID Connect path insertion, OpenID Connect path appending; for an
//!    issuer without a path, RFC 8414 then OpenID Connect), and refuses a document whose
//!    `issuer` is not exactly the issuer the URL was built from, and a server that does not
//!    advertise PKCE `S256`;
//! 3. **registers**, in this order: credentials given with [`OAuthConfig::pre_registered_for`]
//!    for that issuer, an earlier registration with that issuer from the [`TokenStore`], a
//!    client ID metadata document ([`OAuthConfig::client_metadata_url`]) when the server supports them, then
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
//! # What the server cannot make the client do
//!
//! The MCP server chooses the authorization server, and the authorization server chooses its
//! endpoints; either may be hostile.
//!
//! * **Credentials stay with their issuer.** Pre-registered credentials (a client secret, a
//!   signing key's assertions) always name the authorization server they belong to
//!   ([`IssuerBinding`]); the client credentials and identity assertion grants sign in with
//!   that server only and fail with [`AuthError::IssuerNotAllowed`] otherwise. Registrations
//!   and tokens are kept per issuer.
//! * **No requests into the user's network.** URLs a peer names are fetched only on the MCP
//!   server's host, at public addresses (checked on every connection), or at authorization
//!   servers the user named; everything else fails with [`AuthError::ForbiddenUrl`]. No
//!   redirect is followed. See [`OAuthConfig::cross_origin_resource_metadata`].
//! * **No shell.** [`open_in_browser`] opens `http`/`https` URLs only, without a shell.
//! * **A private token file.** [`FileTokenStore`] writes through a fresh, exclusively created
//!   temporary file with mode 0600 (never through a name someone else could plant).
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
//! use modelctx::client::Client;
//! use modelctx::client::auth::{LoopbackRedirect, OAuthConfig, open_in_browser};
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
mod clock;
mod discovery;
mod egress;
/// `ClientError::Auth` wraps its errors: a leaf below the client's error type.
pub(super) mod error;
mod flow;
mod handler;
mod loopback;
mod pkce;
mod proof;
mod request_auth;
mod store;
mod token_endpoint_auth_method;
mod workload;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

pub use error::{AuthError, UrlRefusal};
pub use handler::{
    AuthorizationHandler, AuthorizationRequest, AuthorizationResponse, RedirectFetcher, handler_fn,
};
pub use loopback::{LoopbackRedirect, open_in_browser};
pub use store::{ClientRegistration, FileTokenStore, MemoryTokenStore, StoredTokens, TokenStore};
pub use token_endpoint_auth_method::TokenEndpointAuthMethod;
pub use workload::IdentityTokenSource;

/// The pause clock is the client's (request bounds use it too); signing in pauses it.
use super::pause;
pub(crate) use flow::OAuthClient;

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

/// When the client binds its tokens to a key with DPoP (RFC 9449), set with
/// [`OAuthConfig::dpop`]. (What a resource server accepts is its own setting,
/// `server::auth::DpopPolicy`.)
///
/// With DPoP, every token request carries a proof signed with the client's ES256 key, the
/// token the authorization server issues is bound to that key (`token_type` `DPoP`), and every
/// request to the MCP server carries `Authorization: DPoP <token>` with a fresh proof for that
/// request (its method, URL, and a hash of the token): a token that leaks is useless without
/// the key. The key is kept with the tokens in the [`TokenStore`] (see
/// [`StoredTokens::dpop_key`]), so a stored token stays usable in a later process. A server
/// that asks for a nonce (`use_dpop_nonce`) gets the request once more with it; the latest
/// nonce of each server is remembered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DpopUse {
    /// Never: bearer tokens only.
    Off,
    /// When the authorization server's metadata lists `ES256` in
    /// `dpop_signing_alg_values_supported` (the default). A server that answers a proof with a
    /// `Bearer` token gets that token used as a bearer token.
    #[default]
    WhenAdvertised,
    /// Always: token requests carry a proof even when the metadata does not advertise DPoP,
    /// and a token that is not DPoP-bound is refused ([`AuthError::UnsupportedTokenType`]),
    /// as is an authorization server that advertises DPoP without `ES256`.
    Required,
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

/// Which authorization server credentials, or a whole sign-in, belong to.
///
/// A string converts into [`IssuerBinding::Issuer`]: `OAuthConfig::client_credentials(
/// "https://auth.example.com", client)`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IssuerBinding {
    /// The authorization server with this issuer identifier, compared exactly as RFC 8414 §3.3
    /// compares issuers (`https://auth.example.com` and `https://auth.example.com/` differ).
    Issuer(String),
    /// Whichever authorization server this client's first successful discovery finds; every
    /// later discovery of the same [`Client`](super::Client) must find that one. Trust on
    /// first use: it stops a server from moving the client to another authorization server
    /// later, not from naming a hostile one at first. Prefer [`IssuerBinding::Issuer`].
    FirstDiscovered,
}

impl From<&str> for IssuerBinding {
    fn from(issuer: &str) -> Self {
        Self::Issuer(issuer.to_owned())
    }
}

impl From<String> for IssuerBinding {
    fn from(issuer: String) -> Self {
        Self::Issuer(issuer)
    }
}

impl From<&String> for IssuerBinding {
    fn from(issuer: &String) -> Self {
        Self::Issuer(issuer.clone())
    }
}

/// How a [`Client`](super::Client) signs in to OAuth-protected servers; see the [module
/// docs](self).
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) grant: Grant,
    pub(crate) client_name: String,
    pub(crate) client_uri: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    /// The only authorization server sign-in may use (`None`: whichever the server names).
    pub(crate) issuer: Option<IssuerBinding>,
    pub(crate) pre_registered: Vec<(IssuerBinding, ClientRegistration)>,
    pub(crate) application_type: Option<ApplicationType>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) refresh_tokens: bool,
    pub(crate) max_step_ups: u32,
    pub(crate) allow_insecure_http: bool,
    pub(crate) cross_origin_resource_metadata: bool,
    pub(crate) http: Option<reqwest::Client>,
    pub(crate) refresh_margin: Duration,
    pub(crate) assertion_key: Option<AssertionKey>,
    pub(crate) dpop: DpopUse,
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
            .field("issuer", &self.issuer)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("pre_registered", &self.pre_registered)
            .field("refresh_tokens", &self.refresh_tokens)
            .field("max_step_ups", &self.max_step_ups)
            .field("dpop", &self.dpop)
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
    /// use; an MCP authorization extension) with credentials pre-registered with the
    /// authorization server `issuer`: `client_secret_basic` / `client_secret_post` with a
    /// secret, or `private_key_jwt` with [`Self::private_key_jwt`].
    ///
    /// The credentials, and the sign-in, are bound to `issuer` (see [`Self::issuer`]): when
    /// the MCP server names another authorization server the client fails with
    /// [`AuthError::IssuerNotAllowed`] and sends that server nothing — a hostile MCP server
    /// cannot collect the secret by naming its own token endpoint.
    pub fn client_credentials(
        issuer: impl Into<IssuerBinding>,
        client: ClientRegistration,
    ) -> Self {
        Self::with_grant(Grant::ClientCredentials).bound_to(issuer.into(), client)
    }

    /// Signs in with a JWT authorization grant from `provider` (RFC 7523, e.g. the ID-JAG of
    /// enterprise-managed authorization), as `client`, pre-registered with the authorization
    /// server `issuer`; bound to `issuer` as [`Self::client_credentials`] is.
    pub fn identity_assertion(
        issuer: impl Into<IssuerBinding>,
        client: ClientRegistration,
        provider: impl AssertionProvider,
    ) -> Self {
        Self::with_grant(Grant::IdentityAssertion(Arc::new(provider)))
            .bound_to(issuer.into(), client)
    }

    /// Signs in with workload identity federation: the identity token the platform issues
    /// to this workload (a Kubernetes projected service-account token, a cloud workload
    /// identity token), read from `source` for every token request (so a rotated token is
    /// picked up), presented with the JWT-bearer grant (RFC 7523) as `client`, pre-registered
    /// with the authorization server `issuer`. No client secret is stored anywhere.
    ///
    /// Bound to `issuer` as [`Self::client_credentials`] is: the identity token is only ever
    /// sent to the token endpoint of that authorization server, after its metadata's
    /// `issuer` was checked; when the MCP server names another authorization server the
    /// client fails with [`AuthError::IssuerNotAllowed`] and sends it nothing.
    pub fn workload_identity(
        issuer: impl Into<IssuerBinding>,
        client: ClientRegistration,
        source: IdentityTokenSource,
    ) -> Self {
        Self::identity_assertion(issuer, client, source)
    }

    /// A machine grant's configuration: its credentials and its sign-in bound to `issuer`.
    fn bound_to(mut self, issuer: IssuerBinding, client: ClientRegistration) -> Self {
        self.pre_registered.push((issuer.clone(), client));
        self.issuer = Some(issuer);
        self.refresh_tokens = false;
        self
    }

    fn with_grant(grant: Grant) -> Self {
        Self {
            grant,
            client_name: "mcp-rust".to_owned(),
            client_uri: None,
            client_metadata_url: None,
            issuer: None,
            pre_registered: Vec::new(),
            application_type: None,
            store: Arc::new(MemoryTokenStore::new()),
            refresh_tokens: true,
            max_step_ups: 2,
            allow_insecure_http: false,
            cross_origin_resource_metadata: false,
            http: None,
            refresh_margin: Duration::from_secs(60),
            assertion_key: None,
            dpop: DpopUse::default(),
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

    /// Credentials registered beforehand with the authorization server `issuer`: presented to
    /// that server only (another one gets a dynamic registration or the client ID metadata
    /// document instead). Credentials always name their issuer — a secret presented to
    /// whichever authorization server the MCP server names would be a secret given to anyone.
    #[must_use]
    pub fn pre_registered_for(
        mut self,
        issuer: impl Into<IssuerBinding>,
        client: ClientRegistration,
    ) -> Self {
        self.pre_registered.push((issuer.into(), client));
        self
    }

    /// Signs in only with the authorization server `issuer`: when the protected resource
    /// metadata names others only, the client fails with [`AuthError::IssuerNotAllowed`]
    /// without contacting them (no metadata request, no registration, no browser). A named
    /// issuer is also trusted to live on a private network (see
    /// [`Self::cross_origin_resource_metadata`] for the address rules). Default: any
    /// authorization server the MCP server names, on the MCP server's host or a public address.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<IssuerBinding>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The `application_type` of dynamic registration (default: `web` for an `https` redirect
    /// URI on a non-loopback host, `native` otherwise).
    #[must_use]
    pub fn application_type(mut self, kind: ApplicationType) -> Self {
        self.application_type = Some(kind);
        self
    }

    /// Where tokens and registrations are kept (default: [`MemoryTokenStore`]; see also
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

    /// Fetches the `resource_metadata` URL of a `WWW-Authenticate` challenge even when it is
    /// on another origin than the MCP server — then only over `https` to a public address
    /// (default false: such a URL is not fetched, and the well-known locations on the MCP
    /// server's origin are used instead).
    ///
    /// Where the client goes because a peer said so is bounded, so that a hostile server
    /// cannot make it send requests into the user's network (blind SSRF). Besides this
    /// metadata URL: the authorization server's metadata, registration, token and
    /// authorization endpoints are fetched only on the MCP server's host, on a public address
    /// (every address the host resolves to, checked when connecting: a DNS answer cannot
    /// change in between), or for an authorization server the user named
    /// ([`Self::issuer`], [`Self::pre_registered_for`], [`Self::client_credentials`]…).
    /// Loopback, private, link-local, unique-local and other special addresses are refused
    /// with [`AuthError::ForbiddenUrl`].
    #[must_use]
    pub fn cross_origin_resource_metadata(mut self, allow: bool) -> Self {
        self.cross_origin_resource_metadata = allow;
        self
    }

    /// The HTTP client for requests to the MCP server's host and to authorization servers
    /// the user named (default: a new one that does not follow redirects, with a 30 s
    /// timeout). Other hosts a peer names are reached through a client of this crate's
    /// that checks their addresses (see [`Self::cross_origin_resource_metadata`]).
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// When tokens are bound to the client's key with DPoP (default
    /// [`DpopUse::WhenAdvertised`]); see [`DpopUse`].
    #[must_use]
    pub fn dpop(mut self, when: DpopUse) -> Self {
        self.dpop = when;
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
