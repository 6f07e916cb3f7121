//! The HTTP+SSE transport of 2024-11-05, opt-in beside streamable HTTP ([`SseConfig`]).
//!
//! `GET /sse` opens a session: an event stream whose first event, `endpoint`, names the URL the
//! client POSTs its messages to (`/messages?session_id=…`, a path on the same origin). Each
//! POST carries one JSON-RPC message and is answered 202 at once; every response, server
//! request (elicitation, sampling, roots) and notification travels on the event stream as a
//! `message` event. The session lives as long as its stream: closing it ends the session.
//!
//! The session is served by the line engine of stdio ([`Server::serve_io_with`]) over two
//! in-memory pipes: POSTed messages become its input lines, its output lines become `message`
//! events. So the handshake era (`initialize`, the versions it negotiates, cancellation, the
//! back-channel, list changes and resource updates, the concurrency bound) is exactly the one a
//! stdio connection gets; only the framing is new. A request carrying the 2026-07-28 envelope
//! is refused: this transport predates that era.
//!
//! Every request passes the endpoint's guards (Host and Origin allowlists, authentication, body
//! bounds). The sessions are bounded ([`SseConfig::max_sessions`], and the per-address opening
//! rate [`HttpConfig::session_rate`]), so are the messages queued for one session
//! ([`SseConfig::max_queued_messages`]; beyond, 503), and a session no message used within
//! [`HttpConfig::session_idle_timeout`] ends. A session opened by an authenticated principal
//! takes messages from that principal only (to anyone else it does not exist).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderValue, StatusCode, header};
use modelctx_seal::Principal;
use modelctx_types::jsonrpc::MessageRef;
use modelctx_types::{ErrorCode, ErrorObject};
use serde_json::value::RawValue;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc;
use tokio::time::Instant;

#[cfg(doc)]
use super::config::HttpConfig;
use super::config::SseConfig;
use super::guards::{authenticate, check_host_and_origin, is_json};
use super::responses::{accepted, body_refused, json, plain};
use super::sse::event_stream_only;
use super::state::HttpState;
#[cfg(doc)]
use crate::server::Server;
use crate::server::origin::peer_addr;
use crate::server::peer_rate::PeerRate;
use crate::server::{StdioConfig, handshake};
use crate::sync::lock;
use crate::transport::lines::{Frame, LineReader};

/// The SSE routes over the endpoint's state (its server, settings and body budget).
pub(crate) fn router(http: Arc<HttpState>) -> Router {
    let sse = http.config.sse.clone().unwrap_or_default();
    let state = Arc::new(SseState {
        table: Mutex::new(HashMap::new()),
        opening: http.config.session_rate.map(PeerRate::new),
        sse: sse.clone(),
        http,
    });
    Router::new()
        .route(&sse.sse_path, get(open))
        .route(&sse.messages_path, post(message))
        .with_state(state)
}

struct SseState {
    http: Arc<HttpState>,
    sse: SseConfig,
    table: Mutex<HashMap<String, Arc<SseSession>>>,
    /// Sessions opened per peer address, when limited.
    opening: Option<PeerRate>,
}

/// What a POST needs of a session: where its messages go, and who may send them.
struct SseSession {
    inbox: mpsc::Sender<Bytes>,
    principal: Option<Principal>,
    /// When a message last went either way (tokio's clock, which tests can pause).
    last_used: Mutex<Instant>,
}

impl SseSession {
    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

/// Removes a session from the table when its stream's task ends, however it ends.
struct Registered {
    state: Arc<SseState>,
    id: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.state.table).remove(&self.id);
    }
}

fn rpc_error(status: StatusCode, code: ErrorCode, message: &str) -> Response {
    let body = modelctx_types::jsonrpc::encode_error(None, &ErrorObject::new(code, message));
    json(status.as_u16(), body)
}

