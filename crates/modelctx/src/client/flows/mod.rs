//! Durable client flows: the manual input-required loop with its pending requests kept in a
//! store, so that the user may answer hours later and any worker — in this process or another
//! — resumes the request.
//!
//! A *flow* is one `tools/call`, `prompts/get` or `resources/read` that the server answered
//! with an `InputRequiredResult`. [`FlowRunner::start`] sends the first round; when the server
//! asks for input it saves a [`FlowRecord`] (the method, the params as first sent, the server's
//! `InputRequiredResult` with its sealed `requestState`, the server it belongs to, an optional
//! owner, timestamps) with the status [`FlowStatus::AwaitingUser`] and returns it. The
//! questions are shown to the user however the application likes; [`FlowRunner::answer`]
//! records the answers ([`FlowStatus::Answered`]). A worker calling
//! [`FlowRunner::resume_ready`] (or [`FlowRunner::resume`] for one flow) *claims* each answered
//! flow — a compare-and-set in the store, so exactly one worker resumes it — and retries the
//! request with the answers and the `requestState`. The server either finishes
//! ([`FlowStatus::Done`], the result is stored), or asks again: the new round is saved and the
//! flow waits for the user once more. A round that only carries `requestState` (the server is
//! not ready yet) is retried by the worker itself, with a backoff.
//!
//! ```text
//!   start ──► awaiting_user ──answer──► answered ──claim──► resuming ──► done | failed
//!                  ▲                        ▲                  │
//!                  └──── the server asks again ────────────────┤
//!                                           └── a transport failure (attempts left) ──┘
//! ```
//!
//! The clients that start and resume flows declare the capabilities the user answers for
//! (a server asks only for what the request declares) without answering anything themselves:
//! [`DeferToFlows::defer_elicitation`] and its twins on the
//! [`ClientBuilder`](super::ClientBuilder).
//!
//! The server needs no memory of the flow: everything it needs travels in `requestState`,
//! sealed with keys that every instance of the server shares. The worker that resumes may be
//! connected to another instance than the one that started the flow.
//!
//! # Stores
//!
//! [`FlowStore`] is the storage trait: five primitives (insert, load, compare-and-swap on a
//! version, list, remove), and the state transitions (answer, claim, advance, finish, release,
//! expire) written once on top of them. Every store of the [store kernel](crate::store) is a
//! flow store ([`FlowRecord`] is a kernel [`Record`]); the three below are its backends. Every transition is a
//! compare-and-swap, so two writers can never both move a flow out of the same state.
//!
//! | store | feature | for |
//! |---|---|---|
//! | [`MemoryFlowStore`] | `flows` | tests, one process |
//! | [`SqliteFlowStore`] | `flows-sqlite` | the embedded default: one host, any number of processes sharing the file |
//! | [`RedisFlowStore`] | `flows-redis` | workers spread over hosts |
//!
//! # Claims and failures
//!
//! A claim is a lease ([`FlowRunner::lease`], 5 minutes by default): a worker that dies while
//! resuming leaves the flow `resuming`, and once the lease has run out another worker may claim
//! it again. A transport failure or a timeout puts the flow back to `answered` for another
//! attempt (at most [`FlowRunner::max_attempts`]); a JSON-RPC error from the server (for example
//! `-32602` for a `requestState` that has expired or was sealed with keys the server no longer
//! has) fails it; [`FlowRunner::restart`] then asks the server — and the user — again.
//! Resumption is therefore *at least once*: a worker that dies after the server
//! acted but before the flow was marked done is followed by a second retry. Servers whose final
//! round has side effects should make it idempotent (the sealed state is a natural key).
//!
//! The server's lifetime for sealed state bounds how long a flow may wait for the user: a
//! server meant for durable flows seals with a lifetime longer than users take to answer, and
//! flows left waiting longer are restarted or expired ([`FlowRunner::expire`]).
//!
//! Lease deadlines are wall-clock milliseconds: the hosts of one store need clocks that agree to
//! well within the lease.
//!
//! # Example
//!
//! `cargo run -p modelctx --example flows_sqlite` runs the whole story, with the worker in another
//! process; its commands (`start`, `answer`, `work`, `list`) drive each step by hand against any
//! server, e.g. `mcp serve demo --http 8765`.
//!
//! ```no_run
//! use modelctx::client::Client;
//! use modelctx::client::flows::{DeferToFlows as _, FlowRunner, FlowStart, SqliteFlowStore};
//! use modelctx::types::{CallToolRequestParams, ElicitResult, InputResponse, InputResponses};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runner = FlowRunner::new(SqliteFlowStore::open("flows.db")?);
//! // The user answers later: the client declares elicitation without answering it itself.
//! let client = Client::builder().defer_elicitation().connect_http("http://127.0.0.1:8000/mcp").await?;
//! let params = CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
//! let id = match runner.start(&client, "provisioner", None, params).await? {
//!     FlowStart::Complete(result) => return Ok(println!("{:?}", result.first_text())),
//!     FlowStart::Pending(flow) => flow.id,
//! };
//!
//! // Later, when the user has answered (in any process):
//! let mut content = serde_json::Map::new();
//! content.insert("region".to_owned(), json!("eu-west-1"));
//! let mut answers = InputResponses::new();
//! answers.insert("region".to_owned(), InputResponse::elicit(&ElicitResult::accept(content)));
//! runner.answer(&id, answers).await?;
//!
//! // In a worker (any process, any instance of the server):
//! for flow in runner.resume_ready(&client, "provisioner").await? {
//!     println!("{} is now {:?}", flow.id, flow.status);
//! }
//! # Ok(()) }
//! ```

