//! The steps every route shares, from the request as a transport hands it over to the bytes of
//! its result: the capability gate, typed params, the validation ladder, the handler's
//! [`RequestContext`], and the stamping of every result.
//!
//! Ladder order (as the reference peers and the conformance suite expect): `params._meta`
//! present with `protocolVersion` and `clientCapabilities` (-32602) → HTTP headers agree with the
//! body (-32020) → the version is supported (-32022) → the method exists and its capability is
//! declared (-32601) → typed params (-32602) → the handler. On the happy path params are decoded
//! once; only when typed decoding fails is `_meta` probed on its own, so that ladder errors keep
//! their precedence over parameter errors.
//!
//! Free functions over [`Server`], below every stage that uses them: dispatch's routes, the
//! three methods that may ask (`mrtr_methods`), and the middleware chain (which builds the
//! context a middleware sees) name this module, and it names none of them.

use std::sync::Arc;

use modelctx_types::jsonrpc::encode_result;
use modelctx_types::methods::{CallTool, GetPrompt, ReadResource};
use modelctx_types::{
    ErrorObject, Meta, Method, ProtocolVersion, RequestMeta, RequestParams, ResultType, WireResult,
};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::context::ContextParts;
use super::handshake::HandshakeSession;
use super::headers::check_headers;
use super::message::{
    Incoming, decode_params, internal, invalid_params, invalid_request_state, log_rejected_state,
    probe_meta,
};
use super::notifier::Notifier;
use super::registry::Registry;
use super::{RequestContext, Server};

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

pub(crate) fn has_tools(server: &Server, registry: &Registry) -> bool {
    server.inner.declare.tools || !registry.tools.is_empty()
}

pub(crate) fn has_prompts(server: &Server, registry: &Registry) -> bool {
    server.inner.declare.prompts || !registry.prompts.is_empty()
}

pub(crate) fn has_resources(server: &Server, registry: &Registry) -> bool {
    server.inner.declare.resources
        || !registry.resources.is_empty()
        || !registry.templates.is_empty()
}

/// `-32601` for a method whose capability is not declared.
pub(crate) fn gate(incoming: &Incoming<'_>, available: bool) -> Result<(), ErrorObject> {
    if available {
        Ok(())
    } else {
        Err(ErrorObject::method_not_found(incoming.method))
    }
}

/// Typed params, then the ladder (see the module docs for why in this order).
pub(crate) fn prepare<P: DeserializeOwned + RequestParams>(
    server: &Server,
    incoming: &Incoming<'_>,
    target: fn(&P) -> Option<&str>,
) -> Result<(P, Box<RequestMeta>, ProtocolVersion), ErrorObject> {
    prepare_typed(server, incoming, None, target)
}

/// [`prepare`] with the params the envelope's pass decoded, when it did (`typed`: what
/// decoding `incoming.params` gives, so nothing else differs).
pub(crate) fn prepare_typed<P: DeserializeOwned + RequestParams>(
    server: &Server,
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
            let (meta, version) = ladder(server, incoming, meta, target(&params))?;
            Ok((params, meta, version))
        }
        Err(error) => {
            ladder(server, incoming, probe_meta(incoming.params)?, None)?;
            Err(params_error(incoming, &error))
        }
    }
}

pub(crate) fn ladder(
    server: &Server,
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
    if !server.inner.supported_versions.contains(&version) {
        return Err(ErrorObject::unsupported_protocol_version(
            &server.inner.supported_versions,
            version.as_str(),
        ));
    }
    Ok((meta, version))
}

pub(crate) fn context(
    server: &Server,
    incoming: &Incoming<'_>,
    meta: Box<RequestMeta>,
    protocol_version: ProtocolVersion,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> RequestContext {
    let mut ctx = RequestContext::new(ContextParts {
        server: server.clone(),
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
        server.bind_principal(&mut ctx);
    }
    ctx
}

/// `resultType: "complete"` (unless the handler chose another) and the server stamp.
pub(crate) fn stamp(server: &Server, incoming: &Incoming<'_>, result: &mut dyn WireResult) {
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
        .set_server_info_raw(Arc::clone(&server.inner.info_raw));
}

pub(crate) fn respond<R: Serialize + WireResult>(
    server: &Server,
    incoming: &Incoming<'_>,
    mut result: R,
) -> Result<Vec<u8>, ErrorObject> {
    stamp(server, incoming, &mut result);
    encode_result(&incoming.id, &result)
        .map_err(|e| internal(&format!("result not encodable: {e}")))
}
