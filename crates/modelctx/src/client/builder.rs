//! Configuring and connecting a [`Client`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use modelctx_types::jsonrpc::Notification;
use modelctx_types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorObject, Implementation, ListRootsResult, LoggingLevel,
    ProtocolVersion, ResultTypes, SamplingCapability,
};
use tokio::io::{AsyncRead, AsyncWrite};

use super::api::{Client, ClientParts};
use super::back_channel::{BackChannel, BackChannelGate};
use super::cache::{CacheConfig, CacheRoute, ResponseCache};
use super::callbacks::{
    CallbackContext, Callbacks, ElicitationCallback, RootsCallback, SamplingCallback,
};
use super::error::ClientError;
use super::extension::{ClientExtension, Extensions};
use super::input_loop::LoopLimits;
use super::middleware::{Chain, Middleware};
use super::negotiate::{Mode, NegotiationConfig, negotiate};
use super::session::{Session, SessionConfig};
use super::shared::Shared;
use super::tasks::TaskSettings;
use super::tasks_2025::Tasks2025Settings;
use super::tasks_2025_table::TaskTable;
use super::transport::engine::LineTransport;
use super::transport::{Transport, TransportKind};
use crate::transport::lines::DEFAULT_MAX_LINE;

#[cfg(feature = "http-client")]
mod sse;

/// Builds a [`Client`]: era mode, identity, callbacks, limits; then connects it.
///
/// ```
/// use modelctx::client::{Client, Mode};
/// use modelctx::types::{ElicitResult, Implementation};
///
/// let builder = Client::builder()
///     .mode(Mode::Auto)
///     .client_info(Implementation::new("my-app", "1.0.0"))
///     .input_required_max_rounds(5)
///     .on_elicitation(|_context, _params| async { Ok(ElicitResult::decline()) });
/// # drop(builder);
/// ```
pub struct ClientBuilder {
    mode: Mode,
    client_info: Implementation,
    callbacks: Callbacks,
    limits: LoopLimits,
    loop_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    log_level: Option<LoggingLevel>,
    probe_timeout: Duration,
    handshake_version: ProtocolVersion,
    max_message: usize,
    list_unseen_tools: bool,
    relisten: bool,
    #[cfg(feature = "stdio")]
    shutdown_grace: Duration,
    /// Whether a spawned server inherits this process's whole environment
    /// ([`ClientBuilder::inherit_environment`]).
    #[cfg(feature = "stdio")]
    inherit_environment: bool,
    #[cfg(feature = "http-client")]
    http: HttpOptions,
    /// The tasks extension ([`ClientBuilder::tasks`]).
    tasks: Option<TaskSettings>,
    /// 2025-11-25 experimental tasks, client side (client/tasks_2025*.rs).
    tasks_2025: Option<Tasks2025Settings>,
    /// Around every message sent ([`ClientBuilder::middleware`]).
    middleware: Chain,
    /// What the extensions advertise, claim and observe ([`ClientBuilder::extension`],
    /// [`ClientBuilder::client_extension`]).
    extensions: Extensions,
    /// The first extension refused, reported when connecting.
    extension_error: Option<String>,
    /// The response cache (`None`: off; [`ClientBuilder::cache`]).
    cache: Option<CacheConfig>,
}

