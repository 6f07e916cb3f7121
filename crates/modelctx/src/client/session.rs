//! The session: one connection's negotiated state, and requests sent one round at a time.
//!
//! Every request is stamped here: on 2026-07-28 with the `_meta` envelope (protocol version,
//! client capabilities, client info) through [`RequestParams::meta_mut`], in the handshake era
//! without it. Replies are decoded in two phases, by `resultType` ([`decode_result`]).
//!
//! The session-level [`Session::call_tool`], [`Session::get_prompt`] and
//! [`Session::read_resource`] do **one** round: with `allow_input_required` they hand an
//! `InputRequiredResult` back to the caller (the manual loop); the [`Client`](super::Client)
//! methods of the same names drive the loop themselves.

use std::sync::Arc;
use std::time::Duration;

use modelctx_types::methods::{
    CallTool, Discover, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ListTools,
    ReadResource,
};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, DiscoverResult, EmptyParams, Era,
    ErrorCode, GetPromptRequestParams, GetPromptResult, Implementation, InputRequiredResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Method,
    NotificationMethod, Outcome, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, RequestMeta, RequestParams, ResultDecodeError,
    ResultType, ResultTypes, ServerCapabilities, decode_result,
};
use serde::Deserialize;
use serde_json::value::{RawValue, to_raw_value};

use super::cache::mode::CacheMode;
use super::callbacks::{ProgressCallback, TaskStatusCallback};
use super::error::ClientError;
use super::middleware::{self, Chain};
use super::shared::Shared;
use super::tool_index::ToolIndex;
use super::transport::{HttpHeaders, Outgoing, Transport, TransportKind};
use crate::sync::lock;

/// The outcome of one round of a request that may ask for input.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundOutcome<T> {
    /// The final result.
    Complete(T),
    /// The server needs input: answer `inputRequests`, then retry the same request with
    /// `inputResponses` and the `requestState` echoed byte for byte.
    InputRequired(InputRequiredResult),
}

impl<T> RoundOutcome<T> {
    /// The final result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Self::Complete(t) => Some(t),
            Self::InputRequired(_) => None,
        }
    }

    /// The input-required result, if this is one.
    pub fn input_required(self) -> Option<InputRequiredResult> {
        match self {
            Self::InputRequired(i) => Some(i),
            Self::Complete(_) => None,
        }
    }
}

/// Options for one request.
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(crate) progress: Option<ProgressCallback>,
    pub(crate) timeout: Option<Duration>,
    /// The tasks extension: changes of the task a `tools/call` becomes (client/tasks.rs).
    pub(crate) task_status: Option<TaskStatusCallback>,
    /// 2025-11-25: call an `optional` task tool as a task (client/tasks_2025.rs).
    pub(crate) task_2025: bool,
    /// 2025-11-25: the statuses of the task a `tools/call` runs as.
    pub(crate) task_2025_status: Option<super::callbacks::Task2025StatusCallback>,
    /// How the call uses the response cache (client/cache).
    pub(crate) cache: CacheMode,
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .field("task_status", &self.task_status.is_some())
            .field("task_2025", &self.task_2025)
            .field("task_2025_status", &self.task_2025_status.is_some())
            .field("cache", &self.cache)
            .finish()
    }
}

impl RequestOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for progress notifications (a `progressToken` is added to `_meta`) and hands them
    /// to `callback`, which runs on the transport's reader task.
    #[must_use]
    pub fn on_progress(
        mut self,
        callback: impl Fn(modelctx_types::ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }

    /// Bounds each round trip of this request (overrides the client's request timeout).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How a cacheable call (the listings, `resources/read`) uses the client's response cache
    /// (default [`CacheMode::Use`]; see [`cache`](super::cache)). A call with a progress
    /// callback always reaches the server.
    #[must_use]
    pub fn cache(mut self, mode: CacheMode) -> Self {
        self.cache = mode;
        self
    }

    /// The cache mode the call runs with: a progress callback expects a request on the wire.
    pub(crate) fn cache_mode(&self) -> CacheMode {
        match self.cache {
            CacheMode::Use if self.progress.is_some() => CacheMode::Refresh,
            mode => mode,
        }
    }
}

