//! What a task tool is made of: its handler (a state machine over the answers received so far),
//! the optional synchronous preflight, and the context a handler runs with.

use std::future::Future;
use std::sync::Arc;

use modelctx_types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ElicitAction, ElicitResult,
    ErrorObject, Extra, InputRequest, InputRequests, InputRequiredResult, InputResponse,
    InputResponses, Tool,
};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::server::{BoxFuture, RequestContext};

/// Whether a tool runs as a task. The server alone decides per call; the client only declares
/// that it understands tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: always answered synchronously.
    Forbidden,
    /// A task for clients that declare the extension; run synchronously for the others.
    #[default]
    Optional,
    /// Only as a task: clients that do not declare the extension get `-32021`.
    Required,
}

/// What one run of a task handler ended with.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStep {
    /// The final tool result (`isError: true` included: the task still *completes*).
    Complete(CallToolResult),
    /// The task needs input: it waits in `input_required` until every request is answered
    /// (through `tasks/update`, on any instance), then the handler runs again with the answers.
    Ask {
        /// The questions, under keys never used before in this task.
        requests: InputRequests,
        /// A checkpoint to resume from (`None` keeps the previous one).
        state: Option<Value>,
    },
}

impl TaskStep {
    /// Asks one question under `key` (a key this task never used).
    pub fn ask(key: impl Into<String>, request: InputRequest) -> Self {
        Self::Ask {
            requests: [(key.into(), request)].into(),
            state: None,
        }
    }

    /// Adds a question (turns a `Complete` into an `Ask`).
    #[must_use]
    pub fn and_ask(self, key: impl Into<String>, request: InputRequest) -> Self {
        match self {
            Self::Ask {
                mut requests,
                state,
            } => {
                requests.insert(key.into(), request);
                Self::Ask { requests, state }
            }
            Self::Complete(_) => Self::ask(key, request),
        }
    }

    /// Sets the checkpoint saved with the questions.
    #[must_use]
    pub fn with_state(self, new_state: Value) -> Self {
        match self {
            Self::Ask { requests, .. } => Self::Ask {
                requests,
                state: Some(new_state),
            },
            complete @ Self::Complete(_) => complete,
        }
    }
}

impl From<CallToolResult> for TaskStep {
    fn from(result: CallToolResult) -> Self {
        Self::Complete(result)
    }
}

/// What a task handler may return: a [`TaskStep`], a [`CallToolResult`], or a `Result` of
/// either with an error convertible to [`ErrorObject`] (the task then ends `failed`).
pub trait IntoTaskStep {
    /// Converts.
    ///
    /// # Errors
    /// The handler's JSON-RPC error.
    fn into_step(self) -> Result<TaskStep, ErrorObject>;
}

impl IntoTaskStep for TaskStep {
    fn into_step(self) -> Result<TaskStep, ErrorObject> {
        Ok(self)
    }
}

impl IntoTaskStep for CallToolResult {
    fn into_step(self) -> Result<TaskStep, ErrorObject> {
        Ok(TaskStep::Complete(self))
    }
}

impl<X: IntoTaskStep, E: Into<ErrorObject>> IntoTaskStep for Result<X, E> {
    fn into_step(self) -> Result<TaskStep, ErrorObject> {
        self.map_err(Into::into).and_then(IntoTaskStep::into_step)
    }
}

/// The input of one run of a task handler. Runs are repeatable: after a restart, or when input
/// arrives, the handler runs again with the same arguments, the last checkpoint and every
/// answer so far — write it like a multi-round-trip handler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskInput {
    /// The tool's arguments.
    pub arguments: Extra,
    /// The last checkpoint ([`TaskContext::checkpoint`] or [`TaskStep::with_state`]), or the
    /// preflight's [`Preflight::Start`] state.
    pub state: Option<Value>,
    /// Every answer received so far, by key.
    pub responses: InputResponses,
}

