//! Phase one of decoding: the JSON-RPC envelope.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::value::RawValue;

use super::{ErrorCode, ErrorObject, RequestId};

/// Why an envelope could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Not JSON at all (truncated, invalid UTF-8, trailing garbage): `-32700`.
    Parse,
    /// JSON, but not a valid JSON-RPC 2.0 message: `-32600`.
    InvalidRequest,
}

/// An envelope that could not be decoded. It carries the request id whenever one was readable,
/// so the error response can still be correlated by the peer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    kind: DecodeErrorKind,
    id: Option<RequestId>,
    message: String,
}

impl DecodeError {
    fn parse(message: String) -> Self {
        Self {
            kind: DecodeErrorKind::Parse,
            id: None,
            message,
        }
    }

    fn invalid(id: Option<RequestId>, message: impl Into<String>) -> Self {
        Self {
            kind: DecodeErrorKind::InvalidRequest,
            id,
            message: message.into(),
        }
    }

    /// Parse error or invalid request.
    pub fn kind(&self) -> DecodeErrorKind {
        self.kind
    }

    /// The id of the offending message, when it could be read.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// `-32700` or `-32600`.
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            DecodeErrorKind::Parse => ErrorCode::PARSE_ERROR,
            DecodeErrorKind::InvalidRequest => ErrorCode::INVALID_REQUEST,
        }
    }

    /// The error object to send back.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.code(), self.message.clone())
    }
}

/// A decoded message that borrows from the input buffer (params and results stay raw).
#[derive(Debug, Clone)]
pub enum MessageRef<'a> {
    /// A request (has an id and a method).
    Request(RequestRef<'a>),
    /// A notification (a method and no id).
    Notification(NotificationRef<'a>),
    /// A response (a result or an error for an id).
    Response(ResponseRef<'a>),
}

/// A request whose params are still raw JSON.
#[derive(Debug, Clone)]
pub struct RequestRef<'a> {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: Cow<'a, str>,
    /// The raw `params` object; `None` when absent or `null`.
    pub params: Option<&'a RawValue>,
}

/// A notification whose params are still raw JSON.
#[derive(Debug, Clone)]
pub struct NotificationRef<'a> {
    /// The method name.
    pub method: Cow<'a, str>,
    /// The raw `params` object; `None` when absent or `null`.
    pub params: Option<&'a RawValue>,
}

/// A response whose result is still raw JSON.
#[derive(Debug, Clone)]
pub struct ResponseRef<'a> {
    /// The id of the request answered; `None` only for errors about unreadable requests.
    pub id: Option<RequestId>,
    /// The raw result, or the error.
    pub payload: Result<&'a RawValue, ErrorObject>,
}

/// An owned message (params and results stay raw JSON).
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// An owned request whose params are still raw JSON.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The raw `params` object; `None` when absent or `null`.
    pub params: Option<Box<RawValue>>,
}

/// An owned notification whose params are still raw JSON.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The raw `params` object; `None` when absent or `null`.
    pub params: Option<Box<RawValue>>,
}

/// The payload of an owned response.
#[derive(Debug, Clone)]
pub enum ResponsePayload {
    /// The raw result.
    Result(Box<RawValue>),
    /// The error.
    Error(ErrorObject),
}

/// An owned response whose result is still raw JSON.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered; `None` only for errors about unreadable requests.
    pub id: Option<RequestId>,
    /// The result or the error.
    pub payload: ResponsePayload,
}

/// Decodes typed params from raw params; absent params read as `{}`.
fn params_as<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, serde_json::Error> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
}

impl RequestRef<'_> {
    /// Phase two: decodes the params as `T` (absent params read as `{}`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params)
    }

    /// An owned copy.
    pub fn to_owned_request(&self) -> Request {
        Request {
            id: self.id.clone(),
            method: self.method.clone().into_owned(),
            params: self.params.map(ToOwned::to_owned),
        }
    }
}

impl NotificationRef<'_> {
    /// Phase two: decodes the params as `T` (absent params read as `{}`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params)
    }
}

