//! The per-request pipeline shared by every transport: the validation ladder, routing, sealing,
//! and the stamping of every result.
//!
//! Ladder order (as the reference peers and the conformance suite expect): `params._meta`
//! present with `protocolVersion` and `clientCapabilities` (-32602) → HTTP headers agree with the
//! body (-32020) → the version is supported (-32022) → the method exists and its capability is
//! declared (-32601) → typed params (-32602) → the handler. On the happy path params are decoded
//! once; only when typed decoding fails is `_meta` probed on its own, so that ladder errors keep
//! their precedence over parameter errors.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use modelctx_types::jsonrpc::encode_result;
use modelctx_types::methods::{
    CallTool, Complete, Discover, GetPrompt, ListPrompts, ListResourceTemplates, ListResources,
    ListTools, MODERN_CLIENT_METHODS, Ping, REMOVED_IN_2026, ReadResource, SetLevel, Subscribe,
    SubscriptionsListen, Unsubscribe,
};
use modelctx_types::{
    CompleteRequestParams, DiscoverResult, EmptyParams, ErrorObject, Extra, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Meta, Method,
    PaginatedRequestParams, ProtocolVersion, RequestId, RequestMeta, RequestParams, ResultType,
    WireResult,
};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::context::ContextParts;
use super::handshake::HandshakeSession;
use super::headers::check_headers;
use super::message::{
    Incoming, Reply, decode_params, error_reply, internal, invalid_params, invalid_request_state,
    log_rejected_state, probe_meta,
};
use super::notifier::Notifier;
use super::registry::Registry;
use super::typed_params::TypedParams;
use super::{CachePolicy, RequestContext, Server};

/// Whether `requestState` is present but neither a string nor null. Only its first byte is
/// looked at: a state nested past serde's depth limit is still a malformed state.
fn request_state_is_malformed(params: Option<&str>) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "requestState", borrow)]
        request_state: Option<&'a RawValue>,
    }
    serde_json::from_str::<Probe<'_>>(params.unwrap_or("{}"))
        .ok()
        .and_then(|p| p.request_state)
        .is_some_and(|s| !s.get().starts_with('"') && s.get() != "null")
}

/// The `-32602` for params that did not decode: the one uniform request-state error when the
/// cause is a `requestState` that is not a string (whatever else is wrong), serde's message
/// otherwise.
fn params_error(incoming: &Incoming<'_>, error: &serde_json::Error) -> ErrorObject {
    if matches!(
        incoming.method,
        CallTool::NAME | GetPrompt::NAME | ReadResource::NAME
    ) && request_state_is_malformed(incoming.params)
    {
        log_rejected_state(incoming.method, None, modelctx_seal::Reason::NonString);
        return invalid_request_state();
    }
    invalid_params(error)
}

/// The `_meta` a handshake-era request is served with: version, capabilities, client info and
/// log level come from the session (fixed by `initialize`), the rest from the request's own
/// `_meta`.
pub(crate) fn handshake_meta(
    session: &HandshakeSession,
    own: Option<RequestMeta>,
) -> Box<RequestMeta> {
    let mut meta = own.unwrap_or_default();
    meta.protocol_version = Some(session.version.clone());
    meta.client_capabilities = Some(session.client_capabilities.clone());
    meta.client_info = session.client_info.clone();
    meta.log_level = session.log_level();
    Box::new(meta)
}

impl Server {
    /// Runs one request to its reply, in its `tracing` span when a subscriber wants it
    /// (`server::trace`) and through the middleware chain when there is one. Handler panics
    /// become `-32603` (the server keeps serving).
    ///
    /// Not an `async fn`: one would add a state machine around [`Self::answer`]'s holding a
    /// second copy of `incoming` for the whole request (rustc keeps a moved-from local's
    /// storage), which every listen stream carries for its whole life. The HTTP transport's; the
    /// stdio loop uses [`Self::dispatch_in_task`].
    #[cfg(feature = "http-server")]
    pub(crate) fn dispatch<'a>(
        &'a self,
        incoming: Incoming<'a>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> impl Future<Output = Reply> + 'a {
        use futures::future::Either;
        let (span, name) = super::trace::request_span(self, &incoming);
        if span.is_disabled() {
            Either::Left(self.answer(incoming, notifier, cancel))
        } else {
            // Boxed like the chain: the traced path's state stays out of the plain one.
            Either::Right(Box::pin(
                self.dispatch_traced(span, name, incoming, notifier, cancel),
            ))
        }
    }

