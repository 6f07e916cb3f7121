//! The connection of the HTTP transport ([`HttpInner`]), which the sending side and the tasks it
//! spawns (back-channel answers, the GET stream, cancellations) share: its configuration and
//! the authorization layer it calls ([`RequestAuth`]), the POST of a message with its headers,
//! reading a reply (a JSON body, or an event stream routed on the way — a server request on a
//! handshake-era stream is answered with a POST here), and the registration of a request
//! whose reply may arrive on another stream ([`Waiting`]). Below the sending side (`mod.rs`)
//! and the handshake era's extras (`handshake.rs`), which both call it; it calls neither.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use modelctx_types::jsonrpc::{Message, Request, encode_notification};
use modelctx_types::{Era, MessageRef, NotificationMethod as _, RequestId};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::oneshot;

use crate::client::error::{ClientError, TransportError};
use crate::client::shared::Shared;
use crate::client::transport::{HttpHeaders, Reply};
use crate::http::body::{BodyError, read_limited};
use crate::http::headers;
use crate::http::sse;
use crate::sync::{lock, read};

/// What `Accept` says on every POST.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How many times a POST refused with `503` + `Retry-After` is sent again.
const UNAVAILABLE_RETRIES: u32 = 2;
/// The longest `Retry-After` honoured by waiting; a longer one is the caller's decision.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The delay of a `503 Service Unavailable` with `Retry-After: <seconds>` short enough to wait
/// for (the HTTP-date form is not waited for).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    if response.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let seconds: u64 = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds)).filter(|delay| *delay <= MAX_RETRY_AFTER)
}

/// How the HTTP transport is configured.
#[derive(Debug, Clone)]
pub(crate) struct HttpConfig {
    pub(crate) client: reqwest::Client,
    pub(crate) url: reqwest::Url,
    pub(crate) extra_headers: HeaderMap,
    pub(crate) max_reissues: u32,
    pub(crate) max_message: usize,
    pub(crate) handshake_get_stream: bool,
    /// Signs requests in when the server asks (OAuth 2.1: `client::auth` implements it).
    pub(crate) auth: Option<Arc<dyn RequestAuth>>,
}

/// Builds one attempt of a request, given the `Authorization` value to send (if any).
pub(crate) type BuildRequest<'a> =
    dyn Fn(Option<&HeaderValue>) -> Result<reqwest::RequestBuilder, ClientError> + Send + Sync + 'a;

/// What the transport asks of an authorization layer: to sign its requests in, and to answer
/// a `401` / `403` challenge (sign in, refresh, step up) by sending the request again. It is
/// injected (a trait object in [`HttpConfig`]) so that the transport knows no authorization
/// scheme; `client::auth`'s OAuth client is the implementation.
pub(crate) trait RequestAuth: Send + Sync + std::fmt::Debug {
    /// Sends the request `build` makes, with the current credentials, and recovers from the
    /// server's challenges by building and sending it again; the last response is returned.
    fn send<'a>(
        &'a self,
        build: &'a BuildRequest<'a>,
    ) -> BoxFuture<'a, Result<reqwest::Response, ClientError>>;

    /// The credential headers (`Authorization`, and a DPoP proof for a DPoP-bound token) of a
    /// `method` request to `url` that is not retried on a refusal (the handshake era's GET
    /// stream and `DELETE`).
    fn credentials_for<'a>(
        &'a self,
        method: &'a reqwest::Method,
        url: &'a reqwest::Url,
    ) -> BoxFuture<'a, HeaderMap>;

    /// The clock whose paused time (the user signing in) request time bounds do not count.
    #[cfg(feature = "auth-client")]
    fn pause_clock(&self) -> &crate::client::pause::PauseClock;
}

/// The parts spawned tasks (back-channel answers, the GET stream) need too.
#[derive(Debug)]
pub(crate) struct HttpInner {
    pub(crate) config: HttpConfig,
    pub(crate) shared: Arc<Shared>,
    /// `Mcp-Session-Id` of a handshake-era session.
    pub(crate) session_id: RwLock<Option<String>>,
    /// Requests waiting for a reply that may arrive on another stream than their own (a
    /// handshake-era server may answer on the GET stream or a resumed stream).
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Reply>>>,
    /// The POSTs of `notifications/cancelled` for abandoned requests, which closing waits for:
    /// a process that closes the client and exits (a command that timed out) would otherwise
    /// end before they ran, and the server would work on for nobody.
    pub(super) cancels: tokio_util::task::TaskTracker,
}

