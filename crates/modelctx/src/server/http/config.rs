//! The settings of the HTTP endpoint ([`HttpConfig`]): the path, the Host and Origin
//! allowlists, body bounds, keep-alive, sessions, the shutdown grace and, with `auth`, who may
//! call, resumable handshake-era streams ([`Resumability`]), and the opt-in HTTP+SSE transport
//! of 2024-11-05 ([`SseConfig`]).

use std::sync::Arc;
use std::time::Duration;

#[cfg(doc)]
use crate::server::Server;
use crate::server::peer_rate::RateLimit;
use crate::server::shutdown::DEFAULT_SHUTDOWN_GRACE;

use super::event_store::EventStore;

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
    /// How many handshake-era sessions the endpoint keeps (default 10 000). When a new one
    /// would exceed it, the oldest session that never served is dropped first, then the one
    /// in use that has been idle the longest; a session with a request running or its `GET`
    /// stream open is never dropped (the `initialize` is refused with 503 instead). At least 1.
    pub max_sessions: usize,
    /// Under [`Server::serve_http_on`]: how long the requests in flight may take to finish once
    /// its shutdown future completes ([`DEFAULT_SHUTDOWN_GRACE`], 5 s); the connections still
    /// open after it are closed, dropping their requests. `Duration::MAX` waits for them
    /// however long they take.
    pub shutdown_grace: Duration,
    /// The HTTP+SSE transport of 2024-11-05, served beside this endpoint when set (off by
    /// default; see [`HttpConfig::sse`]).
    pub sse: Option<SseConfig>,
    /// Resumable handshake-era streams: where their events are kept and how clients reconnect
    /// (off by default; see [`HttpConfig::event_store`]).
    pub resumability: Option<Resumability>,
    /// Why this endpoint refuses the 2025-11-25 handshake era, when it does (`None`, the
    /// default, serves it; see [`HttpConfig::refuse_handshake_era`]).
    pub handshake_era_refused: Option<String>,
    /// OAuth: who may call the endpoint (off by default; see [`HttpConfig::auth`]).
    #[cfg(feature = "auth")]
    pub auth: Option<Arc<crate::server::auth::ResourceServer>>,
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
            max_sessions: 10_000,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            sse: None,
            resumability: None,
            handshake_era_refused: None,
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
    pub fn auth(mut self, resource_server: crate::server::auth::ResourceServer) -> Self {
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

    /// Keeps at most this many handshake-era sessions (at least 1); see
    /// [`HttpConfig::max_sessions`].
    #[must_use]
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions.max(1);
        self
    }

    /// Ends handshake-era sessions unused for this long (`None`: never by time; at least 1 s);
    /// see [`HttpConfig::session_idle_timeout`].
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// Also serves the HTTP+SSE transport of 2024-11-05 (`GET /sse`, `POST /messages` by
    /// default) for the clients of that era, with this endpoint's guards and limits. Opt-in:
    /// the transport keeps a session per open stream, which streamable HTTP does not need.
    #[must_use]
    pub fn sse(mut self, sse: SseConfig) -> Self {
        self.sse = Some(sse);
        self
    }

    /// Makes the streams of handshake-era (2025-11-25) sessions resumable, their events kept
    /// in `store`: each event of a response stream or of a session's `GET` stream carries an id
    /// (`<stream>:<number>`; the first, empty, one primes the stream and carries the `retry`
    /// delay), a client whose stream broke reconnects with `GET` and `Last-Event-ID` and
    /// receives what it missed, then the rest of the stream. A response stream's request then
    /// goes on when its client disconnects (it is cancelled only by `notifications/cancelled`),
    /// and a `GET` stream keeps collecting for [`Resumability::reconnect_window`]. A
    /// `Last-Event-ID` of another session's stream is refused (404). Revision 2026-07-28 has no
    /// resumption: its requests are unaffected.
    ///
    /// Same as `.resumable(Resumability::new(store))`: no `retry` delay, the default
    /// reconnection window.
    #[must_use]
    pub fn event_store(self, store: impl EventStore) -> Self {
        self.resumable(Resumability::new(store))
    }

    /// Resumable handshake-era streams with these settings (see [`HttpConfig::event_store`]).
    #[must_use]
    pub fn resumable(mut self, resumability: Resumability) -> Self {
        self.resumability = Some(resumability);
        self
    }

    /// Serves 2026-07-28 only: a request of the handshake era (no modern `MCP-Protocol-Version`
    /// header), `initialize` first, is answered `-32022 Unsupported protocol version` on a 400,
    /// with the versions served in `data.supported` and `reason` in the message; its `GET` and
    /// `DELETE` get 405. For an endpoint whose requests may each land on another instance (a
    /// serverless function, a fleet without sticky sessions), where a session opened on one
    /// instance is unknown to the next.
    #[must_use]
    pub fn refuse_handshake_era(mut self, reason: impl Into<String>) -> Self {
        self.handshake_era_refused = Some(reason.into());
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

/// Resumable handshake-era streams (see [`HttpConfig::event_store`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct Resumability {
    /// Where the events are kept.
    pub store: Arc<dyn EventStore>,
    /// The `retry` delay asked of reconnecting clients (`None`: the client's own).
    pub retry: Option<Duration>,
    /// How long a session's `GET` stream keeps collecting events after its client went away
    /// (default 60 s): a client reconnecting within it misses nothing; past it the stream
    /// ends, and a reconnection gets what was kept, then a new stream.
    pub reconnect_window: Duration,
}

