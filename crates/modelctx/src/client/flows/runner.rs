//! [`FlowRunner`]: starts flows, records answers, and resumes answered flows.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::future::BoxFuture;
use modelctx_types::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult,
    InputRequiredResult, InputResponseParams, InputResponses, Method as _,
    ReadResourceRequestParams, ReadResourceResult,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{FlowError, FlowFailure, FlowFilter, FlowMethod, FlowRecord, FlowStatus, FlowStore};
use crate::client::api::{Client, PendingRequest};
use crate::client::builder::ClientBuilder;
use crate::client::error::ClientError;
use crate::client::session::{RoundOutcome, Session};
use crate::client::trace;
use crate::store::now_ms;

/// The params of a request that may become a flow: `tools/call`, `prompts/get` and
/// `resources/read`.
pub trait FlowRequest:
    Serialize + DeserializeOwned + InputResponseParams + Clone + Send + Sync + 'static
{
    /// The method.
    const METHOD: FlowMethod;
    /// Its final result.
    type Output: Serialize + DeserializeOwned + Send + 'static;

    /// Sends one round (`allow_input_required`).
    fn round(
        session: &Session,
        params: Self,
    ) -> BoxFuture<'_, Result<RoundOutcome<Self::Output>, ClientError>>;
}

impl FlowRequest for CallToolRequestParams {
    const METHOD: FlowMethod = FlowMethod::CallTool;
    type Output = CallToolResult;

    fn round(
        session: &Session,
        params: Self,
    ) -> BoxFuture<'_, Result<RoundOutcome<Self::Output>, ClientError>> {
        Box::pin(session.call_tool(params, true))
    }
}

impl FlowRequest for GetPromptRequestParams {
    const METHOD: FlowMethod = FlowMethod::GetPrompt;
    type Output = GetPromptResult;

    fn round(
        session: &Session,
        params: Self,
    ) -> BoxFuture<'_, Result<RoundOutcome<Self::Output>, ClientError>> {
        Box::pin(session.get_prompt(params, true))
    }
}

impl FlowRequest for ReadResourceRequestParams {
    const METHOD: FlowMethod = FlowMethod::ReadResource;
    type Output = ReadResourceResult;

    fn round(
        session: &Session,
        params: Self,
    ) -> BoxFuture<'_, Result<RoundOutcome<Self::Output>, ClientError>> {
        Box::pin(session.read_resource(params, true))
    }
}

/// Declares input capabilities on a client whose questions are answered through flows.
///
/// A server asks only for what the request's client capabilities declare (`-32021`
/// otherwise), and a client declares the capabilities of its callbacks. A flow's questions are
/// answered later, by the user, through [`FlowRunner::answer`]: the clients that start and
/// resume flows declare them with these methods, which install callbacks that refuse (they
/// never run under a [`FlowRunner`], which drives the rounds itself; a plain
/// [`Client::call_tool`] on such a client fails with
/// [`ClientError::CallbackRefused`]).
///
/// ```no_run
/// use modelctx::client::Client;
/// use modelctx::client::flows::DeferToFlows as _;
///
/// # async fn demo() -> Result<(), modelctx::client::ClientError> {
/// let client = Client::builder()
///     .defer_elicitation()
///     .connect_http("http://127.0.0.1:8000/mcp")
///     .await?;
/// # Ok(()) }
/// ```
pub trait DeferToFlows: Sized {
    /// Declares `elicitation` (form and URL modes).
    #[must_use]
    fn defer_elicitation(self) -> Self;
    /// Declares `sampling`.
    #[must_use]
    fn defer_sampling(self) -> Self;
    /// Declares `roots`.
    #[must_use]
    fn defer_roots(self) -> Self;
}

fn deferred(method: &str) -> modelctx_types::ErrorObject {
    modelctx_types::ErrorObject::internal(format!(
        "{method} is answered through a durable flow (FlowRunner::answer), not by this client"
    ))
}

impl DeferToFlows for ClientBuilder {
    fn defer_elicitation(self) -> Self {
        self.on_elicitation(|_context, _params| {
            std::future::ready(Err::<modelctx_types::ElicitResult, _>(deferred(
                modelctx_types::methods::Elicit::NAME,
            )))
        })
    }