#[cfg(feature = "http-client")]
#[derive(Debug, Clone)]
struct HttpOptions {
    client: Option<reqwest::Client>,
    headers: reqwest::header::HeaderMap,
    max_reissues: u32,
    handshake_get_stream: bool,
    #[cfg(feature = "auth-client")]
    oauth: Option<super::auth::OAuthConfig>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("mode", &self.mode)
            .field("client_info", &self.client_info)
            .field("callbacks", &self.callbacks)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientBuilder {
    /// Defaults: [`Mode::Auto`], no callbacks (so no capabilities), at most 10 input rounds
    /// of at most 16 questions, 4 callbacks at a time, 10 sampling requests per call, no time
    /// bounds except a 10 s `server/discover` probe, the response cache on as the server's
    /// hints allow ([`CacheConfig::new`]).
    pub fn new() -> Self {
        Self {
            mode: Mode::Auto,
            client_info: Implementation::new("mcp-rust", env!("CARGO_PKG_VERSION")),
            callbacks: Callbacks::default(),
            limits: LoopLimits::default(),
            loop_timeout: None,
            request_timeout: None,
            log_level: None,
            probe_timeout: Duration::from_secs(10),
            handshake_version: ProtocolVersion::LATEST_HANDSHAKE,
            max_message: DEFAULT_MAX_LINE,
            list_unseen_tools: false,
            relisten: false,
            #[cfg(feature = "stdio")]
            shutdown_grace: Duration::from_secs(2),
            #[cfg(feature = "stdio")]
            inherit_environment: false,
            #[cfg(feature = "http-client")]
            http: HttpOptions {
                client: None,
                headers: reqwest::header::HeaderMap::new(),
                max_reissues: 2,
                handshake_get_stream: true,
                #[cfg(feature = "auth-client")]
                oauth: None,
            },
            tasks: None,
            tasks_2025: None,
            middleware: Chain::default(),
            extensions: Extensions::default(),
            extension_error: None,
            cache: Some(CacheConfig::new()),
        }
    }

    /// Sets up the response cache (on by default with [`CacheConfig::new`]; see
    /// [`cache`](super::cache)): the store, the principal, the default life of results without
    /// hints, the bounds.
    #[must_use]
    pub fn cache(mut self, config: CacheConfig) -> Self {
        self.cache = Some(config);
        self
    }

    /// Turns the response cache off: every listing and read goes to the server.
    #[must_use]
    pub fn no_cache(mut self) -> Self {
        self.cache = None;
        self
    }

    /// Adds a middleware around every message this client sends: each request (every round of
    /// a multi-round call, negotiation, listen streams), each notification, and each answer to
    /// a handshake-era server's request (see [`middleware`](super::middleware)). Middlewares run
    /// in registration order: the first added is the outermost.
    #[must_use]
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.middleware = self.middleware.with(Arc::new(middleware));
        self
    }

    /// How to pick the era (default [`Mode::Auto`]).
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The `clientInfo` sent with every request (2026-07-28) or in `initialize`.
    #[must_use]
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// Answers elicitations with an async closure; declares
    /// `elicitation: {"form":{},"url":{}}` unless [`Self::elicitation_capability`] says
    /// otherwise.
    #[must_use]
    pub fn on_elicitation<F, Fut>(self, callback: F) -> Self
    where
        F: Fn(CallbackContext, ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation_handler(callback)
    }

    /// Answers elicitations with a handler object (see [`Self::on_elicitation`]).
    #[must_use]
    pub fn elicitation_handler(mut self, handler: impl ElicitationCallback) -> Self {
        self.callbacks.elicitation = Some(Arc::new(handler));
        self
    }

    /// The elicitation modes to declare (e.g. form only), when an elicitation callback is set.
    #[must_use]
    pub fn elicitation_capability(mut self, capability: ElicitationCapability) -> Self {
        self.callbacks.elicitation_capability = Some(capability);
        self
    }

    /// Answers sampling requests with an async closure; declares `sampling: {}` unless
    /// [`Self::sampling_capability`] says otherwise.
    #[must_use]
    pub fn on_sampling<F, Fut>(self, callback: F) -> Self
    where
        F: Fn(CallbackContext, CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling_handler(callback)
    }

    /// Answers sampling requests with a handler object (see [`Self::on_sampling`]).
    #[must_use]
    pub fn sampling_handler(mut self, handler: impl SamplingCallback) -> Self {
        self.callbacks.sampling = Some(Arc::new(handler));
        self
    }

    /// The sampling capability to declare (e.g. with `tools`), when a sampling callback is set.
    #[must_use]
    pub fn sampling_capability(mut self, capability: SamplingCapability) -> Self {
        self.callbacks.sampling_capability = Some(capability);
        self
    }

    /// Answers roots requests with an async closure; declares `roots: {}`.
    #[must_use]
    pub fn on_list_roots<F, Fut>(self, callback: F) -> Self
    where
        F: Fn(CallbackContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.roots_handler(callback)
    }

    /// Answers roots requests with a handler object (see [`Self::on_list_roots`]).
    #[must_use]
    pub fn roots_handler(mut self, handler: impl RootsCallback) -> Self {
        self.callbacks.roots = Some(Arc::new(handler));
        self
    }

    /// Receives notifications no request claimed (log messages, list changes, …), on the
    /// transport's reader task.
    #[must_use]
    pub fn on_notification(
        mut self,
        callback: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.notification = Some(Arc::new(callback));
        self
    }