impl TaskInput {
    /// The argument `name`.
    pub fn argument(&self, name: &str) -> Option<&Value> {
        self.arguments.get(name)
    }

    /// The answer under `key`.
    pub fn response(&self, key: &str) -> Option<&InputResponse> {
        self.responses.get(key)
    }

    /// The elicitation answer under `key`, if it is one.
    pub fn elicitation(&self, key: &str) -> Option<ElicitResult> {
        self.response(key)?.as_elicit().ok()
    }

    /// The content of an *accepted* elicitation under `key`.
    pub fn accepted(&self, key: &str) -> Option<Extra> {
        let answer = self.elicitation(key)?;
        (answer.action == ElicitAction::Accept).then(|| answer.content.unwrap_or_default())
    }
}

/// Runs a task tool. Async closures `Fn(TaskContext, TaskInput) -> impl Future<Output = impl
/// IntoTaskStep>` implement it.
pub trait TaskHandler: Send + Sync + 'static {
    /// One run: from `input` to the next step.
    fn run(
        &self,
        ctx: TaskContext,
        input: TaskInput,
    ) -> BoxFuture<'static, Result<TaskStep, ErrorObject>>;
}

impl<F, Fut, R> TaskHandler for F
where
    F: Fn(TaskContext, TaskInput) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoTaskStep,
{
    fn run(
        &self,
        ctx: TaskContext,
        input: TaskInput,
    ) -> BoxFuture<'static, Result<TaskStep, ErrorObject>> {
        let future = self(ctx, input);
        Box::pin(async move { future.await.into_step() })
    }
}

/// What the synchronous preflight of a task tool decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Preflight {
    /// Start the task, with this initial checkpoint.
    Start(Option<Value>),
    /// Ask first, through the ordinary multi-round-trip flow on `tools/call` (the spec
    /// recommends resolving such exchanges before a task exists).
    Ask(InputRequiredResult),
    /// No task needed: this is the result (the immediate-result shortcut).
    Complete(CallToolResult),
}

/// What a preflight may return: a [`Preflight`], or a `Result` of one.
pub trait IntoPreflight {
    /// Converts.
    ///
    /// # Errors
    /// The preflight's JSON-RPC error (sent as the `tools/call` error; no task is created).
    fn into_preflight(self) -> Result<Preflight, ErrorObject>;
}

impl IntoPreflight for Preflight {
    fn into_preflight(self) -> Result<Preflight, ErrorObject> {
        Ok(self)
    }
}

impl<E: Into<ErrorObject>> IntoPreflight for Result<Preflight, E> {
    fn into_preflight(self) -> Result<Preflight, ErrorObject> {
        self.map_err(Into::into)
    }
}

/// The synchronous first phase of a task tool, run on `tools/call` before any task exists:
/// an ordinary multi-round-trip handler (its `requestState` is sealed like any other).
pub trait PreflightHandler: Send + Sync + 'static {
    /// Decides how the call proceeds.
    fn check(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Preflight, ErrorObject>>;
}