impl Resumability {
    /// The default [`Resumability::reconnect_window`].
    pub const DEFAULT_RECONNECT_WINDOW: Duration = Duration::from_secs(60);

    /// Events kept in `store`, no `retry` delay, the default reconnection window.
    pub fn new(store: impl EventStore) -> Self {
        Self {
            store: Arc::new(store),
            retry: None,
            reconnect_window: Self::DEFAULT_RECONNECT_WINDOW,
        }
    }

    /// Asks reconnecting clients to wait `delay` (the SSE `retry` field of each stream's
    /// priming event).
    #[must_use]
    pub fn retry(mut self, delay: Duration) -> Self {
        self.retry = Some(delay);
        self
    }

    /// Keeps a `GET` stream collecting this long after its client went away.
    #[must_use]
    pub fn reconnect_window(mut self, window: Duration) -> Self {
        self.reconnect_window = window;
        self
    }
}

impl std::fmt::Debug for Resumability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumability")
            .field("retry", &self.retry)
            .field("reconnect_window", &self.reconnect_window)
            .finish_non_exhaustive()
    }
}

/// The HTTP+SSE transport of 2024-11-05 (see [`HttpConfig::sse`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SseConfig {
    /// Where `GET` opens a session's event stream (default `/sse`). Both paths must differ from
    /// [`HttpConfig::path`] when mounted beside it (axum refuses overlapping routes).
    pub sse_path: String,
    /// Where the messages of a session are POSTed (default `/messages`); the `endpoint` event
    /// names it with the session's id as the `session_id` query parameter, as an absolute path
    /// (with the prefix of a `Router::nest` the router is mounted under).
    pub messages_path: String,
    /// How many sessions may be open at once (default 1024); beyond, `GET` gets 503.
    pub max_sessions: usize,
    /// How many POSTed messages may wait for one session's engine (default 64); beyond, the
    /// POST gets 503 with `Retry-After`. The engine reads on while it runs fewer than its
    /// concurrent requests (512), so a full queue means a client that does not wait.
    pub max_queued_messages: usize,
}

impl Default for SseConfig {
    fn default() -> Self {
        Self {
            sse_path: "/sse".to_owned(),
            messages_path: "/messages".to_owned(),
            max_sessions: 1024,
            max_queued_messages: 64,
        }
    }
}

impl SseConfig {
    /// Opens sessions at `path` instead of `/sse`.
    #[must_use]
    pub fn sse_path(mut self, path: impl Into<String>) -> Self {
        self.sse_path = path.into();
        self
    }

    /// Takes messages at `path` instead of `/messages`.
    #[must_use]
    pub fn messages_path(mut self, path: impl Into<String>) -> Self {
        self.messages_path = path.into();
        self
    }

    /// Bounds the open sessions.
    #[must_use]
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// Bounds the messages queued for one session.
    #[must_use]
    pub fn max_queued_messages(mut self, messages: usize) -> Self {
        self.max_queued_messages = messages;
        self
    }
}
