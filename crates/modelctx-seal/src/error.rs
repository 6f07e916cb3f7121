//! Error types: the single wire rejection, seal failures and construction errors.
//!
//! Verification failures are deliberately uniform on the wire: whatever went wrong, the peer
//! sees `-32602 "Invalid or expired requestState"` with `data: {"reason":"invalid_request_state"}`
//! (exactly what the Python SDK 2.3.0 sends), so a client cannot use the error to probe which
//! check failed. The precise [`Reason`] is kept for the server's own logs.

use std::borrow::Cow;
use std::fmt;

/// JSON-RPC error code of every `requestState` rejection (`-32602`, invalid params).
pub const WIRE_CODE: i32 = -32602;

/// The one message sent to the peer for every `requestState` rejection.
pub const WIRE_MESSAGE: &str = "Invalid or expired requestState";

/// Value of the `reason` member of the rejection's `data` object.
pub const WIRE_DATA_REASON: &str = "invalid_request_state";

/// JSON-RPC error code a server answers with when sealing fails (`-32603`, internal error).
pub const SEAL_FAILURE_CODE: i32 = -32603;

/// The message a server answers with when sealing fails; the cause stays in the server log.
pub const SEAL_FAILURE_MESSAGE: &str = "Internal error";

/// Why a `requestState` token was rejected. Log-only: never put it on the wire.
///
/// The [`Reason::as_str`] codes are the ones the Python SDK logs, so mixed fleets grep alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// `requestState` was present but not a JSON string (raised by the server, which sees JSON).
    NonString,
    /// Wrong prefix, non-canonical base64, too short, or claims that are not the v1 envelope.
    Malformed,
    /// The token names a key that is not in the verifier's ring.
    UnknownKey,
    /// The AEAD tag did not verify: the token was altered or minted under another key.
    Seal,
    /// A custom codec failed without a more precise reason, or panicked.
    Codec,
    /// `iat` lies more than the allowed clock skew (60 s) in the future, or is not a number.
    NotYetValid,
    /// `exp` has passed, or is not a number.
    Expired,
    /// The token was minted for another method, target or argument set.
    RequestBinding,
    /// The token was minted for another audience (another service sharing the keys).
    Audience,
    /// One of token and request is bound to a principal and the other is not.
    PrincipalDrift,
    /// The token is bound to a different principal than the one making the request.
    Principal,
    /// The server could not determine the principal (its binding callback failed).
    PrincipalBinding,
    /// A valid token of a single-use round that was already redeemed (raised by the server's
    /// replay guard, after every other check passed).
    Replayed,
    /// A valid token of a single-use round that expires no later than keys the server's replay
    /// guard had to forget to make room: whether it was redeemed can no longer be told, so it
    /// is refused as if it had expired.
    Forgotten,
}

impl Reason {
    /// Short log code, identical to the strings the Python SDK logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NonString => "non-string requestState",
            Self::Malformed => "malformed",
            Self::UnknownKey => "unknown key",
            Self::Seal => "seal",
            Self::Codec => "codec error",
            Self::NotYetValid => "minted in the future",
            Self::Expired => "expired",
            Self::RequestBinding => "request binding",
            Self::Audience => "audience",
            Self::PrincipalDrift => "principal drift",
            Self::Principal => "principal",
            Self::PrincipalBinding => "principal binding error",
            Self::Replayed => "replayed",
            Self::Forgotten => "replay guard forgot",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `requestState` token failed verification.
///
/// `Display` shows the internal reason (`requestState rejected: expired`) for tracing; the wire
/// error is the same for every reason: [`InvalidRequestState::CODE`],
/// [`InvalidRequestState::MESSAGE`] and [`InvalidRequestState::wire_data`].
///
/// ```
/// use modelctx_seal::{InvalidRequestState, Reason};
///
/// let err = InvalidRequestState::new(Reason::Expired);
/// assert_eq!(err.to_string(), "requestState rejected: expired");
/// assert_eq!(InvalidRequestState::CODE, -32602);
/// assert_eq!(InvalidRequestState::MESSAGE, "Invalid or expired requestState");
/// assert_eq!(
///     InvalidRequestState::wire_data().to_string(),
///     r#"{"reason":"invalid_request_state"}"#
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("requestState rejected: {reason}")]
pub struct InvalidRequestState {
    reason: Reason,
}

impl InvalidRequestState {
    /// JSON-RPC error code for every rejection (same as [`WIRE_CODE`]).
    pub const CODE: i32 = WIRE_CODE;
    /// Wire message for every rejection (same as [`WIRE_MESSAGE`]).
    pub const MESSAGE: &'static str = WIRE_MESSAGE;
    /// `data.reason` for every rejection (same as [`WIRE_DATA_REASON`]).
    pub const DATA_REASON: &'static str = WIRE_DATA_REASON;

