//! The settings of a Lambda function ([`LambdaConfig`]): how it answers (buffered or
//! streamed), the domains it is served on, and the HTTP endpoint's settings with the defaults a
//! function needs — Lambda's payload limit as the body limit, the handshake era refused, no
//! browser origin but the function's own domains.

use std::time::Duration;

use crate::server::http::HttpConfig;

/// The most bytes a synchronous invocation's request payload, and its buffered response
/// payload, may hold: 6 MB (6,291,456 bytes, Lambda's quota). The request body travels inside
/// that payload (with the event's headers and context), so no body over it reaches a function;
/// a buffered response over it would fail at Lambda with an error the client cannot read, so
/// the function answers a JSON-RPC error instead (see [`Responses::Buffered`]).
pub const SYNC_PAYLOAD_LIMIT: usize = 6 * 1024 * 1024;

/// Why a Lambda function refuses the 2025-11-25 handshake era (the message of its `-32022`).
pub(crate) const NO_SESSIONS: &str = "it runs as an AWS Lambda function, where each request may \
    land on another instance and no instance keeps a 2025-11-25 session; connect with \
    MCP-Protocol-Version 2026-07-28";

/// How a function hands its responses to Lambda.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Responses {
    /// The whole response at once, when the request is done: what API Gateway's HTTP APIs,
    /// REST APIs without streaming and function URLs in the `BUFFERED` invoke mode take. A
    /// request whose handler emits notifications is still answered with an event stream, sent
    /// as one body at the end. At most [`SYNC_PAYLOAD_LIMIT`] bytes: a larger answer is
    /// replaced by a JSON-RPC `-32603` error naming the limit. `subscriptions/listen` is
    /// refused (a stream that is sent when it ends shows its listener nothing).
    #[default]
    Buffered,
    /// Response streaming (`InvokeWithResponseStream`: a function URL in the `RESPONSE_STREAM`
    /// invoke mode, or a REST API integration with streaming): event streams reach the client
    /// as they are written. `subscriptions/listen` streams are served and end shortly before
    /// the invocation's deadline ([`LambdaConfig::deadline_margin`]), so that the client
    /// listens again rather than being cut off by the function's timeout.
    Streamed,
}

/// Settings of a Lambda function serving a [`Server`](crate::server::Server) (see the
/// [module docs](super)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LambdaConfig {
    /// Buffered (the default) or streamed responses.
    pub responses: Responses,
    /// The HTTP endpoint's settings. [`LambdaConfig::default`] sets what a function needs: the
    /// body limit at [`SYNC_PAYLOAD_LIMIT`], the handshake era refused
    /// ([`HttpConfig::refuse_handshake_era`]), no per-address session limit (every request
    /// comes from API Gateway), and the Host and Origin allowlists of
    /// [`LambdaConfig::domains`].
    pub http: HttpConfig,
    /// How long before the invocation's deadline a streamed response ends (default 2 s).
    pub deadline_margin: Duration,
}

impl Default for LambdaConfig {
    fn default() -> Self {
        let http = HttpConfig::default()
            .max_body_size(SYNC_PAYLOAD_LIMIT)
            .max_buffered_body_bytes(2 * SYNC_PAYLOAD_LIMIT)
            .session_rate(None)
            .refuse_handshake_era(NO_SESSIONS)
            // API Gateway and function URLs route by host: a request reaches the function only
            // through the domains configured for it. `domains` pins them.
            .allow_any_host()
            // No browser page may call until one is listed (a request without `Origin`, from
            // no browser, is always served): loopback names mean nothing on Lambda.
            .allowed_origins(Vec::<String>::new());
        Self {
            responses: Responses::Buffered,
            http,
            deadline_margin: Duration::from_secs(2),
        }
    }
}

impl LambdaConfig {
    /// The function's own domains (a function URL's `<id>.lambda-url.<region>.on.aws`, an API's
    /// `<id>.execute-api.<region>.amazonaws.com`, a custom domain): `Host` must name one of
    /// them, and a browser page served from one of them (`https://` + domain) may call. Other
    /// web origins are added with [`LambdaConfig::allowed_origins`].
    #[must_use]
    pub fn domains(mut self, domains: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let domains: Vec<String> = domains.into_iter().map(Into::into).collect();
        let mut origins = self.http.allowed_origins.take().unwrap_or_default();
        origins.extend(domains.iter().map(|domain| format!("https://{domain}")));
        self.http = self.http.allowed_hosts(domains).allowed_origins(origins);
        self
    }

    /// Also accepts requests from these web origins (`https://app.example.com`).
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut all = self.http.allowed_origins.take().unwrap_or_default();
        all.extend(origins.into_iter().map(Into::into));
        self.http = self.http.allowed_origins(all);
        self
    }

    /// Streams responses ([`Responses::Streamed`]).
    #[must_use]
    pub fn streamed(mut self) -> Self {
        self.responses = Responses::Streamed;
        self
    }

    /// Serves the endpoint at `path` (default `/mcp`; a REST API's stage is not part of it).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.http = self.http.path(path);
        self
    }

    /// Changes the HTTP endpoint's settings (OAuth with `HttpConfig::auth`, say). The handshake
    /// era stays refused whatever the settings say.
    #[must_use]
    pub fn http(mut self, edit: impl FnOnce(HttpConfig) -> HttpConfig) -> Self {
        self.http = edit(self.http);
        self
    }

    /// How long before the invocation's deadline a streamed response ends.
    #[must_use]
    pub fn deadline_margin(mut self, margin: Duration) -> Self {
        self.deadline_margin = margin;
        self
    }
}