fn retry_after(mut response: Response, wait: Duration) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// `GET`: a new session and its event stream.
async fn open(State(state): State<Arc<SseState>>, request: Request) -> Response {
    if let Err(response) = check_host_and_origin(&request, &state.http.config) {
        return *response;
    }
    let (mut parts, _) = request.into_parts();
    if let Err(response) = authenticate(&state.http, &mut parts).await {
        return response;
    }
    if let (Some(rate), Some(peer)) = (&state.opening, peer_addr(&parts))
        && let Err(wait) = rate.check(peer.ip())
    {
        let refused = rpc_error(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::INVALID_REQUEST,
            "Too many sessions opened from this address; retry later",
        );
        return retry_after(refused, wait);
    }
    let Ok(id) = crate::ids::random_hex() else {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "no randomness for a session id",
        );
    };
    let (inbox, messages) = mpsc::channel(state.sse.max_queued_messages.max(1));
    let session = Arc::new(SseSession {
        inbox,
        principal: parts.extensions.get::<Principal>().cloned(),
        last_used: Mutex::new(Instant::now()),
    });
    {
        let mut table = lock(&state.table);
        if table.len() >= state.sse.max_sessions {
            drop(table);
            let refused = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::INVALID_REQUEST,
                "Too many SSE sessions are open; retry later",
            );
            return retry_after(refused, Duration::from_secs(1));
        }
        table.insert(id.clone(), Arc::clone(&session));
    }
    let registered = Registered {
        state: Arc::clone(&state),
        id: id.clone(),
    };
    let (events, outbox) = mpsc::channel(64);
    let task = tokio::spawn(serve_session(registered, session, messages, events));
    // Nested under a prefix (`Router::nest`), the messages' route is under it too.
    let prefix = parts
        .extensions
        .get::<axum::extract::NestedPath>()
        .map_or("", |nested| nested.as_str().trim_end_matches('/'));
    let endpoint = format!("{prefix}{}?session_id={id}", state.sse.messages_path);
    let stream = event_stream_only(outbox, task, state.http.config.keep_alive);
    let (mut head, body) = stream.into_parts();
    head.headers
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    let first = Bytes::from(format!("event: endpoint\ndata: {endpoint}\n\n"));
    let events = futures::stream::once(async move { Ok::<_, axum::Error>(first) })
        .chain(body.into_data_stream());
    Response::from_parts(head, Body::from_stream(events))
}

/// Serves one session until its stream closes (this task is aborted then), its engine ends,
/// the server shuts down or the session idles out.
async fn serve_session(
    registered: Registered,
    session: Arc<SseSession>,
    mut messages: mpsc::Receiver<Bytes>,
    events: mpsc::Sender<Vec<u8>>,
) {
    let state = Arc::clone(&registered.state);
    let server = state.http.server.clone();
    let max_message = state.http.config.max_body_size;
    // Room for a few messages each way; a peer that does not read holds the engine's writer,
    // and through it the requests it answers (bounded by the engine's own limits).
    let (engine_input, mut feed) = tokio::io::duplex(64 * 1024);
    let (engine_output, produced) = tokio::io::duplex(64 * 1024);
    let config = StdioConfig {
        max_message_size: max_message,
        ..StdioConfig::default()
    };
    let engine = server.serve_io_with(engine_input, engine_output, config);
    let feeding = async {
        while let Some(message) = messages.recv().await {
            if feed.write_all(&message).await.is_err() || feed.write_all(b"\n").await.is_err() {
                break;
            }
        }
    };
    let relaying = async {
        // Our own engine's output, whatever its size (a large `resources/read`): a bound here
        // would drop a response and leave its client waiting.
        let mut lines = LineReader::new(produced, usize::MAX);
        while let Ok(Some(frame)) = lines.next_frame().await {
            let Frame::Line(line) = frame else { continue };
            session.touch();
            if events.send(line.to_vec()).await.is_err() {
                break;
            }
        }
    };
    let idle = idle_out(&session, state.http.config.session_idle_timeout);
    let closing = server.inner.shutdown.clone();
    tokio::select! {
        _ = engine => {}
        () = feeding => {}
        () = relaying => {}
        () = idle => tracing::debug!(session = %registered.id, "SSE session idle; ended"),
        () = closing.cancelled() => {}
    }
    drop(registered);
}

