//! The tasks extension on the client: a `tools/call` the server turns into a task is followed to
//! its end — polled at the server's `pollIntervalMs` or listened to on `subscriptions/listen` —
//! and its input requests are answered by the same elicitation, sampling and roots callbacks as
//! the input-required loop, through `tasks/update`.
//!
//! Enable it with [`ClientBuilder::tasks`]: the client then declares
//! `io.modelcontextprotocol/tasks` on every request and accepts `resultType: "task"`.
//! [`Client::call_tool`] stays the same call — it returns the final result however long the
//! task takes. [`RequestOptions::on_task_status`] reports each change of the task (status,
//! `statusMessage`) on the way, e.g. for a progress display. Dropping the call cancels the
//! task (`tasks/cancel`, sent in the background).
//!
//! To keep a task across client restarts, use the parts: [`Client::start_tool`] returns the
//! handle without waiting, [`Client::wait_task`] follows any task by id, and
//! [`Client::get_task`] / [`Client::update_task`] / [`Client::cancel_task`] are the raw methods.
//!
//! ```no_run
//! use mcp::client::{Client, RequestOptions, TaskSettings};
//! use mcp::types::{CallToolRequestParams, ElicitResult};
//!
//! # async fn demo() -> Result<(), mcp::client::ClientError> {
//! let client = Client::builder()
//!     .tasks(TaskSettings::new())
//!     .on_elicitation(|_context, _params| async { Ok(ElicitResult::decline()) })
//!     .connect_http("http://127.0.0.1:8000/mcp")
//!     .await?;
//! let options = RequestOptions::new().on_task_status(|task| {
//!     eprintln!("{}: {}", task.status, task.status_message.as_deref().unwrap_or(""));
//! });
//! let result = client
//!     .call_tool_with(CallToolRequestParams::new("export", None), options)
//!     .await?;
//! println!("{:?}", result.first_text());
//! # Ok(()) }
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use mcp_types::methods::SubscriptionsListen;
use mcp_types::tasks::{
    CancelTask, CancelTaskRequestParams, CreateTaskResult, DetailedTask, GetTask,
    GetTaskRequestParams, TaskIdsFilter as _, TaskStatus, UpdateTask, UpdateTaskRequestParams,
};
use mcp_types::{
    CallToolRequestParams, CallToolResult, InputResponses, SubscriptionFilter,
    SubscriptionsListenRequestParams,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::api::Client;
use super::builder::ClientBuilder;
use super::error::ClientError;
use super::input_loop::{CallBudget, answer_all};
use super::session::{RequestOptions, RoundOutcome, Session};

/// How the client learns that a task changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskFollow {
    /// `tasks/get` at the server's suggested `pollIntervalMs`.
    #[default]
    Poll,
    /// `notifications/tasks` on a `subscriptions/listen` stream opened with the task's id, with
    /// a slow `tasks/get` as a safety net (and as the fallback when the stream ends).
    Listen,
}

/// How the client handles tasks ([`ClientBuilder::tasks`]).
#[derive(Debug, Clone)]
pub struct TaskSettings {
    pub(crate) follow: TaskFollow,
    pub(crate) min_interval: Duration,
    pub(crate) max_interval: Duration,
    pub(crate) default_interval: Duration,
    pub(crate) timeout: Option<Duration>,
    pub(crate) cancel_on_drop: bool,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskSettings {
    /// Polling, at the server's interval bounded to 50 ms – 30 s (1 s when it suggests none),
    /// no time bound, cancel on drop.
    pub fn new() -> Self {
        Self {
            follow: TaskFollow::Poll,
            min_interval: Duration::from_millis(50),
            max_interval: Duration::from_secs(30),
            default_interval: Duration::from_secs(1),
            timeout: None,
            cancel_on_drop: true,
        }
    }

    /// How to learn about changes.
    #[must_use]
    pub fn follow(mut self, follow: TaskFollow) -> Self {
        self.follow = follow;
        self
    }

    /// Bounds on the polling interval, whatever the server suggests.
    #[must_use]
    pub fn poll_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.min_interval = min;
        self.max_interval = max.max(min);
        self
    }

    /// Gives up following a task after this long ([`ClientError::Timeout`]; the task is
    /// cancelled unless [`TaskSettings::cancel_on_drop`] is off).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether a call dropped (or timed out) before its task ended sends `tasks/cancel`
    /// (default on).
    #[must_use]
    pub fn cancel_on_drop(mut self, cancel: bool) -> Self {
        self.cancel_on_drop = cancel;
        self
    }

    fn interval(&self, suggested: Option<u64>) -> Duration {
        suggested
            .map_or(self.default_interval, Duration::from_millis)
            .clamp(self.min_interval, self.max_interval)
    }
}

/// Receives every change of a task a call follows (status, `statusMessage`, input requests).
pub type TaskStatusCallback = Arc<dyn Fn(&DetailedTask) + Send + Sync>;

/// What [`Client::start_tool`] got back: the result at once, or a task to follow.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolStart {
    /// The server answered synchronously.
    Complete(CallToolResult),
    /// The server runs the call as a task.
    Task(CreateTaskResult),
}

