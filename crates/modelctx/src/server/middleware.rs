//! Server middleware: code that wraps every request and notification the server receives, on
//! every transport (stdio, the in-memory pipe, streamable HTTP) and in both eras.
//!
//! A [`Middleware`] sees one [`Request`] — its method, its target (tool or prompt name, resource
//! URI), its raw params and `_meta`, the [`RequestContext`] — and either answers it on its own
//! (a [`Reply::error`] to deny, a [`Reply::result`] served from a cache) or hands it to
//! [`Next::run`], which calls the rest of the chain and, at its end, the server. Middlewares run
//! in the order they were registered ([`ServerBuilder::middleware`](super::ServerBuilder::middleware)):
//! the first one registered is the outermost.
//!
//! What reaches the chain: every request (`initialize` included) and every notification that
//! the transport hands to the server. What does not: messages the transport refuses before
//! (malformed JSON, a body over the size limit, an unknown handshake-era session, a request of
//! the wrong era on a stdio connection), and the client's answers to the server's own requests.
//!
//! The chain runs before the validation ladder: a middleware also sees requests that the ladder
//! will refuse, and their errors come back through it like any other reply. The context it gets
//! reflects what the request *claims* (its `_meta`, or the handshake-era session's); the handler
//! gets a context of its own once the ladder has passed.
//!
//! Notifications go through the chain too, one at a time and in order (`notifications/initialized`
//! must be seen before the requests after it): a middleware that waits on a notification holds up
//! the connection's reading. A notification has no id and no context, and whatever a middleware
//! replies to it is dropped (JSON-RPC answers no notification).
//!
//! With no middleware registered nothing of this runs: the dispatch path is the one without
//! middleware, with no allocation, box or lock added.

use std::borrow::Cow;
use std::sync::Arc;

use modelctx_seal::Principal;
use modelctx_types::jsonrpc::encode_result;
use modelctx_types::{Era, ErrorObject, RequestId, RequestMeta};
use serde::Deserialize;
use serde::Serialize;
use serde_json::value::RawValue;

use super::context::RequestContext;
use super::handler::BoxFuture;
use super::message::{self, error_reply, internal};

/// Code that wraps every request and notification the server receives (see the
/// [module docs](self) for what reaches it and in which order).
///
/// `handle` gets the request and the rest of the chain; it answers on its own or returns what
/// `next.run(request)` answers, looked at or changed on the way out.
///
/// # A rate limiter
///
/// Per principal (what [`ServerBuilder::bind_principal`](super::ServerBuilder::bind_principal)
/// or the HTTP auth layer made of the request), else per peer address, else one bucket for the
/// connection's anonymous peer. Over the limit, a request is answered with a JSON-RPC error and
/// never reaches the handler; notifications pass. Every key a peer can pick costs memory, so
/// the table of keys is bounded too.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
///
/// use modelctx::server::middleware::{Middleware, Next, Reply, Request};
/// use modelctx::server::{BoxFuture, Server};
/// use modelctx::types::{ErrorCode, ErrorObject};
///
/// /// At most `limit` requests per key (no refill, to keep the example short; a real limiter
/// /// refills a token bucket over time).
/// struct RateLimit {
///     limit: u32,
///     max_keys: usize,
///     used: Mutex<HashMap<String, u32>>,
/// }
///
/// impl Middleware for RateLimit {
///     fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
///         Box::pin(async move {
///             if request.is_notification() {
///                 return next.run(request).await;
///             }
///             let key = match (request.principal(), request.peer_addr()) {
///                 (Some(principal), _) => principal.as_str().to_owned(),
///                 (None, Some(peer)) => peer.ip().to_string(),
///                 (None, None) => String::new(),
///             };
///             let allowed = {
///                 let mut used = self.used.lock().unwrap();
///                 if used.len() >= self.max_keys && !used.contains_key(&key) {
///                     false
///                 } else {
///                     let count = used.entry(key).or_default();
///                     *count += 1;
///                     *count <= self.limit
///                 }
///             };
///             if !allowed {
///                 return Reply::error(ErrorObject::new(
///                     ErrorCode(-32000),
///                     "Rate limit exceeded; retry later",
///                 ));
///             }
///             next.run(request).await
///         })
///     }
/// }
///
/// let server = Server::builder("limited", "1.0.0")
///     .middleware(RateLimit { limit: 100, max_keys: 10_000, used: Mutex::default() })
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
///
/// # An audit log
///
/// Records the method, the target and the outcome of everything the server receives (here into
/// a `tracing` event; a real log writes to its own sink):
///
/// ```
/// use modelctx::server::middleware::{Middleware, Next, Reply, Request};
/// use modelctx::server::{BoxFuture, Server};
///
/// struct AuditLog;
///
/// impl Middleware for AuditLog {
///     fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
///         Box::pin(async move {
///             let method = request.method().to_owned();
///             let target = request.target().map(str::to_owned);
///             let principal = request.principal().map(|p| p.as_str().to_owned());
///             let reply = next.run(request).await;
///             let outcome = match reply.as_error() {
///                 Some(error) => format!("error {}", error.code),
///                 None if reply.is_tool_error() => "tool error".to_owned(),
///                 None => "ok".to_owned(),
///             };
///             tracing::info!(target: "audit", %method, ?target, ?principal, %outcome);
///             reply
///         })
///     }
/// }
///
/// let server = Server::builder("audited", "1.0.0").middleware(AuditLog).build().unwrap();
/// # let _ = server;
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Answers `request`, on its own or through `next`.
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply>;
}

