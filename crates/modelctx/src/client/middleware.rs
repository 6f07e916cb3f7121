//! Client middleware: code around every message the client sends — each request as it goes on
//! the wire (every round of the input-required loop, negotiation's `server/discover` or
//! `initialize`, `subscriptions/listen`, task polls), each notification, and each answer to a
//! request of a handshake-era server (the back-channel: elicitation, sampling, roots, ping).
//!
//! The same shape as the server's (`modelctx::server::middleware`): a [`Middleware`] gets the
//! [`Request`] and the rest of the chain, and answers on its own (a [`Reply`] from a cache, or an
//! error such as [`ClientError::Refused`]) or through [`Next::run`]. Middlewares run in the order
//! they were registered ([`ClientBuilder::middleware`](super::ClientBuilder::middleware)); the
//! first registered is the outermost.
//!
//! A multi-round call is several requests: each round passes the chain on its own, with the
//! params of that round (`inputResponses`, `requestState`), and its reply says whether the
//! server asked for more ([`Reply::is_input_required`]). A request the transport re-issues
//! (a broken HTTP stream) passes once: the chain sees the request, not its attempts.
//!
//! With no middleware registered nothing of this runs.

use std::borrow::Cow;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_types::jsonrpc::{encode_error, encode_result};
use modelctx_types::{Era, ErrorObject, RequestId, ResultType};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::ClientError;

/// Code around every message the client sends (see the [module docs](self)).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// use modelctx::client::ClientError;
/// use modelctx::client::middleware::{Middleware, Next, Reply, Request};
/// use futures::future::BoxFuture;
///
/// /// Counts the rounds of multi-round calls, and refuses to send `tools/call` of `rm`.
/// #[derive(Default)]
/// struct Guard {
///     rounds: AtomicUsize,
/// }
///
/// impl Middleware for Guard {
///     fn handle<'a>(
///         &'a self,
///         request: Request<'a>,
///         next: Next<'a>,
///     ) -> BoxFuture<'a, Result<Reply, ClientError>> {
///         Box::pin(async move {
///             if request.method() == "tools/call" && request.target().as_deref() == Some("rm") {
///                 return Err(ClientError::Refused("rm is not allowed here".into()));
///             }
///             let reply = next.run(request).await?;
///             if reply.is_input_required() {
///                 self.rounds.fetch_add(1, Ordering::Relaxed);
///             }
///             Ok(reply)
///         })
///     }
/// }
///
/// let builder = modelctx::client::Client::builder().middleware(Guard::default());
/// # let _ = builder;
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Sends `request` through `next`, or answers it on its own.
    fn handle<'a>(
        &'a self,
        request: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<Reply, ClientError>>;
}

/// What kind of message is on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A request to the server (its reply is the server's result or error).
    Request,
    /// A notification to the server (its reply is [`Reply::is_sent`]).
    Notification,
    /// The answer to a request the server sent (the handshake era's back-channel); the request
    /// is the server's, the reply the response that goes back ([`Reply::answer`]).
    Answer,
}

/// One message on its way out. Read-only: a middleware decides whether and how it is sent,
/// not what it says.
#[derive(Debug)]
pub struct Request<'a> {
    kind: Kind,
    method: &'a str,
    id: Option<&'a RequestId>,
    params: Option<&'a str>,
    era: Option<Era>,
}

impl<'a> Request<'a> {
    pub(crate) fn new(
        kind: Kind,
        method: &'a str,
        id: Option<&'a RequestId>,
        params: Option<&'a str>,
        era: Option<Era>,
    ) -> Self {
        Self {
            kind,
            method,
            id,
            params,
            era,
        }
    }

    /// What kind of message this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The method (of the server's request, for an [`Kind::Answer`]).
    pub fn method(&self) -> &str {
        self.method
    }

    /// The id of the server's request, for an [`Kind::Answer`]. A request's own id is drawn by
    /// the transport as it sends (a re-issued request gets a new one), so it is not known here.
    pub fn id(&self) -> Option<&RequestId> {
        self.id
    }

    /// The params as JSON text: of a request or notification as it will be sent (the
    /// 2026-07-28 `_meta` envelope included), of the server's request for an answer.
    pub fn params(&self) -> Option<&str> {
        self.params
    }

    /// The era of the connection (`None` while negotiation has not settled it).
    pub fn era(&self) -> Option<Era> {
        self.era
    }

    /// The tool or prompt name (`tools/call`, `prompts/get`) or resource URI (`resources/read`,
    /// `resources/subscribe`, `resources/unsubscribe`) the request is about.
    pub fn target(&self) -> Option<Cow<'_, str>> {
        #[derive(Deserialize)]
        struct Target<'a> {
            #[serde(borrow)]
            name: Option<Cow<'a, str>>,
            #[serde(borrow)]
            uri: Option<Cow<'a, str>>,
        }
        if self.kind != Kind::Request {
            return None;
        }
        let target = serde_json::from_str::<Target<'_>>(self.params?).ok()?;
        match self.method {
            "tools/call" | "prompts/get" => target.name,
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => target.uri,
            _ => None,
        }
    }
}