/// What reading a response produced.
pub(crate) enum Received {
    /// The reply.
    Reply(Reply),
    /// The stream ended (or failed) before the reply; `last_event_id` / `retry` allow a
    /// handshake-era resumption.
    Broken {
        last_event_id: Option<String>,
        retry_ms: Option<u64>,
    },
}

impl HttpInner {
    pub(super) fn new(config: HttpConfig, shared: Arc<Shared>) -> Self {
        Self {
            config,
            shared,
            session_id: RwLock::new(None),
            waiting: Mutex::new(HashMap::new()),
            cancels: tokio_util::task::TaskTracker::new(),
        }
    }

    /// POSTs one message with the standard headers (and, with OAuth configured, the access
    /// token: a 401 or 403 `insufficient_scope` signs in and sends the message again).
    ///
    /// A `503` with a short `Retry-After` (the server shed the request before reading it, e.g.
    /// its buffered-body budget was spent) is sent again after that delay, a bounded number of
    /// times; any other answer, or a longer delay, is returned as it is.
    pub(crate) async fn post(
        &self,
        body: Vec<u8>,
        method: Option<&str>,
        extra: &HttpHeaders,
    ) -> Result<reqwest::Response, ClientError> {
        let body = Bytes::from(body);
        let mut retries = 0;
        loop {
            let response = self.post_once(body.clone(), method, extra).await?;
            match retry_after(&response) {
                Some(delay) if retries < UNAVAILABLE_RETRIES => {
                    retries += 1;
                    tracing::debug!(?method, ?delay, "server unavailable; sending again");
                    tokio::time::sleep(delay).await;
                }
                _ => return Ok(response),
            }
        }
    }

    async fn post_once(
        &self,
        body: Bytes,
        method: Option<&str>,
        extra: &HttpHeaders,
    ) -> Result<reqwest::Response, ClientError> {
        if let Some(auth) = &self.config.auth {
            let build = |authorization: Option<&HeaderValue>| {
                self.post_request(body.clone(), method, extra, authorization)
            };
            return auth.send(&build).await;
        }
        Ok(self.post_request(body, method, extra, None)?.send().await?)
    }

    /// The credentials of a `method` request to the server that is not retried on a refusal
    /// (the handshake era's GET stream and `DELETE`).
    pub(crate) async fn authorize(
        &self,
        method: reqwest::Method,
        request: reqwest::RequestBuilder,
    ) -> reqwest::RequestBuilder {
        if let Some(auth) = &self.config.auth {
            // Replaces any configured Authorization header rather than adding a second one.
            return request.headers(auth.credentials_for(&method, &self.config.url).await);
        }
        request
    }

    /// Builds the POST of one message.
    fn post_request(
        &self,
        body: impl Into<reqwest::Body>,
        method: Option<&str>,
        extra: &HttpHeaders,
        authorization: Option<&HeaderValue>,
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        let mut request = self
            .config
            .client
            .post(self.config.url.clone())
            .headers(self.config.extra_headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH);
        if let Some(value) = authorization {
            // Replaces any configured Authorization header rather than adding a second one.
            request = request.headers(authorization_header(value));
        }
        if let Some(version) = &extra.protocol_version {
            request = request.header(headers::PROTOCOL_VERSION, header_value(version)?);
        }
        if extra.routing {
            if let Some(method) = method {
                request = request.header(headers::METHOD, header_value(method)?);
            }
            if let Some(name) = &extra.name {
                request =
                    request.header(headers::NAME, header_value(&headers::encode_value(name))?);
            }
            for (name, value) in &extra.params {
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
                request = request.header(name, header_value(value)?);
            }
        }
        if let Some(session) = self.session_id() {
            request = request.header(headers::SESSION_ID, header_value(&session)?);
        }
        Ok(request.body(body))
    }

    pub(crate) fn session_id(&self) -> Option<String> {
        read(&self.session_id).clone()
    }