    fn defer_sampling(self) -> Self {
        self.on_sampling(|_context, _params| {
            std::future::ready(Err::<modelctx_types::CreateMessageResult, _>(deferred(
                modelctx_types::methods::CreateMessage::NAME,
            )))
        })
    }

    fn defer_roots(self) -> Self {
        self.on_list_roots(|_context| {
            std::future::ready(Err::<modelctx_types::ListRootsResult, _>(deferred(
                modelctx_types::methods::ListRoots::NAME,
            )))
        })
    }
}

/// What [`FlowRunner::start`] came to.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowStart<T> {
    /// The server answered without asking anything: nothing was saved.
    Complete(T),
    /// The server asked: the flow is saved, awaiting the user.
    Pending(Box<FlowRecord>),
}

/// Where a run of rounds stopped.
enum Step<T> {
    /// The final result.
    Complete(T),
    /// A round with questions for the user.
    Question(InputRequiredResult),
}

impl<T: Serialize> Step<T> {
    /// The step with its result as JSON, as a flow record keeps it.
    fn into_value(self) -> Result<Step<Value>, AttemptError> {
        Ok(match self {
            Self::Complete(result) => Step::Complete(serde_json::to_value(result)?),
            Self::Question(input_required) => Step::Question(input_required),
        })
    }
}

/// Why a resumption attempt stopped short of a step.
enum AttemptError {
    /// The client failed.
    Client(ClientError),
    /// The stored params or the result did not (de)serialize.
    Codec(serde_json::Error),
}

impl From<ClientError> for AttemptError {
    fn from(error: ClientError) -> Self {
        Self::Client(error)
    }
}

impl From<serde_json::Error> for AttemptError {
    fn from(error: serde_json::Error) -> Self {
        Self::Codec(error)
    }
}

/// Drives a flow's life over a [`FlowStore`]: [`start`](Self::start) a request,
/// [`answer`](Self::answer) its questions, [`resume_ready`](Self::resume_ready) the answered
/// flows. Cheap to clone; clones share the store and the worker identity.
///
/// Resumption sends one retry with the stored answers and `requestState`, then continues
/// round by round: `requestState`-only rounds are retried here (50 ms doubling to 250 ms, at
/// most [`max_state_rounds`](Self::max_state_rounds)); a round with questions is saved for the
/// user. Stored answers replace the client's callbacks: a runner's client answers nothing
/// itself, but declares the capabilities the user answers for ([`DeferToFlows`]).
#[derive(Debug, Clone)]
pub struct FlowRunner {
    store: Arc<dyn FlowStore>,
    /// This worker's id; without system randomness to draw one (and none named) the reason,
    /// and claims fail: two workers sharing an id would both hold one claim.
    worker: Result<String, String>,
    lease: Duration,
    max_attempts: u32,
    max_state_rounds: u32,
    concurrency: usize,
}

impl FlowRunner {
    /// A runner over `store`, with a worker id of its own (`worker-<pid>-<random>`), a 5-minute
    /// lease, 3 attempts per round, 10 state-only rounds and 8 concurrent resumptions. Without
    /// system randomness it has no worker id until one is named ([`Self::worker_id`]), and
    /// resuming fails with [`FlowError::NoRandomness`].
    pub fn new(store: impl FlowStore + 'static) -> Self {
        Self::with_store(Arc::new(store))
    }

    /// [`FlowRunner::new`] over a shared store.
    pub fn with_store(store: Arc<dyn FlowStore>) -> Self {
        Self {
            store,
            worker: crate::ids::random_hex()
                .map(|hex| format!("worker-{}-{}", std::process::id(), &hex[..8]))
                .map_err(|error| error.to_string()),
            lease: Duration::from_secs(300),
            max_attempts: 3,
            max_state_rounds: 10,
            concurrency: 8,
        }
    }

    /// Names this worker (recorded in the flows it claims).
    #[must_use]
    pub fn worker_id(mut self, worker: impl Into<String>) -> Self {
        self.worker = Ok(worker.into());
        self
    }

