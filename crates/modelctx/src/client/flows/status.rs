//! [`FlowStatus`]: where a flow is in its life, and the name each status is stored under. The
//! leaf of `flows`: the record holds one, the errors name one, the stores index by it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a flow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowStatus {
    /// The server asked; the user has not answered yet.
    AwaitingUser,
    /// The user answered; a worker may claim the flow.
    Answered,
    /// A worker claimed the flow and is retrying the request (until its lease runs out).
    Resuming,
    /// The server answered the final result ([`FlowRecord::result`](super::FlowRecord::result)).
    Done,
    /// The flow cannot finish ([`FlowRecord::error`](super::FlowRecord::error)).
    Failed,
}

impl FlowStatus {
    /// Every status, in the order of a flow's life.
    pub const ALL: [Self; 5] = [
        Self::AwaitingUser,
        Self::Answered,
        Self::Resuming,
        Self::Done,
        Self::Failed,
    ];

    /// The name stored (`awaiting_user`, `answered`, `resuming`, `done`, `failed`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AwaitingUser => "awaiting_user",
            Self::Answered => "answered",
            Self::Resuming => "resuming",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    /// Whether the flow has ended (`done` or `failed`).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }
}

impl fmt::Display for FlowStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