impl Request {
    /// Phase two: decodes the params as `T` (absent params read as `{}`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params.as_deref())
    }
}

impl Notification {
    /// Phase two: decodes the params as `T` (absent params read as `{}`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params.as_deref())
    }
}

impl<'a> MessageRef<'a> {
    /// Decodes the envelope of one message.
    ///
    /// # Errors
    /// A [`DecodeError`] of kind [`DecodeErrorKind::Parse`] when the text is not JSON, and of
    /// kind [`DecodeErrorKind::InvalidRequest`] when it is JSON but not a JSON-RPC 2.0 message
    /// (wrong or missing `"jsonrpc"`, no method, an id that is neither a string nor an integer,
    /// a batch array, …). The error keeps the id whenever it was readable.
    pub fn decode(text: &'a str) -> Result<Self, DecodeError> {
        // serde would happily read a struct from an array ("batch"), so anything that does not
        // start as an object is turned away before the envelope is read.
        let bytes = text.as_bytes();
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first != Some(b'{') {
            return Err(not_an_object(bytes, first));
        }
        match serde_json::from_str::<RawEnvelope<'a>>(text) {
            Ok(envelope) => envelope.classify(),
            Err(error) => Err(classify_failure(bytes, &error)),
        }
    }

    /// Like [`Self::decode`], for bytes (invalid UTF-8 is a parse error).
    pub fn decode_slice(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        // The whole text is checked, not only the parts serde reads: it skips unknown members
        // without looking at their bytes, and a message is JSON only if all of it is UTF-8.
        // Decoding from the checked `&str` then skips serde's own per-string checks.
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::decode(text),
            Err(error) => Err(DecodeError::parse(format!(
                "Parse error: invalid UTF-8 at byte {}",
                error.valid_up_to()
            ))),
        }
    }

    /// An owned copy.
    pub fn into_owned(self) -> Message {
        match self {
            Self::Request(r) => Message::Request(r.to_owned_request()),
            Self::Notification(n) => Message::Notification(Notification {
                method: n.method.into_owned(),
                params: n.params.map(ToOwned::to_owned),
            }),
            Self::Response(r) => Message::Response(Response {
                id: r.id,
                payload: match r.payload {
                    Ok(raw) => ResponsePayload::Result(raw.to_owned()),
                    Err(error) => ResponsePayload::Error(error),
                },
            }),
        }
    }
}

impl Message {
    /// Decodes one message into an owned value. See [`MessageRef::decode`].
    ///
    /// # Errors
    /// As [`MessageRef::decode`].
    pub fn decode(text: &str) -> Result<Self, DecodeError> {
        MessageRef::decode(text).map(MessageRef::into_owned)
    }

    /// Decodes one message from bytes into an owned value.
    ///
    /// # Errors
    /// As [`MessageRef::decode`]; invalid UTF-8 is a parse error.
    pub fn decode_slice(bytes: &[u8]) -> Result<Self, DecodeError> {
        MessageRef::decode_slice(bytes).map(MessageRef::into_owned)
    }
}

/// Every envelope member, raw. `null` is kept as a present raw value so that `"id": null` can be
/// told apart from an absent id.
#[derive(Deserialize, Default)]
pub(super) struct RawEnvelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(super) error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The id as read: absent, explicitly `null`, or a value.
enum IdField {
    Absent,
    Null,
    Id(RequestId),
}

impl<'a> RawEnvelope<'a> {
    pub(super) fn classify(self) -> Result<MessageRef<'a>, DecodeError> {
        // The id is read first so that every later error can carry it.
        let id = match self.id {
            None => IdField::Absent,
            Some(raw) if raw.get() == "null" => IdField::Null,
            Some(raw) => IdField::Id(parse_id(raw).map_err(|m| DecodeError::invalid(None, m))?),
        };
        let known_id = match &id {
            IdField::Id(id) => Some(id.clone()),
            _ => None,
        };
        let invalid = |message: &str| DecodeError::invalid(known_id.clone(), message);

