//! `resultType` and the second phase of decoding a response: results are discriminated by
//! `resultType`, never by which struct happens to fit.

use std::borrow::Cow;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::{InputRequiredResult, Meta, Method};

open_str! {
    /// The kind of a result. Absent means complete (older servers).
    pub struct ResultType {
        /// A final result of the method's own type.
        const COMPLETE = "complete";
        /// An [`InputRequiredResult`]: the client must fulfil `inputRequests` and retry.
        const INPUT_REQUIRED = "input_required";
    }
}

impl ResultType {
    /// `"task"`, defined by the `io.modelcontextprotocol/tasks` extension; accepted only when
    /// that extension was negotiated.
    pub const TASK: Self = Self(Cow::Borrowed("task"));
}

open_str! {
    /// Who may cache a result: anyone (`public`) or only this authorization context (`private`).
    pub struct CacheScope {
        /// Any client or intermediary may cache it.
        const PUBLIC = "public";
        /// Only caches tied to the requesting authorization context.
        const PRIVATE = "private";
    }
}

/// The set of `resultType` values a client accepts: the core values plus those of negotiated
/// extensions. Anything else is an error on 2026-07-28.
#[derive(Debug, Clone, Default)]
pub struct ResultTypes {
    extensions: Vec<ResultType>,
}

impl ResultTypes {
    /// Only `complete` and `input_required`.
    pub fn core() -> Self {
        Self::default()
    }

    /// Also accepts `value` (e.g. [`ResultType::TASK`] once the tasks extension is negotiated).
    #[must_use]
    pub fn with(mut self, value: ResultType) -> Self {
        if !self.extensions.contains(&value) {
            self.extensions.push(value);
        }
        self
    }

    /// Whether `value` is an accepted extension value.
    pub fn accepts_extension(&self, value: &str) -> bool {
        self.extensions.iter().any(|v| v == value)
    }
}

/// The outcome of a request whose result is discriminated by `resultType`.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The method's own result.
    Complete(T),
    /// More input is needed; retry with `inputResponses` (only `tools/call`, `prompts/get` and
    /// `resources/read`).
    InputRequired(InputRequiredResult),
    /// A value of a negotiated extension (e.g. a task), still raw.
    Extension(ExtensionResult),
}

impl<T> Outcome<T> {
    /// The complete result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Self::Complete(t) => Some(t),
            _ => None,
        }
    }

    /// The input-required result, if this is one.
    pub fn input_required(self) -> Option<InputRequiredResult> {
        match self {
            Self::InputRequired(i) => Some(i),
            _ => None,
        }
    }
}

impl<T> From<InputRequiredResult> for Outcome<T> {
    fn from(value: InputRequiredResult) -> Self {
        Self::InputRequired(value)
    }
}

/// A result of an extension-defined `resultType`, kept raw for the extension to decode.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExtensionResult {
    /// The `resultType`.
    pub result_type: ResultType,
    /// The whole result object.
    pub raw: Box<RawValue>,
}

impl ExtensionResult {
    /// A raw result of the extension value `result_type`.
    pub fn new(result_type: ResultType, raw: Box<RawValue>) -> Self {
        Self { result_type, raw }
    }
}

impl PartialEq for ExtensionResult {
    fn eq(&self, other: &Self) -> bool {
        self.result_type == other.result_type && self.raw.get() == other.raw.get()
    }
}

impl<T: Serialize> Serialize for Outcome<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Complete(t) => t.serialize(serializer),
            Self::InputRequired(i) => i.serialize(serializer),
            Self::Extension(e) => e.raw.serialize(serializer),
        }
    }
}