    /// Reads the response to the request `id`: a JSON body or an event stream.
    pub(crate) async fn read_reply(
        self: &Arc<Self>,
        mut response: reqwest::Response,
        id: &RequestId,
        elsewhere: &mut oneshot::Receiver<Reply>,
    ) -> Result<Received, ClientError> {
        let status = response.status();
        let content_type = content_type(&response);
        if status.as_u16() == 202 {
            return Err(ClientError::Protocol(
                "the server answered a request with 202 Accepted".to_owned(),
            ));
        }
        if !status.is_success() {
            // A JSON-RPC error body at an error status is the server's real answer.
            if content_type.starts_with("application/json")
                && let Ok(Some(body)) = read_body(&mut response, self.config.max_message).await
            {
                if let Ok(MessageRef::Response(reply)) = MessageRef::decode_slice(&body)
                    && let Err(error) = reply.payload
                {
                    return Ok(Received::Reply(Err(error)));
                }
                return Err(ClientError::HttpStatus {
                    status: status.as_u16(),
                    body: snippet(&body),
                });
            }
            return Err(ClientError::HttpStatus {
                status: status.as_u16(),
                body: body_snippet(response).await,
            });
        }
        if content_type.starts_with("application/json") {
            let Some(body) = read_body(&mut response, self.config.max_message).await? else {
                return Ok(Received::Broken {
                    last_event_id: None,
                    retry_ms: None,
                });
            };
            return match Message::decode_slice(&body) {
                Ok(Message::Response(reply)) if reply.id.as_ref().is_none_or(|r| r == id) => {
                    Ok(Received::Reply(reply.payload.into_reply()))
                }
                Ok(_) => Err(ClientError::Protocol(format!(
                    "the JSON body is not the response to request {id}"
                ))),
                Err(error) => Err(ClientError::Protocol(format!(
                    "undecodable response body: {error}"
                ))),
            };
        }
        if content_type.starts_with("text/event-stream") {
            return self.read_stream(response, Some((id, elsewhere))).await;
        }
        Err(ClientError::Protocol(format!(
            "unexpected content type {content_type:?} for a request"
        )))
    }

    /// Reads an event stream until the response to the awaited request (or, with `None`, to
    /// its end): routes notifications, other requests' responses and server requests on the
    /// way. The awaited reply may also arrive on another stream (`elsewhere`).
    pub(crate) async fn read_stream(
        self: &Arc<Self>,
        mut response: reqwest::Response,
        mut awaited: Option<(&RequestId, &mut oneshot::Receiver<Reply>)>,
    ) -> Result<Received, ClientError> {
        let mut parser = sse::Parser::new(self.config.max_message);
        let id = awaited.as_ref().map(|(id, _)| (*id).clone());
        loop {
            let next = match awaited.as_mut() {
                Some((_, elsewhere)) => tokio::select! {
                    chunk = response.chunk() => chunk,
                    reply = &mut **elsewhere => match reply {
                        Ok(reply) => return Ok(Received::Reply(reply)),
                        Err(_) => return Err(TransportError::Closed.into()),
                    },
                },
                None => response.chunk().await,
            };
            let chunk: Bytes = match next {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(%error, "response stream failed");
                    break;
                }
            };
            let events = parser
                .feed(&chunk)
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
            for event in events {
                if let Some(reply) = self.handle_event(&event, id.as_ref()) {
                    return Ok(Received::Reply(reply));
                }
            }
        }
        Ok(Received::Broken {
            last_event_id: parser.last_event_id().map(ToOwned::to_owned),
            retry_ms: parser.retry(),
        })
    }

    /// Handles one event; returns the reply when it is the response to `id`.
    fn handle_event(self: &Arc<Self>, event: &sse::Event, id: Option<&RequestId>) -> Option<Reply> {
        if event.data.is_empty() {
            return None;
        }
        match Message::decode(&event.data) {
            Ok(Message::Response(reply)) => {
                if id.is_some() && (reply.id.is_none() || reply.id.as_ref() == id) {
                    return Some(reply.payload.into_reply());
                }
                // Another request's response (e.g. on the GET stream): hand it over.
                let waiter = reply
                    .id
                    .as_ref()
                    .and_then(|reply_id| lock(&self.waiting).remove(reply_id));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(reply.payload.into_reply());
                    }
                    None => {
                        tracing::debug!(id = ?reply.id, "response for a request nobody waits for");
                    }
                }
            }
            Ok(Message::Notification(notification)) => {
                self.shared.route_notification(&notification);
            }
            Ok(Message::Request(request)) => {
                if self.shared.era() == Some(Era::Modern) {
                    // 2026-07-28 forbids requests on response streams; there is no one to
                    // answer them to.
                    tracing::warn!(method = %request.method, "ignored a server request on a 2026-07-28 stream");
                } else {
                    answer_on_back_channel(Arc::clone(self), request);
                }
            }
            Err(error) => tracing::warn!(%error, "undecodable event from the server"),
        }
        None
    }
}