        match self.jsonrpc {
            Some(raw) if is_two_point_zero(raw) => {}
            Some(_) => return Err(invalid("Invalid request: \"jsonrpc\" must be \"2.0\"")),
            None => return Err(invalid("Invalid request: missing \"jsonrpc\": \"2.0\"")),
        }

        if let Some(method) = self.method {
            let method = raw_str(method)
                .ok_or_else(|| invalid("Invalid request: \"method\" must be a string"))?;
            if self.result.is_some() || self.error.is_some() {
                return Err(invalid(
                    "Invalid request: a request cannot carry \"result\" or \"error\"",
                ));
            }
            let params = match self.params {
                None => None,
                Some(raw) if raw.get() == "null" => None,
                Some(raw) if raw.get().starts_with('{') => Some(raw),
                Some(_) => return Err(invalid("Invalid request: \"params\" must be an object")),
            };
            return match id {
                IdField::Absent => Ok(MessageRef::Notification(NotificationRef { method, params })),
                IdField::Null => Err(invalid("Invalid request: \"id\" must not be null")),
                IdField::Id(id) => Ok(MessageRef::Request(RequestRef { id, method, params })),
            };
        }

        match (self.result, self.error) {
            (Some(_), Some(_)) => Err(invalid(
                "Invalid response: it carries both \"result\" and \"error\"",
            )),
            (Some(result), None) => match id {
                IdField::Id(id) => Ok(MessageRef::Response(ResponseRef {
                    id: Some(id),
                    payload: Ok(result),
                })),
                _ => Err(invalid(
                    "Invalid response: a result needs the id of its request",
                )),
            },
            (None, Some(error)) => {
                let error = serde_json::from_str::<ErrorObject>(error.get())
                    .map_err(|e| invalid(&format!("Invalid response: malformed \"error\": {e}")))?;
                Ok(MessageRef::Response(ResponseRef {
                    id: known_id,
                    payload: Err(error),
                }))
            }
            (None, None) => Err(invalid(
                "Invalid request: not a request, notification or response (no \"method\")",
            )),
        }
    }
}

/// Sorts a serde failure into parse error or invalid request, recovering the id when the text
/// is JSON (e.g. a duplicate member).
fn classify_failure(bytes: &[u8], error: &serde_json::Error) -> DecodeError {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            DecodeError::parse(format!("Parse error: {error}"))
        }
        Category::Data => {
            let id = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
            DecodeError::invalid(id, format!("Invalid request: {error}"))
        }
    }
}

/// The error for input that does not start with `{`: a parse error unless it is valid JSON.
fn not_an_object(bytes: &[u8], first: Option<u8>) -> DecodeError {
    if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        return DecodeError::parse(format!("Parse error: {error}"));
    }
    if first == Some(b'[') {
        DecodeError::invalid(None, "Invalid request: batches are not supported")
    } else {
        DecodeError::invalid(None, "Invalid request: expected a JSON-RPC message object")
    }
}

fn is_two_point_zero(raw: &RawValue) -> bool {
    raw.get() == "\"2.0\"" || raw_str(raw).is_some_and(|s| s == "2.0")
}

/// A raw JSON string, borrowed when it has no escapes.
pub(super) fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    // A byte loop: `str::contains` sets up a searcher that costs more than these short strings.
    if text.len() >= 2 && text.starts_with('"') && text.bytes().all(|b| b != b'\\') {
        return Some(Cow::Borrowed(&text[1..text.len() - 1]));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

fn parse_id(raw: &RawValue) -> Result<RequestId, &'static str> {
    let text = raw.get();
    if text.starts_with('"') {
        return raw_str(raw)
            .map(|s| RequestId::String(s.into_owned()))
            .ok_or("Invalid request: malformed \"id\"");
    }
    if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return match serde_json::from_str::<i64>(text) {
            Ok(n) => Ok(RequestId::Number(n)),
            Err(_) if text.contains(['.', 'e', 'E']) => {
                Err("Invalid request: \"id\" must be a string or an integer")
            }
            Err(_) => Err("Invalid request: \"id\" is out of range"),
        };
    }
    Err("Invalid request: \"id\" must be a string or an integer")
}
