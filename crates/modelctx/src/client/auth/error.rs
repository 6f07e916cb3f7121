//! Why signing in failed.

/// Why the OAuth client could not obtain or use an access token.
///
/// None of these carry a token or a secret: they are safe to log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The configuration cannot work (e.g. a client metadata URL that is not an `https` URL
    /// with a path, a redirect URI that is neither loopback nor `https`).
    #[error("invalid OAuth configuration: {0}")]
    InvalidConfig(String),

    /// No usable protected resource metadata (RFC 9728) or authorization server metadata
    /// (RFC 8414 / OpenID Connect discovery) was found.
    #[error("authorization discovery failed: {0}")]
    Discovery(String),

    /// The protected resource metadata names a `resource` this server is not part of: the
    /// client refuses to obtain a token for it (RFC 8707, RFC 9728 §3.3).
    #[error("the protected resource metadata is for {resource:?}, not for {server:?}")]
    ResourceMismatch {
        /// The `resource` of the metadata.
        resource: String,
        /// The MCP server URL the client connects to.
        server: String,
    },

    /// The authorization server metadata names another `issuer` than the one its well-known
    /// URL was built from (RFC 8414 §3.3): the metadata is not used.
    #[error(
        "the authorization server metadata at {url} names issuer {found:?}, expected {expected:?}"
    )]
    IssuerMismatch {
        /// The issuer the metadata URL was built from.
        expected: String,
        /// The `issuer` of the document.
        found: String,
        /// Where the document came from.
        url: String,
    },

    /// The protected resource metadata names only authorization servers this client is not
    /// bound to ([`super::OAuthConfig::issuer`], or the issuer of
    /// [`super::OAuthConfig::client_credentials`] / [`super::OAuthConfig::identity_assertion`]):
    /// the client sends them nothing — no metadata request, and never the credentials.
    #[error(
        "the server names the authorization server(s) {named:?}, but this client signs in with \
         {expected:?} only: refusing to contact another"
    )]
    IssuerNotAllowed {
        /// The issuer the client is bound to.
        expected: String,
        /// The issuers the protected resource metadata names.
        named: Vec<String>,
    },

    /// A URL named by the MCP server or an authorization server leads where the client does
    /// not go: a `resource_metadata` URL on another origin than the MCP server (without
    /// [`super::OAuthConfig::cross_origin_resource_metadata`]), or a host that is neither the
    /// MCP server's nor public (loopback, private, link-local…) and not an authorization
    /// server the user named. Nothing was sent there.
    #[error("refusing to contact {url}: {reason}")]
    ForbiddenUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: UrlRefusal,
    },

    /// The authorization server does not advertise PKCE with `S256`
    /// (`code_challenge_methods_supported`): the client refuses to proceed.
    #[error("the authorization server {issuer} does not advertise PKCE S256")]
    PkceUnsupported {
        /// The authorization server.
        issuer: String,
    },

    /// A URL from discovery is neither `https` nor loopback.
    #[error("refusing the insecure URL {0} (https is required except on loopback)")]
    InsecureUrl(String),

    /// The client could not be registered with the authorization server (no pre-registered
    /// credentials, no client ID metadata document support, no or failing dynamic
    /// registration).
    #[error("client registration failed: {0}")]
    Registration(String),

    /// The [`super::AuthorizationHandler`] failed (the user closed the browser, a timeout, the
    /// redirect could not be read).
    #[error("authorization was not completed: {0}")]
    Handler(String),

    /// The authorization response's `iss` (RFC 9207) is missing although the authorization
    /// server advertises it, or differs from the issuer the request was sent to. Any `error`
    /// in such a response is ignored.
    #[error("the authorization response issuer {found:?} does not match {expected:?}")]
    ResponseIssuer {
        /// The issuer the request was sent to.
        expected: String,
        /// The `iss` of the response (`None`: absent).
        found: Option<String>,
    },

    /// The authorization response's `state` does not match the request's.
    #[error("the authorization response state does not match the request")]
    StateMismatch,

    /// The authorization server refused the authorization request (the redirect carried
    /// `error`).
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code (`access_denied`, `invalid_scope`, …).
        error: String,
        /// `error_description`, when present.
        description: Option<String>,
    },

    /// The authorization response carries neither a code nor an error.
    #[error("the authorization response carries no code")]
    MissingCode,

    /// The token endpoint refused the request.
    #[error("the token endpoint answered {status}{}", error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    Token {
        /// The HTTP status.
        status: u16,
        /// The OAuth error code (`invalid_grant`, `invalid_client`, …), when the body has one.
        error: Option<String>,
        /// `error_description`, when present.
        description: Option<String>,
    },

    /// The token endpoint issued a token of a type this client cannot send (only `Bearer`).
    #[error("unsupported token type {0:?}")]
    UnsupportedTokenType(String),

    /// The server still answers 401 after the client signed in: the fresh token is refused.
    #[error("the server refused the access token it was just issued (HTTP 401)")]
    Unauthorized,

    /// The server keeps answering 403 `insufficient_scope` and another authorization would
    /// not help (the scopes were already granted, or the step-up limit is reached).
    #[error("the server requires scope {scope:?} which authorization did not obtain (HTTP 403)")]
    InsufficientScope {
        /// The scope of the last challenge.
        scope: String,
    },

    /// An HTTP request to the authorization server or for metadata failed.
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),

    /// The token store failed.
    #[error("token store: {0}")]
    Store(#[from] std::io::Error),
}

/// Why the client refused a URL a peer named ([`AuthError::ForbiddenUrl`]), with the setting
/// that would allow it where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlRefusal {
    /// A 401 challenge's `resource_metadata` is on another origin than the MCP server's, and
    /// [`super::OAuthConfig::cross_origin_resource_metadata`] is off.
    #[error(
        "the challenge's resource_metadata is not on the MCP server's origin (allow https URLs \
         at public addresses with OAuthConfig::cross_origin_resource_metadata)"
    )]
    CrossOrigin,
    /// A `resource_metadata` URL on another origin is not `https`.
    #[error("a resource_metadata URL on another origin must be https")]
    CrossOriginInsecure,
    /// The host is neither the MCP server's nor public (loopback, private, link-local…), and
    /// the URL does not belong to an authorization server the user named
    /// ([`super::OAuthConfig::issuer`]).
    #[error(
        "{host} is not the MCP server's host and not a public address (loopback, private, \
         link-local and other special addresses are refused); name a trusted authorization \
         server with OAuthConfig::issuer"
    )]
    NotPublic {
        /// The host.
        host: String,
    },
}