    /// [`Self::dispatch`] as an `async fn`, for the stdio loop: its per-request task is boxed and
    /// short-lived, so the second copy of `incoming` costs nothing that lasts, while creating
    /// the answer future inside this state machine, rather than moving a finished one into the
    /// task, saves copying it (about 330 instructions per call, BENCHMARKS.md).
    pub(crate) async fn dispatch_in_task(
        &self,
        incoming: Incoming<'_>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Reply {
        let (span, name) = super::trace::request_span(self, &incoming);
        if !span.is_disabled() {
            return Box::pin(self.dispatch_traced(span, name, incoming, notifier, cancel)).await;
        }
        self.answer(incoming, notifier, cancel).await
    }

    async fn dispatch_traced(
        &self,
        span: tracing::Span,
        name: &str,
        mut incoming: Incoming<'_>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Reply {
        use tracing::Instrument as _;
        super::trace::record_request(&span, name, &incoming);
        incoming.span = span.clone();
        let reply = self
            .answer(incoming, notifier, cancel)
            .instrument(span.clone())
            .await;
        super::trace::record_reply(&span, &reply);
        reply
    }

    /// The reply to one request: through the middleware chain when there is one.
    async fn answer(
        &self,
        incoming: Incoming<'_>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Reply {
        if self.has_middleware() {
            // Boxed, so that the chain's state does not grow the future of every request
            // served without middleware.
            return Box::pin(self.dispatch_chained(incoming, notifier, cancel)).await;
        }
        let id = incoming.id.clone();
        match self.run(&id, incoming, notifier, cancel).await {
            Ok(Some(body)) => Reply::Message {
                body,
                #[cfg(feature = "http-server")]
                status: 200,
            },
            Ok(None) => Reply::Nothing,
            Err(error) => error_reply(Some(&id), &error),
        }
    }

    /// Routes one request, a handler panic made `-32603`.
    pub(crate) async fn run(
        &self,
        id: &RequestId,
        incoming: Incoming<'_>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<u8>>, ErrorObject> {
        match AssertUnwindSafe(self.route(incoming, notifier, cancel))
            .catch_unwind()
            .await
        {
            Ok(routed) => routed,
            Err(_) => {
                tracing::error!(request = %id, "handler panicked");
                Err(internal("Internal error"))
            }
        }
    }