impl<F, Fut, R> PreflightHandler for F
where
    F: Fn(RequestContext, CallToolRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoPreflight,
{
    fn check(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Preflight, ErrorObject>> {
        let future = self(ctx, params);
        Box::pin(async move { future.await.into_preflight() })
    }
}

/// A tool that may run as a task: its description, how it may run, its handler and optional
/// preflight.
#[derive(Clone)]
pub struct TaskTool {
    pub(crate) tool: Tool,
    pub(crate) support: TaskSupport,
    pub(crate) handler: Arc<dyn TaskHandler>,
    pub(crate) preflight: Option<Arc<dyn PreflightHandler>>,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool")
            .field("tool", &self.tool.name)
            .field("support", &self.support)
            .field("preflight", &self.preflight.is_some())
            .finish_non_exhaustive()
    }
}

impl TaskTool {
    /// A tool run by `handler`, as a task for clients that declare the extension
    /// ([`TaskSupport::Optional`]).
    pub fn new(tool: Tool, handler: impl TaskHandler) -> Self {
        Self {
            tool,
            support: TaskSupport::Optional,
            handler: Arc::new(handler),
            preflight: None,
        }
    }

    /// How the tool may run.
    #[must_use]
    pub fn support(mut self, support: TaskSupport) -> Self {
        self.support = support;
        self
    }

    /// A synchronous first phase (see [`PreflightHandler`]).
    #[must_use]
    pub fn preflight(mut self, handler: impl PreflightHandler) -> Self {
        self.preflight = Some(Arc::new(handler));
        self
    }

    /// The tool's description.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }
}

/// Where a running task's checkpoints and status messages go: the task runtime, which owns the
/// record. A trait so that the handler's side names no runtime (the runtime runs handlers).
pub(crate) trait Checkpoints: Send + Sync + 'static {
    /// Saves a checkpoint and/or a status message for the task `id`.
    fn save<'a>(
        &'a self,
        id: &'a str,
        state: Option<Value>,
        message: Option<String>,
    ) -> BoxFuture<'a, Result<(), ErrorObject>>;
}

/// What a task handler knows and can do: the task it runs (none when a client without the
/// extension is served synchronously), the creating client's capabilities, cancellation, and
/// durable checkpoints and status messages.
#[derive(Clone)]
pub struct TaskContext {
    inner: Arc<ContextInner>,
}

struct ContextInner {
    task_id: Option<String>,
    runtime: Option<Arc<dyn Checkpoints>>,
    capabilities: ClientCapabilities,
    principal: Option<String>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.inner.task_id)
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    pub(crate) fn for_task(
        runtime: Arc<dyn Checkpoints>,
        task_id: String,
        capabilities: ClientCapabilities,
        principal: Option<String>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                task_id: Some(task_id),
                runtime: Some(runtime),
                capabilities,
                principal,
                cancel,
            }),
        }
    }

    pub(crate) fn inline(ctx: &RequestContext) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                task_id: None,
                runtime: None,
                capabilities: ctx.client_capabilities().clone(),
                principal: ctx.principal().map(|p| p.as_str().to_owned()),
                cancel: ctx.cancellation_token().clone(),
            }),
        }
    }

    /// The task id; `None` when the call runs synchronously (a client without the extension).
    pub fn task_id(&self) -> Option<&str> {
        self.inner.task_id.as_deref()
    }

    /// The capabilities the client declared when it called the tool: what the task may ask.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The authenticated principal that called the tool.
    pub fn principal(&self) -> Option<&str> {
        self.inner.principal.as_deref()
    }

    /// Whether the client asked to cancel (`tasks/cancel`, or the synchronous request went
    /// away).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Completes when the client asks to cancel. A handler that ignores it is dropped after the
    /// runtime's cancel grace period.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.inner.cancel.cancelled()
    }

    /// Saves `state` durably: a run resumed after a restart (on any instance) starts from it.
    /// Does nothing for a synchronous call.
    ///
    /// # Errors
    /// `-32603` when the store fails or this instance no longer owns the task.
    pub async fn checkpoint(&self, state: Value) -> Result<(), ErrorObject> {
        match (&self.inner.runtime, &self.inner.task_id) {
            (Some(runtime), Some(id)) => runtime.save(id, Some(state), None).await,
            _ => Ok(()),
        }
    }

    /// Sets the task's `statusMessage` (shown to clients polling or listening), e.g. progress.
    /// Does nothing for a synchronous call.
    ///
    /// # Errors
    /// As [`TaskContext::checkpoint`].
    pub async fn set_status_message(&self, message: impl Into<String>) -> Result<(), ErrorObject> {
        match (&self.inner.runtime, &self.inner.task_id) {
            (Some(runtime), Some(id)) => runtime.save(id, None, Some(message.into())).await,
            _ => Ok(()),
        }
    }
}