/// What sends the message at the end of the chain.
pub(crate) type Endpoint<'a> =
    Box<dyn FnOnce() -> BoxFuture<'a, Result<Reply, ClientError>> + Send + 'a>;

/// The registered middlewares, outermost first.
#[derive(Clone, Default)]
pub(crate) struct Chain(Arc<[Arc<dyn Middleware>]>);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Chain").field(&self.0.len()).finish()
    }
}

impl Chain {
    /// The chain with `middleware` added innermost.
    pub(crate) fn with(&self, middleware: Arc<dyn Middleware>) -> Self {
        Self(self.0.iter().cloned().chain([middleware]).collect())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Runs `request` through the chain, `send` at its end.
    pub(crate) fn run<'a>(
        &'a self,
        request: Request<'a>,
        send: Endpoint<'a>,
    ) -> BoxFuture<'a, Result<Reply, ClientError>> {
        Next {
            rest: &self.0,
            send,
        }
        .run(request)
    }
}

/// The rest of the chain; [`Next::run`] passes the message on.
pub struct Next<'a> {
    rest: &'a [Arc<dyn Middleware>],
    send: Endpoint<'a>,
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &self.rest.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Next<'a> {
    /// Runs the rest of the chain, then sends the message.
    pub fn run(self, request: Request<'a>) -> BoxFuture<'a, Result<Reply, ClientError>> {
        match self.rest.split_first() {
            Some((first, rest)) => first.handle(
                request,
                Next {
                    rest,
                    send: self.send,
                },
            ),
            None => (self.send)(),
        }
    }
}

/// What came back for a message.
#[derive(Debug)]
pub struct Reply(Answer);

#[derive(Debug)]
enum Answer {
    /// The server's result or JSON-RPC error.
    Response(Result<Box<RawValue>, ErrorObject>),
    /// The encoded response to a server's request.
    Encoded(Vec<u8>),
    /// A notification went out.
    Sent,
}

impl Reply {
    /// A result for a request (served from a cache, say): the raw `result` object.
    pub fn result(result: Box<RawValue>) -> Self {
        Self(Answer::Response(Ok(result)))
    }

    /// A JSON-RPC error for a request. It reaches the caller as [`ClientError::Rpc`], as if the
    /// server had sent it: refuse locally with an `Err` (e.g. [`ClientError::Refused`]) instead.
    pub fn error(error: ErrorObject) -> Self {
        Self(Answer::Response(Err(error)))
    }

    pub(crate) fn response(response: Result<Box<RawValue>, ErrorObject>) -> Self {
        Self(Answer::Response(response))
    }

    pub(crate) fn encoded(answer: Vec<u8>) -> Self {
        Self(Answer::Encoded(answer))
    }

    pub(crate) fn sent() -> Self {
        Self(Answer::Sent)
    }

    /// The raw result of a request.
    pub fn as_result(&self) -> Option<&RawValue> {
        match &self.0 {
            Answer::Response(Ok(result)) => Some(result),
            _ => None,
        }
    }

    /// The server's JSON-RPC error for a request.
    pub fn as_error(&self) -> Option<&ErrorObject> {
        match &self.0 {
            Answer::Response(Err(error)) => Some(error),
            _ => None,
        }
    }

    /// Whether the result asks for input (`resultType: "input_required"`): the call goes on
    /// with another round.
    pub fn is_input_required(&self) -> bool {
        #[derive(Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "resultType", borrow)]
            result_type: Option<Cow<'a, str>>,
        }
        self.as_result()
            .and_then(|raw| serde_json::from_str::<Kind<'_>>(raw.get()).ok())
            .and_then(|kind| kind.result_type)
            .is_some_and(|kind| kind == ResultType::INPUT_REQUIRED.as_str())
    }

    /// The encoded JSON-RPC response to a server's request ([`Kind::Answer`]).
    pub fn answer(&self) -> Option<&[u8]> {
        match &self.0 {
            Answer::Encoded(answer) => Some(answer),
            _ => None,
        }
    }

    /// Whether a notification went out.
    pub fn is_sent(&self) -> bool {
        matches!(self.0, Answer::Sent)
    }

    /// The response to the server's request `id` ([`Kind::Answer`]); a reply of another kind
    /// becomes an error response.
    pub(crate) fn into_answer(self, id: &RequestId) -> Vec<u8> {
        match self.0 {
            Answer::Encoded(answer) => answer,
            Answer::Response(Ok(result)) => encode_result(id, &result).unwrap_or_else(|error| {
                encode_error(Some(id), &ErrorObject::internal(error.to_string()))
            }),
            Answer::Response(Err(error)) => encode_error(Some(id), &error),
            Answer::Sent => encode_error(
                Some(id),
                &ErrorObject::internal("a middleware answered a request with no response"),
            ),
        }
    }

    /// The server's reply to a request; a reply of another kind is a middleware's mistake.
    pub(crate) fn into_response(self) -> Result<Result<Box<RawValue>, ErrorObject>, ClientError> {
        match self.0 {
            Answer::Response(response) => Ok(response),
            Answer::Encoded(_) | Answer::Sent => Err(ClientError::Refused(
                "a middleware answered a request with something else than a response".into(),
            )),
        }
    }
}
