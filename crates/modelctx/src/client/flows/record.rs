//! The record model: [`FlowRecord`], one flow as every store keeps it (JSON, camelCase), with
//! its method ([`FlowMethod`]) and the failure of its last attempt ([`FlowFailure`]); how a
//! pending request of the manual loop becomes one, and the next version of one. What stores
//! do with records is `store.rs`; how the kernel's backends lay them out, `backends.rs`.

use std::fmt;

use modelctx_types::Method as _;
use modelctx_types::{ErrorObject, InputRequests, InputRequiredResult, InputResponses};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::FlowError;
use super::status::FlowStatus;
use crate::client::api::PendingRequest;
use crate::client::error::ClientError;
use crate::store::now_ms;

/// The method of a flow: the three that may answer `InputRequiredResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FlowMethod {
    /// `tools/call`.
    #[serde(rename = "tools/call")]
    CallTool,
    /// `prompts/get`.
    #[serde(rename = "prompts/get")]
    GetPrompt,
    /// `resources/read`.
    #[serde(rename = "resources/read")]
    ReadResource,
}

impl FlowMethod {
    /// The JSON-RPC method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CallTool => modelctx_types::methods::CallTool::NAME,
            Self::GetPrompt => modelctx_types::methods::GetPrompt::NAME,
            Self::ReadResource => modelctx_types::methods::ReadResource::NAME,
        }
    }
}

impl fmt::Display for FlowMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a flow failed, or why its last attempt did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowFailure {
    /// The server's JSON-RPC error code, when the server produced the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// What went wrong.
    pub message: String,
}

impl FlowFailure {
    pub(super) fn from_client(error: &ClientError) -> Self {
        Self {
            code: error.rpc_code().map(|code| i64::from(code.0)),
            message: error.to_string(),
        }
    }
}

/// A JSON-RPC error as a failure (for stores and tests that build outcomes by hand).
impl From<&ErrorObject> for FlowFailure {
    fn from(error: &ErrorObject) -> Self {
        Self {
            code: Some(i64::from(error.code.0)),
            message: error.message.clone(),
        }
    }
}

/// One flow as stored. Serialized as JSON (camelCase members) by every store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowRecord {
    /// The flow's id (`flow_` and 32 hex digits, random).
    pub id: String,
    /// The server the flow belongs to: a label the application chooses (a logical name, or the
    /// URL). Workers resume the flows of the server they are connected to.
    pub server: String,
    /// The method.
    pub method: FlowMethod,
    /// The request params as first sent (without `inputResponses` and `requestState`).
    pub params: Value,
    /// The server's last `InputRequiredResult`: the questions of the current round and the
    /// sealed `requestState` to echo.
    pub input_required: InputRequiredResult,
    /// The user's answers to the current round, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<InputResponses>,
    /// Where the flow is.
    pub status: FlowStatus,
    /// The number of the current round (1 for the first question).
    pub round: u32,
    /// How many times the current round was claimed.
    pub attempts: u32,
    /// Who the flow is for (a user, a tenant), if the application says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The worker holding the claim (while `resuming`), or the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// When the claim runs out (milliseconds since the Unix epoch), while `resuming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<u64>,
    /// The final result (`done`), as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why the flow failed (`failed`), or why the last attempt did (`answered` again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<FlowFailure>,
    /// When the flow was saved (milliseconds since the Unix epoch).
    pub created_at_ms: u64,
    /// When the flow last changed (milliseconds since the Unix epoch).
    pub updated_at_ms: u64,
    /// Incremented by every change; the compare-and-swap token.
    pub version: u64,
    /// The W3C `traceparent` of the call span that started the flow (feature `otel`, when an
    /// OpenTelemetry layer traced it): every resumption's call span is its child, so the flow
    /// is one trace whichever worker resumes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_context: Option<String>,
}

impl FlowRecord {
    /// A new flow awaiting the user, from a pending request of the manual loop.
    ///
    /// # Errors
    /// The params do not serialize, or the system has no randomness for the flow's id
    /// ([`FlowError::NoRandomness`]).
    pub fn new<P: Serialize + modelctx_types::InputResponseParams + Clone>(
        server: impl Into<String>,
        method: FlowMethod,
        owner: Option<String>,
        pending: &PendingRequest<P>,
    ) -> Result<Self, FlowError> {
        let mut params = pending.params.clone();
        params.set_input_responses(None);
        params.set_request_state(None);
        let now = now_ms();
        Ok(Self {
            id: new_flow_id()?,
            server: server.into(),
            method,
            params: serde_json::to_value(&params)?,
            input_required: pending.input_required.clone(),
            answers: None,
            status: FlowStatus::AwaitingUser,
            round: 1,
            attempts: 0,
            owner,
            worker: None,
            lease_until_ms: None,
            result: None,
            error: None,
            created_at_ms: now,
            updated_at_ms: now,
            version: 1,
            trace_context: None,
        })
    }

    /// The questions of the current round.
    pub fn questions(&self) -> Option<&InputRequests> {
        self.input_required.input_requests.as_ref()
    }

    /// The params, typed.
    ///
    /// # Errors
    /// They are not a `P`.
    pub fn params_as<P: DeserializeOwned>(&self) -> Result<P, FlowError> {
        Ok(serde_json::from_value(self.params.clone())?)
    }

    /// The final result, typed (`None` until the flow is done).
    ///
    /// # Errors
    /// It is not a `T`.
    pub fn result_as<T: DeserializeOwned>(&self) -> Result<Option<T>, FlowError> {
        self.result
            .clone()
            .map(serde_json::from_value)
            .transpose()
            .map_err(FlowError::from)
    }

    /// The flow as a [`PendingRequest`] of the manual loop (for
    /// [`Client::resume_call_tool`](crate::client::Client::resume_call_tool) and its twins, which
    /// answer with the client's callbacks instead of stored answers).
    ///
    /// # Errors
    /// The params are not a `P`.
    pub fn pending_request<P: DeserializeOwned>(&self) -> Result<PendingRequest<P>, FlowError> {
        Ok(PendingRequest {
            params: self.params_as()?,
            input_required: self.input_required.clone(),
        })
    }

    /// Whether a worker may claim the flow at `now_ms`: answered, or resuming with a lease that
    /// has run out.
    pub fn is_claimable(&self, now_ms: u64) -> bool {
        match self.status {
            FlowStatus::Answered => true,
            FlowStatus::Resuming => self.lease_until_ms.is_none_or(|until| until <= now_ms),
            _ => false,
        }
    }

    /// This record, changed by `change`, as the next version at `now_ms`.
    pub(crate) fn next(&self, now_ms: u64, change: impl FnOnce(&mut Self)) -> Self {
        let mut next = self.clone();
        change(&mut next);
        next.version = self.version + 1;
        next.updated_at_ms = now_ms.max(self.updated_at_ms);
        next
    }
}

/// `flow_` and 32 random hex digits.
fn new_flow_id() -> Result<String, FlowError> {
    let hex =
        crate::ids::random_hex().map_err(|error| FlowError::NoRandomness(error.to_string()))?;
    Ok(format!("flow_{hex}"))
}