impl ClientBuilder {
    /// Handles tasks: declares `io.modelcontextprotocol/tasks` on every request, accepts
    /// `resultType: "task"`, and follows tasks to their end in [`Client::call_tool`].
    #[must_use]
    pub fn tasks(mut self, settings: TaskSettings) -> Self {
        self.tasks = Some(settings);
        self
    }
}

impl RequestOptions {
    /// Reports each change of the task a `tools/call` turns into (status, `statusMessage`,
    /// input requests), on the calling task.
    #[must_use]
    pub fn on_task_status(
        mut self,
        callback: impl Fn(&DetailedTask) + Send + Sync + 'static,
    ) -> Self {
        self.task_status = Some(Arc::new(callback));
        self
    }
}

impl Session {
    /// `tasks/get`.
    ///
    /// # Errors
    /// See [`ClientError`]; an unknown task is a `-32602` [`ClientError::Rpc`].
    pub async fn get_task(&self, task_id: &str) -> Result<DetailedTask, ClientError> {
        match self
            .request::<GetTask>(GetTaskRequestParams::new(task_id), &RequestOptions::new())
            .await?
        {
            RoundOutcome::Complete(result) => Ok(result.into()),
            RoundOutcome::InputRequired(_) => Err(protocol("tasks/get answered input_required")),
        }
    }

    /// `tasks/update`: answers (some of) a task's input requests.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: InputResponses,
    ) -> Result<(), ClientError> {
        self.request::<UpdateTask>(
            UpdateTaskRequestParams::new(task_id, responses),
            &RequestOptions::new(),
        )
        .await
        .map(|_| ())
    }

    /// `tasks/cancel` (cooperative: the task may still end otherwise).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), ClientError> {
        self.request::<CancelTask>(
            CancelTaskRequestParams::new(task_id),
            &RequestOptions::new(),
        )
        .await
        .map(|_| ())
    }
}

impl Client {
    /// `tasks/get`: the task as it is now.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_task(&self, task_id: &str) -> Result<DetailedTask, ClientError> {
        self.session().get_task(task_id).await
    }

    /// `tasks/update`: answers (some of) a task's input requests yourself.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: InputResponses,
    ) -> Result<(), ClientError> {
        self.session().update_task(task_id, responses).await
    }

    /// `tasks/cancel`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), ClientError> {
        self.session().cancel_task(task_id).await
    }

    /// Calls a tool (running the input-required loop) but does not wait for a task: returns its
    /// handle, to follow now or later — possibly from another process — with
    /// [`Client::wait_task`].
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn start_tool(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Result<ToolStart, ClientError> {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ClientError::InvalidArgument(format!(
                    "tool arguments must be an object, not {other}"
                )));
            }
        };
        match self
            .run_tool_loop(
                CallToolRequestParams::new(name, arguments),
                None,
                &RequestOptions::new(),
                &mut CallBudget::default(),
            )
            .await
        {
            Ok(result) => Ok(ToolStart::Complete(result)),
            Err(ClientError::TaskCreated(task)) => Ok(ToolStart::Task(*task)),
            Err(error) => Err(error),
        }
    }

    /// Follows task `task_id` to its end, answering its input requests with this client's
    /// callbacks: its `completed` result, `failed` as [`ClientError::Rpc`] with the task's
    /// error, `cancelled` as [`ClientError::TaskCancelled`].
    ///
    /// # Errors
    /// As above, and see [`ClientError`].
    pub async fn wait_task(
        &self,
        task_id: &str,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        self.follow(task_id, None, options, &mut CallBudget::default())
            .await
    }

    /// Follows a task created by a `tools/call` (the hook of [`Client::call_tool`]); its
    /// creation is the first status reported. The call's budget (rounds, sampling) goes on.
    pub(crate) async fn follow_task(
        &self,
        created: &CreateTaskResult,
        options: &RequestOptions,
        budget: &mut CallBudget,
    ) -> Result<CallToolResult, ClientError> {
        let initial = DetailedTask::from_task(created.task());
        self.follow(&created.task_id, Some(initial), options, budget)
            .await
    }

    async fn follow(
        &self,
        task_id: &str,
        initial: Option<DetailedTask>,
        options: &RequestOptions,
        budget: &mut CallBudget,
    ) -> Result<CallToolResult, ClientError> {
        let settings = self
            .session()
            .inner
            .config
            .tasks
            .clone()
            .unwrap_or_default();
        let mut guard = CancelGuard {
            session: settings.cancel_on_drop.then(|| self.session().clone()),
            task_id: task_id.to_owned(),
        };
        let follow = Follow {
            client: self,
            settings: &settings,
            options,
            task_id,
            budget,
        };
        let outcome = match settings.timeout {
            None => Box::pin(follow.run(initial)).await,
            Some(after) => tokio::time::timeout(after, Box::pin(follow.run(initial)))
                .await
                .unwrap_or(Err(ClientError::Timeout {
                    operation: "task",
                    after,
                })),
        };
        if !matches!(outcome, Err(ClientError::Timeout { .. })) {
            // The task ended (or the follow failed for a reason unrelated to time): leave it be.
            guard.session = None;
        }
        outcome
    }
}