/// Why a result could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultDecodeError {
    /// `resultType` is neither a core value nor one of a negotiated extension.
    #[error("unrecognized resultType {0:?}")]
    UnknownResultType(String),
    /// An `InputRequiredResult` arrived for a method that cannot return one.
    #[error("{0} cannot answer with an InputRequiredResult")]
    InputRequiredNotAllowed(&'static str),
    /// An `InputRequiredResult` with neither `inputRequests` nor `requestState`.
    #[error("InputRequiredResult carries neither inputRequests nor requestState")]
    EmptyInputRequired,
    /// The result does not match its type.
    #[error("malformed {method} result: {source}")]
    Malformed {
        /// The method whose result it is.
        method: &'static str,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
}

#[derive(Deserialize)]
struct ResultTypeProbe<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<crate::macros::CowStr<'a>>,
}

/// Phase two of decoding a response: reads `resultType` first, then decodes the matching type.
///
/// An absent `resultType` (or `"complete"`) yields [`Outcome::Complete`]; `"input_required"`
/// yields [`Outcome::InputRequired`] for the three methods that may return it and an error for
/// the rest; an extension value accepted by `accepted` yields [`Outcome::Extension`]; anything
/// else is [`ResultDecodeError::UnknownResultType`].
///
/// # Errors
/// See [`ResultDecodeError`].
pub fn decode_result<M: Method>(
    raw: &RawValue,
    accepted: &ResultTypes,
) -> Result<Outcome<M::Result>, ResultDecodeError> {
    let malformed = |source| ResultDecodeError::Malformed {
        method: M::NAME,
        source,
    };
    let probe: ResultTypeProbe<'_> = serde_json::from_str(raw.get()).map_err(malformed)?;
    match probe.result_type.as_ref().map(|r| &*r.0) {
        None | Some("complete") => serde_json::from_str(raw.get())
            .map(Outcome::Complete)
            .map_err(malformed),
        Some("input_required") => {
            if !M::INPUT_REQUIRED {
                return Err(ResultDecodeError::InputRequiredNotAllowed(M::NAME));
            }
            let result: InputRequiredResult = serde_json::from_str(raw.get()).map_err(malformed)?;
            if result.input_requests.is_none() && result.request_state.is_none() {
                return Err(ResultDecodeError::EmptyInputRequired);
            }
            Ok(Outcome::InputRequired(result))
        }
        Some(other) if accepted.accepts_extension(other) => {
            Ok(Outcome::Extension(ExtensionResult {
                result_type: ResultType::new(other.to_owned()),
                raw: raw.to_owned(),
            }))
        }
        Some(other) => Err(ResultDecodeError::UnknownResultType(other.to_owned())),
    }
}

/// Common access to the members every result has: `resultType` and `_meta`.
pub trait WireResult {
    /// `resultType`, when set.
    fn result_type(&self) -> Option<&ResultType>;
    /// Sets or clears `resultType` (servers clear it for handshake-era peers).
    fn set_result_type(&mut self, value: Option<ResultType>);
    /// `_meta`.
    fn meta(&self) -> Option<&Meta>;
    /// `_meta`, mutable.
    fn meta_mut(&mut self) -> &mut Option<Meta>;
}

macro_rules! impl_wire_result {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::WireResult for $ty {
            fn result_type(&self) -> Option<&$crate::ResultType> {
                self.result_type.as_ref()
            }
            fn set_result_type(&mut self, value: Option<$crate::ResultType>) {
                self.result_type = value;
            }
            fn meta(&self) -> Option<&$crate::Meta> {
                self.meta.as_ref()
            }
            fn meta_mut(&mut self) -> &mut Option<$crate::Meta> {
                &mut self.meta
            }
        }
    )*};
}
pub(crate) use impl_wire_result;

impl<T: WireResult> Outcome<T> {
    /// The common members of a complete or input-required result; `None` for a raw extension
    /// result, whose members the extension owns.
    pub fn as_wire_mut(&mut self) -> Option<&mut dyn WireResult> {
        match self {
            Self::Complete(t) => Some(t),
            Self::InputRequired(i) => Some(i),
            Self::Extension(_) => None,
        }
    }
}
