//! Streamable HTTP for 2026-07-28: one POST endpoint, stateless, no sessions.
//!
//! Each POST carries one message. A request is answered with `application/json`, or — as soon as
//! its handler emits a notification (progress, logs, a listen stream) — with
//! `text/event-stream`: the notifications, then the response, then the end of the stream.
//! Closing the stream cancels the request. `GET` and `DELETE` get 405; `Mcp-Session-Id` is
//! never minted nor honoured.
//!
//! Mount it in your own axum app with [`Server::http_router`], or run it alone with
//! [`Server::serve_http`] or [`Server::serve_http_on`], which serve with `TCP_NODELAY` (no Nagle
//! stalls on SSE) and, on a shutdown, drain within [`HttpConfig::shutdown_grace`].
//! Host and Origin are checked against loopback names by default (DNS-rebinding protection).
//! They are separate settings: serving beyond localhost widens [`HttpConfig::allowed_hosts`]
//! (or [`HttpConfig::allow_any_host`]) and keeps the Origin allowlist, which the transport
//! requires servers to validate; list the web origins that may call with
//! [`HttpConfig::allowed_origins`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{self, Stream};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use modelctx_types::jsonrpc::{Decoded, MessageRef};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::Server;
use super::dispatch::{Incoming, Reply, error_reply};
use super::headers::{HeaderAccess, Repeated};
use super::http_body::{BodyBudget, BodyError};
use super::in_flight::request_cancelled;
use super::middleware::Message;
pub use super::peer_rate::RateLimit;
use super::shutdown::DEFAULT_SHUTDOWN_GRACE;
use super::typed_params::{self, OwnedRequest};
use crate::http::{headers, sse};

/// Settings of the HTTP endpoint.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path (default `/mcp`).
    pub path: String,
    /// The largest request body accepted (default 4 MiB); larger bodies get 413.
    pub max_body_size: usize,
    /// The request bytes all requests together may hold in memory (default 64 MiB), charged as
    /// they arrive: a request whose next bytes do not fit gets 503 with `Retry-After` (see
    /// [`HttpConfig::max_buffered_body_bytes`]).
    pub max_buffered_body_bytes: usize,
    /// How long one request body may take to arrive in all (default 30 s); then 408.
    pub body_timeout: Duration,
    /// How long a body may take to start arriving (default 10 s); then 408. Each byte that
    /// arrives extends it by `1 / body_min_rate` seconds (see [`HttpConfig::body_min_rate`]).
    pub body_first_byte_timeout: Duration,
    /// The pace, in bytes per second, a body must keep once `body_first_byte_timeout` is spent
    /// (default 8 KiB/s); 0 leaves only `body_timeout`.
    pub body_min_rate: u64,
    /// Accepted `Host` names (without port). `None` accepts any host. Default: loopback names.
    pub allowed_hosts: Option<Vec<String>>,
    /// Accepted `Origin`s, the pages a browser may call from (a request without `Origin`, i.e.
    /// not from a browser, is always accepted). An entry with a scheme
    /// (`https://app.example.com`, `http://localhost:5173`) must match the origin exactly; a
    /// bare host name matches that host with any scheme and port. `None` accepts any origin,
    /// which the transport forbids unless something in front checks it. Default: loopback
    /// names. Independent of [`HttpConfig::allowed_hosts`].
    pub allowed_origins: Option<Vec<String>>,
    /// Interval of keep-alive comments on idle event streams (default 15 s; zero sends none).
    pub keep_alive: Duration,
    /// Answer every request with `text/event-stream`, even one that emits nothing before its
    /// response (default `false`: JSON unless a notification or a server request comes first).
    pub sse_responses: bool,
    /// How fast one peer address may open handshake-era sessions (`initialize`); beyond it,
    /// 429 with `Retry-After`. Default: 64 at once, then 10 per second. `None`: no limit. A peer
    /// is an IPv4 address or an IPv6 /64; behind a reverse proxy every client is the proxy, so
    /// raise the limit there ([`HttpConfig::session_rate`]) or turn it off and limit at the
    /// proxy. The address is known under [`Server::serve_http_on`], or when a router from
    /// [`Server::http_router`] is served with
    /// `into_make_service_with_connect_info::<SocketAddr>()`; otherwise nothing is limited.
    pub session_rate: Option<RateLimit>,
    /// How long a handshake-era session may go unused before it ends (default 30 minutes, as
    /// in the Python SDK; `None`: it lives until evicted or deleted). A session is in use while
    /// a request of it runs or its `GET` stream is open, and idle from when the last one ended;
    /// once it ended, its id gets 404 and the client opens a new session. Whatever it held (its
    /// `resources/subscribe`s) goes with it. A timeout under 1 s counts as 1 s: zero would end
    /// every session before its client's next request.
    pub session_idle_timeout: Option<Duration>,
    /// Under [`Server::serve_http_on`]: how long the requests in flight may take to finish once
    /// its shutdown future completes ([`DEFAULT_SHUTDOWN_GRACE`], 5 s); the connections still
    /// open after it are closed, dropping their requests. `Duration::MAX` waits for them
    /// however long they take.
    pub shutdown_grace: Duration,
    /// OAuth: who may call the endpoint (off by default; see [`HttpConfig::auth`]).
    #[cfg(feature = "auth")]
    pub auth: Option<Arc<super::auth::ResourceServer>>,
}

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Default for HttpConfig {
    fn default() -> Self {
        let loopback: Vec<String> = LOOPBACK.iter().map(|h| (*h).to_owned()).collect();
        Self {
            path: "/mcp".to_owned(),
            max_body_size: 4 * 1024 * 1024,
            max_buffered_body_bytes: 64 * 1024 * 1024,
            body_timeout: Duration::from_secs(30),
            body_first_byte_timeout: Duration::from_secs(10),
            body_min_rate: 8 * 1024,
            allowed_hosts: Some(loopback.clone()),
            allowed_origins: Some(loopback),
            keep_alive: Duration::from_secs(15),
            sse_responses: false,
            session_rate: Some(RateLimit::new(64, Duration::from_millis(100))),
            session_idle_timeout: Some(Duration::from_secs(30 * 60)),
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            #[cfg(feature = "auth")]
            auth: None,
        }
    }
}

