//! Answering one POSTed request: with JSON when its work finishes first, with an event stream
//! (its notifications, then its reply) as soon as it emits a notification, and the
//! notification-only stream of a 2025-11-25 session's `GET`.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{self, Stream};
use http::{HeaderValue, StatusCode, header};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::config::HttpConfig;
use super::responses::{event_stream_response, http_status, json, keep_alive_timer};
use super::resumable::{Source, request_stream};
use super::sessions::InUse;
use crate::http::sse;
use crate::server::Server;
use crate::server::headers::HeaderAccess;
use crate::server::in_flight::request_cancelled;
use crate::server::message::{Incoming, Reply, error_reply};
use crate::server::pipeline;
use crate::server::stream_closer::StreamCloser;
use crate::server::typed_params::OwnedRequest;

type Work = BoxFuture<'static, Reply>;

/// Runs one request and answers it with JSON, or with SSE once it emits a notification (or, in
/// the handshake era, a server→client request), or always with SSE when the configuration says
/// so.
pub(crate) async fn respond(
    server: Server,
    parts: Arc<http::request::Parts>,
    request: OwnedRequest,
    config: &HttpConfig,
    handshake: Option<InUse>,
) -> Response {
    let keep_alive = config.keep_alive;
    // Error statuses (400, 404) are a 2026-07-28 rule: a handshake-era session gets its JSON-RPC
    // errors with 200, as the Python SDK and the 2025-11-25 clients (the TypeScript SDK among
    // them, which drops the body of a non-2xx answer) expect.
    let error_statuses = handshake.is_none();
    let (notifier, mut notifications) = mpsc::channel::<Vec<u8>>(64);
    let cancel = CancellationToken::new();
    let OwnedRequest {
        id,
        method,
        params,
        typed,
    } = request;
    // A handshake-era request with an event store answers with a resumable stream once it
    // runs past its first poll; its handler may close that stream early (`StreamCloser`, put
    // where the context finds it).
    let resumable = match (&handshake, &config.resumability) {
        (Some(session), Some(settings)) => session.streams().map(|streams| {
            let closer = StreamCloser::default();
            (Arc::clone(streams), closer, settings)
        }),
        _ => None,
    };
    let parts = match &resumable {
        Some((_, closer, _)) => {
            let mut parts = Arc::unwrap_or_clone(parts);
            parts.extensions.insert(closer.clone());
            Arc::new(parts)
        }
        None => parts,
    };
    // A handshake-era client cancels with a `notifications/cancelled` POSTed on its own: the
    // session's table finds the request by its id while it runs. Only a request that waits is
    // registered (`in_flight`); the table, the id and the token are kept aside for that, and
    // the work takes a copy of the id (a 2026-07-28 request's work takes the id itself).
    let (id, cancellable) = match &handshake {
        Some(session) => {
            let table = Arc::clone(session.in_flight());
            (id.clone(), Some((table, id, cancel.clone())))
        }
        None => (id, None),
    };
    // Dropping the response (the client went away) cancels the request.
    let guard = cancel.clone().drop_guard();
    let mut work: Work = Box::pin(async move {
        // The session stays in use until the request's work is over, however it ends (its
        // reply sent, its stream closed, its client gone): `in_use` goes after `incoming`.
        let in_use = handshake;
        let handshake = in_use.as_ref().map(|in_use| Arc::clone(in_use.session()));
        let incoming = Incoming {
            id,
            method: &method,
            params: params.as_deref(),
            typed,
            // Header/body agreement is a 2026-07-28 rule.
            headers: if handshake.is_none() {
                Some(&parts.headers as &dyn HeaderAccess)
            } else {
                None
            },
            principal: server.principal_of(&parts),
            principal_bound: false,
            handshake,
            closing: None,
            http: Some(Arc::clone(&parts)),
            span: tracing::Span::none(),
        };
        pipeline::dispatch(&server, incoming, Some(notifier), cancel).await
    });
    if let Some((table, id, cancel)) = cancellable {
        // As stdio does: one poll first, and a request answered on it is never registered.
        match futures::poll!(work.as_mut()) {
            Poll::Ready(reply) => {
                return finished(
                    reply,
                    notifications,
                    guard,
                    config.sse_responses,
                    error_statuses,
                );
            }
            Poll::Pending => {
                // Until the work ends, or is dropped with its response.
                let registered = table.register(id, cancel.clone());
                work = Box::pin(async move {
                    let reply = work.await;
                    if cancel.is_cancelled() {
                        // The handler has stopped (its questions withdrawn on the stream
                        // meanwhile); the POST still ends with a response for its id.
                        error_reply(Some(registered.id()), &request_cancelled())
                    } else {
                        reply
                    }
                });
                if let Some((streams, closer, settings)) = resumable {
                    let source = Source {
                        work,
                        messages: notifications,
                    };
                    return request_stream(&streams, closer, settings, source, guard, keep_alive);
                }
            }
        }
    }
    tokio::select! {
        reply = &mut work => {
            finished(reply, notifications, guard, config.sse_responses, error_statuses)
        }
        Some(first) = notifications.recv() => {
            event_stream(Some(&first), notifications, Some(work), None, guard, keep_alive)
        }
    }
}

