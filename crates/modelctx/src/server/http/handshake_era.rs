//! The handshake-era streamable HTTP transport (2025-11-25), served on the same endpoint as
//! 2026-07-28: requests without a modern `MCP-Protocol-Version` header land here.
//!
//! `initialize` opens a session named by an unguessable `Mcp-Session-Id`; later requests name
//! it; `GET` opens the session's stream of list changes and resource updates — one at a time
//! (409 for another, as the Python SDK answers), counted and charged as a stream of the client
//! that opened the session (`subscription_budget`: 429 or 503 past a limit); `DELETE` ends it.
//! Responses are JSON or SSE exactly as on the modern path, and server→client requests of a
//! handler (elicitation, sampling, roots) travel on the response stream of the request that
//! needs them; the client POSTs its answers back (202). A `notifications/cancelled` POSTed on
//! the session cancels the request it names, as on stdio: the handler sees it, its pending
//! questions are withdrawn on its stream, it asks nothing more, and the POST is answered
//! `-32800` instead of its result (`in_flight`). The session table is bounded and guarded against
//! `initialize` floods (`sessions`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use modelctx_types::jsonrpc::MessageRef;
use modelctx_types::methods::Initialize;
use modelctx_types::{ErrorCode, ErrorObject, InitializeRequestParams, Method as _};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::responses::{accepted, http_status, json};
use super::resumable::{self, Resumed};
use super::sessions::InUse;
use super::sse::{event_stream_only, respond};
use super::state::HttpState;
use crate::http::headers::SESSION_ID;

/// The header a reconnecting client names the last event it received with.
const LAST_EVENT_ID: &str = "last-event-id";
use crate::server::SubscriptionLimits;
use crate::server::chain::{self, Message};
use crate::server::in_flight::{Served, serve_notification};
use crate::server::message::{Reply, error_reply};
use crate::server::middleware;
use crate::server::subscription_budget::{Client, Hold};
use crate::server::{handshake, handshake_methods};
use crate::sync::lock;

fn session_id(parts: &http::request::Parts) -> Option<&str> {
    parts.headers.get(SESSION_ID).and_then(|v| v.to_str().ok())
}

/// The principal the authentication put on the request, which a session is bound to.
fn principal(parts: &http::request::Parts) -> Option<&modelctx_seal::Principal> {
    parts.extensions.get::<modelctx_seal::Principal>()
}

fn session_not_found() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        ErrorCode::INVALID_REQUEST,
        "Session not found",
    )
}

fn rpc_error(status: StatusCode, code: ErrorCode, message: &str) -> Response {
    let body = modelctx_types::jsonrpc::encode_error(None, &ErrorObject::new(code, message));
    json(status.as_u16(), body)
}

/// The JSON-RPC error of a request the handshake era answers: always with 200 (the status
/// mapping of errors is a 2026-07-28 rule; 2025-11-25 clients read the body of a 2xx only).
/// Failures of the transport itself (no session, an unknown one, a body that is not JSON-RPC)
/// keep their 4xx.
fn request_error(id: &modelctx_types::RequestId, error: &ErrorObject) -> Response {
    json(200, modelctx_types::jsonrpc::encode_error(Some(id), error))
}