    /// Whether the first successful result of a tool the client has not seen in `tools/list`
    /// makes it read `tools/list` (every page, once per tool name) to learn the tool's
    /// `outputSchema` and check the result against it, as the Python SDK does (default false:
    /// results are checked against the listings the caller read, and a call never waits on a
    /// listing it did not ask for).
    #[must_use]
    pub fn list_unseen_tools(mut self, list: bool) -> Self {
        self.list_unseen_tools = list;
        self
    }

    /// Whether a 2026-07-28 [`Subscription`](super::Subscription) listens again when the server
    /// ends its stream gracefully (an instance of a fleet shutting down: behind a load balancer
    /// the new request reaches another instance), instead of ending (default false). Once the
    /// new stream is acknowledged the subscription yields a list-changed event for each list
    /// it follows and an update for each resource it follows, since changes may have been
    /// missed in between; the caller refetches as for any change. Off by default: a graceful
    /// close can also mean the server is going away for good (a stdio server exiting), and a
    /// caller that waits for the end of the stream must keep seeing it.
    #[must_use]
    pub fn relisten_after_close(mut self, relisten: bool) -> Self {
        self.relisten = relisten;
        self
    }

    /// How many `InputRequiredResult`s one call may receive before failing with
    /// [`ClientError::RoundsExceeded`] (default 10).
    #[must_use]
    pub fn input_required_max_rounds(mut self, rounds: u32) -> Self {
        self.limits.max_rounds = rounds;
        self
    }

    /// How many input requests one round may carry (default 16). A round with more fails
    /// before any callback runs with [`ClientError::TooManyInputRequests`] — a server cannot
    /// make the client ask the user, or build a retry, without bound. The same number bounds
    /// the handshake-era server→client requests answered at a time: one beyond it gets an
    /// error response at once. Servers ask a handful of questions per round; 16 leaves room.
    #[must_use]
    pub fn max_input_requests_per_round(mut self, requests: usize) -> Self {
        self.limits.max_input_requests = requests;
        self
    }

    /// How many callbacks run at once, within a round and on the handshake-era back-channel
    /// (default 4; at least 1). The others wait their turn.
    #[must_use]
    pub fn max_concurrent_callbacks(mut self, callbacks: usize) -> Self {
        self.limits.max_concurrent_callbacks = callbacks.max(1);
        self
    }

    /// How many sampling requests one `call_tool` / `get_prompt` / `read_resource` may have
    /// answered (default 10: one per round of the default round limit), counted over its
    /// input-required rounds and the input requests of the task it may become. Each sampling
    /// request runs the model, which costs money and time, so a server must not be able to
    /// ask for it without bound. A round that would exceed it fails before any callback runs
    /// with [`ClientError::SamplingBudgetExceeded`]; identical questions count once.
    ///
    /// In the handshake era each call in flight brings this budget for the back-channel
    /// `sampling/createMessage` requests that arrive while it runs; a request when no call in
    /// flight has budget left (or no call is in flight) gets an error response, and the calls
    /// in flight fail with [`ClientError::SamplingBudgetExceeded`].
    #[must_use]
    pub fn max_sampling_per_call(mut self, requests: u32) -> Self {
        self.limits.max_sampling = requests;
        self
    }