impl HttpConfig {
    /// Serves at `path`.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Accepts these `Host` names (in addition to nothing else), e.g. your public hostname.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts requests from these origins only (`https://app.example.com`, or a bare host
    /// name for any scheme and port), instead of the loopback names.
    #[must_use]
    pub fn allowed_origins(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Requires a valid bearer token on every request (OAuth 2.1 resource server), and serves the
    /// protected resource metadata unauthenticated at its well-known path.
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn auth(mut self, resource_server: super::auth::ResourceServer) -> Self {
        self.auth = Some(Arc::new(resource_server));
        self
    }

    /// Turns the Host check off (serving on names not listed, or behind a proxy that checks
    /// them). The Origin check stays: browsers may still call only from
    /// [`HttpConfig::allowed_origins`].
    #[must_use]
    pub fn allow_any_host(mut self) -> Self {
        self.allowed_hosts = None;
        self
    }

    /// Sets the body size limit.
    #[must_use]
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.max_body_size = bytes;
        self
    }

    /// Bounds the request bytes held by all requests in flight together. Each request is
    /// charged for its body's bytes as they arrive (never for a declared `Content-Length`) and
    /// keeps the charge until its response is ready; one whose bytes do not fit is refused at
    /// once with 503 and `Retry-After: 1` instead of being queued, so slow or hostile clients
    /// cannot make the server's memory grow with their number. A quarter of the budget is
    /// kept for the first 64 KiB of each body: large or stalled uploads can never take it, so
    /// ordinary requests are served while they hold the rest.
    #[must_use]
    pub fn max_buffered_body_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_body_bytes = bytes;
        self
    }

    /// How long one request body may take to arrive in all before the request gets 408.
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long a body may take to start arriving before the request gets 408 (headers alone
    /// hold a connection, not the budget; this ends them).
    #[must_use]
    pub fn body_first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.body_first_byte_timeout = timeout;
        self
    }

    /// The least pace of a body, in bytes per second: every byte that arrives gives the body
    /// `1 / bytes_per_second` more time after its first-byte timeout, up to `body_timeout`, so
    /// a trickling upload gets 408 as soon as it falls behind. 0 turns the check off.
    #[must_use]
    pub fn body_min_rate(mut self, bytes_per_second: u64) -> Self {
        self.body_min_rate = bytes_per_second;
        self
    }

    /// Answers every request with an event stream (`true`), or with JSON unless the handler
    /// emits something first (`false`, the default). For clients or proxies that want streams.
    #[must_use]
    pub fn sse_responses(mut self, on: bool) -> Self {
        self.sse_responses = on;
        self
    }

    /// Limits how fast one peer address may open handshake-era sessions (`None`: no limit).
    #[must_use]
    pub fn session_rate(mut self, rate: Option<RateLimit>) -> Self {
        self.session_rate = rate;
        self
    }

    /// Ends handshake-era sessions unused for this long (`None`: never by time; at least 1 s);
    /// see [`HttpConfig::session_idle_timeout`].
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// How long requests in flight may take to finish once a shutdown begins (the field of the
    /// same name).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }
}