/// A POST on the handshake-era path, from `peer` when the address is known.
pub(crate) async fn post(
    state: &HttpState,
    peer: Option<IpAddr>,
    parts: http::request::Parts,
    bytes: Bytes,
) -> Response {
    let message = match MessageRef::decode_slice(&bytes) {
        Ok(message) => message,
        Err(error) => {
            return match error_reply(error.id(), &error.to_error_object()) {
                Reply::Message { body, error } => json(http_status(error), body),
                Reply::Nothing => accepted(),
            };
        }
    };
    if let MessageRef::Request(request) = &message
        && request.method == Initialize::NAME
    {
        if let Err(wait) = state.sessions.admit(peer) {
            let mut response = rpc_error(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::INVALID_REQUEST,
                "Too many sessions opened from this address; retry later",
            );
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
            return response;
        }
        let opened = std::sync::Mutex::new(None);
        let serve = || match request.params_as::<InitializeRequestParams>() {
            Ok(params) => {
                let client = Client::of(principal(&parts), peer);
                let (session, result) =
                    handshake_methods::initialize(&state.server, params, client);
                *lock(&opened) = Some(session);
                middleware::Reply::result(&result)
            }
            Err(error) => middleware::Reply::error(ErrorObject::invalid_params(format!(
                "Invalid params: {error}"
            ))),
        };
        let span = crate::server::trace::initialize_span(
            &state.server,
            &request.id,
            &request.method,
            request.params.map(RawValue::get),
            true,
        );
        let reply = async {
            if !chain::has_middleware(&state.server) {
                return serve();
            }
            let message = Message {
                id: Some(&request.id),
                method: &request.method,
                params: request.params.map(RawValue::get),
                era: modelctx_types::Era::Handshake,
                handshake: None,
                principal: principal(&parts).cloned(),
                http: Some(Arc::new(parts.clone())),
            };
            chain::through_middleware(&state.server, message, &serve).await
        }
        .instrument(span.clone())
        .await;
        // A middleware that refused `initialize` after the server answered it opens no session.
        let session = match opened.into_inner() {
            Ok(Some(session)) if reply.as_error().is_none() => Some(session),
            _ => None,
        };
        let reply = reply.encode(Some(&request.id));
        crate::server::trace::record_initialize(
            &span,
            &reply,
            session.as_ref().map(|s| &s.version),
        );
        // Ended before the reply goes out, like the span of every other request.
        drop(span);
        let body = match reply {
            Reply::Message { body, .. } => body,
            Reply::Nothing => return accepted(),
        };
        let mut response = json(200, body);
        if let Some(session) = session {
            let Some(id) = state.sessions.insert(session, principal(&parts).cloned()) else {
                return rpc_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ErrorCode::INTERNAL_ERROR,
                    "no randomness for a session id",
                );
            };
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(SESSION_ID, value);
            }
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
    let serving = matches!(message, MessageRef::Request(_));
    let Some(session) = state.sessions.get(id, principal(&parts), serving) else {
        return session_not_found();
    };
    match message {
        MessageRef::Notification(notification) => {
            let sender = principal(&parts).cloned();
            let serve = || {
                let served = serve_notification(
                    session.in_flight(),
                    &notification.method,
                    notification.params.map(RawValue::get),
                );
                if served == Served::Initialized {
                    session.mark_initialized();
                }
                state.server.deliver_notification(
                    &notification.method,
                    notification.params.map(RawValue::get),
                    modelctx_types::Era::Handshake,
                    sender.clone(),
                );
                middleware::Reply::nothing()
            };
            if chain::has_middleware(&state.server) {
                let message = Message {
                    id: None,
                    method: &notification.method,
                    params: notification.params.map(RawValue::get),
                    era: modelctx_types::Era::Handshake,
                    handshake: Some(&*session),
                    principal: principal(&parts).cloned(),
                    http: Some(Arc::new(parts)),
                };
                chain::through_middleware(&state.server, message, &serve).await;
            } else {
                serve();
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
            if handshake::has_modern_envelope(request.params.map(RawValue::get)) {
                return request_error(&request.id, &handshake::era_mismatch_handshake());
            }
            let request = crate::server::typed_params::OwnedRequest::raw(&request);
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

/// `GET` (the session's notification stream, or the resumption of a stream) and `DELETE` (end
/// the session).
pub(crate) async fn get_or_delete(
    state: &HttpState,
    parts: &http::request::Parts,
) -> Option<Response> {
    let id = session_id(parts)?;
    if parts.method == http::Method::DELETE {
        return Some(if state.sessions.remove(id, principal(parts)) {
            Response::new(Body::empty())
        } else {
            session_not_found()
        });
    }
    let Some(session) = state.sessions.get(id, principal(parts), true) else {
        return Some(session_not_found());
    };
    let mut resumable = None;
    if let Some(settings) = &state.config.resumability {
        let Some(streams) = session.streams().cloned() else {
            return Some(no_randomness());
        };
        let mut replayed = Vec::new();
        if let Some(last) = parts.headers.get(LAST_EVENT_ID) {
            let last = last.to_str().unwrap_or_default();
            match resumable::resume(&streams, settings, last).await {
                Ok(Resumed::Stream(response)) => return Some(response),
                Ok(Resumed::GetEnded(frames)) => replayed = frames,
                Err(response) => return Some(response),
            }
        }
        // A plain GET takes over the session's stream when its client went away.
        if let Some(live) = streams.running_get() {
            return Some(resumable::reattach_get(&live).unwrap_or_else(|()| get_conflict()));
        }
        resumable = Some((streams, settings, replayed));
    }
    // One stream a session, as the Python SDK allows: each stream costs a forwarding task and
    // keeps the session in use, so more would let one session hold without bound.
    if !session.open_get_stream() {
        return Some(get_conflict());
    }
    // Charged like a listen stream that follows nothing (what the session follows is charged
    // to the session), and counted against the client that opened the session.
    let budget = &state.server.inner.subscriptions;
    let hold = match budget.admit(session.client(), SubscriptionLimits::STREAM_CHARGE) {
        Ok(hold) => hold,
        Err(error) => {
            session.close_get_stream();
            return Some(stream_refused(&error));
        }
    };
    let stream = GetStream {
        session,
        _hold: hold,
    };
    let (sender, receiver) = mpsc::channel(64);
    let session = Arc::clone(stream.session.session());
    let closing = state.server.inner.shutdown.clone();
    let forwarder =
        handshake_methods::forward_changes(&state.server, session, sender, closing, stream);
    if let Some((streams, settings, replayed)) = resumable {
        // The stream's task ends the forwarder by dropping `receiver`.
        let source = resumable::Source {
            work: Box::pin(async move {
                let _ = forwarder.await;
                Reply::Nothing
            }),
            messages: receiver,
        };
        let keep_alive = state.config.keep_alive;
        return Some(resumable::get_stream(
            &streams, settings, source, keep_alive, replayed,
        ));
    }
    let mut response = event_stream_only(receiver, forwarder, state.config.keep_alive);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(response)
}

/// The session has its `GET` stream open already.
fn get_conflict() -> Response {
    rpc_error(
        StatusCode::CONFLICT,
        ErrorCode::INVALID_REQUEST,
        "Conflict: Only one SSE stream is allowed per session",
    )
}

fn no_randomness() -> Response {
    rpc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::INTERNAL_ERROR,
        "no randomness for a stream's name",
    )
}

/// What an open `GET` stream holds until it ends: its session's use (so the session's idle time
/// starts when the stream closes), its charge, and the session's one stream.
struct GetStream {
    session: InUse,
    _hold: Hold,
}

impl Drop for GetStream {
    fn drop(&mut self) {
        self.session.close_get_stream();
    }
}

/// The answer to a `GET` stream past a subscription limit: the limit's JSON-RPC error, with 429
/// when it is the client's own and 503 when the server's budget is spent (retry either later).
fn stream_refused(error: &ErrorObject) -> Response {
    let client = error
        .data
        .as_ref()
        .is_some_and(|data| data["scope"] == "client");
    let status = if client {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(
        status.as_u16(),
        modelctx_types::jsonrpc::encode_error(None, error),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Server;
    use crate::server::http::body::BodyBudget;
    use crate::server::http::config::HttpConfig;
    use crate::server::http::sessions::Sessions;
    use crate::server::in_flight::InFlight;

    /// The endpoint's state with one session open, that session's table of cancellable
    /// requests, and its id.
    fn one_session() -> (HttpState, Arc<InFlight>, String) {
        let config = HttpConfig::default();
        let state = HttpState {
            server: Server::builder("sessions", "1.0.0").build().unwrap(),
            bodies: BodyBudget::new(&config),
            sessions: Sessions::new(None, None, config.max_sessions),
            config,
        };
        let session = Arc::new(handshake::HandshakeSession::uninitialized());
        let id = state.sessions.insert(session, None).unwrap();
        let in_flight = Arc::clone(state.sessions.get(&id, None, false).unwrap().in_flight());
        (state, in_flight, id)
    }

    /// A 2025-11-25 request answered on its first poll is never registered in its session's
    /// table of cancellable requests, as over stdio: serving it takes no lock of that table
    /// (held by the test all along; every POST used to take it). The wait only bounds the
    /// failure, which is a thread blocked on the lock.
    #[test]
    fn a_request_answered_at_once_is_never_registered() {
        let (state, in_flight, id) = one_session();
        let parts = http::Request::post("/mcp")
            .header(SESSION_ID, id.as_str())
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":"ping-1","method":"ping"}"#);
        let held = in_flight.lock_table();
        let (done, answered) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let response = runtime.block_on(post(&state, None, parts, body));
            let _ = done.send(response.status());
        });
        let status = answered
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("answered without the table's lock");
        assert_eq!(status, 200);
        drop(held);
    }

    /// A closed `GET` stream gives back its session's one stream and its charge: the session may
    /// open another, and the budget holds nothing.
    #[tokio::test(flavor = "current_thread")]
    async fn a_closed_get_stream_gives_its_place_back() {
        let (state, _, id) = one_session();
        let get = || {
            http::Request::get("/mcp")
                .header(SESSION_ID, id.as_str())
                .body(())
                .unwrap()
                .into_parts()
                .0
        };
        let held = || state.server.inner.subscriptions.held_bytes();
        let first = get_or_delete(&state, &get()).await.unwrap();
        assert_eq!(first.status(), 200);
        assert_eq!(get_or_delete(&state, &get()).await.unwrap().status(), 409);
        assert_eq!(held(), SubscriptionLimits::STREAM_CHARGE);
        // The stream's task is aborted once its body is gone: this one thread runs it to its
        // end within a few turns (counted in turns, not time).
        drop(first);
        for _ in 0..100 {
            if held() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(held(), 0, "the charge came back");
        assert_eq!(get_or_delete(&state, &get()).await.unwrap().status(), 200);
    }
}
