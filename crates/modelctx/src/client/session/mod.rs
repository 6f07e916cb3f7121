//! The session: one connection's negotiated state, and requests sent one round at a time.
//!
//! Every request is stamped here: on 2026-07-28 with the `_meta` envelope (protocol version,
//! client capabilities, client info) through [`RequestParams::meta_mut`], in the handshake era
//! without it. Replies are decoded in two phases, by `resultType` ([`decode_result`]).
//!
//! The typed methods are in `methods.rs`, the per-request options and a round's outcome in
//! `options.rs`. The session-level [`Session::call_tool`], [`Session::get_prompt`] and
//! [`Session::read_resource`] do **one** round: with `allow_input_required` they hand an
//! `InputRequiredResult` back to the caller (the manual loop); the [`Client`](super::Client)
//! methods of the same names drive the loop themselves.

use std::sync::Arc;
use std::time::Duration;

use modelctx_types::methods::{
    CallTool, Discover, ListPrompts, ListResourceTemplates, ListResources, ListTools, ReadResource,
};
use modelctx_types::{
    ClientCapabilities, Era, ErrorCode, Implementation, Method, NotificationMethod, Outcome,
    ProtocolVersion, RequestMeta, RequestParams, ResultDecodeError, ResultType, ResultTypes,
    ServerCapabilities, decode_result,
};
use serde::Deserialize;
use serde_json::value::{RawValue, to_raw_value};

use super::error::ClientError;
use super::middleware::{self, Chain};
use super::shared::Shared;
use super::tool_index::ToolIndex;
use super::transport::{HttpHeaders, Outgoing, Transport, TransportKind};
use crate::sync::lock;

mod methods;
mod options;

pub use methods::MAX_LIST_PAGES;
pub(crate) use methods::{mutual_modern, too_many_pages};
pub use options::{RequestOptions, RoundOutcome};

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