/// Sends `tasks/cancel` in the background when a follow is abandoned.
struct CancelGuard {
    session: Option<Session>,
    task_id: String,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let task_id = std::mem::take(&mut self.task_id);
        handle.spawn(async move {
            if let Err(error) = session.cancel_task(&task_id).await {
                tracing::debug!(task = %task_id, %error, "tasks/cancel of an abandoned task failed");
            }
        });
    }
}

/// One task being followed.
struct Follow<'a> {
    client: &'a Client,
    settings: &'a TaskSettings,
    options: &'a RequestOptions,
    task_id: &'a str,
    /// The call's limits so far: each batch of fresh questions is a round.
    budget: &'a mut CallBudget,
}

impl Follow<'_> {
    async fn run(self, initial: Option<DetailedTask>) -> Result<CallToolResult, ClientError> {
        let suggested = initial.as_ref().and_then(|t| t.poll_interval_ms);
        if let (Some(task), Some(callback)) = (&initial, &self.options.task_status) {
            callback(task);
        }
        let session = self.client.session();
        // Listen mode: a subscriptions/listen stream for this task, kept open alongside.
        let (watch, listen) = match self.settings.follow {
            TaskFollow::Poll => (None, None),
            TaskFollow::Listen => {
                let (watch, updates) = session.inner.shared.watch_task(self.task_id);
                let mut filter = SubscriptionFilter::default();
                filter.set_task_ids(Some(vec![self.task_id.to_owned()]));
                let params = SubscriptionsListenRequestParams::new(filter);
                let session = session.clone();
                let stream = tokio::spawn(async move {
                    session
                        .request::<SubscriptionsListen>(params, &RequestOptions::new())
                        .await
                });
                (Some((watch, updates)), Some(AbortOnDrop(stream)))
            }
        };
        let (mut updates, _watch) = match watch {
            Some((watch, updates)) => (Some(updates), Some(watch)),
            None => (None, None),
        };
        let mut interval = self.settings.interval(suggested);
        let mut answered = BTreeSet::new();
        let mut last: Option<DetailedTask> = initial;
        let mut next = Some(session.get_task(self.task_id).await?);
        loop {
            let task = match next.take() {
                Some(task) => task,
                None => {
                    // Listening: the stream brings changes; polling is the slow safety net.
                    let pause = match &updates {
                        Some(_) if !listen.as_ref().is_some_and(AbortOnDrop::finished) => {
                            (interval * 5).max(Duration::from_secs(5))
                        }
                        _ => interval,
                    };
                    let pushed = async {
                        match updates.as_mut() {
                            Some(rx) => rx.recv().await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        Some(task) = pushed => task,
                        () = tokio::time::sleep(pause) => session.get_task(self.task_id).await?,
                    }
                }
            };
            if task.task_id != self.task_id {
                continue;
            }
            if last.as_ref() != Some(&task) {
                if let Some(callback) = &self.options.task_status {
                    callback(&task);
                }
                last = Some(task.clone());
            }
            interval = self.settings.interval(task.poll_interval_ms.or(suggested));
            let status = &task.status;
            if *status == TaskStatus::COMPLETED {
                let result = task.result.unwrap_or_default();
                return serde_json::from_value(Value::Object(result)).map_err(|e| {
                    protocol(&format!(
                        "completed task result is not a CallToolResult: {e}"
                    ))
                });
            }
            if *status == TaskStatus::FAILED {
                return Err(ClientError::Rpc(task.error.unwrap_or_else(|| {
                    mcp_types::ErrorObject::internal("the task failed without an error")
                })));
            }
            if *status == TaskStatus::CANCELLED {
                return Err(ClientError::TaskCancelled {
                    task_id: self.task_id.to_owned(),
                });
            }
            if *status == TaskStatus::INPUT_REQUIRED {
                let fresh: mcp_types::InputRequests = task
                    .input_requests
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if !fresh.is_empty() {
                    let limits = self.client.limits();
                    self.budget.next_round(limits)?;
                    let keys: Vec<String> = fresh.keys().cloned().collect();
                    let answers = Box::pin(answer_all(
                        &session.inner.shared.callbacks,
                        fresh,
                        session.protocol_version(),
                        limits,
                        &mut *self.budget,
                    ))
                    .await?;
                    session.update_task(self.task_id, answers).await?;
                    answered.extend(keys);
                    // Look again at once: the answers usually move the task on.
                    next = Some(session.get_task(self.task_id).await?);
                }
            }
        }
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    fn finished(&self) -> bool {
        self.0.is_finished()
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn protocol(message: &str) -> ClientError {
    ClientError::Protocol(message.to_owned())
}

/// Where `notifications/tasks` for a watched task go (listen mode).
pub(crate) type TaskWatchers =
    std::sync::Mutex<std::collections::HashMap<String, mpsc::UnboundedSender<DetailedTask>>>;

/// Unregisters a watch when dropped.
pub(crate) struct TaskWatch {
    pub(crate) shared: Arc<super::shared::Shared>,
    pub(crate) task_id: String,
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        self.shared
            .task_watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.task_id);
    }
}
