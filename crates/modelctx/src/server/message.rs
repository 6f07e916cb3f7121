//! The plain messages of the server's core: a request as a transport hands it over
//! ([`Incoming`]), what goes back ([`Reply`]), and the errors every stage of the pipeline
//! answers with. At the bottom of the server (DESIGN.md, "Layers of the server"): the
//! transports make and read these, the ladder, MRTR, tracing and dispatch pass them along, and
//! none of them has to name another stage to do so.

use std::sync::Arc;

use modelctx_seal::{Principal, Reason};
use modelctx_types::jsonrpc::encode_error;
use modelctx_types::{ErrorCode, ErrorObject, RequestId, RequestMeta};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::handshake::HandshakeSession;
use super::headers::HeaderAccess;
use super::typed_params::TypedParams;

/// One request as a transport hands it over.
pub(crate) struct Incoming<'a> {
    pub(crate) id: RequestId,
    pub(crate) method: &'a str,
    /// The params object as JSON text (checked by the decoder).
    pub(crate) params: Option<&'a str>,
    /// The params, when the envelope's pass decoded them (taken by the router).
    pub(crate) typed: Option<TypedParams>,
    pub(crate) headers: Option<&'a dyn HeaderAccess>,
    /// The principal the transport authenticated (before [`ServerBuilder::bind_principal`](super::ServerBuilder::bind_principal)),
    /// or, once `principal_bound`, the hook's answer.
    pub(crate) principal: Option<Principal>,
    /// The principal hook already ran for this request (for the middleware chain's context):
    /// the handler's context takes `principal` as it is rather than running the hook again.
    pub(crate) principal_bound: bool,
    /// The handshake-era session, when the request belongs to one.
    pub(crate) handshake: Option<Arc<HandshakeSession>>,
    /// What ends the request's connection gracefully (a stdio connection's end of input or
    /// drain): a listen stream then ends with its closing result. `None`: the server's own
    /// (`Server::shutdown_subscriptions`), as on HTTP, where a request is its own connection.
    pub(crate) closing: Option<&'a CancellationToken>,
    #[cfg(feature = "http-server")]
    pub(crate) http: Option<Arc<http::request::Parts>>,
    /// The request's span when a subscriber wants it (`Span::none()` otherwise): the rounds of
    /// a multi-round request record their number and link on it (`server::trace`).
    pub(crate) span: tracing::Span,
}

/// What to send back.
#[derive(Debug)]
pub(crate) enum Reply {
    /// One JSON-RPC response, and the code of the error it carries when it is one (a
    /// transport that answers errors in kind, HTTP with its status, reads it).
    Message {
        body: Vec<u8>,
        // Over stdio the body is all there is to send.
        #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
        error: Option<ErrorCode>,
    },
    /// Nothing (a cancelled subscription).
    Nothing,
}

pub(crate) fn error_reply(id: Option<&RequestId>, error: &ErrorObject) -> Reply {
    Reply::Message {
        body: encode_error(id, error),
        error: Some(error.code),
    }
}

/// The single error every request-state failure answers, whatever the cause.
pub(crate) fn invalid_request_state() -> ErrorObject {
    ErrorObject::invalid_params(modelctx_seal::WIRE_MESSAGE)
        .with_data(serde_json::json!({ "reason": modelctx_seal::WIRE_DATA_REASON }))
}

pub(crate) fn internal(message: &str) -> ErrorObject {
    ErrorObject::internal(message)
}

pub(crate) fn invalid_params(error: &serde_json::Error) -> ErrorObject {
    ErrorObject::invalid_params(format!("Invalid params: {error}"))
}

pub(crate) fn decode_params<P: DeserializeOwned>(
    params: Option<&str>,
) -> Result<P, serde_json::Error> {
    serde_json::from_str(params.unwrap_or("{}"))
}

/// `_meta` alone, for the ladder when the typed params did not decode: `Ok(None)` when the
/// params carry no `_meta` object, the precise `-32602` naming the member when `_meta` is there
/// but one of its members has the wrong type.
pub(crate) fn probe_meta(params: Option<&str>) -> Result<Option<Box<RequestMeta>>, ErrorObject> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    let text = params.unwrap_or("{}");
    let Some(raw) = serde_json::from_str::<Probe<'_>>(text)
        .ok()
        .and_then(|p| p.meta)
    else {
        return Ok(None);
    };
    if !raw.get().starts_with('{') {
        return Ok(None);
    }
    serde_json::from_str(raw.get())
        .map(Some)
        .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: _meta: {e}")))
}

// Peer-chosen text in a log line or span field is cut to 128 bytes (shared with the client).
pub(crate) use crate::span_fields::logged;

/// Logs why a `requestState` was refused, at WARN: tampering must be visible at the default
/// level (Python logs it at WARNING). One bounded line per refusal: the reason is one of the
/// fixed [`Reason`] codes, and the peer-chosen target is [`logged`].
pub(crate) fn log_rejected_state(method: &str, target: Option<&str>, reason: Reason) {
    let target = target.unwrap_or_default();
    tracing::warn!(
        method,
        target = logged(target),
        target_len = target.len(),
        reason = reason.as_str(),
        "requestState rejected"
    );
}