/// Settings fixed when the client is built.
#[derive(Debug, Clone)]
pub(crate) struct SessionConfig {
    pub(crate) client_info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
    /// 2025-11-25: the `tasks` capability declared at `initialize` only
    /// (client/tasks_2025_table.rs).
    pub(crate) tasks_2025_capability: Option<modelctx_types::Extra>,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) log_level: Option<modelctx_types::LoggingLevel>,
    pub(crate) result_types: ResultTypes,
    /// Read `tools/list` to check the first result of a tool not seen there yet.
    pub(crate) list_unseen_tools: bool,
    /// Listen again after a graceful close (`ClientBuilder::relisten_after_close`).
    pub(crate) relisten: bool,
    /// Around every request and notification sent (`ClientBuilder::middleware`).
    pub(crate) middleware: Chain,
}

/// Overrides used while the era is still being negotiated.
#[derive(Debug, Clone, Default)]
pub(crate) struct Envelope {
    pub(crate) era: Option<Era>,
    pub(crate) version: Option<ProtocolVersion>,
    pub(crate) timeout: Option<Duration>,
}

/// A connection to one server, used one round at a time. Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<SessionInner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("transport", &self.inner.transport.kind())
            .field("negotiated", &self.inner.shared.negotiated())
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) struct SessionInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) transport: Transport,
    pub(crate) config: SessionConfig,
    pub(crate) tools: ToolIndex,
    /// The serialized 2026 `_meta` envelope and the version it was built for.
    envelope: std::sync::Mutex<Option<(Option<ProtocolVersion>, Arc<str>)>>,
    /// The level 2026-07-28 requests opt in to (`ClientBuilder::log_level`, then
    /// `Client::set_log_level`); part of the cached envelope.
    log_level: std::sync::Mutex<Option<modelctx_types::LoggingLevel>>,
}

#[derive(Deserialize)]
struct RoutingProbe {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
}

impl Session {
    pub(crate) fn new(shared: Arc<Shared>, transport: Transport, config: SessionConfig) -> Self {
        Self {
            inner: Arc::new(SessionInner {
                shared,
                transport,
                log_level: std::sync::Mutex::new(config.log_level),
                config,
                tools: ToolIndex::default(),
                envelope: std::sync::Mutex::new(None),
            }),
        }
    }