/// The response of a request whose work is done: its JSON (or no content), or one complete
/// event stream when notifications were queued before the reply (they travel on a stream too;
/// the handler is done, so the whole stream is known) or `sse` asks for one.
fn finished(
    reply: Reply,
    mut notifications: mpsc::Receiver<Vec<u8>>,
    guard: DropGuard,
    sse: bool,
    error_statuses: bool,
) -> Response {
    guard.disarm();
    match notifications.try_recv() {
        Ok(first) => complete_event_stream(Some(&first), notifications, reply),
        Err(_) if sse => complete_event_stream(None, notifications, reply),
        Err(_) => match reply {
            Reply::Message { body, error } => json(
                if error_statuses {
                    http_status(error)
                } else {
                    200
                },
                body,
            ),
            Reply::Nothing => {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::NO_CONTENT;
                response
            }
        },
    }
}

struct StreamState {
    queued: Vec<Bytes>,
    notifications: mpsc::Receiver<Vec<u8>>,
    work: Option<Work>,
    reply: Option<Reply>,
    finished: bool,
    keep_alive: tokio::time::Interval,
    _guard: DropGuard,
}

fn event_stream(
    first: Option<&[u8]>,
    notifications: mpsc::Receiver<Vec<u8>>,
    work: Option<Work>,
    reply: Option<Reply>,
    guard: DropGuard,
    keep_alive: Duration,
) -> Response {
    let state = StreamState {
        queued: first.map(sse::encode_message).into_iter().collect(),
        notifications,
        work,
        reply,
        finished: false,
        keep_alive: keep_alive_timer(keep_alive),
        _guard: guard,
    };
    event_stream_response(Body::from_stream(events(state)))
}

/// An event stream whose every event is already known (the handler finished): `first`, what
/// else it queued, then the reply, as one body with a length, like a JSON answer. No stream
/// state, keep-alive timer or chunked encoding, which made the SSE path dearer than JSON
/// (BENCHMARKS.md, "Where the instructions go").
fn complete_event_stream(
    first: Option<&[u8]>,
    mut notifications: mpsc::Receiver<Vec<u8>>,
    reply: Reply,
) -> Response {
    let mut body = Vec::new();
    if let Some(first) = first {
        sse::append_message(&mut body, first);
    }
    while let Ok(message) = notifications.try_recv() {
        sse::append_message(&mut body, &message);
    }
    if let Reply::Message { body: message, .. } = reply {
        sse::append_message(&mut body, &message);
    }
    event_stream_response(Body::from(body))
}

/// A stream of notifications only (the handshake-era `GET` stream), kept alive until the client
/// closes it, or until the forwarding task ends (the server shuts down: the stream ends after
/// what was queued, so that a shutdown does not wait for the client to hang up); the forwarding
/// task ends with it.
pub(crate) fn event_stream_only(
    notifications: mpsc::Receiver<Vec<u8>>,
    forwarder: tokio::task::JoinHandle<()>,
    keep_alive: Duration,
) -> Response {
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let abort = forwarder.abort_handle();
    tokio::spawn(async move {
        stop.cancelled().await;
        abort.abort();
    });
    let forwarded = async move {
        let _ = forwarder.await;
        Reply::Nothing
    };
    let state = StreamState {
        queued: Vec::new(),
        notifications,
        work: Some(Box::pin(forwarded)),
        reply: None,
        finished: false,
        keep_alive: keep_alive_timer(keep_alive),
        _guard: cancel.drop_guard(),
    };
    let mut response = Response::new(Body::from_stream(events(state)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn events(state: StreamState) -> impl Stream<Item = Result<Bytes, Infallible>> {
    stream::unfold(state, |mut state| async move {
        loop {
            if !state.queued.is_empty() {
                // One write for whatever is queued (most often a single event: no copy).
                let chunk = if state.queued.len() == 1 {
                    state.queued.pop().unwrap_or_default()
                } else {
                    Bytes::from(
                        state
                            .queued
                            .drain(..)
                            .flat_map(|b| b.to_vec())
                            .collect::<Vec<u8>>(),
                    )
                };
                return Some((Ok(chunk), state));
            }
            if state.finished {
                return None;
            }
            if let Some(reply) = state.reply.take() {
                // The handler finished: flush what it queued, then the response, then end.
                while let Ok(message) = state.notifications.try_recv() {
                    state.queued.push(sse::encode_message(&message));
                }
                if let Reply::Message { body, .. } = reply {
                    state.queued.push(sse::encode_message(&body));
                }
                state.finished = true;
                continue;
            }
            let Some(work) = state.work.as_mut() else {
                state.finished = true;
                continue;
            };
            // The handler first: what it sends while polled here is taken by the next branch in
            // the same poll, where the other order would leave it for a second wake-up of the
            // connection's task (one per stream per change, 10,000 for one change to as many
            // listen streams). A finished handler's queue is drained before its reply (above).
            tokio::select! {
                biased;
                reply = work => {
                    state.work = None;
                    state.reply = Some(reply);
                }
                Some(message) = state.notifications.recv() => {
                    state.queued.push(sse::encode_message(&message));
                }
                _ = state.keep_alive.tick() => state.queued.push(sse::keep_alive()),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Zero and huge keep-alive periods mean no keep-alive comments, not a panic (tokio's
    /// `interval_at` refuses a zero period; a huge one overflowed `Instant`).
    #[tokio::test(start_paused = true)]
    async fn a_zero_or_huge_keep_alive_sends_none() {
        for period in [Duration::ZERO, Duration::MAX] {
            let mut timer = keep_alive_timer(period);
            let tick = tokio::time::timeout(Duration::from_secs(365 * 24 * 3600), timer.tick());
            assert!(
                tick.await.is_err(),
                "{period:?}: no keep-alive within a year"
            );
        }
        let mut timer = keep_alive_timer(Duration::from_secs(15));
        let tick = tokio::time::timeout(Duration::from_secs(16), timer.tick());
        assert!(tick.await.is_ok(), "15 s: a keep-alive within 16 s");
    }
}