pub(crate) struct HttpState {
    pub(crate) server: Server,
    pub(crate) config: HttpConfig,
    pub(crate) bodies: BodyBudget,
    pub(crate) sessions: super::http_sessions::Sessions,
}

/// The standard MCP headers as `HeaderName`s: a lookup by `&str` parses the name (checks and
/// lower-cases each byte) every time, ~300 instructions a lookup, four lookups a request.
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(headers::PROTOCOL_VERSION);
const METHOD_HEADER: HeaderName = HeaderName::from_static(headers::METHOD);
const NAME_HEADER: HeaderName = HeaderName::from_static(headers::NAME);

impl HeaderAccess for HeaderMap {
    fn single(&self, name: &str) -> Result<Option<&[u8]>, Repeated> {
        let values = match name {
            headers::PROTOCOL_VERSION => self.get_all(PROTOCOL_VERSION_HEADER),
            headers::METHOD => self.get_all(METHOD_HEADER),
            headers::NAME => self.get_all(NAME_HEADER),
            _ => self.get_all(name),
        };
        let mut values = values.iter();
        match (values.next(), values.next()) {
            (None, _) => Ok(None),
            (Some(value), None) => Ok(Some(value.as_bytes())),
            (Some(_), Some(_)) => Err(Repeated),
        }
    }
}

impl Server {
    /// An axum router serving this server at `config.path` (a tower service; mount it in your
    /// app). Serve it with [`Router::into_make_service_with_connect_info`] for [`SocketAddr`] (the
    /// `ConnectInfo` [`Server::serve_http_on`] gives its connections too) to give
    /// [`HttpConfig::session_rate`],
    /// [`RequestContext::peer_addr`](super::RequestContext::peer_addr) and the per-client
    /// [`SubscriptionLimits`](super::SubscriptionLimits) the peers' addresses: without it, and
    /// without a principal, no client is known, so no per-client limit holds (only the
    /// server-wide budget).
    pub fn http_router(&self, config: HttpConfig) -> Router {
        let path = config.path.clone();
        let state = Arc::new(HttpState {
            server: self.clone(),
            bodies: BodyBudget::new(&config),
            sessions: super::http_sessions::Sessions::new(
                config.session_rate,
                config.session_idle_timeout,
            ),
            config,
        });
        let router = Router::new().route(&path, any(handle));
        #[cfg(feature = "auth")]
        let router = match &state.config.auth {
            Some(auth) => {
                let document =
                    Bytes::from(serde_json::to_vec(&auth.metadata()).unwrap_or_default());
                let serve = move || {
                    let document = document.clone();
                    async move { json(200, document.to_vec()) }
                };
                let root = "/.well-known/oauth-protected-resource";
                let router = router.route(&auth.metadata_path(), axum::routing::get(serve.clone()));
                // Clients also look at the root location (RFC 9728 §3.1 fallback).
                if auth.metadata_path() == root {
                    router
                } else {
                    router.route(root, axum::routing::get(serve))
                }
            }
            None => router,
        };
        router.with_state(state)
    }
}