    /// The negotiated protocol version (`None` only before negotiation finished).
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.inner.shared.version()
    }

    /// The negotiated era.
    pub fn era(&self) -> Option<Era> {
        self.inner.shared.era()
    }

    /// What the server declared (`server/discover` or `initialize`); `None` with a pinned
    /// version, which skips both.
    pub fn server_capabilities(&self) -> Option<ServerCapabilities> {
        self.inner.shared.negotiated().server_capabilities
    }

    /// The server's name and version, when it sent them.
    pub fn server_info(&self) -> Option<Implementation> {
        self.inner.shared.negotiated().server_info
    }

    /// The server's instructions, when it sent them.
    pub fn instructions(&self) -> Option<String> {
        self.inner.shared.negotiated().instructions
    }

    /// The capabilities this client declares on every request (derived from its callbacks).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.config.capabilities
    }

    /// The kind of transport.
    pub fn transport_kind(&self) -> TransportKind {
        self.inner.transport.kind()
    }

    /// Sends one request of method `M` and decodes its result by `resultType`. On 2026-07-28,
    /// a `-32022` naming a mutually supported version switches to it and re-sends once.
    ///
    /// # Errors
    /// See [`ClientError`]; an input-required result is [`RoundOutcome::InputRequired`], not
    /// an error.
    pub async fn request<M: Method>(
        &self,
        params: M::Params,
        options: &RequestOptions,
    ) -> Result<RoundOutcome<M::Result>, ClientError>
    where
        M::Params: RequestParams,
    {
        let mut params = params;
        self.request_with_headers::<M>(&mut params, options, Vec::new())
            .await
    }

    /// [`Session::request`] with `Mcp-Param-*` headers; `params` is left stamped (a re-send
    /// re-stamps it).
    pub(crate) async fn request_with_headers<M: Method>(
        &self,
        params: &mut M::Params,
        options: &RequestOptions,
        param_headers: Vec<(String, String)>,
    ) -> Result<RoundOutcome<M::Result>, ClientError>
    where
        M::Params: RequestParams,
    {
        let envelope = Envelope {
            timeout: options.timeout,
            ..Envelope::default()
        };
        let reply = self
            .send_once::<M>(params, &envelope, options, &param_headers)
            .await?;
        let raw = match reply {
            Err(error)
                if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                    && self.era() == Some(Era::Modern) =>
            {
                let Some(version) = error
                    .supported_versions()
                    .and_then(|supported| mutual_modern(&supported))
                else {
                    return Err(ClientError::Rpc(error));
                };
                tracing::info!(%version, "the server asked for another protocol version");
                self.inner
                    .shared
                    .update(|n| n.version = Some(version.clone()));
                // Re-stamped with the new version.
                self.send_once::<M>(params, &envelope, options, &param_headers)
                    .await?
                    .map_err(ClientError::Rpc)?
            }
            other => other.map_err(ClientError::Rpc)?,
        };
        match self.decode::<M>(&raw) {
            // A negative or fractional `ttlMs` is to be read as 0 (or its floor), not to fail
            // the call: fixed on this rare path only, so the happy path decodes once.
            Err(ClientError::InvalidResult(ResultDecodeError::Malformed { .. }))
                if CACHEABLE.contains(&M::NAME)
                    && let Some(fixed) = floor_ttl(&raw) =>
            {
                self.decode::<M>(&fixed)
            }
            other => other,
        }
    }

    pub(crate) fn decode<M: Method>(
        &self,
        raw: &RawValue,
    ) -> Result<RoundOutcome<M::Result>, ClientError> {
        match decode_result::<M>(raw, &self.inner.config.result_types)? {
            Outcome::Complete(result) => Ok(RoundOutcome::Complete(result)),
            Outcome::InputRequired(result) => Ok(RoundOutcome::InputRequired(result)),
            // The tasks extension: a task handle for `tools/call` (the only method that may
            // return one) goes to the caller, who follows it (client/tasks.rs).
            Outcome::Extension(result)
                if result.result_type == ResultType::TASK && M::NAME == CallTool::NAME =>
            {
                let task = serde_json::from_str(result.raw.get()).map_err(|source| {
                    ClientError::InvalidResult(ResultDecodeError::Malformed {
                        method: M::NAME,
                        source,
                    })
                })?;
                Err(ClientError::TaskCreated(Box::new(task)))
            }
            // An extension's claim (client/extension.rs): only claimed types are accepted
            // besides the task one, and only `tools/call` resolves them.
            Outcome::Extension(result) if M::NAME == CallTool::NAME => {
                Err(ClientError::ClaimedResult(Box::new(result)))
            }
            Outcome::Extension(result) => Err(ClientError::InvalidResult(
                ResultDecodeError::UnknownResultType(result.result_type.to_string()),
            )),
        }
    }

    /// Stamps, encodes and sends one request; returns the raw reply.
    pub(crate) async fn send_once<M: Method>(
        &self,
        params: &mut M::Params,
        envelope: &Envelope,
        options: &RequestOptions,
        param_headers: &[(String, String)],
    ) -> Result<Result<Box<RawValue>, modelctx_types::ErrorObject>, ClientError>
    where
        M::Params: RequestParams,
    {
        let (era, version) = self.inner.shared.era_and_version();
        let era = envelope.era.or(era);
        let version = envelope.version.clone().or(version);
        let progress = options
            .progress
            .clone()
            .map(|callback| self.inner.shared.register_progress(callback));
        let modern = era == Some(Era::Modern);
        let progress_token = progress.as_ref().map(|p| &p.token);
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))]
        let mut json = self.encode_params(&mut *params, era, version.as_ref(), progress_token)?;
        let http = self.inner.transport.kind() == TransportKind::Http;
        let span = super::trace::request_span(M::NAME, http);
        if !span.is_disabled() {
            // Name and attributes first: an OpenTelemetry span takes its name when it starts,
            // which taking its context for `_meta` does.
            super::trace::record_request(&span, M::NAME, &json, version.as_ref());
            // With `otel`, the request carries its span's context in `_meta` (SEP-414).
            #[cfg(feature = "otel")]
            if crate::otel::inject(&span, params.meta_mut()) {
                json = self.encode_params(&mut *params, era, version.as_ref(), progress_token)?;
            }
        }
        // Only HTTP mirrors anything into headers: the line transports skip the work.
        let name = if http && modern && M::INPUT_REQUIRED {
            serde_json::from_str::<RoutingProbe>(&json)
                .ok()
                .and_then(|p| p.name.or(p.uri))
        } else if http && modern && modelctx_types::tasks::TASK_METHODS.contains(&M::NAME) {
            // The tasks extension: `Mcp-Name` carries `params.taskId`.
            serde_json::from_str::<RoutingProbe>(&json)
                .ok()
                .and_then(|p| p.task_id)
        } else {
            None
        };
        let headers = HttpHeaders {
            // The handshake's `initialize` goes without a version header (none is agreed yet).
            protocol_version: version
                .filter(|_| M::NAME != modelctx_types::methods::Initialize::NAME)
                .map(|v| v.to_string()),
            routing: modern,
            name,
            params: if modern {
                param_headers.to_vec()
            } else {
                Vec::new()
            },
        };
        let outgoing = Outgoing {
            method: M::NAME,
            params: json,
            headers,
            cancellable: M::NAME != modelctx_types::methods::Initialize::NAME,
            span,
        };
        // A listen stream is open-ended: the client's default request bound does not apply.
        let timeout = envelope.timeout.or_else(|| {
            (M::NAME != modelctx_types::methods::SubscriptionsListen::NAME)
                .then_some(self.inner.config.request_timeout)
                .flatten()
        });
        // Boxed: transport futures (reqwest's above all) are large, and this one is nested in
        // every call and every round of the input-required loop.
        let mut request: futures::future::BoxFuture<'_, _> =
            if self.inner.config.middleware.is_empty() {
                Box::pin(self.inner.transport.request(&outgoing))
            } else {
                Box::pin(self.through_middleware(&outgoing, era))
            };
        let traced = !outgoing.span.is_disabled();
        if traced {
            // The middleware chain and the transport run in the request's span.
            request = Box::pin(tracing::Instrument::instrument(
                request,
                outgoing.span.clone(),
            ));
        }
        let reply = match timeout {
            None => request.await,
            Some(after) => {
                // Time spent signing in with the user (OAuth) does not count.
                #[cfg(feature = "auth-client")]
                let bounded =
                    super::pause::bounded(after, request, self.inner.transport.pause_clock()).await;
                #[cfg(not(feature = "auth-client"))]
                let bounded = tokio::time::timeout(after, request).await.ok();
                bounded.unwrap_or(Err(ClientError::Timeout {
                    operation: "request",
                    after,
                }))
            }
        };
        if traced {
            super::trace::record_reply(&outgoing.span, M::NAME, &reply);
        }
        drop(progress);
        reply
    }

    /// The params of a request, serialized with the era's `_meta` envelope.
    fn encode_params<P: RequestParams + serde::Serialize>(
        &self,
        params: &mut P,
        era: Option<Era>,
        version: Option<&ProtocolVersion>,
        progress_token: Option<&modelctx_types::ProgressToken>,
    ) -> Result<String, ClientError> {
        if era == Some(Era::Modern) && progress_token.is_none() && params.meta_mut().is_none() {
            // The common case: the envelope is this session's, pre-serialized once per version
            // and spliced in front of the other members.
            let envelope = self.envelope_json(version);
            let body = serde_json::to_string(&*params)
                .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
            return Ok(splice_meta(&body, &envelope));
        }
        self.stamp(params.meta_mut(), era, version, progress_token);
        serde_json::to_string(&*params).map_err(|e| ClientError::InvalidArgument(e.to_string()))
    }

    /// A request through the middleware chain, sent at its end.
    async fn through_middleware(
        &self,
        outgoing: &Outgoing,
        era: Option<Era>,
    ) -> Result<Result<Box<RawValue>, modelctx_types::ErrorObject>, ClientError> {
        let request = middleware::Request::new(
            middleware::Kind::Request,
            outgoing.method,
            None,
            Some(&outgoing.params),
            era,
        );
        let send: middleware::Endpoint<'_> = Box::new(move || {
            Box::pin(async move {
                self.inner
                    .transport
                    .request(outgoing)
                    .await
                    .map(middleware::Reply::response)
            })
        });
        self.inner
            .config
            .middleware
            .run(request, send)
            .await?
            .into_response()
    }

    /// Makes later 2026-07-28 requests opt in to log messages of at least `level`.
    pub(crate) fn set_log_level(&self, level: modelctx_types::LoggingLevel) {
        *lock(&self.inner.log_level) = Some(level);
        // The cached envelope carries the level: the next request rebuilds it.
        *lock(&self.inner.envelope) = None;
    }

    /// The serialized 2026 `_meta` envelope for `version` (cached; rebuilt when the version
    /// changes). Exactly what [`Self::stamp`] would write into an empty `_meta`.
    fn envelope_json(&self, version: Option<&ProtocolVersion>) -> Arc<str> {
        let mut cache = lock(&self.inner.envelope);
        if let Some((cached_version, json)) = cache.as_ref()
            && cached_version.as_ref() == version
        {
            return Arc::clone(json);
        }
        let mut meta = None;
        self.stamp(&mut meta, Some(Era::Modern), version, None);
        // A RequestMeta of strings and maps always serializes.
        let json: Arc<str> = serde_json::to_string(&meta)
            .unwrap_or_else(|_| "{}".to_owned())
            .into();
        *cache = Some((version.cloned(), Arc::clone(&json)));
        json
    }

    /// Writes the era's envelope into `_meta`, keeping whatever else the caller put there.
    fn stamp(
        &self,
        meta: &mut Option<Box<RequestMeta>>,
        era: Option<Era>,
        version: Option<&ProtocolVersion>,
        progress_token: Option<&modelctx_types::ProgressToken>,
    ) {
        let target = meta.get_or_insert_with(Box::default);
        if era == Some(Era::Modern) {
            target.protocol_version = version.cloned();
            target.client_capabilities = Some(self.inner.config.capabilities.clone());
            target.client_info = Some(self.inner.config.client_info.clone());
            if let Some(level) = *lock(&self.inner.log_level) {
                target.log_level = Some(level);
            }
        } else {
            // The handshake era has no per-request envelope.
            target.protocol_version = None;
            target.client_capabilities = None;
            target.client_info = None;
        }
        if let Some(token) = progress_token {
            target.progress_token = Some(token.clone());
        }
        if **target == RequestMeta::default() {
            *meta = None;
        }
    }

    /// Sends a notification (dropped on 2026-07-28 HTTP, which has no client notifications).
    ///
    /// # Errors
    /// Transport failures.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: Option<&N::Params>,
    ) -> Result<(), ClientError> {
        let raw = params
            .map(to_raw_value)
            .transpose()
            .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        self.notify_raw(N::NAME, raw.as_deref()).await
    }

    /// Sends a notification of a method of your own (an extension's) to the server: a method
    /// of the specification is refused, since those have their own rules and senders (the
    /// cancellation of a request, `Client::notify_roots_changed`). Dropped where
    /// [`notify`](Self::notify) drops.
    ///
    /// # Errors
    /// [`ClientError::InvalidArgument`] for a specification method or a name that is empty or
    /// holds control characters; transport failures.
    pub async fn send_notification(
        &self,
        method: &str,
        params: Option<&serde_json::Value>,
    ) -> Result<(), ClientError> {
        if !modelctx_types::methods::is_custom_notification(method) {
            return Err(ClientError::InvalidArgument(format!(
                "{method:?} cannot be sent with send_notification: it is a method of the \
                 specification or not a usable name"
            )));
        }
        let raw = params
            .map(to_raw_value)
            .transpose()
            .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        self.notify_raw(method, raw.as_deref()).await
    }

    /// Sends a notification through the middleware chain, if there is one.
    async fn notify_raw(&self, method: &str, raw: Option<&RawValue>) -> Result<(), ClientError> {
        let chain = &self.inner.config.middleware;
        if chain.is_empty() {
            return self.inner.transport.notify(method, raw).await;
        }
        let request = middleware::Request::new(
            middleware::Kind::Notification,
            method,
            None,
            raw.map(RawValue::get),
            self.era(),
        );
        let send: middleware::Endpoint<'_> = Box::new(|| {
            Box::pin(async {
                self.inner
                    .transport
                    .notify(method, raw)
                    .await
                    .map(|()| middleware::Reply::sent())
            })
        });
        chain.run(request, send).await.map(drop)
    }

    /// `server/discover` (2026-07-28).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn discover(&self) -> Result<DiscoverResult, ClientError> {
        complete(
            self.request::<Discover>(EmptyParams::default(), &RequestOptions::new())
                .await?,
        )
    }

    /// One page of `tools/list`. On 2026-07-28, tools whose `x-mcp-header` annotations are
    /// invalid are dropped (with a warning), and the annotations of the others are remembered
    /// so that calls mirror them into `Mcp-Param-*` headers.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        self.list_tools_page(cursor, &RequestOptions::new()).await
    }

    /// [`Session::list_tools`] with options.
    pub(crate) async fn list_tools_page(
        &self,
        cursor: Option<String>,
        options: &RequestOptions,
    ) -> Result<ListToolsResult, ClientError> {
        let first_page = cursor.is_none();
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        let mut result = complete(self.request::<ListTools>(params, options).await?)?;
        let complete_listing = first_page && result.next_cursor.is_none();
        if self.era() == Some(Era::Modern) {
            self.inner.tools.absorb(&mut result.tools, complete_listing);
        } else {
            // 2025-11-25: which tools run as tasks (client/tasks_2025.rs).
            self.inner
                .tools
                .absorb_task_support(&result.tools, complete_listing);
        }
        Ok(result)
    }

    /// One page of a listing other than `tools/list`, with options.
    pub(crate) async fn list_page<M>(
        &self,
        cursor: Option<String>,
        options: &RequestOptions,
    ) -> Result<M::Result, ClientError>
    where
        M: Method<Params = PaginatedRequestParams>,
    {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(self.request::<M>(params, options).await?)
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(
            self.request::<ListPrompts>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(
            self.request::<ListResources>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(
            self.request::<ListResourceTemplates>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// One round of `tools/call`. With `allow_input_required` an `InputRequiredResult` is
    /// returned for the caller to answer (persist `params` and the result to resume
    /// elsewhere); without it, it is [`ClientError::InputRequired`].
    ///
    /// On 2026-07-28 the arguments annotated with `x-mcp-header` (for tools seen in
    /// `tools/list`) travel as `Mcp-Param-*` headers too; a `-32020` refreshes `tools/list` and
    /// re-sends once. A successful result of a tool listed with an `outputSchema` is checked
    /// against it ([`ClientError::InvalidStructuredContent`] keeps the result); with
    /// [`ClientBuilder::list_unseen_tools`](super::ClientBuilder::list_unseen_tools) the first
    /// successful result of a tool not listed yet makes the client read `tools/list` first.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn call_tool(
        &self,
        params: CallToolRequestParams,
        allow_input_required: bool,
    ) -> Result<RoundOutcome<CallToolResult>, ClientError> {
        let outcome = self
            .call_tool_round(params, &RequestOptions::new(), &mut false)
            .await?;
        gate(outcome, allow_input_required)
    }

    /// One round of `tools/call` for the loop; `refreshed` records that the one `tools/list`
    /// refresh a `-32020` earns was spent.
    pub(crate) async fn call_tool_round(
        &self,
        mut params: CallToolRequestParams,
        options: &RequestOptions,
        refreshed: &mut bool,
    ) -> Result<RoundOutcome<CallToolResult>, ClientError> {
        let headers = self.param_headers(&params);
        let outcome = match self
            .request_with_headers::<CallTool>(&mut params, options, headers)
            .await
        {
            Err(ClientError::Rpc(error))
                if error.code == ErrorCode::HEADER_MISMATCH
                    && !*refreshed
                    && self.era() == Some(Era::Modern) =>
            {
                *refreshed = true;
                tracing::info!(tool = %params.name, "header mismatch; refreshing tools/list and re-sending");
                Box::pin(self.refresh_tools()).await?;
                let headers = self.param_headers(&params);
                self.request_with_headers::<CallTool>(&mut params, options, headers)
                    .await
            }
            other => other,
        }?;
        match outcome {
            RoundOutcome::Complete(result) => {
                if self.inner.config.list_unseen_tools
                    && result.is_error != Some(true)
                    && self.inner.tools.first_look(&params.name)
                {
                    // The call itself succeeded: a listing that fails only leaves the result
                    // unchecked.
                    if let Err(error) = Box::pin(self.refresh_tools()).await {
                        tracing::debug!(tool = %params.name, %error, "tools/list for the outputSchema failed; result not checked");
                    }
                }
                match self.inner.tools.check_result(&params.name, &result) {
                    Ok(()) => Ok(RoundOutcome::Complete(result)),
                    Err(reason) => Err(ClientError::InvalidStructuredContent {
                        tool: params.name,
                        reason,
                        result: Box::new(result),
                    }),
                }
            }
            input @ RoundOutcome::InputRequired(_) => Ok(input),
        }
    }

    /// The `Mcp-Param-*` mirrors of a call (HTTP only).
    fn param_headers(&self, params: &CallToolRequestParams) -> Vec<(String, String)> {
        if self.inner.transport.kind() != TransportKind::Http {
            return Vec::new();
        }
        self.inner
            .tools
            .headers_for(&params.name, params.arguments.as_ref())
    }

    /// Re-reads every page of `tools/list` (refreshing the header index).
    pub(crate) async fn refresh_tools(&self) -> Result<Vec<modelctx_types::Tool>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self.list_tools_page(cursor, &RequestOptions::new()).await?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(too_many_pages())
    }

    /// One round of `prompts/get`; see [`Session::call_tool`].
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        allow_input_required: bool,
    ) -> Result<RoundOutcome<GetPromptResult>, ClientError> {
        let outcome = self
            .request::<GetPrompt>(params, &RequestOptions::new())
            .await?;
        gate(outcome, allow_input_required)
    }

    /// One round of `resources/read`; see [`Session::call_tool`]. The session caches nothing
    /// (the response cache is the [`Client`](super::Client)'s).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        allow_input_required: bool,
    ) -> Result<RoundOutcome<ReadResourceResult>, ClientError> {
        let outcome = self
            .request::<ReadResource>(params, &RequestOptions::new())
            .await?;
        gate(outcome, allow_input_required)
    }

    /// Closes the connection: a spawned server's stdin is closed (after the
    /// `notifications/cancelled` of requests abandoned before), then the process is waited for
    /// and terminated if needed; a handshake-era HTTP session is ended with `DELETE`, once the
    /// `notifications/cancelled` of requests abandoned before have been sent (waited for up to
    /// 2 s). So a program that gives up on a request (a timeout, Ctrl-C), closes the client and
    /// exits leaves the server nothing to work on.
    ///
    /// # Errors
    /// Transport failures while shutting down.
    pub async fn close(&self) -> Result<(), ClientError> {
        self.inner.transport.close().await
    }
}