    async fn route(
        &self,
        mut incoming: Incoming<'_>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Result<Option<Vec<u8>>, ErrorObject> {
        let registry = self.registry();
        if let Some(session) = incoming.handshake.clone()
            && let Some(reply) = self.route_handshake(&incoming, &session, &registry)?
        {
            return Ok(Some(reply));
        }
        match incoming.method {
            CallTool::NAME => {
                let typed = incoming
                    .typed
                    .take()
                    .map(|TypedParams::CallTool(params)| *params);
                self.call_tool(&incoming, typed, &registry, notifier, cancel)
                    .await
                    .map(Some)
            }
            GetPrompt::NAME => self
                .get_prompt(&incoming, &registry, notifier, cancel)
                .await
                .map(Some),
            ReadResource::NAME => self
                .read_resource(&incoming, &registry, notifier, cancel)
                .await
                .map(Some),
            ListTools::NAME => {
                let (params, _, _) = self.prepare::<PaginatedRequestParams>(&incoming, |_| None)?;
                self.gate(&incoming, self.has_tools(&registry))?;
                let (tools, next_cursor) = self.page(
                    registry.tools.iter().map(|t| t.tool.clone()),
                    registry.tools.len(),
                    params.cursor.as_deref(),
                )?;
                let policy = &self.inner.caching.lists;
                let mut result = ListToolsResult::new(tools);
                result.next_cursor = next_cursor;
                (result.ttl_ms, result.cache_scope) = self.hints(&incoming, policy);
                self.respond(&incoming, result).map(Some)
            }
            ListPrompts::NAME => {
                let (params, _, _) = self.prepare::<PaginatedRequestParams>(&incoming, |_| None)?;
                self.gate(&incoming, self.has_prompts(&registry))?;
                let (prompts, next_cursor) = self.page(
                    registry.prompts.iter().map(|p| p.prompt.clone()),
                    registry.prompts.len(),
                    params.cursor.as_deref(),
                )?;
                let policy = &self.inner.caching.lists;
                let mut result = ListPromptsResult::new(prompts);
                result.next_cursor = next_cursor;
                (result.ttl_ms, result.cache_scope) = self.hints(&incoming, policy);
                self.respond(&incoming, result).map(Some)
            }
            ListResources::NAME => {
                let (params, _, _) = self.prepare::<PaginatedRequestParams>(&incoming, |_| None)?;
                self.gate(&incoming, self.has_resources(&registry))?;
                let (resources, next_cursor) = self.page(
                    registry.resources.iter().map(|r| r.resource.clone()),
                    registry.resources.len(),
                    params.cursor.as_deref(),
                )?;
                let policy = &self.inner.caching.lists;
                let mut result = ListResourcesResult::new(resources);
                result.next_cursor = next_cursor;
                (result.ttl_ms, result.cache_scope) = self.hints(&incoming, policy);
                self.respond(&incoming, result).map(Some)
            }
            ListResourceTemplates::NAME => {
                let (params, _, _) = self.prepare::<PaginatedRequestParams>(&incoming, |_| None)?;
                self.gate(&incoming, self.has_resources(&registry))?;
                let (resource_templates, next_cursor) = self.page(
                    registry.templates.iter().map(|t| t.template.clone()),
                    registry.templates.len(),
                    params.cursor.as_deref(),
                )?;
                let policy = &self.inner.caching.lists;
                let mut result = ListResourceTemplatesResult::new(resource_templates);
                result.next_cursor = next_cursor;
                (result.ttl_ms, result.cache_scope) = self.hints(&incoming, policy);
                self.respond(&incoming, result).map(Some)
            }
            Discover::NAME => {
                self.prepare::<EmptyParams>(&incoming, |_| None)?;
                let policy = &self.inner.caching.discover;
                let mut result =
                    DiscoverResult::new(self.inner.supported_versions.clone(), self.capabilities());
                result.instructions = self.inner.instructions.clone();
                (result.ttl_ms, result.cache_scope) = self.hints(&incoming, policy);
                self.respond(&incoming, result).map(Some)
            }
            Complete::NAME => {
                let (params, meta, version) =
                    self.prepare::<CompleteRequestParams>(&incoming, |_| None)?;
                let Some(handler) = self.inner.completion.clone() else {
                    return Err(ErrorObject::method_not_found(incoming.method));
                };
                let ctx = self.context(&incoming, meta, version, notifier, cancel);
                let result = handler.complete(ctx.clone(), params).await;
                ctx.finish();
                let mut result = result?;
                let values = &mut result.completion.values;
                if values.len() > 100 {
                    // The spec caps a completion at 100 values.
                    values.truncate(100);
                    result.completion.has_more = Some(true);
                }
                self.respond(&incoming, result).map(Some)
            }
            SubscriptionsListen::NAME => {
                // The stream keeps its request's text for its life: a larger one is refused
                // before it is decoded.
                let request_bytes = incoming.params.map_or(0, str::len);
                let limits = self.inner.subscriptions.limits();
                limits.check_listen_request(request_bytes)?;
                let (params, meta, version) = self
                    .prepare::<modelctx_types::SubscriptionsListenRequestParams>(
                    &incoming,
                    |_| None,
                )?;
                let ctx = self.context(&incoming, meta, version, notifier, cancel);
                let closing = incoming.closing.unwrap_or(&self.inner.shutdown);
                match self
                    .listen(&ctx, params, request_bytes, &registry, closing)
                    .await?
                {
                    Some(mut result) => {
                        self.stamp(&incoming, &mut result);
                        result
                            .meta
                            .get_or_insert_with(Meta::new)
                            .set_subscription_id(ctx.id());
                        Ok(Some(
                            encode_result(&incoming.id, &result)
                                .map_err(|e| internal(&e.to_string()))?,
                        ))
                    }
                    None => Ok(None),
                }
            }
            other => match self.inner.methods.get(other).cloned() {
                Some(handler) => self
                    .custom(&incoming, handler.as_ref(), notifier, cancel)
                    .await
                    .map(Some),
                None => {
                    // Unknown (or removed: initialize, ping, logging/setLevel, …): on
                    // 2026-07-28 the ladder still comes first. A handshake-era session has no
                    // envelope to check; its version was fixed by `initialize`.
                    if incoming.handshake.is_none() {
                        let meta = probe_meta(incoming.params)?;
                        self.ladder(&incoming, meta, None)?;
                    }
                    Err(ErrorObject::method_not_found(other))
                }
            },
        }
    }