use std::fmt;

use futures::future::BoxFuture;
use modelctx_types::Method as _;
use modelctx_types::{ErrorObject, InputRequests, InputRequiredResult, InputResponses};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::api::PendingRequest;
use super::error::ClientError;

#[cfg(feature = "test-util")]
pub mod contract;
mod runner;

pub use runner::{DeferToFlows, FlowRequest, FlowRunner, FlowStart};

pub(crate) use crate::store::now_ms;
use crate::store::{
    Field, Inserted, Limits, Record, Scan, Schema, StoreError, Tag, VersionedStore,
};

/// Flows in memory: gone with the process. For tests, and for applications whose flows need
/// not outlive it. Clones share the flows. The kernel's [`crate::store::MemoryStore`] for
/// [`FlowRecord`]s.
pub type MemoryFlowStore = crate::store::MemoryStore<FlowRecord>;

/// Flows in an SQLite database: the embedded default. One row per flow (table
/// `mcp_client_flows`) — the record as JSON, plus the columns that lists and the
/// compare-and-swap read. The kernel's [`crate::store::SqliteStore`] for [`FlowRecord`]s: of
/// two processes claiming the same answered flow exactly one changes a row.
#[cfg(feature = "flows-sqlite")]
pub type SqliteFlowStore = crate::store::SqliteStore<FlowRecord>;