/// Completes once `session` has gone unused for `timeout` (never without one).
async fn idle_out(session: &SseSession, timeout: Option<Duration>) {
    let Some(timeout) = timeout else {
        return std::future::pending().await;
    };
    let timeout = timeout.max(Duration::from_secs(1));
    loop {
        let due = *lock(&session.last_used) + timeout;
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(due).await;
    }
}

/// `POST`: one message for a session's engine.
async fn message(State(state): State<Arc<SseState>>, request: Request) -> Response {
    if let Err(response) = check_host_and_origin(&request, &state.http.config) {
        return *response;
    }
    if !is_json(request.headers()) {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let (mut parts, body) = request.into_parts();
    if let Err(response) = authenticate(&state.http, &mut parts).await {
        return response;
    }
    let Some(id) = session_id(parts.uri.query()) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "Bad Request: session_id is required",
        );
    };
    let session = lock(&state.table).get(id).cloned();
    let principal = parts.extensions.get::<Principal>();
    let Some(session) = session.filter(|s| s.principal.as_ref() == principal) else {
        return rpc_error(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            "Session not found",
        );
    };
    let body = match state.http.bodies.read(&parts.headers, body).await {
        Ok(body) => body,
        Err(error) => return body_refused(&error),
    };
    let line = match one_line(&body.bytes) {
        Ok(line) => line,
        Err(response) => return *response,
    };
    session.touch();
    match session.inbox.try_send(line) {
        Ok(()) => accepted(),
        Err(mpsc::error::TrySendError::Full(_)) => retry_after(
            rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::INVALID_REQUEST,
                "Too many messages queued for this session; retry later",
            ),
            Duration::from_secs(1),
        ),
        Err(mpsc::error::TrySendError::Closed(_)) => rpc_error(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            "Session not found",
        ),
    }
}

/// The `session_id` query parameter (`sessionId`, which some servers of the era used, too).
fn session_id(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == "session_id" || name == "sessionId").then_some(value)
    })
}