    /// How long a claim lasts. It must exceed the time one resumption takes (a few round trips
    /// and state-only backoffs): a worker still resuming when its lease runs out may be
    /// overtaken, and its outcome is then dropped ([`FlowError::ClaimLost`]).
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How many claims one round gets when attempts fail with a transport error, a timeout or
    /// an HTTP 429/5xx; after the last, the flow fails.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// How many `requestState`-only rounds in a row are retried before giving up.
    #[must_use]
    pub fn max_state_rounds(mut self, rounds: u32) -> Self {
        self.max_state_rounds = rounds;
        self
    }

    /// How many flows [`FlowRunner::resume_ready`] resumes at once.
    #[must_use]
    pub fn concurrency(mut self, flows: usize) -> Self {
        self.concurrency = flows.max(1);
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn FlowStore> {
        &self.store
    }

    /// This worker's id (empty when it has none: see [`Self::new`]).
    pub fn worker(&self) -> &str {
        self.worker.as_deref().unwrap_or_default()
    }

    fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// Sends the request; if the server asks for input, saves the flow for `server` (the label
    /// workers resume by) and `owner`, and returns it awaiting the user.
    ///
    /// # Errors
    /// The first round failed ([`FlowError::Client`]), or the store did.
    pub async fn start<R: FlowRequest>(
        &self,
        client: &Client,
        server: &str,
        owner: Option<&str>,
        params: R,
    ) -> Result<FlowStart<R::Output>, FlowError> {
        let span = flow_span(&params);
        let step = Box::pin(self.traced_rounds::<R>(client, params.clone(), span.clone())).await?;
        match step {
            Step::Complete(result) => Ok(FlowStart::Complete(result)),
            Step::Question(input_required) => {
                let pending = PendingRequest {
                    params,
                    input_required,
                };
                let record = FlowRecord {
                    trace_context: trace_context_of(&span),
                    ..FlowRecord::new(server, R::METHOD, owner.map(str::to_owned), &pending)?
                };
                self.store.save(&record).await?;
                Ok(FlowStart::Pending(Box::new(record)))
            }
        }
    }

    /// Saves a pending request of the manual loop (from
    /// [`Session::call_tool`](crate::client::Session::call_tool) and its twins with
    /// `allow_input_required`) as a flow awaiting the user.
    ///
    /// # Errors
    /// The store failed.
    pub async fn save_pending<R: FlowRequest>(
        &self,
        server: &str,
        owner: Option<&str>,
        pending: &PendingRequest<R>,
    ) -> Result<FlowRecord, FlowError> {
        let record = FlowRecord::new(server, R::METHOD, owner.map(str::to_owned), pending)?;
        self.store.save(&record).await?;
        Ok(record)
    }

    /// The flow with this id.
    ///
    /// # Errors
    /// The store failed.
    pub async fn get(&self, id: &str) -> Result<Option<FlowRecord>, FlowError> {
        self.store.load(id).await
    }

    /// The flows that pass `filter`.
    ///
    /// # Errors
    /// The store failed.
    pub async fn list(&self, filter: &FlowFilter) -> Result<Vec<FlowRecord>, FlowError> {
        self.store.list(filter).await
    }

    /// Records the user's answers to the flow's current round, keyed like its questions
    /// ([`InputResponse::elicit`](modelctx_types::InputResponse::elicit) and its twins build them).
    ///
    /// # Errors
    /// No such flow, the flow is not awaiting the user ([`FlowError::WrongStatus`]: e.g.
    /// answered twice), the keys do not match ([`FlowError::InvalidAnswers`]), or the store
    /// failed.
    pub async fn answer(&self, id: &str, answers: InputResponses) -> Result<FlowRecord, FlowError> {
        self.store.record_answers(id, answers, now_ms()).await
    }

    /// Answers the flow's current round with `client`'s callbacks (for a process that can ask
    /// the user itself), and records the answers.
    ///
    /// # Errors
    /// As [`FlowRunner::answer`], or a callback failed ([`FlowError::Client`]).
    pub async fn answer_with_callbacks(
        &self,
        client: &Client,
        id: &str,
    ) -> Result<FlowRecord, FlowError> {
        let record = self
            .store
            .load(id)
            .await?
            .ok_or_else(|| FlowError::NotFound(id.to_owned()))?;
        if record.status != FlowStatus::AwaitingUser {
            return Err(FlowError::WrongStatus {
                id: id.to_owned(),
                status: record.status,
                expected: FlowStatus::AwaitingUser,
            });
        }
        let questions = record.questions().cloned().unwrap_or_default();
        let answers = client.answer_input_requests(questions).await?;
        self.answer(id, answers).await
    }

    /// Claims the flow and resumes it with `client` (connected to the flow's server, or to an
    /// instance sharing its keys). Returns the flow as it ends up — `done`, `failed`, awaiting
    /// the user again, or `answered` again after a retryable failure — or `None` when the flow
    /// was not claimable (not answered, held by another worker, ended).
    ///
    /// # Errors
    /// The store failed, or this worker's claim was lost meanwhile ([`FlowError::ClaimLost`]).
    /// Failures of the server or the transport are recorded in the flow, not returned.
    pub async fn resume(&self, client: &Client, id: &str) -> Result<Option<FlowRecord>, FlowError> {
        let worker = self
            .worker
            .as_deref()
            .map_err(|reason| FlowError::NoRandomness(reason.clone()))?;
        let claimed = self
            .store
            .claim(id, worker, now_ms(), self.lease_ms())
            .await?;
        match claimed {
            Some(claimed) => Box::pin(self.run_claimed(client, claimed)).await.map(Some),
            None => Ok(None),
        }
    }

    /// Resumes every claimable flow of `server` (answered, or resuming with a lease that ran
    /// out) once, [`concurrency`](Self::concurrency) at a time, and returns those this worker
    /// claimed, as they ended up. Flows another worker claims first are skipped. Call it
    /// periodically, or whenever the application learns that a user answered.
    ///
    /// # Errors
    /// The store failed.
    pub async fn resume_ready(
        &self,
        client: &Client,
        server: &str,
    ) -> Result<Vec<FlowRecord>, FlowError> {
        let now = now_ms();
        let filter = FlowFilter::new()
            .statuses([FlowStatus::Answered, FlowStatus::Resuming])
            .server(server);
        let ready: Vec<String> = self
            .store
            .list(&filter)
            .await?
            .into_iter()
            .filter(|record| record.is_claimable(now))
            .map(|record| record.id)
            .collect();
        let outcomes: Vec<_> = futures::stream::iter(ready)
            .map(|id| async move { self.resume(client, &id).await })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        let mut resumed = Vec::new();
        for outcome in outcomes {
            match outcome {
                Ok(Some(record)) => resumed.push(record),
                Ok(None) => {}
                Err(FlowError::ClaimLost(id)) => {
                    tracing::warn!(flow = %id, "the claim ran out while resuming; another worker's outcome stands");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(resumed)
    }

    /// Starts the flow over: sends its original request again (no answers, no state) and, when
    /// the server asks, saves the new question as round 1 awaiting the user; when it answers at
    /// once, the flow is done. For a flow that `failed` because the server could no longer open
    /// its state (it expired, or was sealed with keys the server no longer has: `-32602`), or
    /// one awaiting the user whose state will have expired by the time they answer. Any earlier
    /// answers are dropped: the user is asked again.
    ///
    /// # Errors
    /// No such flow; the flow is answered, resuming or done ([`FlowError::WrongStatus`]); it
    /// changed meanwhile ([`FlowError::ClaimLost`]); the request failed
    /// ([`FlowError::Client`], the flow is left as it was); or the store failed.
    pub async fn restart(&self, client: &Client, id: &str) -> Result<FlowRecord, FlowError> {
        let current = self
            .store
            .load(id)
            .await?
            .ok_or_else(|| FlowError::NotFound(id.to_owned()))?;
        if !matches!(
            current.status,
            FlowStatus::Failed | FlowStatus::AwaitingUser
        ) {
            return Err(FlowError::WrongStatus {
                id: id.to_owned(),
                status: current.status,
                expected: FlowStatus::Failed,
            });
        }
        let step = match current.method {
            FlowMethod::CallTool => {
                self.first_round::<CallToolRequestParams>(client, &current)
                    .await
            }
            FlowMethod::GetPrompt => {
                self.first_round::<GetPromptRequestParams>(client, &current)
                    .await
            }
            FlowMethod::ReadResource => {
                self.first_round::<ReadResourceRequestParams>(client, &current)
                    .await
            }
        };
        let step = match step {
            Ok(step) => step,
            Err(AttemptError::Client(error)) => return Err(FlowError::Client(error)),
            Err(AttemptError::Codec(error)) => return Err(FlowError::Codec(error)),
        };
        let next = current.next(now_ms(), |r| {
            r.answers = None;
            r.round = 1;
            r.attempts = 0;
            r.worker = None;
            r.lease_until_ms = None;
            r.error = None;
            match step {
                Step::Complete(result) => {
                    r.status = FlowStatus::Done;
                    r.result = Some(result);
                }
                Step::Question(input_required) => {
                    r.status = FlowStatus::AwaitingUser;
                    r.input_required = input_required;
                    r.result = None;
                }
            }
        });
        self.store.swap_claimed(&current, next).await
    }

    /// Rounds until a result or a question, within this runner's and `client`'s limits.
    async fn rounds<R: FlowRequest>(
        &self,
        client: &Client,
        params: R,
    ) -> Result<Step<R::Output>, ClientError> {
        drive::<R>(
            client.session(),
            params,
            self.max_state_rounds,
            client.limits().max_input_requests,
        )
        .await
    }

    /// [`Self::rounds`] in `span`, a call span from [`flow_span`] (when it is enabled).
    async fn traced_rounds<R: FlowRequest>(
        &self,
        client: &Client,
        params: R,
        span: tracing::Span,
    ) -> Result<Step<R::Output>, ClientError> {
        if span.is_disabled() {
            return self.rounds::<R>(client, params).await;
        }
        Box::pin(trace::in_call_span(
            span,
            self.rounds::<R>(client, params),
            |_| false,
        ))
        .await
    }

    /// The original request, from the start.
    async fn first_round<R: FlowRequest>(
        &self,
        client: &Client,
        record: &FlowRecord,
    ) -> Result<Step<Value>, AttemptError> {
        let params: R = serde_json::from_value(record.params.clone())?;
        let span = resumed_span(&params, record);
        let step = Box::pin(self.traced_rounds::<R>(client, params, span)).await?;
        step.into_value()
    }

    /// Removes the flows in `statuses` that have not changed for `older_than` (e.g. finished
    /// flows after a day, or flows the user never answered once their sealed state has expired
    /// anyway). Returns how many.
    ///
    /// # Errors
    /// The store failed.
    pub async fn expire(
        &self,
        statuses: &[FlowStatus],
        older_than: Duration,
    ) -> Result<u64, FlowError> {
        let age = u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX);
        self.store
            .expire(statuses, now_ms().saturating_sub(age))
            .await
    }

    /// Retries a claimed flow and records what came of it.
    async fn run_claimed(
        &self,
        client: &Client,
        claimed: FlowRecord,
    ) -> Result<FlowRecord, FlowError> {
        let attempt = match claimed.method {
            FlowMethod::CallTool => {
                self.attempt::<CallToolRequestParams>(client, &claimed)
                    .await
            }
            FlowMethod::GetPrompt => {
                self.attempt::<GetPromptRequestParams>(client, &claimed)
                    .await
            }
            FlowMethod::ReadResource => {
                self.attempt::<ReadResourceRequestParams>(client, &claimed)
                    .await
            }
        };
        let now = now_ms();
        match attempt {
            Ok(Step::Complete(result)) => self.store.finish(&claimed, Ok(result), now).await,
            Ok(Step::Question(input_required)) => {
                self.store.advance(&claimed, input_required, now).await
            }
            Err(AttemptError::Codec(error)) => {
                let failure = FlowFailure {
                    code: None,
                    message: format!("flow record: {error}"),
                };
                self.store.finish(&claimed, Err(failure), now).await
            }
            Err(AttemptError::Client(error)) => {
                let failure = FlowFailure::from_client(&error);
                if retryable(&error) && claimed.attempts < self.max_attempts {
                    tracing::info!(flow = %claimed.id, %error, attempt = claimed.attempts, "resumption failed; the flow is answered again");
                    self.store.release(&claimed, failure, now).await
                } else {
                    self.store.finish(&claimed, Err(failure), now).await
                }
            }
        }
    }

    /// One resumption: the stored params with the answers and the state, then rounds until a
    /// result or a question.
    async fn attempt<R: FlowRequest>(
        &self,
        client: &Client,
        claimed: &FlowRecord,
    ) -> Result<Step<Value>, AttemptError> {
        let mut params: R = serde_json::from_value(claimed.params.clone())?;
        params.set_input_responses(claimed.answers.clone());
        params.set_request_state(claimed.input_required.request_state.clone());
        let span = resumed_span(&params, claimed);
        let step = Box::pin(self.traced_rounds::<R>(client, params, span)).await?;
        step.into_value()
    }
}

/// The call span (`mcp.client.call`) of a flow's rounds; its target is read from the params
/// only when it is enabled.
fn flow_span<R: FlowRequest>(params: &R) -> tracing::Span {
    let method = R::METHOD.as_str();
    trace::call_span(method, || {
        let params = serde_json::to_string(params).ok()?;
        crate::span_fields::target_of(method, Some(&params)).map(std::borrow::Cow::into_owned)
    })
}

/// The `traceparent` of the call span that started a flow (`otel`, an enabled span only).
fn trace_context_of(span: &tracing::Span) -> Option<String> {
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        return crate::otel::traceparent_of(span);
    }
    let _ = span;
    None
}

/// The call span of a resumption: with `otel`, the child of the call span that started the
/// flow (`FlowRecord::trace_context`), in whichever process that was.
fn resumed_span<R: FlowRequest>(params: &R, record: &FlowRecord) -> tracing::Span {
    let span = flow_span(params);
    #[cfg(feature = "otel")]
    if let Some(started) = &record.trace_context
        && !span.is_disabled()
    {
        crate::otel::continue_trace(&span, started);
    }
    #[cfg(not(feature = "otel"))]
    let _ = record;
    span
}

/// Failures another attempt may get past: the transport, a timeout, an overloaded or failing
/// HTTP front.
fn retryable(error: &ClientError) -> bool {
    match error {
        ClientError::Transport(_) | ClientError::Timeout { .. } => true,
        ClientError::HttpStatus { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}

/// Sends rounds until a final result or a round with questions; `requestState`-only rounds are
/// retried after a backoff. A round with more questions than the client's
/// `max_input_requests_per_round` fails rather than being saved for the user.
async fn drive<R: FlowRequest>(
    session: &Session,
    mut params: R,
    max_state_rounds: u32,
    max_questions: usize,
) -> Result<Step<R::Output>, ClientError> {
    let mut backoff = Duration::from_millis(50);
    let mut state_rounds = 0u32;
    loop {
        match R::round(session, params.clone()).await? {
            RoundOutcome::Complete(result) => return Ok(Step::Complete(result)),
            RoundOutcome::InputRequired(input_required) => {
                let asked = input_required
                    .input_requests
                    .as_ref()
                    .map_or(0, |q| q.len());
                if asked > max_questions {
                    return Err(ClientError::TooManyInputRequests {
                        count: asked,
                        max: max_questions,
                    });
                }
                if asked > 0 {
                    return Ok(Step::Question(input_required));
                }
                state_rounds += 1;
                if state_rounds > max_state_rounds {
                    return Err(ClientError::RoundsExceeded {
                        max_rounds: max_state_rounds,
                    });
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(250));
                params.set_input_responses(None);
                params.set_request_state(input_required.request_state);
            }
        }
    }
}
