//! [`FlowError`]: why an operation on a flow failed — in a store, in the runner, or in the
//! client under it. Below the record and the stores, which return it.

use super::status::FlowStatus;
use crate::client::error::ClientError;
use crate::store::StoreError;

/// Why a flow operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// No flow has this id (never saved, or expired).
    #[error("no flow {0}")]
    NotFound(String),
    /// A flow with this id exists already.
    #[error("flow {0} exists already")]
    Exists(String),
    /// The flow is not in a state that allows the operation (e.g. answering a flow that is
    /// already answered).
    #[error("flow {id} is {status}, not {expected}")]
    WrongStatus {
        /// The flow.
        id: String,
        /// Where it is.
        status: FlowStatus,
        /// Where it had to be.
        expected: FlowStatus,
    },
    /// The answers do not match the questions of the current round.
    #[error("answers for flow {id} do not match its questions: {reason}")]
    InvalidAnswers {
        /// The flow.
        id: String,
        /// Which keys are missing or unexpected.
        reason: String,
    },
    /// This worker's claim ended (its lease ran out and another worker claimed the flow, or
    /// the flow was removed) before it could record the outcome; the other worker's outcome
    /// stands.
    #[error("the claim on flow {0} was lost")]
    ClaimLost(String),
    /// The client failed outside of a flow's resumption (e.g. the first round of
    /// [`FlowRunner::start`](super::FlowRunner::start)).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A record or params did not (de)serialize.
    #[error("flow record: {0}")]
    Codec(#[from] serde_json::Error),
    /// The storage backend failed.
    #[error("flow store: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The system has no randomness to draw a flow id or a worker id from. There is no
    /// fallback: a flow id made of the clock and a counter could be guessed, and the flow's
    /// answers recorded by whoever guessed it.
    #[error("no system randomness for an id: {0}")]
    NoRandomness(String),
}

impl From<StoreError> for FlowError {
    fn from(error: StoreError) -> Self {
        Self::backend(error)
    }
}

impl FlowError {
    /// A backend failure.
    pub fn backend(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend(Box::new(error))
    }
}