/// The POSTed message as one input line for the engine, or the 400 that refuses it: it must be
/// one JSON-RPC message (not a batch), and a request must not carry the 2026-07-28 envelope.
fn one_line(body: &[u8]) -> Result<Bytes, Box<Response>> {
    let refuse = |error: &ErrorObject, id| {
        let body = modelctx_types::jsonrpc::encode_error(id, error);
        Box::new(json(StatusCode::BAD_REQUEST.as_u16(), body))
    };
    match MessageRef::decode_slice(body) {
        Err(error) => return Err(refuse(&error.to_error_object(), error.id())),
        Ok(MessageRef::Request(request))
            if handshake::has_modern_envelope(request.params.map(RawValue::get)) =>
        {
            return Err(refuse(
                &handshake::era_mismatch_handshake(),
                Some(&request.id),
            ));
        }
        Ok(_) => {}
    }
    // JSON strings hold no raw line breaks, so any in the body are whitespace between tokens:
    // blanked, the message is one line and means the same.
    let mut line = body.to_vec();
    for byte in &mut line {
        if matches!(*byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
    Ok(Bytes::from(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::http::HttpConfig;

    fn session() -> SseSession {
        SseSession {
            inbox: mpsc::channel(1).0,
            principal: None,
            last_used: Mutex::new(Instant::now()),
        }
    }

    /// The SSE state of a default endpoint, with one session `id` opened by `principal`
    /// whose engine takes nothing (its queue holds `queue` messages), and that queue's reader.
    fn one_session(
        principal: Option<Principal>,
        queue: usize,
    ) -> (Arc<SseState>, mpsc::Receiver<Bytes>) {
        let config = HttpConfig::default();
        let http = Arc::new(HttpState {
            server: crate::server::Server::builder("sse", "1.0.0")
                .build()
                .unwrap(),
            bodies: super::super::body::BodyBudget::new(&config),
            sessions: super::super::sessions::Sessions::new(None, None, config.max_sessions),
            config,
        });
        let (inbox, messages) = mpsc::channel(queue);
        let session = Arc::new(SseSession {
            inbox,
            principal,
            last_used: Mutex::new(Instant::now()),
        });
        let state = Arc::new(SseState {
            http,
            sse: SseConfig::default(),
            table: Mutex::new(HashMap::from([("ab12".to_owned(), session)])),
            opening: None,
        });
        (state, messages)
    }

    fn post_to(id: &str) -> Request {
        http::Request::post(format!("/messages?session_id={id}"))
            .header(header::HOST, "127.0.0.1")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ))
            .unwrap()
    }

    /// The messages queued for a session's engine are bounded: past the bound, 503 with
    /// `Retry-After`, and what was queued stays.
    #[tokio::test]
    async fn the_queue_of_a_session_is_bounded() {
        let (state, mut messages) = one_session(None, 2);
        for _ in 0..2 {
            let queued = message(State(Arc::clone(&state)), post_to("ab12")).await;
            assert_eq!(queued.status(), 202);
        }
        let refused = message(State(Arc::clone(&state)), post_to("ab12")).await;
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        assert!(messages.try_recv().is_ok() && messages.try_recv().is_ok());
        assert!(messages.try_recv().is_err());
        // Once the engine is gone, its session is too.
        drop(messages);
        let gone = message(State(Arc::clone(&state)), post_to("ab12")).await;
        assert_eq!(gone.status(), 404);
    }

    /// A session opened by a principal does not exist for a request without it (nor for
    /// another principal).
    #[tokio::test]
    async fn a_session_is_its_principals_only() {
        let (state, _messages) = one_session(Some(Principal::new("alice")), 4);
        let anonymous = message(State(Arc::clone(&state)), post_to("ab12")).await;
        assert_eq!(anonymous.status(), 404);
        let mut as_bob = post_to("ab12");
        as_bob.extensions_mut().insert(Principal::new("bob"));
        assert_eq!(
            message(State(Arc::clone(&state)), as_bob).await.status(),
            404
        );
        let mut as_alice = post_to("ab12");
        as_alice.extensions_mut().insert(Principal::new("alice"));
        assert_eq!(
            message(State(Arc::clone(&state)), as_alice).await.status(),
            202
        );
    }

    /// A session ends once unused for its idle timeout, and each use starts the count again.
    #[tokio::test(start_paused = true)]
    async fn a_session_idles_out_unless_used() {
        let session = session();
        let timeout = Some(Duration::from_secs(60));
        let idle = idle_out(&session, timeout);
        tokio::pin!(idle);
        tokio::time::advance(Duration::from_secs(50)).await;
        session.touch();
        // 90 s after opening, 40 s after the use: still serving.
        tokio::time::advance(Duration::from_secs(40)).await;
        assert!(futures::poll!(idle.as_mut()).is_pending());
        tokio::time::advance(Duration::from_secs(21)).await;
        assert!(futures::poll!(idle.as_mut()).is_ready());
        // Without a timeout, never.
        let forever = idle_out(&session, None);
        tokio::pin!(forever);
        tokio::time::advance(Duration::from_secs(86_400)).await;
        assert!(futures::poll!(forever.as_mut()).is_pending());
    }

    #[test]
    fn the_session_id_is_read_from_the_query() {
        assert_eq!(session_id(Some("session_id=ab12")), Some("ab12"));
        assert_eq!(session_id(Some("x=1&sessionId=cd")), Some("cd"));
        assert_eq!(session_id(Some("x=1")), None);
        assert_eq!(session_id(None), None);
    }

    #[test]
    fn a_pretty_printed_message_becomes_one_line() {
        let body = b"{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"notifications/initialized\"\n}";
        let line = one_line(body).unwrap();
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        assert!(MessageRef::decode_slice(&line).is_ok());
    }

    #[test]
    fn garbage_and_modern_requests_are_refused() {
        assert_eq!(one_line(b"{not json").unwrap_err().status(), 400);
        assert_eq!(one_line(b"[]").unwrap_err().status(), 400);
        let modern = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(one_line(modern).unwrap_err().status(), 400);
        let plain = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(one_line(plain).is_ok());
    }
}
