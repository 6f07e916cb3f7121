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
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use modelctx_seal::Principal;
use modelctx_types::jsonrpc::encode_result;
use modelctx_types::{Era, ErrorObject, ProtocolVersion, RequestId, RequestMeta};
use serde::Deserialize;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::dispatch;
use super::handshake::HandshakeSession;
use super::ladder::{context, handshake_meta};
use super::message::{self, Incoming, error_reply, internal, probe_meta};
use super::notifier::Notifier;
use super::{BoxFuture, RequestContext, Server};
use crate::span_fields::target_of;

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
    id: Option<RequestId>,
    method: &'a str,
    /// JSON text (checked by the decoder).
    params: Option<&'a str>,
    target: Option<Cow<'a, str>>,
    meta: Option<Box<RequestMeta>>,
    context: Option<RequestContext>,
    principal: Option<Principal>,
    era: Era,
    #[cfg(feature = "http-server")]
    http: Option<Arc<http::request::Parts>>,
    endpoint: Endpoint<'a>,
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
enum Endpoint<'a> {
    /// The server's dispatch (the validation ladder, routing, the handler).
    Dispatch {
        incoming: Incoming<'a>,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    },
    /// What the transport does with a message it serves itself (a notification, `initialize`).
    Local(&'a (dyn Fn() -> Reply + Send + Sync + 'a)),
}

/// The rest of the chain; [`Next::run`] passes the request on.
pub struct Next<'a> {
    rest: &'a [Arc<dyn Middleware>],
    server: &'a Server,
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
            Some((first, rest)) => first.handle(
                request,
                Next {
                    rest,
                    server: self.server,
                },
            ),
            None => match request.endpoint {
                Endpoint::Dispatch {
                    incoming,
                    notifier,
                    cancel,
                } => {
                    let server = self.server;
                    Box::pin(async move {
                        let id = incoming.id.clone();
                        match dispatch::run(server, &id, incoming, notifier, cancel).await {
                            Ok(Some(body)) => Reply(Kind::Encoded(body)),
                            Ok(None) => Reply::nothing(),
                            Err(error) => Reply::error(error),
                        }
                    })
                }
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
            Kind::Encoded(body) => message::Reply::Message {
                body,
                #[cfg(feature = "http-server")]
                status: 200,
            },
            Kind::Result(raw) => match encode_result(id, &raw) {
                Ok(body) => message::Reply::Message {
                    body,
                    #[cfg(feature = "http-server")]
                    status: 200,
                },
                Err(error) => error_reply(Some(id), &internal(&error.to_string())),
            },
            Kind::Error(error) => error_reply(Some(id), &error),
            Kind::Nothing => message::Reply::Nothing,
        }
    }
}

/// A message the transport serves itself (a notification, `initialize`), as it hands it to the
/// chain.
pub(crate) struct Message<'a> {
    pub(crate) id: Option<&'a RequestId>,
    pub(crate) method: &'a str,
    /// The params object as JSON text.
    pub(crate) params: Option<&'a str>,
    pub(crate) era: Era,
    /// The handshake-era session the message belongs to, when there is one.
    pub(crate) handshake: Option<&'a HandshakeSession>,
    /// The principal the transport authenticated.
    pub(crate) principal: Option<Principal>,
    #[cfg(feature = "http-server")]
    pub(crate) http: Option<Arc<http::request::Parts>>,
}

/// The `_meta` a middleware sees: the request's own, completed from the session in the
/// handshake era.
fn meta_of(params: Option<&str>, handshake: Option<&HandshakeSession>) -> Option<Box<RequestMeta>> {
    let own = probe_meta(params).ok().flatten();
    match handshake {
        Some(session) => Some(handshake_meta(session, own.map(|meta| *meta))),
        None => own,
    }
}

/// Whether any middleware is registered (the transports skip the chain otherwise).
pub(crate) fn has_middleware(server: &Server) -> bool {
    !server.inner.middleware.is_empty()
}

/// A request through the chain, then dispatch.
pub(crate) async fn dispatch_chained(
    server: &Server,
    mut incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> message::Reply {
    let id = incoming.id.clone();
    let meta = meta_of(incoming.params, incoming.handshake.as_deref());
    let version = match (&incoming.handshake, &meta) {
        (Some(session), _) => session.version.clone(),
        (None, Some(meta)) => meta
            .protocol_version
            .clone()
            .unwrap_or(ProtocolVersion::LATEST),
        (None, None) => ProtocolVersion::LATEST,
    };
    // The principal hook runs here, outside the handler's panic guard: a hook that panics
    // costs its request a -32603, as it does when it runs for the handler.
    let context = std::panic::catch_unwind(AssertUnwindSafe(|| {
        context(
            server,
            &incoming,
            meta.clone().unwrap_or_default(),
            version,
            notifier.clone(),
            cancel.clone(),
        )
    }));
    let Ok(context) = context else {
        tracing::error!(request = %id, "the principal hook panicked");
        return Reply::error(internal("Internal error")).encode(Some(&id));
    };
    // The hook ran: the handler's context takes its answer instead of running it again.
    let transport_principal =
        std::mem::replace(&mut incoming.principal, context.principal().cloned());
    incoming.principal_bound = true;
    let request = Request {
        id: Some(id.clone()),
        method: incoming.method,
        params: incoming.params,
        target: target_of(incoming.method, incoming.params),
        meta,
        context: Some(context.clone()),
        principal: transport_principal,
        era: if incoming.handshake.is_some() {
            Era::Handshake
        } else {
            Era::Modern
        },
        #[cfg(feature = "http-server")]
        http: incoming.http.clone(),
        endpoint: Endpoint::Dispatch {
            incoming,
            notifier,
            cancel,
        },
    };
    let reply = chain(server, request, Some(&id)).await;
    context.finish();
    reply.encode(Some(&id))
}

/// A message the transport serves itself, through the chain; `serve` is what the transport
/// does with it (and all it does without middleware). The reply is for the transport to
/// encode ([`Reply::encode`]) with the message's id.
pub(crate) async fn through_middleware(
    server: &Server,
    message: Message<'_>,
    serve: &(dyn Fn() -> Reply + Send + Sync),
) -> Reply {
    let request = Request {
        id: message.id.cloned(),
        method: message.method,
        params: message.params,
        target: target_of(message.method, message.params),
        meta: meta_of(message.params, message.handshake),
        context: None,
        principal: message.principal,
        era: message.era,
        #[cfg(feature = "http-server")]
        http: message.http,
        endpoint: Endpoint::Local(serve),
    };
    chain(server, request, message.id).await
}

/// Runs the chain; a middleware that panics is answered like a handler that panics.
async fn chain(server: &Server, request: Request<'_>, id: Option<&RequestId>) -> Reply {
    let next = Next {
        rest: &server.inner.middleware,
        server,
    };
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(reply) => reply,
        Err(_) => {
            tracing::error!(request = ?id, "middleware panicked");
            Reply::error(internal("Internal error"))
        }
    }
}