    /// The methods that exist only in the handshake era (and those that do not exist in it).
    /// `None` lets the shared routes answer.
    fn route_handshake(
        &self,
        incoming: &Incoming<'_>,
        session: &HandshakeSession,
        registry: &Registry,
    ) -> Result<Option<Vec<u8>>, ErrorObject> {
        let empty = || {
            self.respond(incoming, modelctx_types::EmptyResult::default())
                .map(Some)
        };
        match incoming.method {
            Ping::NAME => empty(),
            SetLevel::NAME => {
                let (params, _, _) =
                    self.prepare::<modelctx_types::SetLevelRequestParams>(incoming, |_| None)?;
                session.set_log_level(params.level);
                empty()
            }
            Subscribe::NAME | Unsubscribe::NAME => {
                let (params, _, _) =
                    self.prepare::<modelctx_types::SubscribeRequestParams>(incoming, |_| None)?;
                self.gate(incoming, self.has_resources(registry))?;
                if incoming.method == Subscribe::NAME {
                    self.subscribe(session, params.uri, |uri| {
                        registry.resource(uri).is_some() || registry.template_for(uri).is_some()
                    })?;
                } else {
                    session.unsubscribe(&params.uri);
                }
                empty()
            }
            // 2026-07-28 only.
            Discover::NAME | SubscriptionsListen::NAME => {
                Err(ErrorObject::method_not_found(incoming.method))
            }
            _ => Ok(None),
        }
    }

    /// Whether `method` is a request this server serves in either era: the protocol's methods
    /// (those 2026-07-28 removed included, which the handshake era still has) and the extension
    /// methods registered with it. Anything else is a name the peer made up (`server::trace`
    /// records it as `_OTHER`).
    pub(crate) fn knows_method(&self, method: &str) -> bool {
        MODERN_CLIENT_METHODS.contains(&method)
            || REMOVED_IN_2026.contains(&method)
            || self.inner.methods.contains_key(method)
    }

    pub(crate) fn has_tools(&self, registry: &Registry) -> bool {
        self.inner.declare.tools || !registry.tools.is_empty()
    }

    pub(crate) fn has_prompts(&self, registry: &Registry) -> bool {
        self.inner.declare.prompts || !registry.prompts.is_empty()
    }

    pub(crate) fn has_resources(&self, registry: &Registry) -> bool {
        self.inner.declare.resources
            || !registry.resources.is_empty()
            || !registry.templates.is_empty()
    }

    /// `-32601` for a method whose capability is not declared.
    pub(crate) fn gate(&self, incoming: &Incoming<'_>, available: bool) -> Result<(), ErrorObject> {
        if available {
            Ok(())
        } else {
            Err(ErrorObject::method_not_found(incoming.method))
        }
    }