/// Flows in Redis: each flow is a hash under `<prefix>:flow:<id>`, and one set per status
/// (`<prefix>:status:<status>`) lists the ids. The kernel's [`crate::store::RedisStore`] for
/// [`FlowRecord`]s: of two workers claiming the same answered flow, exactly one script sees the
/// version it read.
#[cfg(feature = "flows-redis")]
pub type RedisFlowStore = crate::store::RedisStore<FlowRecord>;

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
    /// The server answered the final result ([`FlowRecord::result`]).
    Done,
    /// The flow cannot finish ([`FlowRecord::error`]).
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
    fn from_client(error: &ClientError) -> Self {
        Self {
            code: error.rpc_code().map(|code| i64::from(code.0)),
            message: error.to_string(),
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
    /// [`Client::resume_call_tool`](super::Client::resume_call_tool) and its twins, which
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

/// Which flows [`FlowStore::list`] returns. The default selects every flow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowFilter {
    /// Only these statuses (all when empty).
    pub statuses: Vec<FlowStatus>,
    /// Only the flows of this server.
    pub server: Option<String>,
    /// Only the flows of this owner.
    pub owner: Option<String>,
    /// Only the flows that last changed strictly before this time (ms since the Unix epoch).
    pub updated_before_ms: Option<u64>,
    /// At most this many (the oldest first).
    pub limit: Option<usize>,
}

impl FlowFilter {
    /// Every flow.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only these statuses.
    #[must_use]
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = FlowStatus>) -> Self {
        self.statuses = statuses.into_iter().collect();
        self
    }

    /// Only the flows of `server`.
    #[must_use]
    pub fn server(mut self, server: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self
    }

    /// Only the flows of `owner`.
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// Only the flows that last changed before `at_ms`.
    #[must_use]
    pub fn updated_before_ms(mut self, at_ms: u64) -> Self {
        self.updated_before_ms = Some(at_ms);
        self
    }

    /// At most `limit` flows.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Whether `record` passes (the store-independent check; stores may filter earlier).
    pub fn matches(&self, record: &FlowRecord) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&record.status))
            && self.server.as_ref().is_none_or(|s| *s == record.server)
            && self
                .owner
                .as_ref()
                .is_none_or(|o| record.owner.as_ref() == Some(o))
            && self
                .updated_before_ms
                .is_none_or(|before| record.updated_at_ms < before)
    }
}

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
    /// [`FlowRunner::start`]).
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

/// Storage for flows: five primitives a backend implements, and the transitions of a flow's
/// life built on them.
///
/// Every provided transition is a load followed by [`FlowStore::swap`] on the version read,
/// retried when another writer got in between; so a transition applies to exactly one state of
/// the flow, and of two workers claiming the same answered flow exactly one wins. A backend may
/// override a transition with a native atomic operation as long as it keeps that contract.
///
/// The methods return boxed futures so that the trait is object-safe (`Arc<dyn FlowStore>`).
pub trait FlowStore: Send + Sync + fmt::Debug {
    /// Saves a new flow; [`FlowError::Exists`] if its id is taken.
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>>;

    /// The flow with this id.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>>;

    /// Replaces the stored flow with `record` if, and only if, the stored one's version is
    /// `expected`, atomically. Returns whether it did (`false` also when the flow is gone).
    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>>;

    /// The flows that pass `filter`, oldest change first.
    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>>;

    /// Removes the flow, if its version is `expected` (any version when `None`). Returns
    /// whether it did.
    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, FlowError>>;