    /// The backoff of state-only rounds: `initial`, doubling up to `max` (default 50 ms and
    /// 250 ms).
    #[must_use]
    pub fn input_required_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.limits.backoff_initial = initial;
        self.limits.backoff_max = max.max(initial);
        self
    }

    /// A wall-clock bound on a whole input-required loop (every round, callback and backoff of
    /// one `call_tool` / `get_prompt` / `read_resource`); past it the call fails with
    /// [`ClientError::Timeout`]. Wrapping the call in `tokio::time::timeout` does the same
    /// from the outside: dropping a call is safe (on stdio the in-flight request is cancelled
    /// with `notifications/cancelled`).
    #[must_use]
    pub fn loop_timeout(mut self, timeout: Duration) -> Self {
        self.loop_timeout = Some(timeout);
        self
    }

    /// A bound on each single round trip (default none).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Opts every 2026-07-28 request in to log messages of at least `level`
    /// (`_meta["io.modelcontextprotocol/logLevel"]`); they reach
    /// [`Self::on_notification`]. Without it a 2026 server sends none.
    #[must_use]
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// How long [`Mode::Auto`] waits for `server/discover` before assuming a handshake-era
    /// server (default 10 s).
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// The version offered in `initialize` (default 2025-11-25).
    #[must_use]
    pub fn handshake_version(mut self, version: ProtocolVersion) -> Self {
        self.handshake_version = version;
        self
    }

    /// The largest message accepted from the server (default 16 MiB).
    #[must_use]
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }

    /// How long closing a stdio client waits for the server to exit after stdin closes, and
    /// again after SIGTERM, before killing it (default 2 s).
    #[cfg(feature = "stdio")]
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Whether a server spawned by [`connect_stdio`](Self::connect_stdio) inherits this
    /// process's whole environment (default false).
    ///
    /// By default it gets only what a program needs to run — `HOME`, `LOGNAME`, `PATH`,
    /// `SHELL`, `TERM`, `USER` on Unix; the system and profile variables on Windows — and the
    /// variables set on its `Command` (`.env(…)`), as the Python SDK does: a server is a
    /// third-party program, and the client's environment holds its secrets (API keys, cloud
    /// credentials, tokens). A shell function exported as a variable (a value starting `()`)
    /// is never passed. `true` passes everything, as `Command` does on its own (the `mcp`
    /// command does so: the server is the user's own command line).
    #[cfg(feature = "stdio")]
    #[must_use]
    pub fn inherit_environment(mut self, inherit: bool) -> Self {
        self.inherit_environment = inherit;
        self
    }

    /// The `reqwest` client to use (default: a new one with rustls that does not follow
    /// redirects).
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http.client = Some(client);
        self
    }

    /// A header sent with every HTTP request (e.g. `Authorization`).
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn http_header(
        mut self,
        name: reqwest::header::HeaderName,
        value: reqwest::header::HeaderValue,
    ) -> Self {
        self.http.headers.insert(name, value);
        self
    }

    /// Handles tasks: declares `io.modelcontextprotocol/tasks` on every request, accepts
    /// `resultType: "task"`, and follows tasks to their end in [`Client::call_tool`].
    #[must_use]
    pub fn tasks(mut self, settings: TaskSettings) -> Self {
        self.tasks = Some(settings);
        self
    }

    /// Advertises extension `id` with `settings` (SEP-2133): in the `_meta` client
    /// capabilities of every 2026-07-28 request (`clientCapabilities.extensions[id]`) and at
    /// `initialize` in the handshake era. Advertising asserts support: for an extension with
    /// behaviour (claimed result types, observed notifications), give a
    /// [`ClientExtension`] to [`Self::client_extension`] instead. Connecting fails
    /// ([`ClientError::InvalidArgument`]) on an identifier given twice or settings over
    /// [`MAX_SETTINGS_BYTES`](super::extension::MAX_SETTINGS_BYTES).
    #[must_use]
    pub fn extension(
        mut self,
        id: modelctx_types::ExtensionId,
        settings: modelctx_types::Extra,
    ) -> Self {
        if let Err(error) = self.extensions.advertise(id, settings) {
            self.extension_error.get_or_insert(error.to_string());
        }
        self
    }

    /// Serves a client extension (see [`extension`](super::extension)): advertises it as
    /// [`Self::extension`] does, resolves the `resultType`s it claims on `tools/call`, and
    /// hands it the server notifications it binds. Connecting fails
    /// ([`ClientError::InvalidArgument`]) on an identifier given twice, a `resultType` claimed
    /// twice (or the tasks extension's `task` with [`Self::tasks`]), or settings over
    /// [`MAX_SETTINGS_BYTES`](super::extension::MAX_SETTINGS_BYTES).
    #[must_use]
    #[allow(
        clippy::needless_pass_by_value,
        reason = "taken by value as callbacks are: read once here; its claims and bindings hold what they need"
    )]
    pub fn client_extension(mut self, extension: impl ClientExtension) -> Self {
        if let Err(error) = self.extensions.add(&extension) {
            self.extension_error.get_or_insert(error.to_string());
        }
        self
    }

    /// The 2025-11-25 experimental tasks (SEP-1686), for handshake-era sessions: declares
    /// `capabilities.tasks` at `initialize` — `tasks/list`, `tasks/cancel`, and task-augmented
    /// `elicitation/create` / `sampling/createMessage` for the callbacks given — so that the
    /// server may ask the client to run those as tasks, which it then polls
    /// (`client/tasks_2025_table.rs`); and sets how task-augmented `tools/call`s are followed.
    ///
    /// Without it, task-augmented calls of tools that require them still work, with
    /// [`Tasks2025Settings::new`]; nothing is declared. Unrelated to [`Self::tasks`], the
    /// 2026-07-28 extension.
    #[must_use]
    pub fn tasks_2025(mut self, settings: Tasks2025Settings) -> Self {
        self.tasks_2025 = Some(settings);
        self
    }

    /// Signs in to OAuth-protected HTTP servers (see [`super::auth`]): on a 401 the client
    /// discovers the authorization server, registers, has the user authorize through the
    /// configured handler, and retries with the access token; it refreshes expired tokens and
    /// steps up scopes on a 403 `insufficient_scope`.
    #[cfg(feature = "auth-client")]
    #[must_use]
    pub fn oauth(mut self, config: super::auth::OAuthConfig) -> Self {
        self.http.oauth = Some(config);
        self
    }

    /// How many times a request whose response stream broke is re-issued (default 2).
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn max_stream_reissues(mut self, reissues: u32) -> Self {
        self.http.max_reissues = reissues;
        self
    }

    /// Whether a handshake-era HTTP session opens the standalone GET stream (default true;
    /// servers without one answer 405, which is fine).
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn handshake_get_stream(mut self, open: bool) -> Self {
        self.http.handshake_get_stream = open;
        self
    }

    /// Spawns `command` as the server and speaks over its stdin/stdout. Its stderr is left as
    /// configured on `command` (inherited by default). It gets a safe default environment (see
    /// [`inherit_environment`](Self::inherit_environment)) and, on Unix, a process group of its
    /// own, which closing the client ends whole (SIGTERM, then SIGKILL): a server's own children
    /// do not outlive it, and Ctrl-C in a terminal reaches the client, not the server.
    ///
    /// # Errors
    /// The spawn or the negotiation failed.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(
        mut self,
        command: tokio::process::Command,
    ) -> Result<Client, ClientError> {
        let core = self.core()?;
        let (process, stdout, stdin) =
            super::transport::stdio::spawn(command, self.shutdown_grace, self.inherit_environment)?;
        let transport = LineTransport::start(
            stdout,
            stdin,
            Arc::clone(&core.shared),
            self.max_message,
            TransportKind::Stdio,
        )
        .with_process(process);
        self.finish(core, Transport::Lines(Box::new(transport)), None)
            .await
    }

    /// Speaks newline-delimited JSON over `reader` / `writer` (an in-memory pipe from
    /// [`crate::memory::pipe`], a socket, …).
    ///
    /// # Errors
    /// The negotiation failed.
    pub async fn connect_io<R, W>(self, reader: R, writer: W) -> Result<Client, ClientError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.connect_lines(reader, writer, TransportKind::Io, None)
            .await
    }

    /// Speaks newline-delimited JSON over `reader` / `writer`, as a transport of `kind` to the
    /// server at `server_url` (when it has one).
    async fn connect_lines<R, W>(
        mut self,
        reader: R,
        writer: W,
        kind: TransportKind,
        server_url: Option<String>,
    ) -> Result<Client, ClientError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let core = self.core()?;
        let transport = LineTransport::start(
            reader,
            writer,
            Arc::clone(&core.shared),
            self.max_message,
            kind,
        );
        self.finish(core, Transport::Lines(Box::new(transport)), server_url)
            .await
    }

    /// Connects to the streamable HTTP endpoint at `url` (e.g. `http://127.0.0.1:8000/mcp`).
    ///
    /// # Errors
    /// An invalid URL, or the negotiation failed.
    #[cfg(feature = "http-client")]
    pub async fn connect_http(mut self, url: &str) -> Result<Client, ClientError> {
        let (core, transport, identity) = self.http_transport(url)?;
        self.finish(core, transport, Some(identity)).await
    }

    /// The streamable HTTP transport to `url`, and the core of its connection.
    #[cfg(feature = "http-client")]
    fn http_transport(&mut self, url: &str) -> Result<(Core, Transport, String), ClientError> {
        #[cfg(feature = "auth-client")]
        let auth = match &self.http.oauth {
            Some(config) => Some(
                Arc::new(super::auth::OAuthClient::new(config.clone(), url)?)
                    as Arc<dyn super::transport::http::RequestAuth>,
            ),
            None => None,
        };
        #[cfg(not(feature = "auth-client"))]
        let auth = None;
        let url = reqwest::Url::parse(url)
            .map_err(|e| ClientError::InvalidArgument(format!("invalid URL {url:?}: {e}")))?;
        let client = self.reqwest_client()?;
        let core = self.core()?;
        let identity = server_identity(&url);
        let config = super::transport::http::HttpConfig {
            client,
            url,
            extra_headers: self.http.headers.clone(),
            max_reissues: self.http.max_reissues,
            max_message: self.max_message,
            handshake_get_stream: self.http.handshake_get_stream,
            auth,
        };
        let transport =
            super::transport::http::HttpTransport::new(config, Arc::clone(&core.shared));
        Ok((core, Transport::Http(transport), identity))
    }

    /// The HTTP client of a connection: the one given, or one that follows no redirects (an
    /// MCP endpoint that moves is a configuration error, and a POST replayed to another origin
    /// could leak the request; it surfaces as `ClientError::HttpStatus`).
    #[cfg(feature = "http-client")]
    fn reqwest_client(&self) -> Result<reqwest::Client, ClientError> {
        Ok(match &self.http.client {
            Some(client) => client.clone(),
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
        })
    }

    /// The core of a new connection, with the back-channel as its inbound handler; or the
    /// first extension refused.
    fn core(&mut self) -> Result<Core, ClientError> {
        if let Some(refused) = self.extension_error.take() {
            return Err(ClientError::InvalidArgument(refused));
        }
        if self.tasks.is_some() {
            self.extensions.reserve(&modelctx_types::ResultType::TASK)?;
        }
        let back_channel = Arc::new(BackChannelGate::new(&self.limits));
        let table = self
            .tasks_2025
            .clone()
            .map(|settings| Arc::new(TaskTable::new(settings.table_limits())));
        let inbound = BackChannel::new(
            self.callbacks.clone(),
            Arc::clone(&back_channel),
            self.middleware.clone(),
            table,
            self.extensions.observers(),
        );
        Ok(Core {
            shared: Shared::new(Arc::new(inbound)),
            back_channel,
        })
    }

    /// Negotiates on `transport` and makes the client; `server_url` is the server's identity
    /// in the response cache's keys (`None`: a transport without a URL).
    async fn finish(
        self,
        core: Core,
        transport: Transport,
        server_url: Option<String>,
    ) -> Result<Client, ClientError> {
        // Boxed: the negotiation's state is large, and every `connect_*` future (and its
        // callers') would carry it inline. One allocation per connection.
        Box::pin(self.try_finish(core, transport, server_url))
            .await
            .map_err(|(error, _)| error)
    }

    /// [`finish`](Self::finish), handing the builder back when the negotiation failed (for a
    /// fallback to another transport).
    async fn try_finish(
        mut self,
        core: Core,
        transport: Transport,
        server_url: Option<String>,
    ) -> Result<Client, (ClientError, Box<Self>)> {
        let mut capabilities = self.callbacks.capabilities();
        // The extensions: declared on every request (and at `initialize`), their claimed
        // result types accepted.
        self.extensions.declare(&mut capabilities);
        let mut result_types = self.extensions.accept(ResultTypes::core());
        // The tasks extension: declared on every request, and `resultType: "task"` accepted.
        if self.tasks.is_some() {
            capabilities = capabilities.with_extension(modelctx_types::TASKS_EXTENSION);
            result_types = result_types.with(modelctx_types::ResultType::TASK);
        }
        let tasks_2025_capability = self.tasks_2025.as_ref().map(|_| {
            modelctx_types::tasks_2025::client_tasks_capability(
                self.callbacks.elicitation.is_some(),
                self.callbacks.sampling.is_some(),
            )
        });
        let config = SessionConfig {
            client_info: self.client_info.clone(),
            capabilities,
            tasks_2025_capability,
            request_timeout: self.request_timeout,
            log_level: self.log_level,
            result_types,
            list_unseen_tools: self.list_unseen_tools,
            relisten: self.relisten,
            middleware: self.middleware.clone(),
        };
        // Read, not taken: a failed negotiation hands the builder back for another transport.
        let cache = self
            .cache
            .as_ref()
            .map(|config| response_cache(config, server_url))
            .transpose();
        let session = Session::new(core.shared, transport, config);
        let cache = match cache {
            Ok(cache) => cache,
            Err(error) => {
                let _ = session.close().await;
                return Err((error, Box::new(self)));
            }
        };
        if let Some(cache) = &cache {
            // Invalidation: every notification from now on, both eras, before any subscription.
            session.inner.shared.route::<CacheRoute>().attach(cache);
        }
        let negotiation = NegotiationConfig {
            mode: self.mode.clone(),
            handshake_version: self.handshake_version.clone(),
            probe_timeout: self.probe_timeout,
        };
        if let Err(error) = negotiate(&session, &negotiation).await {
            // Do not leave a spawned server behind.
            let _ = session.close().await;
            return Err((error, Box::new(self)));
        }
        Ok(Client::new(
            session,
            ClientParts {
                callbacks: self.callbacks,
                limits: self.limits,
                loop_timeout: self.loop_timeout,
                back_channel: core.back_channel,
                tasks: self.tasks.unwrap_or_default(),
                tasks_2025: self.tasks_2025.unwrap_or_default(),
                claims: self.extensions.claims(),
                cache,
            },
        ))
    }
}