/// Answers a server request that arrived on a stream: runs the callback, then POSTs the
/// response (the server acknowledges it with 202).
fn answer_on_back_channel(inner: Arc<HttpInner>, request: Request) {
    tokio::spawn(async move {
        let method = request.method.clone();
        let response = inner.shared.answer_server_request(request).await;
        let headers = HttpHeaders {
            protocol_version: inner.shared.version().map(|v| v.to_string()),
            ..HttpHeaders::default()
        };
        match inner.post(response, None, &headers).await {
            Ok(reply) if reply.status().is_success() => {}
            Ok(reply) => {
                tracing::warn!(%method, status = %reply.status(), "the server refused our response");
            }
            Err(error) => tracing::warn!(%method, %error, "could not send our response"),
        }
    });
}

/// A request's registration for replies arriving on other streams; unregisters on drop. A
/// handshake-era request abandoned before it settled is cancelled with
/// `notifications/cancelled` (2026-07-28 cancels by closing the stream, which dropping the
/// response does by itself), sent by a task that closing the transport waits for.
pub(super) struct Waiting {
    inner: Arc<HttpInner>,
    id: RequestId,
    /// Where a reply that arrives on another stream is handed over.
    pub(super) receiver: oneshot::Receiver<Reply>,
    cancellable: bool,
    /// Set once the request has its reply (or failed): dropping it then cancels nothing.
    pub(super) settled: bool,
}

impl Waiting {
    pub(super) fn register(inner: &Arc<HttpInner>, id: &RequestId, cancellable: bool) -> Self {
        let (sender, receiver) = oneshot::channel();
        lock(&inner.waiting).insert(id.clone(), sender);
        Self {
            inner: Arc::clone(inner),
            id: id.clone(),
            receiver,
            cancellable,
            settled: false,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        lock(&self.inner.waiting).remove(&self.id);
        if self.settled || !self.cancellable || self.inner.shared.era() != Some(Era::Handshake) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let params = modelctx_types::CancelledNotificationParams::new(
            self.id.clone(),
            Some("the client abandoned the request".to_owned()),
        );
        let Ok(body) = encode_notification(modelctx_types::methods::Cancelled::NAME, Some(&params))
        else {
            return;
        };
        let inner = Arc::clone(&self.inner);
        let cancels = self.inner.cancels.clone();
        cancels.spawn_on(
            async move {
                let headers = HttpHeaders {
                    protocol_version: inner.shared.version().map(|v| v.to_string()),
                    ..HttpHeaders::default()
                };
                if let Err(error) = inner.post(body, None, &headers).await {
                    tracing::debug!(%error, "could not send notifications/cancelled");
                }
            },
            &runtime,
        );
    }
}

/// Converts an owned payload into a reply.
trait IntoReply {
    fn into_reply(self) -> Reply;
}

impl IntoReply for modelctx_types::jsonrpc::ResponsePayload {
    fn into_reply(self) -> Reply {
        match self {
            Self::Result(raw) => Ok(raw),
            Self::Error(error) => Err(error),
        }
    }
}

/// A map holding only `Authorization: value` (`RequestBuilder::headers` replaces).
fn authorization_header(value: &HeaderValue) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(reqwest::header::AUTHORIZATION, value.clone());
    map
}

fn header_value(value: &str) -> Result<HeaderValue, ClientError> {
    HeaderValue::from_str(value).map_err(|_| {
        ClientError::InvalidArgument(format!("{value:?} cannot be an HTTP header value"))
    })
}

pub(crate) fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Reads a whole body of at most `max` bytes. `Ok(None)` when the body broke mid-way.
async fn read_body(
    response: &mut reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, ClientError> {
    match read_limited(response, max).await {
        Ok(body) => Ok(Some(body)),
        Err(BodyError::TooLarge(max)) => Err(ClientError::Protocol(format!(
            "response body larger than {max} bytes"
        ))),
        Err(BodyError::Transport(error)) => {
            tracing::debug!(%error, "response body broke");
            Ok(None)
        }
    }
}

pub(crate) async fn body_snippet(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= 1024 {
            break;
        }
    }
    snippet(&body)
}

fn snippet(body: &[u8]) -> String {
    let end = body.len().min(1024);
    String::from_utf8_lossy(&body[..end]).into_owned()
}