    /// Saves a new flow (awaiting the user).
    fn save<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        self.insert(record)
    }

    /// Records the user's answers to the current round: `awaiting_user` → `answered`. The
    /// answers must be keyed exactly like the round's questions.
    fn record_answers<'a>(
        &'a self,
        id: &'a str,
        answers: InputResponses,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            loop {
                let current = self
                    .load(id)
                    .await?
                    .ok_or_else(|| FlowError::NotFound(id.to_owned()))?;
                if current.status != FlowStatus::AwaitingUser {
                    return Err(FlowError::WrongStatus {
                        id: id.to_owned(),
                        status: current.status,
                        expected: FlowStatus::AwaitingUser,
                    });
                }
                check_answers(&current, &answers)?;
                let next = current.next(now_ms, |r| {
                    r.answers = Some(answers.clone());
                    r.status = FlowStatus::Answered;
                });
                if self.swap(&next, current.version).await? {
                    return Ok(next);
                }
            }
        })
    }

    /// Claims the flow for `worker` until `now_ms + lease_ms`: `answered` (or `resuming` with a
    /// lease that ran out) → `resuming`. `None` if the flow is not claimable — another worker
    /// holds it, it is not answered yet, or it has ended.
    fn claim<'a>(
        &'a self,
        id: &'a str,
        worker: &'a str,
        now_ms: u64,
        lease_ms: u64,
    ) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        Box::pin(async move {
            loop {
                let Some(current) = self.load(id).await? else {
                    return Ok(None);
                };
                if !current.is_claimable(now_ms) {
                    return Ok(None);
                }
                let next = current.next(now_ms, |r| {
                    r.status = FlowStatus::Resuming;
                    r.worker = Some(worker.to_owned());
                    r.lease_until_ms = Some(now_ms.saturating_add(lease_ms));
                    r.attempts += 1;
                });
                if self.swap(&next, current.version).await? {
                    return Ok(Some(next));
                }
            }
        })
    }

    /// The server asked again: the claimed flow waits for the user with the new round.
    /// [`FlowError::ClaimLost`] if `claimed` is no longer the stored version.
    fn advance<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        input_required: InputRequiredResult,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            let next = claimed.next(now_ms, |r| {
                r.input_required = input_required;
                r.answers = None;
                r.status = FlowStatus::AwaitingUser;
                r.round += 1;
                r.attempts = 0;
                r.lease_until_ms = None;
                r.error = None;
            });
            self.swap_claimed(claimed, next).await
        })
    }

    /// The claimed flow ended: `done` with the server's result, or `failed`.
    fn finish<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        outcome: Result<Value, FlowFailure>,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            let next = claimed.next(now_ms, |r| {
                r.lease_until_ms = None;
                match outcome {
                    Ok(result) => {
                        r.status = FlowStatus::Done;
                        r.result = Some(result);
                        r.error = None;
                    }
                    Err(failure) => {
                        r.status = FlowStatus::Failed;
                        r.error = Some(failure);
                    }
                }
            });
            self.swap_claimed(claimed, next).await
        })
    }

    /// The attempt failed in a way worth retrying: the claimed flow goes back to `answered`
    /// (keeping its answers), with the failure recorded.
    fn release<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        failure: FlowFailure,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            let next = claimed.next(now_ms, |r| {
                r.status = FlowStatus::Answered;
                r.lease_until_ms = None;
                r.error = Some(failure);
            });
            self.swap_claimed(claimed, next).await
        })
    }

    /// Replaces the claimed version with `next`, or [`FlowError::ClaimLost`].
    fn swap_claimed<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        next: FlowRecord,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            if self.swap(&next, claimed.version).await? {
                Ok(next)
            } else {
                Err(FlowError::ClaimLost(claimed.id.clone()))
            }
        })
    }

    /// Removes the flows in `statuses` that last changed before `before_ms` (each only if it did
    /// not change meanwhile). Returns how many were removed.
    fn expire<'a>(
        &'a self,
        statuses: &'a [FlowStatus],
        before_ms: u64,
    ) -> BoxFuture<'a, Result<u64, FlowError>> {
        Box::pin(async move {
            let filter = FlowFilter::new()
                .statuses(statuses.iter().copied())
                .updated_before_ms(before_ms);
            let mut removed = 0;
            for record in self.list(&filter).await? {
                if self.remove(&record.id, Some(record.version)).await? {
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }
}

/// The SQLite layout of flows.
const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS mcp_client_flows (
        id         TEXT PRIMARY KEY,
        server     TEXT NOT NULL,
        owner      TEXT,
        status     TEXT NOT NULL,
        version    INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        record     TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mcp_client_flows_status
        ON mcp_client_flows (status, server, updated_at);
";

/// A Redis set per status lists the flows a worker looks for.
const fn status_tag(status: FlowStatus, set: &'static str) -> Tag {
    Tag {
        column: "status",
        value: status.as_str(),
        set,
    }
}

/// Flows are listed by status, server, owner and age, oldest change first; they never expire on
/// their own ([`FlowRunner::expire`] removes them) and are not counted.
impl Record for FlowRecord {
    const SCHEMA: Schema = Schema {
        table: "mcp_client_flows",
        id_column: "id",
        sqlite_schema: SQLITE_SCHEMA,
        columns: &["server", "owner", "status", "updated_at"],
        expires_column: None,
        group_sql: None,
        order_column: Some("updated_at"),
        redis_key: "flow",
        redis_group_key: "owner",
        tags: &[
            status_tag(FlowStatus::AwaitingUser, "status:awaiting_user"),
            status_tag(FlowStatus::Answered, "status:answered"),
            status_tag(FlowStatus::Resuming, "status:resuming"),
            status_tag(FlowStatus::Done, "status:done"),
            status_tag(FlowStatus::Failed, "status:failed"),
        ],
        counted: false,
    };

    fn id(&self) -> &str {
        &self.id
    }

    fn version(&self) -> u64 {
        self.version
    }

    fn fields(&self) -> Vec<Field> {
        vec![
            Field::Text(Some(self.server.clone())),
            Field::Text(self.owner.clone()),
            Field::Text(Some(self.status.as_str().to_owned())),
            Field::int(self.updated_at_ms),
        ]
    }
}

impl FlowFilter {
    /// The kernel scan that selects the same flows.
    fn scan(&self) -> Scan {
        let mut scan = Scan::all();
        if !self.statuses.is_empty() {
            scan = scan.by("status", self.statuses.iter().map(|s| s.as_str()).collect());
        }
        if let Some(server) = &self.server {
            scan = scan.equals("server", Field::Text(Some(server.clone())));
        }
        if let Some(owner) = &self.owner {
            scan = scan.equals("owner", Field::Text(Some(owner.clone())));
        }
        if let Some(before) = self.updated_before_ms {
            scan = scan.below("updated_at", i64::try_from(before).unwrap_or(i64::MAX));
        }
        if let Some(limit) = self.limit {
            scan = scan.limit(limit);
        }
        scan
    }
}

/// Every kernel store of flow records is a flow store.
impl<S: VersionedStore<FlowRecord> + fmt::Debug> FlowStore for S {
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        Box::pin(async move {
            match VersionedStore::insert(self, record, Limits::NONE).await? {
                Inserted::Yes => Ok(()),
                _ => Err(FlowError::Exists(record.id.clone())),
            }
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        Box::pin(async move { Ok(VersionedStore::load(self, id).await?) })
    }

    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        Box::pin(async move { Ok(VersionedStore::swap(self, record, expected).await?) })
    }

    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>> {
        Box::pin(async move { Ok(self.scan(&filter.scan()).await?) })
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        Box::pin(async move { Ok(VersionedStore::remove(self, id, expected).await?) })
    }
}

/// The answers are keyed exactly like the questions.
fn check_answers(record: &FlowRecord, answers: &InputResponses) -> Result<(), FlowError> {
    let asked: Vec<&String> = record
        .questions()
        .map(|q| q.keys().collect())
        .unwrap_or_default();
    let missing: Vec<&str> = asked
        .iter()
        .filter(|key| !answers.contains_key(key.as_str()))
        .map(|key| key.as_str())
        .collect();
    let unexpected: Vec<&str> = answers
        .keys()
        .filter(|key| !asked.contains(key))
        .map(String::as_str)
        .collect();
    if missing.is_empty() && unexpected.is_empty() {
        return Ok(());
    }
    Err(FlowError::InvalidAnswers {
        id: record.id.clone(),
        reason: format!("missing {missing:?}, unexpected {unexpected:?}"),
    })
}

/// `flow_` and 32 random hex digits.
fn new_flow_id() -> Result<String, FlowError> {
    let hex =
        crate::ids::random_hex().map_err(|error| FlowError::NoRandomness(error.to_string()))?;
    Ok(format!("flow_{hex}"))
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
