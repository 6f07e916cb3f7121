//! The handshake-era streamable HTTP transport (2025-11-25), served on the same endpoint as
//! 2026-07-28: requests without a modern `MCP-Protocol-Version` header land here.
//!
//! `initialize` opens a session named by an unguessable `Mcp-Session-Id`; later requests name
//! it; `GET` opens the session's stream of list changes and resource updates; `DELETE` ends it.
//! Responses are JSON or SSE exactly as on the modern path, and server→client requests of a
//! handler (elicitation, sampling, roots) travel on the response stream of the request that
//! needs them; the client POSTs its answers back (202). Idle sessions are evicted, so abandoned
//! sessions cannot grow memory without bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use mcp_types::jsonrpc::{MessageRef, encode_result};
use mcp_types::{ErrorCode, ErrorObject, InitializeRequestParams};
use tokio::sync::mpsc;

use super::dispatch::{Reply, error_reply};
use super::http::{HttpState, event_stream_only, json, respond};
use super::legacy::{self, LegacySession};
use crate::http::headers::SESSION_ID;

/// At most this many sessions are kept; beyond it the idlest are evicted.
const MAX_SESSIONS: usize = 10_000;
/// Sessions idle for longer than this are evicted when room is needed.
const IDLE: Duration = Duration::from_secs(3600);

/// The live handshake-era sessions of one endpoint.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<LegacySession>>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LegacySession>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, session: Arc<LegacySession>) -> Option<String> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).ok()?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut map = self.lock();
        if map.len() >= MAX_SESSIONS {
            map.retain(|_, s| s.idle_for() < IDLE);
        }
        if map.len() >= MAX_SESSIONS {
            let idlest = map
                .iter()
                .max_by_key(|(_, s)| s.idle_for())
                .map(|(k, _)| k.clone());
            if let Some(idlest) = idlest {
                map.remove(&idlest);
            }
        }
        map.insert(id.clone(), session);
        Some(id)
    }

    fn get(&self, id: &str) -> Option<Arc<LegacySession>> {
        let session = self.lock().get(id).cloned()?;
        session.touch();
        Some(session)
    }

    fn remove(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }
}

fn session_id(parts: &http::request::Parts) -> Option<&str> {
    parts.headers.get(SESSION_ID).and_then(|v| v.to_str().ok())
}

fn rpc_error(status: StatusCode, code: ErrorCode, message: &str) -> Response {
    let body = mcp_types::jsonrpc::encode_error(None, &ErrorObject::new(code, message));
    json(status.as_u16(), body)
}

/// The JSON-RPC error of a request the handshake era answers: always with 200 (the status
/// mapping of errors is a 2026-07-28 rule; 2025-11-25 clients read the body of a 2xx only).
/// Failures of the transport itself (no session, an unknown one, a body that is not JSON-RPC)
/// keep their 4xx.
fn request_error(id: &mcp_types::RequestId, error: &ErrorObject) -> Response {
    json(200, mcp_types::jsonrpc::encode_error(Some(id), error))
}

fn accepted() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// A POST on the handshake-era path.
pub(crate) async fn post(state: &HttpState, parts: http::request::Parts, bytes: Bytes) -> Response {
    let message = match MessageRef::decode_slice(&bytes) {
        Ok(message) => message,
        Err(error) => {
            return match error_reply(error.id(), &error.to_error_object()) {
                Reply::Message { body, status } => json(status, body),
                Reply::Nothing => accepted(),
            };
        }
    };
    if let MessageRef::Request(request) = &message
        && request.method == "initialize"
    {
        let params = match request.params_as::<InitializeRequestParams>() {
            Ok(params) => params,
            Err(error) => {
                let error = ErrorObject::invalid_params(format!("Invalid params: {error}"));
                return request_error(&request.id, &error);
            }
        };
        let (session, result) = state.server.initialize(params);
        let Some(id) = state.sessions.insert(session) else {
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::INTERNAL_ERROR,
                "no randomness for a session id",
            );
        };
        let mut response = json(200, encode_result(&request.id, &result).unwrap_or_default());
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_ID, value);
        }
        return response;
    }
    let Some(id) = session_id(&parts) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "Bad Request: Missing session ID",
        );
    };
    let Some(session) = state.sessions.get(id) else {
        return rpc_error(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            "Session not found",
        );
    };
    match message {
        MessageRef::Notification(notification) => {
            if notification.method == "notifications/initialized" {
                session.mark_initialized();
            }
            accepted()
        }
        MessageRef::Response(response) => {
            // The client answering a back-channel request of one of its calls.
            if let Some(id) = &response.id {
                session.answer(id, response.payload.map(|raw| raw.to_owned()));
            }
            accepted()
        }
        MessageRef::Request(request) => {
            if legacy::has_modern_envelope(request.params) {
                return request_error(&request.id, &legacy::era_mismatch_legacy());
            }
            let request = request.to_owned_request();
            respond(
                state.server.clone(),
                Arc::new(parts),
                request,
                &state.config,
                Some(session),
            )
            .await
        }
    }
}

/// `GET` (the session's notification stream) and `DELETE` (end the session).
pub(crate) fn get_or_delete(state: &HttpState, parts: &http::request::Parts) -> Option<Response> {
    let id = session_id(parts)?;
    if parts.method == http::Method::DELETE {
        return Some(if state.sessions.remove(id) {
            Response::new(Body::empty())
        } else {
            rpc_error(
                StatusCode::NOT_FOUND,
                ErrorCode::INVALID_REQUEST,
                "Session not found",
            )
        });
    }
    let Some(session) = state.sessions.get(id) else {
        return Some(rpc_error(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            "Session not found",
        ));
    };
    let (sender, receiver) = mpsc::channel(64);
    let forwarder = legacy::forward_changes(&state.server, session, sender);
    let mut response = event_stream_only(receiver, forwarder, state.config.keep_alive);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(response)
}