fn body_refused(error: &BodyError) -> Response {
    match error {
        BodyError::TooLarge => plain(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large"),
        BodyError::TimedOut => plain(
            StatusCode::REQUEST_TIMEOUT,
            "The request body did not arrive in time",
        ),
        BodyError::Unreadable => plain(StatusCode::BAD_REQUEST, "Could not read the request body"),
        BodyError::Busy => {
            let mut response = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many request bytes in flight; retry shortly",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

pub(crate) fn json(status: u16, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The host part of a `Host` header or an origin authority, without port (brackets kept for
/// IPv6 literals). Borrowed: the checks run on every request and must not allocate.
fn host_part(authority: &str) -> &str {
    let authority = authority.trim();
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or_default()
}

fn allowed(list: Option<&Vec<String>>, host: &str) -> bool {
    list.is_none_or(|list| list.iter().any(|h| h.eq_ignore_ascii_case(host)))
}

/// Whether an `Origin` is allowed: an entry with a scheme matches the whole origin, a bare host
/// its host part. An origin that is not `scheme://authority` (`null`, garbage) never is.
fn origin_allowed(list: Option<&Vec<String>>, origin: &HeaderValue) -> bool {
    let Some((origin, authority)) = origin
        .to_str()
        .ok()
        .and_then(|o| Some((o, o.split_once("://")?.1)))
    else {
        return false;
    };
    let host = host_part(authority.split('/').next().unwrap_or_default());
    list.is_none_or(|list| {
        list.iter().any(|entry| {
            if entry.contains("://") {
                entry.trim_end_matches('/').eq_ignore_ascii_case(origin)
            } else {
                entry.eq_ignore_ascii_case(host)
            }
        })
    })
}

/// DNS-rebinding protection: `Host` must name an allowed host, and `Origin`, when present, an
/// allowed origin.
fn check_host_and_origin(request: &Request, config: &HttpConfig) -> Result<(), Box<Response>> {
    let headers = request.headers();
    if config.allowed_hosts.is_some() {
        let host = request_authority(request)?.map(host_part);
        if !host.is_some_and(|h| allowed(config.allowed_hosts.as_ref(), h)) {
            return Err(Box::new(plain(
                StatusCode::MISDIRECTED_REQUEST,
                "Invalid Host header",
            )));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(config.allowed_origins.as_ref(), origin)
    {
        return Err(Box::new(plain(
            StatusCode::FORBIDDEN,
            "Invalid Origin header",
        )));
    }
    Ok(())
}

/// The authority the request asked for: the `Host` header, or over HTTP/2 the `:authority`
/// pseudo-header (the request's URI), where a `Host` header is there only if the client added
/// one. Over HTTP/2 the check reads `:authority` whenever there is one, which is what the
/// client connected for, and a `Host` that names another authority makes the request malformed
/// (RFC 9113, 8.3.1): 400, rather than a check of whichever of the two suits the sender.
fn request_authority(request: &Request) -> Result<Option<&str>, Box<Response>> {
    let host = request.headers().get(header::HOST);
    if request.version() != http::Version::HTTP_2 {
        return Ok(host.and_then(|host| host.to_str().ok()));
    }
    let Some(authority) = request.uri().authority().map(http::uri::Authority::as_str) else {
        return Ok(host.and_then(|host| host.to_str().ok()));
    };
    match host {
        Some(host) if !host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) => {
            Err(Box::new(plain(
                StatusCode::BAD_REQUEST,
                "Host header does not match :authority",
            )))
        }
        _ => Ok(Some(authority)),
    }
}

/// The media types listed in a header (parameters dropped), without allocating.
fn media_types(headers: &HeaderMap, name: HeaderName) -> impl Iterator<Item = &[u8]> {
    // Bytes, not `str` patterns: these run on every request, and `split(char)` plus `trim` were
    // ~1.7k instructions of a ~51k-instruction HTTP call. `to_str` still drops a value with
    // non-visible bytes whole, as before; what is left is ASCII, so `trim_ascii` is `trim`.
    headers
        .get_all(name)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(|t| {
            let end = t.iter().position(|&b| b == b';').unwrap_or(t.len());
            t[..end].trim_ascii()
        })
}

/// Whether `Content-Type` is JSON.
fn is_json(headers: &HeaderMap) -> bool {
    if let Some(value) = headers.get(header::CONTENT_TYPE)
        && value.as_bytes() == b"application/json"
    {
        return true;
    }
    media_types(headers, header::CONTENT_TYPE).any(|t| t.eq_ignore_ascii_case(b"application/json"))
}

/// The `Accept` values clients send (the spec's own, in either order): compared whole before
/// parsing the list, which cost ~1k instructions a request.
const ACCEPT_BOTH: [&[u8]; 4] = [
    b"application/json, text/event-stream",
    b"text/event-stream, application/json",
    b"application/json,text/event-stream",
    b"text/event-stream,application/json",
];

/// `Accept` must cover both JSON and event streams (an absent header is tolerated).
fn accepts_both(headers: &HeaderMap) -> bool {
    let mut all = headers.get_all(header::ACCEPT).iter();
    if let (Some(value), None) = (all.next(), all.next())
        && ACCEPT_BOTH.contains(&value.as_bytes())
    {
        return true;
    }
    let (mut any, mut json, mut sse) = (false, false, false);
    for media in media_types(headers, header::ACCEPT) {
        any = true;
        let (kind, sub) = match media.iter().position(|&b| b == b'/') {
            Some(slash) => (&media[..slash], &media[slash + 1..]),
            None => (media, &b""[..]),
        };
        let wild = sub == b"*";
        let all = wild && kind == b"*";
        json |= all
            || (kind.eq_ignore_ascii_case(b"application")
                && (wild || sub.eq_ignore_ascii_case(b"json")));
        sse |= all
            || (kind.eq_ignore_ascii_case(b"text")
                && (wild || sub.eq_ignore_ascii_case(b"event-stream")));
    }
    !any || (json && sse)
}

/// Whether a request takes the 2026-07-28 path: its `MCP-Protocol-Version` header names a
/// version that is not a handshake-era one. Anything else (no header, `2025-11-25`, …) is served
/// by the handshake-era transport on the same endpoint.
fn is_modern(headers: &HeaderMap) -> bool {
    headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .is_some_and(|v| {
            modelctx_types::ProtocolVersion::era_of(v) != Some(modelctx_types::Era::Handshake)
        })
}

async fn handle(State(state): State<Arc<HttpState>>, request: Request) -> Response {
    let state = &*state;
    let modern = is_modern(request.headers());
    if request.method() != http::Method::POST {
        if !modern && check_host_and_origin(&request, &state.config).is_ok() {
            let (mut parts, _) = request.into_parts();
            if let Err(response) = authenticate(state, &mut parts).await {
                return response;
            }
            if let Some(response) = super::http_handshake::get_or_delete(state, &parts) {
                return response;
            }
        }
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if let Err(response) = check_host_and_origin(&request, &state.config) {
        return *response;
    }
    if !is_json(request.headers()) {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    if !accepts_both(request.headers()) {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json and text/event-stream",
        );
    }
    let (mut parts, body) = request.into_parts();
    // Every request is authenticated on its own: there is no handshake to do it once.
    if let Err(response) = authenticate(state, &mut parts).await {
        return response;
    }
    let body = match state.bodies.read(&parts.headers, body).await {
        Ok(body) => body,
        Err(error) => return body_refused(&error),
    };
    // Held until the response is ready (JSON complete, or a stream begun): the decoded request
    // owns a copy of the body until then.
    let _reservation = body.reservation;
    if !modern {
        let peer = peer_addr(&parts).map(|addr| addr.ip());
        return super::http_handshake::post(state, peer, parts, body.bytes).await;
    }
    // Classify first: only requests get a response stream.
    let request = match typed_params::decode(&body.bytes) {
        Err(error) => {
            return match error_reply(error.id(), &error.to_error_object()) {
                Reply::Message { body, status } => json(status, body),
                Reply::Nothing => plain(StatusCode::BAD_REQUEST, "bad request"),
            };
        }
        Ok(Decoded::Raw(MessageRef::Notification(notification))) => {
            // 2026-07-28 defines no client notification over HTTP (closing a stream is the
            // cancellation): the middleware sees it, then it is dropped.
            if state.server.has_middleware() {
                let message = Message {
                    id: None,
                    method: &notification.method,
                    params: notification.params.map(RawValue::get),
                    era: modelctx_types::Era::Modern,
                    handshake: None,
                    principal: state.server.principal_of(&parts),
                    http: Some(Arc::new(parts)),
                };
                state
                    .server
                    .through_middleware(message, &super::middleware::Reply::nothing)
                    .await;
            }
            return accepted();
        }
        Ok(Decoded::Raw(MessageRef::Response(_))) => return accepted(),
        // Decoded once: the owned request moves into the response future.
        Ok(Decoded::Raw(MessageRef::Request(request))) => OwnedRequest::raw(&request),
        Ok(Decoded::Typed(request)) => OwnedRequest::typed(request),
    };
    drop(body.bytes);
    respond(
        state.server.clone(),
        Arc::new(parts),
        request,
        &state.config,
        None,
    )
    .await
}

/// `202 Accepted` with no body: a notification or a response taken.
pub(crate) fn accepted() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// The peer's address, when the service was made with
/// `into_make_service_with_connect_info::<SocketAddr>()`, or the connection is served by
/// [`Server::serve_http_on`] (which inserts the same `ConnectInfo`).
pub(crate) fn peer_addr(parts: &http::request::Parts) -> Option<SocketAddr> {
    let connected = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>();
    connected.map(|info| info.0)
}

/// Checks the bearer token when the endpoint is protected, and puts the token and its principal
/// in the request extensions (sealed state is bound to the principal).
#[allow(
    clippy::unused_async,
    reason = "without the auth feature there is nothing to await"
)]
async fn authenticate(state: &HttpState, parts: &mut http::request::Parts) -> Result<(), Response> {
    #[cfg(feature = "auth")]
    if let Some(auth) = &state.config.auth {
        let token = auth
            .authenticate(parts)
            .await
            .map_err(super::auth::AuthRejection::into_response)?;
        parts.extensions.insert(token.principal());
        parts.extensions.insert(token);
    }
    #[cfg(not(feature = "auth"))]
    let _ = (state, parts);
    Ok(())
}

type Work = BoxFuture<'static, Reply>;

/// Runs one request and answers it with JSON, or with SSE once it emits a notification (or, in
/// the handshake era, a server→client request), or always with SSE when the configuration says
/// so.
pub(crate) async fn respond(
    server: Server,
    parts: Arc<http::request::Parts>,
    request: OwnedRequest,
    config: &HttpConfig,
    handshake: Option<super::http_sessions::InUse>,
) -> Response {
    let keep_alive = config.keep_alive;
    // Error statuses (400, 404) are a 2026-07-28 rule: a handshake-era session gets its JSON-RPC
    // errors with 200, as the Python SDK and the 2025-11-25 clients (the TypeScript SDK among
    // them, which drops the body of a non-2xx answer) expect.
    let error_statuses = handshake.is_none();
    let (notifier, mut notifications) = mpsc::channel::<Vec<u8>>(64);
    let cancel = CancellationToken::new();
    let OwnedRequest {
        id,
        method,
        params,
        typed,
    } = request;
    // A handshake-era client cancels with a `notifications/cancelled` POSTed on its own: the
    // session's table finds the request by its id while it runs. Only a request that waits is
    // registered (`in_flight`); the table, the id and the token are kept aside for that, and
    // the work takes a copy of the id (a 2026-07-28 request's work takes the id itself).
    let (id, cancellable) = match &handshake {
        Some(session) => {
            let table = Arc::clone(&session.in_flight);
            (id.clone(), Some((table, id, cancel.clone())))
        }
        None => (id, None),
    };
    // Dropping the response (the client went away) cancels the request.
    let guard = cancel.clone().drop_guard();
    let mut work: Work = Box::pin(async move {
        // The session stays in use until the request's work is over, however it ends (its
        // reply sent, its stream closed, its client gone): `in_use` goes after `incoming`.
        let in_use = handshake;
        let handshake = in_use.as_ref().map(|in_use| Arc::clone(in_use.session()));
        let incoming = Incoming {
            id,
            method: &method,
            params: params.as_deref(),
            typed,
            // Header/body agreement is a 2026-07-28 rule.
            headers: if handshake.is_none() {
                Some(&parts.headers as &dyn HeaderAccess)
            } else {
                None
            },
            principal: server.principal_of(&parts),
            principal_bound: false,
            handshake,
            closing: None,
            http: Some(Arc::clone(&parts)),
            span: tracing::Span::none(),
        };
        server.dispatch(incoming, Some(notifier), cancel).await
    });
    if let Some((table, id, cancel)) = cancellable {
        // As stdio does: one poll first, and a request answered on it is never registered.
        match futures::poll!(work.as_mut()) {
            Poll::Ready(reply) => {
                return finished(
                    reply,
                    notifications,
                    guard,
                    config.sse_responses,
                    error_statuses,
                );
            }
            Poll::Pending => {
                // Until the work ends, or is dropped with its response.
                let registered = table.register(id, cancel.clone());
                work = Box::pin(async move {
                    let reply = work.await;
                    if cancel.is_cancelled() {
                        // The handler has stopped (its questions withdrawn on the stream
                        // meanwhile); the POST still ends with a response for its id.
                        error_reply(Some(registered.id()), &request_cancelled())
                    } else {
                        reply
                    }
                });
            }
        }
    }
    tokio::select! {
        reply = &mut work => {
            finished(reply, notifications, guard, config.sse_responses, error_statuses)
        }
        Some(first) = notifications.recv() => {
            event_stream(Some(&first), notifications, Some(work), None, guard, keep_alive)
        }
    }
}

/// The response of a request whose work is done: its JSON (or no content), or one complete
/// event stream when notifications were queued before the reply (they travel on a stream too;
/// the handler is done, so the whole stream is known) or `sse` asks for one.
fn finished(
    reply: Reply,
    mut notifications: mpsc::Receiver<Vec<u8>>,
    guard: DropGuard,
    sse: bool,
    error_statuses: bool,
) -> Response {
    guard.disarm();
    match notifications.try_recv() {
        Ok(first) => complete_event_stream(Some(&first), notifications, reply),
        Err(_) if sse => complete_event_stream(None, notifications, reply),
        Err(_) => match reply {
            Reply::Message { body, status } => {
                json(if error_statuses { status } else { 200 }, body)
            }
            Reply::Nothing => {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::NO_CONTENT;
                response
            }
        },
    }
}

struct StreamState {
    queued: Vec<Bytes>,
    notifications: mpsc::Receiver<Vec<u8>>,
    work: Option<Work>,
    reply: Option<Reply>,
    finished: bool,
    keep_alive: tokio::time::Interval,
    _guard: DropGuard,
}

fn event_stream(
    first: Option<&[u8]>,
    notifications: mpsc::Receiver<Vec<u8>>,
    work: Option<Work>,
    reply: Option<Reply>,
    guard: DropGuard,
    keep_alive: Duration,
) -> Response {
    let state = StreamState {
        queued: first.map(sse::encode_message).into_iter().collect(),
        notifications,
        work,
        reply,
        finished: false,
        keep_alive: keep_alive_timer(keep_alive),
        _guard: guard,
    };
    event_stream_response(Body::from_stream(events(state)))
}

/// The keep-alive comments of a stream, the first one `period` from now (checked: a huge
/// `HttpConfig::keep_alive` means none, not a panic; so does zero, which tokio refuses as a
/// period).
fn keep_alive_timer(period: Duration) -> tokio::time::Interval {
    let period = if period.is_zero() {
        Duration::MAX
    } else {
        period
    };
    let first = super::deadline::after_tokio(tokio::time::Instant::now(), period);
    tokio::time::interval_at(first, period)
}

/// A response carrying an event stream: the content type, and no caching or proxy buffering.
fn event_stream_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// An event stream whose every event is already known (the handler finished): `first`, what
/// else it queued, then the reply, as one body with a length, like a JSON answer. No stream
/// state, keep-alive timer or chunked encoding, which made the SSE path dearer than JSON
/// (BENCHMARKS.md, "Where the instructions go").
fn complete_event_stream(
    first: Option<&[u8]>,
    mut notifications: mpsc::Receiver<Vec<u8>>,
    reply: Reply,
) -> Response {
    let mut body = Vec::new();
    if let Some(first) = first {
        sse::append_message(&mut body, first);
    }
    while let Ok(message) = notifications.try_recv() {
        sse::append_message(&mut body, &message);
    }
    if let Reply::Message { body: message, .. } = reply {
        sse::append_message(&mut body, &message);
    }
    event_stream_response(Body::from(body))
}

/// A stream of notifications only (the handshake-era `GET` stream), kept alive until the client
/// closes it, or until the forwarding task ends (the server shuts down: the stream ends after
/// what was queued, so that a shutdown does not wait for the client to hang up); the forwarding
/// task ends with it.
pub(crate) fn event_stream_only(
    notifications: mpsc::Receiver<Vec<u8>>,
    forwarder: tokio::task::JoinHandle<()>,
    keep_alive: Duration,
) -> Response {
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let abort = forwarder.abort_handle();
    tokio::spawn(async move {
        stop.cancelled().await;
        abort.abort();
    });
    let forwarded = async move {
        let _ = forwarder.await;
        Reply::Nothing
    };
    let state = StreamState {
        queued: Vec::new(),
        notifications,
        work: Some(Box::pin(forwarded)),
        reply: None,
        finished: false,
        keep_alive: keep_alive_timer(keep_alive),
        _guard: cancel.drop_guard(),
    };
    let mut response = Response::new(Body::from_stream(events(state)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn events(state: StreamState) -> impl Stream<Item = Result<Bytes, Infallible>> {
    stream::unfold(state, |mut state| async move {
        loop {
            if !state.queued.is_empty() {
                // One write for whatever is queued (most often a single event: no copy).
                let chunk = if state.queued.len() == 1 {
                    state.queued.pop().unwrap_or_default()
                } else {
                    Bytes::from(
                        state
                            .queued
                            .drain(..)
                            .flat_map(|b| b.to_vec())
                            .collect::<Vec<u8>>(),
                    )
                };
                return Some((Ok(chunk), state));
            }
            if state.finished {
                return None;
            }
            if let Some(reply) = state.reply.take() {
                // The handler finished: flush what it queued, then the response, then end.
                while let Ok(message) = state.notifications.try_recv() {
                    state.queued.push(sse::encode_message(&message));
                }
                if let Reply::Message { body, .. } = reply {
                    state.queued.push(sse::encode_message(&body));
                }
                state.finished = true;
                continue;
            }
            let Some(work) = state.work.as_mut() else {
                state.finished = true;
                continue;
            };
            // The handler first: what it sends while polled here is taken by the next branch in
            // the same poll, where the other order would leave it for a second wake-up of the
            // connection's task (one per stream per change, 10,000 for one change to as many
            // listen streams). A finished handler's queue is drained before its reply (above).
            tokio::select! {
                biased;
                reply = work => {
                    state.work = None;
                    state.reply = Some(reply);
                }
                Some(message) = state.notifications.recv() => {
                    state.queued.push(sse::encode_message(&message));
                }
                _ = state.keep_alive.tick() => state.queued.push(sse::keep_alive()),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Zero and huge keep-alive periods mean no keep-alive comments, not a panic (tokio's
    /// `interval_at` refuses a zero period; a huge one overflowed `Instant`).
    #[tokio::test(start_paused = true)]
    async fn a_zero_or_huge_keep_alive_sends_none() {
        for period in [Duration::ZERO, Duration::MAX] {
            let mut timer = keep_alive_timer(period);
            let tick = tokio::time::timeout(Duration::from_secs(365 * 24 * 3600), timer.tick());
            assert!(
                tick.await.is_err(),
                "{period:?}: no keep-alive within a year"
            );
        }
        let mut timer = keep_alive_timer(Duration::from_secs(15));
        let tick = tokio::time::timeout(Duration::from_secs(16), timer.tick());
        assert!(tick.await.is_ok(), "15 s: a keep-alive within 16 s");
    }

    fn headers(pairs: &[(&'static str, &'static [u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn media_type_checks_read_lists_parameters_case_and_whitespace() {
        for (accept, both) in [
            (&[][..], true),
            (&[&b"application/json, text/event-stream"[..]][..], true),
            (&[&b"text/event-stream, application/json"[..]][..], true),
            (&[&b"application/json,text/event-stream"[..]][..], true),
            (&[&b"text/event-stream,application/json"[..]][..], true),
            (&[&b"application/json, text/event-stream "[..]][..], true),
            (
                &[
                    &b"application/json, text/event-stream"[..],
                    &b"text/html"[..],
                ][..],
                true,
            ),
            (&[&b"application/json, text/event-streams"[..]][..], false),
            (
                &[&b" Application/JSON ;q=0.9 ,TEXT/Event-Stream"[..]][..],
                true,
            ),
            (
                &[&b"application/json"[..], &b"text/event-stream"[..]][..],
                true,
            ),
            (&[&b"*/*"[..]][..], true),
            (&[&b"application/*, text/*;q=0.1"[..]][..], true),
            (&[&b"application/json"[..]][..], false),
            (&[&b"text/event-stream"[..]][..], false),
            (&[&b"application/jsonx, text/event-stream"[..]][..], false),
            (&[&b"*/json, text/event-stream"[..]][..], false),
            // A value with a non-visible byte is ignored whole, as if absent.
            (&[&b"application/json, \xff"[..]][..], true),
        ] {
            let map = headers(&accept.iter().map(|v| ("accept", *v)).collect::<Vec<_>>());
            assert_eq!(accepts_both(&map), both, "{accept:?}");
        }
        for (content_type, json) in [
            (&b"application/json"[..], true),
            (b"Application/JSON; charset=utf-8", true),
            (b"text/plain, application/json", true),
            (b"application/json-seq", false),
            (b"text/plain", false),
        ] {
            let map = headers(&[("content-type", content_type)]);
            assert_eq!(is_json(&map), json, "{content_type:?}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }

    /// The ladder's lookups of the standard headers go through `HeaderName` constants; any
    /// other name, and a repeated header, read as before.
    #[test]
    fn the_standard_headers_are_read_by_their_constant_names() {
        use crate::http::headers::{METHOD, NAME, PROTOCOL_VERSION, SESSION_ID};
        let map = headers(&[
            ("mcp-protocol-version", b"2026-07-28"),
            ("mcp-method", b"tools/call"),
            ("mcp-name", b"echo"),
            ("mcp-name", b"again"),
            ("mcp-param-region", b"eu"),
        ]);
        assert_eq!(
            map.single(PROTOCOL_VERSION).unwrap(),
            Some(&b"2026-07-28"[..])
        );
        assert_eq!(map.single(METHOD).unwrap(), Some(&b"tools/call"[..]));
        assert!(map.single(NAME).is_err(), "repeated");
        assert_eq!(map.single("mcp-param-region").unwrap(), Some(&b"eu"[..]));
        assert_eq!(map.single(SESSION_ID).unwrap(), None);
        assert!(is_modern(&map));
    }

    #[test]
    fn the_modern_path_is_any_version_header_but_a_handshake_one() {
        assert!(!is_modern(&HeaderMap::new()));
        for (version, modern) in [
            (&b"2026-07-28"[..], true),
            (b"2025-11-25", false),
            (b" 2025-06-18 ", false),
            (b"2024-11-05", false),
            (b"2099-01-01", true),
        ] {
            let map = headers(&[("mcp-protocol-version", version)]);
            assert_eq!(is_modern(&map), modern, "{version:?}");
        }
    }
}