/// The methods whose results carry `ttlMs` (SEP-2549).
const CACHEABLE: &[&str] = &[
    Discover::NAME,
    ListTools::NAME,
    ListPrompts::NAME,
    ListResources::NAME,
    ListResourceTemplates::NAME,
    ReadResource::NAME,
];

/// `raw` with a `ttlMs` that is a negative or fractional number made 0 or its floor (the spec
/// reads a negative one as 0); `None` when it needs no fixing (the result is malformed
/// otherwise).
fn floor_ttl(raw: &RawValue) -> Option<Box<RawValue>> {
    let mut value: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    let ttl = value.get_mut("ttlMs")?;
    let number = ttl.as_f64().filter(|_| ttl.as_u64().is_none())?;
    // Saturating: NaN and negatives to 0, past u64::MAX to u64::MAX (the cache caps it anyway).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a float-to-int `as` cast saturates, which is the floor wanted here"
    )]
    let floored = number.floor() as u64;
    *ttl = serde_json::Value::from(floored);
    to_raw_value(&value).ok()
}

/// Inserts `"_meta":<meta>` as the first member of the serialized object `body`.
fn splice_meta(body: &str, meta: &str) -> String {
    let rest = body.strip_prefix('{').unwrap_or(body);
    let mut out = String::with_capacity(body.len() + meta.len() + 10);
    out.push_str("{\"_meta\":");
    out.push_str(meta);
    if !rest.starts_with('}') {
        out.push(',');
    }
    out.push_str(rest);
    out
}

