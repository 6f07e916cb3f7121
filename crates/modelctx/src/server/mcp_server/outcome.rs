//! What a question comes to: the client's outcome ([`Elicitation`]: accepted, declined or
//! cancelled), how it becomes a parameter ([`FromElicitation`]), and why a resolution can stop
//! before the body ([`Interrupt`]).
//!
//! A leaf: the questions (`questions.rs`) produce these, the resolution (`resolve.rs`) collects
//! them, and neither names the other for it.

use modelctx_types::{ElicitAction, ErrorObject};

/// The outcome of a question: accepted with a value, declined or cancelled. A resolved parameter
/// of this type receives the whole outcome; a parameter of type `T` receives the accepted value
/// and turns a decline or cancel into a failed call. Sampling, roots and plain values are always
/// accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// The user answered.
    Accept(T),
    /// The user declined.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

impl<T> Elicitation<T> {
    /// The value, when accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accept(value) => Some(value),
            _ => None,
        }
    }

    /// The action taken.
    pub fn action(&self) -> ElicitAction {
        match self {
            Self::Accept(_) => ElicitAction::Accept,
            Self::Decline => ElicitAction::Decline,
            Self::Cancel => ElicitAction::Cancel,
        }
    }
}

/// Turns a resolver's outcome into the declared parameter type: `T` (the accepted value) or
/// [`Elicitation<T>`] (the whole outcome).
pub trait FromElicitation<T>: Sized {
    /// Converts; `parameter` names the parameter in the error.
    ///
    /// # Errors
    /// A decline or cancel where only a value fits.
    fn from_elicitation(outcome: Elicitation<T>, parameter: &str) -> Result<Self, Interrupt>;
}

impl<T> FromElicitation<T> for T {
    fn from_elicitation(outcome: Elicitation<T>, parameter: &str) -> Result<Self, Interrupt> {
        match outcome {
            Elicitation::Accept(value) => Ok(value),
            // Said for the person who answered: which value is missing and why, without
            // the resolver machinery (the Python SDK's "Resolver for parameter … could not
            // resolve: elicitation was decline" read like a crash).
            other => Err(Interrupt::Failed(format!(
                "the question for '{parameter}' was {}, so nothing was done",
                match other.action() {
                    ElicitAction::Decline => "declined",
                    _ => "cancelled",
                }
            ))),
        }
    }
}

impl<T> FromElicitation<T> for Elicitation<T> {
    fn from_elicitation(outcome: Elicitation<T>, _parameter: &str) -> Result<Self, Interrupt> {
        Ok(outcome)
    }
}

/// Why a resolution stopped before the body.
#[derive(Debug, Clone)]
pub enum Interrupt {
    /// A question waits for the client (collected into the `InputRequiredResult`).
    Pending,
    /// The call fails with this message: an `isError` tool result, or a JSON-RPC error for
    /// prompts and resources.
    Failed(String),
    /// The arguments do not fit the declared parameters: an `isError` tool result (the model
    /// can correct itself), `-32602` for prompts and resources.
    InvalidArguments(String),
    /// The request fails with this JSON-RPC error (e.g. `-32021`).
    Protocol(ErrorObject),
    /// The call fails without details (an authoring bug, described in the server log).
    Crashed,
}

impl From<ErrorObject> for Interrupt {
    fn from(error: ErrorObject) -> Self {
        Self::Protocol(error)
    }
}