    /// Typed params, then the ladder (see the module docs for why in this order).
    pub(crate) fn prepare<P: DeserializeOwned + RequestParams>(
        &self,
        incoming: &Incoming<'_>,
        target: fn(&P) -> Option<&str>,
    ) -> Result<(P, Box<RequestMeta>, ProtocolVersion), ErrorObject> {
        self.prepare_typed(incoming, None, target)
    }

    /// [`Self::prepare`] with the params the envelope's pass decoded, when it did (`typed`: what
    /// decoding `incoming.params` gives, so nothing else differs).
    pub(crate) fn prepare_typed<P: DeserializeOwned + RequestParams>(
        &self,
        incoming: &Incoming<'_>,
        typed: Option<P>,
        target: fn(&P) -> Option<&str>,
    ) -> Result<(P, Box<RequestMeta>, ProtocolVersion), ErrorObject> {
        let decoded = match typed {
            Some(params) => Ok(params),
            None => decode_params::<P>(incoming.params),
        };
        if let Some(session) = &incoming.handshake {
            // The handshake era: the session, not the request, carries version and capabilities.
            let mut params = decoded.map_err(|e| params_error(incoming, &e))?;
            let own = params.meta_mut().take().map(|own| *own);
            return Ok((
                params,
                handshake_meta(session, own),
                session.version.clone(),
            ));
        }
        match decoded {
            Ok(mut params) => {
                let meta = params.meta_mut().take();
                let (meta, version) = self.ladder(incoming, meta, target(&params))?;
                Ok((params, meta, version))
            }
            Err(error) => {
                self.ladder(incoming, probe_meta(incoming.params)?, None)?;
                Err(params_error(incoming, &error))
            }
        }
    }

    fn ladder(
        &self,
        incoming: &Incoming<'_>,
        meta: Option<Box<RequestMeta>>,
        target: Option<&str>,
    ) -> Result<(Box<RequestMeta>, ProtocolVersion), ErrorObject> {
        let Some(meta) = meta else {
            return Err(ErrorObject::invalid_params(
                "params._meta must be an object carrying the required envelope keys \
                 io.modelcontextprotocol/protocolVersion and \
                 io.modelcontextprotocol/clientCapabilities",
            ));
        };
        let mut missing = Vec::new();
        if meta.protocol_version.is_none() {
            missing.push(modelctx_types::meta::keys::PROTOCOL_VERSION);
        }
        if meta.client_capabilities.is_none() {
            missing.push(modelctx_types::meta::keys::CLIENT_CAPABILITIES);
        }
        if !missing.is_empty() {
            return Err(ErrorObject::invalid_params(format!(
                "params._meta is missing the required envelope key(s): {}",
                missing.join(", ")
            )));
        }
        if let Some(headers) = incoming.headers {
            check_headers(
                headers,
                incoming.method,
                meta.protocol_version.as_ref(),
                target,
            )?;
        }
        let version = meta
            .protocol_version
            .clone()
            .unwrap_or(ProtocolVersion::LATEST);
        if !self.inner.supported_versions.contains(&version) {
            return Err(ErrorObject::unsupported_protocol_version(
                &self.inner.supported_versions,
                version.as_str(),
            ));
        }
        Ok((meta, version))
    }