/// Turns an input-required outcome into an error unless the caller handles them.
fn gate<T>(outcome: RoundOutcome<T>, allow: bool) -> Result<RoundOutcome<T>, ClientError> {
    match outcome {
        RoundOutcome::InputRequired(result) if !allow => {
            Err(ClientError::InputRequired(Box::new(result)))
        }
        other => Ok(other),
    }
}

/// The result of a method that cannot ask for input.
fn complete<T>(outcome: RoundOutcome<T>) -> Result<T, ClientError> {
    match outcome {
        RoundOutcome::Complete(result) => Ok(result),
        // decode_result refuses input_required for these methods; this arm stays for safety.
        RoundOutcome::InputRequired(_) => Err(ClientError::InvalidResult(
            ResultDecodeError::UnknownResultType(ResultType::INPUT_REQUIRED.to_string()),
        )),
    }
}

/// The newest 2026-era version this SDK speaks that `supported` lists.
pub(crate) fn mutual_modern(supported: &[ProtocolVersion]) -> Option<ProtocolVersion> {
    ProtocolVersion::MODERN
        .iter()
        .find(|v| supported.contains(v))
        .cloned()
}

/// The most pages a listing follows: a server whose cursors never end (a bug, or a hostile
/// server making the client spend memory and requests) ends the listing with an error.
pub const MAX_LIST_PAGES: usize = 1000;