    /// A rejection for `reason`. Custom codecs return these from [`crate::Codec::unseal`].
    pub const fn new(reason: Reason) -> Self {
        Self { reason }
    }

    /// The internal reason, for logs only.
    pub const fn reason(&self) -> Reason {
        self.reason
    }

    /// The `data` member of the wire error: `{"reason":"invalid_request_state"}`.
    pub fn wire_data() -> serde_json::Value {
        let mut data = serde_json::Map::with_capacity(1);
        data.insert("reason".to_owned(), WIRE_DATA_REASON.into());
        serde_json::Value::Object(data)
    }

    /// The complete JSON-RPC `error` object sent for this rejection — the same for every
    /// reason: `{"code":-32602,"message":"Invalid or expired requestState","data":{"reason":
    /// "invalid_request_state"}}`.
    pub fn wire_error(&self) -> serde_json::Value {
        let mut error = serde_json::Map::with_capacity(3);
        error.insert("code".to_owned(), WIRE_CODE.into());
        error.insert("message".to_owned(), WIRE_MESSAGE.into());
        error.insert("data".to_owned(), Self::wire_data());
        serde_json::Value::Object(error)
    }
}

impl From<Reason> for InvalidRequestState {
    fn from(reason: Reason) -> Self {
        Self::new(reason)
    }
}

/// Sealing a `requestState` failed. A server answers [`SEAL_FAILURE_CODE`] /
/// [`SEAL_FAILURE_MESSAGE`] and logs this error; the state is never sent unsealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// A custom codec reported a failure (the text is for logs only).
    #[error("request-state codec failed to seal: {0}")]
    Codec(Cow<'static, str>),
    /// A custom codec panicked while sealing.
    #[error("request-state codec panicked while sealing")]
    CodecPanicked,
    /// The AEAD refused to seal (should not happen with a valid key).
    #[error("AES-256-GCM sealing failed")]
    Crypto,
    /// The system random generator failed to provide a nonce or salt.
    #[error("system random generator failed")]
    Random,
    /// The trace context to seal is longer than [`crate::MAX_TRACE_CONTEXT_LEN`].
    #[error("trace context too long to seal")]
    TraceContextTooLong,
}

impl SealError {
    /// A codec failure with a log-only description; for custom [`crate::Codec`] impls.
    pub fn codec(description: impl fmt::Display) -> Self {
        Self::Codec(Cow::Owned(description.to_string()))
    }
}

/// Message of [`ConfigError::MissingAudience`], modelled on the Python SDK's.
const MISSING_AUDIENCE: &str = "request-state security is configured but this server has no \
name. Sealed requestState carries the server name as an audience claim, so state minted by \
another service that shares the same keys is rejected; unnamed servers would all stamp the same \
placeholder and the check would mean nothing. Name the server or set an audience on the \
RequestStateSecurity policy (with_audience)";

/// A `requestState` policy or keyring could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The key list was empty.
    #[error("request-state keyring requires at least one key")]
    NoKeys,
    /// A secret was shorter than 32 bytes.
    #[error(
        "request-state keys must be at least 32 bytes of secret randomness; keys[{index}] is \
         {len} bytes. Generate one with: openssl rand -hex 32"
    )]
    KeyTooShort {
        /// Position of the offending key in the list.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// A secret derived the same key as an earlier one in the list.
    #[error("request-state keys[{index}] duplicates an earlier ring key")]
    DuplicateKey {
        /// Position of the duplicate in the list.
        index: usize,
    },
    /// The TTL was zero.
    #[error("request-state ttl must be a positive duration")]
    ZeroTtl,
    /// A configured TTL (e.g. `MCP_REQUEST_STATE_TTL`) that is not a positive number of seconds
    /// a [`std::time::Duration`] can hold (so not `0`, negative, `NaN`, `inf`, `1e300` or a
    /// value that rounds to zero).
    #[error("request-state ttl {0:?} is not a positive number of seconds (e.g. 600)")]
    InvalidTtl(String),
    /// An environment variable (e.g. `MCP_REQUEST_STATE_KEYS`) is set but is not UTF-8; it is
    /// refused rather than ignored, which would silently fall back to a per-process key.
    #[error("{0} is set but is not valid UTF-8")]
    NotUnicode(&'static str),
    /// An explicitly configured policy on a server with neither a name nor an audience.
    #[error("{}", MISSING_AUDIENCE)]
    MissingAudience,
    /// Key derivation or key setup failed inside the crypto library.
    #[error("request-state key setup failed")]
    Crypto,
}
