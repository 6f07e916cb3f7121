//! Routing: one request, past the transport and the middleware chain, to the stage that serves
//! its method — the listing and discovery methods here, `tools/call`, `prompts/get` and
//! `resources/read` in `mrtr_methods`, `subscriptions/listen` in `listen`, extension methods
//! through their handler — and the handshake era's own methods (`ping`, `logging/setLevel`,
//! `resources/subscribe`). A handler panic becomes `-32603` here.
//!
//! The steps every route shares (the ladder, typed params, the context, the stamped result) are
//! in `ladder`, below every stage; how a request reaches [`run`] (its span, the chain) is in
//! `pipeline`, above the chain, which ends here.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use modelctx_types::jsonrpc::encode_result;
use modelctx_types::methods::{
    CallTool, Complete, Discover, GetPrompt, ListPrompts, ListResourceTemplates, ListResources,
    ListTools, Ping, ReadResource, SetLevel, Subscribe, SubscriptionsListen, Unsubscribe,
};
use modelctx_types::{
    CompleteRequestParams, DiscoverResult, EmptyParams, ErrorObject, Extra, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Meta, Method,
    PaginatedRequestParams, RequestId, RequestMeta, ResultType,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::handshake::HandshakeSession;
use super::handshake_methods::subscribe;
use super::ladder::{
    context, gate, handshake_meta, has_prompts, has_resources, has_tools, ladder, prepare, respond,
    stamp,
};
use super::listen::listen;
use super::message::{Incoming, decode_params, internal, invalid_params, probe_meta};
use super::mrtr_methods::{call_tool, get_prompt, read_resource};
use super::notifier::Notifier;
use super::registry::Registry;
use super::typed_params::TypedParams;
use super::{CachePolicy, Server};

/// Routes one request, a handler panic made `-32603`.
pub(crate) async fn run(
    server: &Server,
    id: &RequestId,
    incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Result<Option<Vec<u8>>, ErrorObject> {
    match AssertUnwindSafe(route(server, incoming, notifier, cancel))
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
    server: &Server,
    mut incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Result<Option<Vec<u8>>, ErrorObject> {
    let registry = server.registry();
    if let Some(session) = incoming.handshake.clone()
        && let Some(reply) = route_handshake(server, &incoming, &session, &registry)?
    {
        return Ok(Some(reply));
    }
    match incoming.method {
        CallTool::NAME => {
            let typed = incoming
                .typed
                .take()
                .map(|TypedParams::CallTool(params)| *params);
            call_tool(server, &incoming, typed, &registry, notifier, cancel)
                .await
                .map(Some)
        }
        GetPrompt::NAME => get_prompt(server, &incoming, &registry, notifier, cancel)
            .await
            .map(Some),
        ReadResource::NAME => read_resource(server, &incoming, &registry, notifier, cancel)
            .await
            .map(Some),
        ListTools::NAME => {
            let (params, _, _) = prepare::<PaginatedRequestParams>(server, &incoming, |_| None)?;
            gate(&incoming, has_tools(server, &registry))?;
            let (tools, next_cursor) = page(
                server,
                registry.tools.iter().map(|t| t.tool.clone()),
                registry.tools.len(),
                params.cursor.as_deref(),
            )?;
            let policy = &server.inner.caching.lists;
            let mut result = ListToolsResult::new(tools);
            result.next_cursor = next_cursor;
            (result.ttl_ms, result.cache_scope) = hints(&incoming, policy);
            respond(server, &incoming, result).map(Some)
        }
        ListPrompts::NAME => {
            let (params, _, _) = prepare::<PaginatedRequestParams>(server, &incoming, |_| None)?;
            gate(&incoming, has_prompts(server, &registry))?;
            let (prompts, next_cursor) = page(
                server,
                registry.prompts.iter().map(|p| p.prompt.clone()),
                registry.prompts.len(),
                params.cursor.as_deref(),
            )?;
            let policy = &server.inner.caching.lists;
            let mut result = ListPromptsResult::new(prompts);
            result.next_cursor = next_cursor;
            (result.ttl_ms, result.cache_scope) = hints(&incoming, policy);
            respond(server, &incoming, result).map(Some)
        }
        ListResources::NAME => {
            let (params, _, _) = prepare::<PaginatedRequestParams>(server, &incoming, |_| None)?;
            gate(&incoming, has_resources(server, &registry))?;
            let (resources, next_cursor) = page(
                server,
                registry.resources.iter().map(|r| r.resource.clone()),
                registry.resources.len(),
                params.cursor.as_deref(),
            )?;
            let policy = &server.inner.caching.lists;
            let mut result = ListResourcesResult::new(resources);
            result.next_cursor = next_cursor;
            (result.ttl_ms, result.cache_scope) = hints(&incoming, policy);
            respond(server, &incoming, result).map(Some)
        }
        ListResourceTemplates::NAME => {
            let (params, _, _) = prepare::<PaginatedRequestParams>(server, &incoming, |_| None)?;
            gate(&incoming, has_resources(server, &registry))?;
            let (resource_templates, next_cursor) = page(
                server,
                registry.templates.iter().map(|t| t.template.clone()),
                registry.templates.len(),
                params.cursor.as_deref(),
            )?;
            let policy = &server.inner.caching.lists;
            let mut result = ListResourceTemplatesResult::new(resource_templates);
            result.next_cursor = next_cursor;
            (result.ttl_ms, result.cache_scope) = hints(&incoming, policy);
            respond(server, &incoming, result).map(Some)
        }
        Discover::NAME => {
            prepare::<EmptyParams>(server, &incoming, |_| None)?;
            let policy = &server.inner.caching.discover;
            let mut result = DiscoverResult::new(
                server.inner.supported_versions.clone(),
                server.capabilities(),
            );
            result.instructions = server.inner.instructions.clone();
            (result.ttl_ms, result.cache_scope) = hints(&incoming, policy);
            respond(server, &incoming, result).map(Some)
        }
        Complete::NAME => {
            let (params, meta, version) =
                prepare::<CompleteRequestParams>(server, &incoming, |_| None)?;
            let Some(handler) = server.inner.completion.clone() else {
                return Err(ErrorObject::method_not_found(incoming.method));
            };
            let ctx = context(server, &incoming, meta, version, notifier, cancel);
            let result = handler.complete(ctx.clone(), params).await;
            ctx.finish();
            let mut result = result?;
            let values = &mut result.completion.values;
            if values.len() > 100 {
                // The spec caps a completion at 100 values.
                values.truncate(100);
                result.completion.has_more = Some(true);
            }
            respond(server, &incoming, result).map(Some)
        }
        SubscriptionsListen::NAME => {
            // The stream keeps its request's text for its life: a larger one is refused
            // before it is decoded.
            let request_bytes = incoming.params.map_or(0, str::len);
            let limits = server.inner.subscriptions.limits();
            limits.check_listen_request(request_bytes)?;
            let (params, meta, version) = prepare::<
                modelctx_types::SubscriptionsListenRequestParams,
            >(server, &incoming, |_| None)?;
            let ctx = context(server, &incoming, meta, version, notifier, cancel);
            let closing = incoming.closing.unwrap_or(&server.inner.shutdown);
            match listen(server, &ctx, params, request_bytes, &registry, closing).await? {
                Some(mut result) => {
                    stamp(server, &incoming, &mut result);
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
        other => match server.inner.methods.get(other).cloned() {
            Some(handler) => custom(server, &incoming, handler.as_ref(), notifier, cancel)
                .await
                .map(Some),
            None => {
                // Unknown (or removed: initialize, ping, logging/setLevel, …): on
                // 2026-07-28 the ladder still comes first. A handshake-era session has no
                // envelope to check; its version was fixed by `initialize`.
                if incoming.handshake.is_none() {
                    let meta = probe_meta(incoming.params)?;
                    ladder(server, &incoming, meta, None)?;
                }
                Err(ErrorObject::method_not_found(other))
            }
        },
    }
}

/// The methods that exist only in the handshake era (and those that do not exist in it).
/// `None` lets the shared routes answer.
fn route_handshake(
    server: &Server,
    incoming: &Incoming<'_>,
    session: &HandshakeSession,
    registry: &Registry,
) -> Result<Option<Vec<u8>>, ErrorObject> {
    let empty = || respond(server, incoming, modelctx_types::EmptyResult::default()).map(Some);
    match incoming.method {
        Ping::NAME => empty(),
        SetLevel::NAME => {
            let (params, _, _) =
                prepare::<modelctx_types::SetLevelRequestParams>(server, incoming, |_| None)?;
            session.set_log_level(params.level);
            empty()
        }
        Subscribe::NAME | Unsubscribe::NAME => {
            let (params, _, _) =
                prepare::<modelctx_types::SubscribeRequestParams>(server, incoming, |_| None)?;
            gate(incoming, has_resources(server, registry))?;
            if incoming.method == Subscribe::NAME {
                subscribe(server, session, params.uri, |uri| {
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

/// The caching hints of a policy (none in the handshake era).
fn hints(
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
    server: &Server,
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
    let size = server.inner.page_size.unwrap_or(usize::MAX);
    let page: Vec<T> = items.skip(start).take(size).collect();
    let end = start + page.len();
    let next = (end < len).then(|| URL_SAFE_NO_PAD.encode(format!("offset:{end}")));
    Ok((page, next))
}

async fn custom(
    server: &Server,
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
        None => ladder(server, incoming, meta, None)?,
    };
    let ctx = context(server, incoming, meta, version, notifier, cancel);
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
    meta.set_server_info_raw(Arc::clone(&server.inner.info_raw));
    result.insert(
        "_meta".to_owned(),
        serde_json::to_value(&meta).unwrap_or_default(),
    );
    encode_result(&incoming.id, &result).map_err(|e| internal(&e.to_string()))
}
