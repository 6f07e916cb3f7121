//! JSON-RPC 2.0: ids, error objects, and the two-phase envelope decoder and encoders.
//!
//! Decoding happens in two phases. [`MessageRef::decode`] reads only the envelope (`jsonrpc`,
//! `id`, `method`, and the *raw* `params` / `result` / `error` text) and classifies the message.
//! The typed params or result are decoded afterwards, once the caller knows which method they
//! belong to (see [`crate::Method`] and [`crate::decode_result`]). Nothing is ever decoded by
//! trying variants in turn, so a message is never silently read as the wrong type.
//!
//! A receiver that knows its methods can fold the two phases into one: [`MessageRef::decode_with`]
//! decodes a request's params with the receiver's [`ParamsSeed`] while it reads the envelope, when
//! `method` comes before `params`, and falls back to the two phases otherwise.

mod decode;
mod encode;
mod error;
mod id;
mod single_pass;

pub use decode::{
    DecodeError, DecodeErrorKind, Message, MessageRef, Notification, NotificationRef, Request,
    RequestRef, Response, ResponsePayload, ResponseRef,
};
pub use encode::{encode_error, encode_notification, encode_request, encode_result};
pub use error::{ErrorCode, ErrorObject};
pub use id::RequestId;
pub use single_pass::{Decoded, MethodSeed, ParamsSeed, TypedRequest};

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";