/// One request or notification on its way through the chain. Read-only: a middleware decides
/// whether and how it is served, not what it says.
pub struct Request<'a> {
    pub(super) id: Option<RequestId>,
    pub(super) method: &'a str,
    /// JSON text (checked by the decoder).
    pub(super) params: Option<&'a str>,
    pub(super) target: Option<Cow<'a, str>>,
    pub(super) meta: Option<Box<RequestMeta>>,
    pub(super) context: Option<RequestContext>,
    pub(super) principal: Option<Principal>,
    pub(super) era: Era,
    #[cfg(feature = "http-server")]
    pub(super) http: Option<Arc<http::request::Parts>>,
    pub(super) endpoint: Endpoint<'a>,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("target", &self.target)
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl Request<'_> {
    /// The JSON-RPC id; `None` for a notification.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// Whether this is a notification (no id, no reply).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The method.
    pub fn method(&self) -> &str {
        self.method
    }

    /// What the request is about: the tool's name (`tools/call`), the prompt's (`prompts/get`),
    /// the resource's URI (`resources/read`, `resources/subscribe`, `resources/unsubscribe`).
    /// The client's word: the ladder has not checked it yet.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// The raw `params`, as the client sent them.
    pub fn params(&self) -> Option<&RawValue> {
        // Kept as text: the transports may have decoded the params in the envelope's pass,
        // which yields no `RawValue`. Read as one only when a middleware asks.
        self.params.and_then(|text| serde_json::from_str(text).ok())
    }

    /// `params._meta` (on a handshake-era session, completed with what `initialize` fixed);
    /// `None` when the request carries none, or one that does not decode.
    pub fn meta(&self) -> Option<&RequestMeta> {
        self.meta.as_deref()
    }

    /// The request's context (principal bound, cancellation, progress and logging); `None` for
    /// a notification and for `initialize`, which come before any request.
    pub fn context(&self) -> Option<&RequestContext> {
        self.context.as_ref()
    }

    /// The principal the request is made by: the context's (after
    /// [`bind_principal`](super::ServerBuilder::bind_principal)) when there is one, else the one
    /// the transport authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        match &self.context {
            Some(context) => context.principal(),
            None => self.principal.as_ref(),
        }
    }

    /// The era the request belongs to.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The HTTP request head, on streamable HTTP.
    #[cfg(feature = "http-server")]
    pub fn http_parts(&self) -> Option<&http::request::Parts> {
        self.http.as_deref()
    }

    /// The peer's address, on streamable HTTP (see [`RequestContext::peer_addr`]).
    #[cfg(feature = "http-server")]
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        super::origin::peer_addr(self.http_parts()?)
    }

    /// Always `None` without the `http-server` feature (no transport knows peers).
    #[cfg(not(feature = "http-server"))]
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
}

