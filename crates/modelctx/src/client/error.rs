//! The client's error type.
//!
//! Errors fall in two families that must never be confused:
//!
//! * **peer errors** — the server answered with a JSON-RPC error ([`ClientError::Rpc`]), or an
//!   HTTP error status without a JSON-RPC body ([`ClientError::HttpStatus`]);
//! * **local errors** — everything this client decided on its own: a missing or refusing
//!   callback, too many input rounds, a timeout, a broken transport, a result it could not
//!   accept. None of them carries an [`ErrorObject`] that could pass for the server's.
//!
//! [`ClientError::rpc_error`] returns the server's error object only for the first family.

use std::time::Duration;

use modelctx_types::{ErrorCode, ErrorObject, InputRequiredResult, ResultDecodeError};

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered the request with a JSON-RPC error (on any transport, including an
    /// HTTP 4xx whose body is a JSON-RPC error).
    #[error("the server answered with error {0}")]
    Rpc(ErrorObject),

    /// The server answered an HTTP request with an error status and no JSON-RPC error body.
    #[error("the server answered with HTTP status {status}")]
    HttpStatus {
        /// The HTTP status code.
        status: u16,
        /// The beginning of the response body (at most 1 KiB), for diagnostics.
        body: String,
    },

    /// The server asked for input (`inputRequests`) of a kind no callback was configured for.
    /// The call was abandoned locally; nothing was sent back to the server.
    #[error(
        "the server asked for {method} (input request {key:?}) but this client has no callback \
         for it; configure one on the ClientBuilder"
    )]
    MissingCallback {
        /// The method of the input request (`elicitation/create`, `sampling/createMessage`,
        /// `roots/list`).
        method: String,
        /// The server's key for the input request.
        key: String,
    },

    /// A callback answered an input request with an error. On 2026-07-28 there is no way to
    /// send such an error to the server, so the call was abandoned locally.
    #[error("the {method} callback refused input request {key:?}: {error}")]
    CallbackRefused {
        /// The method of the input request.
        method: String,
        /// The server's key for the input request.
        key: String,
        /// What the callback returned. It was produced by this client, not by the server.
        error: ErrorObject,
    },

    /// The server kept answering `InputRequiredResult` for more rounds than
    /// `input_required_max_rounds` allows.
    #[error(
        "the server returned InputRequiredResult for more than {max_rounds} rounds; raise \
         input_required_max_rounds on the ClientBuilder, or drive the loop manually with \
         Session::call_tool(…, allow_input_required = true)"
    )]
    RoundsExceeded {
        /// The configured limit.
        max_rounds: u32,
    },

    /// The server asked more questions in one round than `max_input_requests_per_round`
    /// allows. The call was abandoned before any callback ran; nothing was sent back.
    #[error(
        "the server asked {count} questions in one round; at most {max} are answered (raise \
         max_input_requests_per_round on the ClientBuilder)"
    )]
    TooManyInputRequests {
        /// How many input requests the round carried.
        count: usize,
        /// The configured limit.
        max: usize,
    },

    /// The server asked for more sampling (`sampling/createMessage`) in one call than
    /// `max_sampling_per_call` allows — in its input-required rounds, its task's input
    /// requests, or (handshake era) back-channel requests while the call ran. The call was
    /// abandoned before the excess request reached the sampling callback.
    #[error(
        "the server asked for more than {max} sampling requests in one call (raise \
         max_sampling_per_call on the ClientBuilder)"
    )]
    SamplingBudgetExceeded {
        /// The configured limit.
        max: u32,
    },

    /// A session-level call that did not allow input-required results received one. The
    /// result is returned so the caller can still act on it.
    #[error(
        "the server returned InputRequiredResult; pass allow_input_required = true to handle it"
    )]
    InputRequired(Box<InputRequiredResult>),

    /// An operation did not finish within its configured time bound.
    #[error("{operation} did not finish within {after:?}")]
    Timeout {
        /// What timed out (`"request"`, `"input-required loop"`, `"server/discover probe"`).
        operation: &'static str,
        /// The bound.
        after: Duration,
    },

    /// The transport failed: I/O error, closed connection, broken stream.
    #[error("transport failure: {0}")]
    Transport(#[from] TransportError),

    /// A result could not be accepted: malformed, an unrecognized `resultType`, an
    /// `InputRequiredResult` where none is allowed, or one that carries neither
    /// `inputRequests` nor `requestState`.
    #[error("unacceptable result: {0}")]
    InvalidResult(#[from] ResultDecodeError),

    /// A message from the server broke the protocol in some other way (not JSON-RPC, a response
    /// for another id, a 202 for a request, an unexpected content type, …).
    #[error("protocol violation: {0}")]
    Protocol(String),

    /// No protocol version could be agreed on.
    #[error("version negotiation failed: {0}")]
    Negotiation(String),

    /// Signing in to an OAuth-protected server failed, or the server kept refusing the
    /// tokens obtained (see [`crate::client::auth`]). A local error: the details come from this
    /// client's checks or from the authorization server, not from the MCP server.
    #[cfg(feature = "auth-client")]
    #[error("authorization failed: {0}")]
    Auth(#[from] crate::client::auth::error::AuthError),

    /// The server answered `tools/call` with a task (`resultType: "task"`, the tasks
    /// extension) where the caller follows no tasks (a session-level call, or
    /// [`Client::start_tool`](super::Client::start_tool)): follow it with
    /// [`Client::wait_task`](super::Client::wait_task).
    #[error("the server runs the call as task {}", .0.task_id)]
    TaskCreated(Box<modelctx_types::CreateTaskResult>),

    /// The server answered `tools/call` with a `resultType` an extension of this client claims
    /// ([`ResultClaim`](super::extension::ResultClaim)) where the caller resolves no claims (a
    /// session-level call, [`Client::start_tool`](super::Client::start_tool)). The raw result is
    /// kept: it may name server state that needs finishing or cleaning up.
    #[error("the server answered with the claimed resultType {:?}", .0.result_type.as_str())]
    ClaimedResult(Box<modelctx_types::ExtensionResult>),

    /// The task ended `cancelled` (by `tasks/cancel`, from this client or another).
    #[error("task {task_id} was cancelled")]
    TaskCancelled {
        /// The task.
        task_id: String,
    },

    /// A successful `tools/call` result does not match the `outputSchema` the tool was listed
    /// with (no `structuredContent`, or content that does not conform). Checked for tools this
    /// client has seen in `tools/list`; the result is kept here for callers that want it anyway.
    #[error("tool {tool:?} returned a result that does not match its outputSchema: {reason}")]
    InvalidStructuredContent {
        /// The tool.
        tool: String,
        /// The first violation.
        reason: String,
        /// The result as received.
        result: Box<modelctx_types::CallToolResult>,
    },

    /// A client middleware refused to send the request (see
    /// [`client::middleware`](super::middleware)); nothing went to the server.
    #[error("refused by a client middleware: {0}")]
    Refused(String),

    /// The caller passed something this client cannot send (e.g. tool arguments that are not an
    /// object, a pinned version that is not a 2026 revision).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl ClientError {
    /// The server's JSON-RPC error, when this is one ([`ClientError::Rpc`]). `None` for every
    /// local error, including a refusing callback.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            Self::Rpc(error) => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC code of a server error, when this is one.
    pub fn rpc_code(&self) -> Option<ErrorCode> {
        self.rpc_error().map(|e| e.code)
    }

    /// Whether the server (rather than this client) produced the error.
    pub fn is_peer_error(&self) -> bool {
        matches!(self, Self::Rpc(_) | Self::HttpStatus { .. })
    }
}

/// A failure of the byte transport underneath the protocol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Reading from or writing to the peer failed, or the server process could not be spawned.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),

    /// The HTTP client failed (connection refused, TLS, body read, …).
    #[cfg(feature = "http-client")]
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),

    /// The connection is closed (the server exited, the pipe closed, or the client was closed).
    #[error("the connection is closed")]
    Closed,

    /// A response stream ended before it carried the response, and re-issuing the request did
    /// not help either.
    #[error("the response stream broke {attempts} time(s) before the response arrived")]
    StreamBroken {
        /// How many streams broke.
        attempts: u32,
    },
}

impl From<std::io::Error> for ClientError {
    fn from(value: std::io::Error) -> Self {
        Self::Transport(TransportError::Io(value))
    }
}

#[cfg(feature = "http-client")]
impl From<reqwest::Error> for ClientError {
    fn from(value: reqwest::Error) -> Self {
        Self::Transport(TransportError::Http(value))
    }
}