/// The error of a listing longer than [`MAX_LIST_PAGES`].
pub(crate) fn too_many_pages() -> ClientError {
    ClientError::Protocol(format!(
        "the server's listing goes on past {MAX_LIST_PAGES} pages"
    ))
}

#[cfg(test)]
mod tests {
    use super::{floor_ttl, splice_meta};
    use modelctx_types::{
        CallToolRequestParams, ClientCapabilities, EmptyParams, Implementation, ProtocolVersion,
        RequestMeta,
    };
    use serde_json::value::RawValue;

    /// A server's negative `ttlMs` reads as 0 (the spec's rule), a fractional one as its floor.
    #[test]
    fn a_negative_or_fractional_ttl_is_floored() {
        let fixed = |json: &str| {
            floor_ttl(&RawValue::from_string(json.to_owned()).unwrap())
                .map(|raw| raw.get().to_owned())
        };
        assert_eq!(
            fixed(r#"{"tools":[],"ttlMs":-5}"#).as_deref(),
            Some(r#"{"tools":[],"ttlMs":0}"#)
        );
        assert_eq!(
            fixed(r#"{"ttlMs":1500.9}"#).as_deref(),
            Some(r#"{"ttlMs":1500}"#)
        );
        assert_eq!(
            fixed(r#"{"ttlMs":1e30}"#).as_deref(),
            Some(r#"{"ttlMs":18446744073709551615}"#)
        );
        assert_eq!(fixed(r#"{"ttlMs":60}"#), None, "nothing to fix");
        assert_eq!(fixed(r#"{"ttlMs":"60"}"#), None, "not a number: malformed");
        assert_eq!(fixed(r#"{"tools":[]}"#), None);
    }

    /// The spliced envelope is byte for byte what typed stamping produces.
    #[test]
    fn splicing_matches_stamping() {
        let meta = RequestMeta::modern(
            ProtocolVersion::V2026_07_28,
            ClientCapabilities::new().with_elicitation_form(),
            Some(Implementation::new("c", "1")),
        );
        let meta_json = serde_json::to_string(&meta).unwrap();

        let mut call = CallToolRequestParams::new(
            "t",
            serde_json::json!({"b": [1, {"c": "\u{e9}"}], "a": null})
                .as_object()
                .cloned(),
        );
        let spliced = splice_meta(&serde_json::to_string(&call).unwrap(), &meta_json);
        call.meta = Some(Box::new(meta.clone()));
        assert_eq!(spliced, serde_json::to_string(&call).unwrap());

        let mut empty = EmptyParams::default();
        let spliced = splice_meta(&serde_json::to_string(&empty).unwrap(), &meta_json);
        empty.meta = Some(Box::new(meta));
        assert_eq!(spliced, serde_json::to_string(&empty).unwrap());
    }
}