/// The server's identity in the response cache's keys: its URL, without credentials or a
/// fragment (one server, whoever signs in to it and however a link names a part of it).
#[cfg(feature = "http-client")]
fn server_identity(url: &reqwest::Url) -> String {
    let mut identity = url.clone();
    let _ = identity.set_username("");
    let _ = identity.set_password(None);
    identity.set_fragment(None);
    identity.into()
}

/// The response cache of a new connection to the server at `server_url` (`None`: not HTTP).
fn response_cache(
    config: &CacheConfig,
    server_url: Option<String>,
) -> Result<Arc<ResponseCache>, ClientError> {
    let random = || {
        crate::ids::random_hex().map_err(|error| {
            ClientError::InvalidArgument(format!("no randomness for the response cache: {error}"))
        })
    };
    let (store, shared) = config.store_or_default();
    let server: Arc<str> = match (&config.server_id, server_url) {
        (Some(id), _) => Arc::clone(id),
        (None, Some(url)) => url.into(),
        (None, None) if shared => {
            return Err(ClientError::InvalidArgument(
                "a shared response cache store needs CacheConfig::server_id on a transport \
                 without a URL (its entries would be served for another server)"
                    .to_owned(),
            ));
        }
        // A store of the client's own: the identity only has to be its own.
        (None, None) => random()?.into(),
    };
    // Without a principal a client is one of its own: its private entries go to nobody else.
    let principal: Arc<str> = match &config.principal {
        Some(principal) => Arc::clone(principal),
        None => random()?.into(),
    };
    let writer = u64::from_str_radix(&random()?[..16], 16).unwrap_or_default();
    Ok(Arc::new(ResponseCache::new(
        config, store, server, principal, writer,
    )))
}

/// A new connection's core and the back-channel gate its calls draw sampling grants from.
struct Core {
    shared: Arc<Shared>,
    back_channel: Arc<BackChannelGate>,
}

/// Construction with the defaults: the builder is the layer above [`Client`].
impl Client {
    /// A builder with the defaults.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// Connects with the defaults over newline-delimited JSON on `reader` / `writer`.
    ///
    /// # Errors
    /// The negotiation failed.
    pub async fn connect_io<R, W>(reader: R, writer: W) -> Result<Self, ClientError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        ClientBuilder::new().connect_io(reader, writer).await
    }

    /// Spawns `command` as the server, with the defaults.
    ///
    /// # Errors
    /// The spawn or the negotiation failed.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(command: tokio::process::Command) -> Result<Self, ClientError> {
        ClientBuilder::new().connect_stdio(command).await
    }

    /// Connects to a streamable HTTP endpoint, with the defaults.
    ///
    /// # Errors
    /// An invalid URL, or the negotiation failed.
    #[cfg(feature = "http-client")]
    pub async fn connect_http(url: &str) -> Result<Self, ClientError> {
        ClientBuilder::new().connect_http(url).await
    }
}
