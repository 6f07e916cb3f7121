//! The endpoint: one function per request, from the request head's guards through the body
//! to the era it is for (a 2026-07-28 request answered by `sse::respond`, a 2025-11-25 one by
//! the handshake era).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use modelctx_types::jsonrpc::{Decoded, MessageRef};
use serde_json::value::RawValue;

use super::guards::{accepts_both, authenticate, check_host_and_origin, is_json, is_modern};
use super::responses::{accepted, body_refused, http_status, json, plain};
use super::sse::respond;
use super::state::HttpState;
use crate::http::headers::PROTOCOL_VERSION;
use crate::server::chain::{self, Message};
use crate::server::message::{Reply, error_reply};
use crate::server::middleware;
use crate::server::origin::peer_addr;
use crate::server::typed_params::{self, OwnedRequest};

/// Why a server built for 2026-07-28 only refuses the handshake era.
const ONE_ERA: &str = "it is built to serve one protocol era";

pub(crate) async fn handle(State(state): State<Arc<HttpState>>, request: Request) -> Response {
    let state = &*state;
    // A handshake-only server (`ServerBuilder::only_era`) sends every request down that era's
    // path; the handshake era is refused by a modern-only one and by an endpoint configured so
    // (`HttpConfig::refuse_handshake_era`), with one answer (`modern_only`).
    let modern = match state.server.only_era() {
        Some(modelctx_types::Era::Handshake) => false,
        _ => is_modern(request.headers()),
    };
    let handshake_refused = match (&state.config.handshake_era_refused, state.server.only_era()) {
        (Some(reason), _) => Some(reason.as_str()),
        (None, Some(modelctx_types::Era::Modern)) => Some(ONE_ERA),
        (None, _) => None,
    };
    if request.method() != http::Method::POST {
        if !modern
            && handshake_refused.is_none()
            && check_host_and_origin(&request, &state.config).is_ok()
        {
            let (mut parts, _) = request.into_parts();
            if let Err(response) = authenticate(state, &mut parts).await {
                return response;
            }
            if let Some(response) = super::handshake_era::get_or_delete(state, &parts).await {
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
    if !modern && let Some(reason) = handshake_refused {
        let header = parts
            .headers
            .get(PROTOCOL_VERSION)
            .and_then(|value| value.to_str().ok());
        return super::modern_only::refuse(&state.server, header, &body.bytes, reason);
    }
    if !modern {
        let peer = peer_addr(&parts).map(|addr| addr.ip());
        return super::handshake_era::post(state, peer, parts, body.bytes).await;
    }
    // Classify first: only requests get a response stream.
    let request = match typed_params::decode(&body.bytes) {
        Err(error) => {
            return match error_reply(error.id(), &error.to_error_object()) {
                Reply::Message { body, error } => json(http_status(error), body),
                Reply::Nothing => plain(StatusCode::BAD_REQUEST, "bad request"),
            };
        }
        Ok(Decoded::Raw(MessageRef::Notification(notification))) => {
            // 2026-07-28 defines no client notification over HTTP (closing a stream is the
            // cancellation): the middleware sees it, then the application's handler if any.
            let sender = state.server.principal_of(&parts);
            let deliver = || {
                state.server.deliver_notification(
                    &notification.method,
                    notification.params.map(RawValue::get),
                    modelctx_types::Era::Modern,
                    sender.clone(),
                );
                middleware::Reply::nothing()
            };
            if chain::has_middleware(&state.server) {
                let message = Message {
                    id: None,
                    method: &notification.method,
                    params: notification.params.map(RawValue::get),
                    era: modelctx_types::Era::Modern,
                    handshake: None,
                    principal: state.server.principal_of(&parts),
                    http: Some(Arc::new(parts)),
                };
                chain::through_middleware(&state.server, message, &deliver).await;
            } else {
                deliver();
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