    pub(crate) fn context(
        &self,
        incoming: &Incoming<'_>,
        meta: Box<RequestMeta>,
        protocol_version: ProtocolVersion,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> RequestContext {
        let mut ctx = RequestContext::new(ContextParts {
            server: self.clone(),
            id: incoming.id.clone(),
            method: incoming.method.into(),
            meta,
            protocol_version,
            notifier,
            cancel,
            principal: incoming.principal.clone(),
            handshake: incoming.handshake.clone(),
            #[cfg(feature = "http-server")]
            http: incoming.http.clone(),
        });
        if !incoming.principal_bound {
            self.bind_principal(&mut ctx);
        }
        ctx
    }

    /// `resultType: "complete"` (unless the handler chose another) and the server stamp.
    fn stamp(&self, incoming: &Incoming<'_>, result: &mut dyn WireResult) {
        if incoming.handshake.is_some() {
            // Handshake-era results have neither `resultType` nor the server stamp.
            result.set_result_type(None);
            return;
        }
        if result.result_type().is_none() {
            result.set_result_type(Some(ResultType::COMPLETE));
        }
        result
            .meta_mut()
            .get_or_insert_with(Meta::new)
            .set_server_info_raw(Arc::clone(&self.inner.info_raw));
    }

    pub(crate) fn respond<R: Serialize + WireResult>(
        &self,
        incoming: &Incoming<'_>,
        mut result: R,
    ) -> Result<Vec<u8>, ErrorObject> {
        self.stamp(incoming, &mut result);
        encode_result(&incoming.id, &result)
            .map_err(|e| internal(&format!("result not encodable: {e}")))
    }

    /// The caching hints of a policy (none in the handshake era).
    fn hints(
        &self,
        incoming: &Incoming<'_>,
        policy: &CachePolicy,
    ) -> (Option<u64>, Option<modelctx_types::CacheScope>) {
        if incoming.handshake.is_some() {
            (None, None)
        } else {
            (Some(policy.ttl_ms), Some(policy.scope.clone()))
        }
    }

    /// One page of a list; the cursor is an opaque encoding of the offset.
    fn page<T>(
        &self,
        items: impl Iterator<Item = T>,
        len: usize,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let start = match cursor {
            None => 0,
            Some(cursor) => URL_SAFE_NO_PAD
                .decode(cursor)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|s| {
                    s.strip_prefix("offset:")
                        .and_then(|n| n.parse::<usize>().ok())
                })
                .filter(|&n| n <= len)
                .ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
        };
        let size = self.inner.page_size.unwrap_or(usize::MAX);
        let page: Vec<T> = items.skip(start).take(size).collect();
        let end = start + page.len();
        let next = (end < len).then(|| URL_SAFE_NO_PAD.encode(format!("offset:{end}")));
        Ok((page, next))
    }

    async fn custom(
        &self,
        incoming: &Incoming<'_>,
        handler: &dyn super::MethodHandler,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Result<Vec<u8>, ErrorObject> {
        let mut params: Extra = decode_params(incoming.params).map_err(|e| invalid_params(&e))?;
        let meta = params
            .remove("_meta")
            .map(serde_json::from_value::<Box<RequestMeta>>)
            .transpose()
            .map_err(|e| invalid_params(&e))?;
        let (meta, version) = match &incoming.handshake {
            Some(session) => (
                handshake_meta(session, meta.map(|meta| *meta)),
                session.version.clone(),
            ),
            None => self.ladder(incoming, meta, None)?,
        };
        let ctx = self.context(incoming, meta, version, notifier, cancel);
        let result = handler.handle(ctx.clone(), Value::Object(params)).await;
        ctx.finish();
        let Value::Object(mut result) = result? else {
            return Err(internal("Handler returned an invalid result"));
        };
        match result.get("resultType") {
            Some(Value::String(kind)) if kind == ResultType::INPUT_REQUIRED.as_str() => {
                tracing::error!(
                    method = incoming.method,
                    "only tools/call, prompts/get and resources/read may return an InputRequiredResult"
                );
                return Err(internal("Handler returned an invalid result"));
            }
            _ if incoming.handshake.is_some() => {
                // Handshake-era results have neither `resultType` nor the server stamp.
                result.remove("resultType");
                return encode_result(&incoming.id, &result).map_err(|e| internal(&e.to_string()));
            }
            Some(_) => {}
            None => {
                result.insert(
                    "resultType".to_owned(),
                    Value::from(ResultType::COMPLETE.as_str()),
                );
            }
        }
        let mut meta = match result.remove("_meta") {
            Some(Value::Object(map)) => Meta::from(map),
            _ => Meta::new(),
        };
        meta.set_server_info_raw(Arc::clone(&self.inner.info_raw));
        result.insert(
            "_meta".to_owned(),
            serde_json::to_value(&meta).unwrap_or_default(),
        );
        encode_result(&incoming.id, &result).map_err(|e| internal(&e.to_string()))
    }
}