/// What serves a request at the end of the chain.
pub(super) enum Endpoint<'a> {
    /// The server's dispatch (the validation ladder, routing, the handler), not started: a
    /// request a middleware answers itself drops it unpolled. The chain's runner
    /// (`chain.rs`) makes it; this module, below the server handle, cannot name dispatch.
    Dispatch(BoxFuture<'a, Reply>),
    /// What the transport does with a message it serves itself (a notification, `initialize`).
    Local(&'a (dyn Fn() -> Reply + Send + Sync + 'a)),
}

/// The rest of the chain; [`Next::run`] passes the request on.
pub struct Next<'a> {
    pub(super) rest: &'a [Arc<dyn Middleware>],
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &self.rest.len())
            .finish()
    }
}

impl<'a> Next<'a> {
    /// Runs the rest of the chain and then the server on `request`.
    pub fn run(self, request: Request<'a>) -> BoxFuture<'a, Reply> {
        match self.rest.split_first() {
            Some((first, rest)) => first.handle(request, Next { rest }),
            None => match request.endpoint {
                Endpoint::Dispatch(dispatch) => dispatch,
                Endpoint::Local(serve) => Box::pin(async move { serve() }),
            },
        }
    }
}

/// The answer to a request as it travels back up the chain.
#[derive(Debug)]
pub struct Reply(Kind);

#[derive(Debug)]
enum Kind {
    /// A result the server encoded, id included.
    Encoded(Vec<u8>),
    /// A result a middleware made.
    Result(Box<RawValue>),
    Error(ErrorObject),
    Nothing,
}

impl Reply {
    /// A JSON-RPC error (a refusal).
    pub fn error(error: ErrorObject) -> Self {
        Self(Kind::Error(error))
    }

    /// A result (served from a cache, say); `-32603` if it cannot be serialized.
    pub fn result<R: Serialize + ?Sized>(result: &R) -> Self {
        match serde_json::value::to_raw_value(result) {
            Ok(raw) => Self(Kind::Result(raw)),
            Err(error) => Self::error(internal(&format!("result not encodable: {error}"))),
        }
    }

    /// A response the server encoded, id included.
    pub(super) fn encoded(body: Vec<u8>) -> Self {
        Self(Kind::Encoded(body))
    }

    /// No answer (what a notification gets).
    pub fn nothing() -> Self {
        Self(Kind::Nothing)
    }

    /// The JSON-RPC error, when the reply is one.
    pub fn as_error(&self) -> Option<&ErrorObject> {
        match &self.0 {
            Kind::Error(error) => Some(error),
            _ => None,
        }
    }

    /// The result, when the reply is one (decoded from the encoded response: meant for caches
    /// and inspection, not for every request).
    pub fn result_json(&self) -> Option<Box<RawValue>> {
        #[derive(Deserialize)]
        struct Response<'a> {
            #[serde(borrow)]
            result: &'a RawValue,
        }
        match &self.0 {
            Kind::Result(raw) => Some(raw.clone()),
            Kind::Encoded(body) => serde_json::from_slice::<Response<'_>>(body)
                .ok()
                .map(|response| response.result.to_owned()),
            Kind::Error(_) | Kind::Nothing => None,
        }
    }

    /// Whether the reply is a tool result with `isError: true` (a failure the tool reports to
    /// the model, not a JSON-RPC error).
    pub fn is_tool_error(&self) -> bool {
        #[derive(Deserialize)]
        struct Result {
            #[serde(rename = "isError", default)]
            is_error: bool,
        }
        self.result_json()
            .and_then(|raw| serde_json::from_str::<Result>(raw.get()).ok())
            .is_some_and(|result| result.is_error)
    }

    /// The reply on the wire: nothing for a notification.
    pub(crate) fn encode(self, id: Option<&RequestId>) -> message::Reply {
        let Some(id) = id else {
            return message::Reply::Nothing;
        };
        match self.0 {
            Kind::Encoded(body) => message::Reply::Message { body, error: None },
            Kind::Result(raw) => match encode_result(id, &raw) {
                Ok(body) => message::Reply::Message { body, error: None },
                Err(error) => error_reply(Some(id), &internal(&error.to_string())),
            },
            Kind::Error(error) => error_reply(Some(id), &error),
            Kind::Nothing => message::Reply::Nothing,
        }
    }
}
