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
//! use modelctx::client::{Client, RequestOptions, TaskSettings};
//! use modelctx::types::{CallToolRequestParams, ElicitResult};
//!
//! # async fn demo() -> Result<(), modelctx::client::ClientError> {
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
//!
//! [`Client::call_tool`]: super::Client::call_tool
//! [`Client::start_tool`]: super::Client::start_tool
//! [`Client::wait_task`]: super::Client::wait_task
//! [`Client::get_task`]: super::Client::get_task
//! [`Client::update_task`]: super::Client::update_task
//! [`Client::cancel_task`]: super::Client::cancel_task

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx_types::jsonrpc::Notification;
use modelctx_types::methods::SubscriptionsListen;
use modelctx_types::tasks::{
    CancelTask, CancelTaskRequestParams, CreateTaskResult, DetailedTask, GetTask,
    GetTaskRequestParams, TaskIdsFilter as _, TaskStatus, TaskStatusNotification, UpdateTask,
    UpdateTaskRequestParams,
};
use modelctx_types::{
    CallToolResult, InputResponses, NotificationMethod as _, SubscriptionFilter,
    SubscriptionsListenRequestParams,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::callbacks::Callbacks;
use super::error::ClientError;
use super::input_loop::{CallBudget, LoopLimits, answer_all};
use super::session::{RequestOptions, RoundOutcome, Session};
use super::shared::Route;
use super::task_cancel::CancelGuard;
use crate::sync::lock;

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

/// How the client handles tasks ([`ClientBuilder::tasks`](super::ClientBuilder::tasks)).
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

/// What [`Client::start_tool`] got back: the result at once, or a task to follow.
///
/// [`Client::start_tool`]: super::Client::start_tool
#[derive(Debug, Clone, PartialEq)]
pub enum ToolStart {
    /// The server answered synchronously.
    Complete(CallToolResult),
    /// The server runs the call as a task.
    Task(CreateTaskResult),
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

/// What following a task needs of the client: its session, callbacks, limits and task
/// settings (`Client::wait_task` and the task a `Client::call_tool` becomes).
pub(crate) struct Follower<'a> {
    pub(crate) session: &'a Session,
    pub(crate) callbacks: &'a Callbacks,
    pub(crate) limits: &'a LoopLimits,
    pub(crate) settings: &'a TaskSettings,
}

impl Follower<'_> {
    /// Follows task `task_id` to its end; `initial` (a task just created) is the first status
    /// reported. The call's budget (rounds, sampling) goes on.
    pub(crate) async fn follow(
        &self,
        task_id: &str,
        initial: Option<DetailedTask>,
        options: &RequestOptions,
        budget: &mut CallBudget,
    ) -> Result<CallToolResult, ClientError> {
        let settings = self.settings;
        let guard = CancelGuard::new(
            settings.cancel_on_drop.then(|| self.session.clone()),
            task_id,
            |session, task_id| Box::pin(async move { session.cancel_task(&task_id).await }),
        );
        let follow = Follow {
            follower: self,
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
        guard.settle(&outcome);
        outcome
    }
}

/// One task being followed.
struct Follow<'a> {
    follower: &'a Follower<'a>,
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
        let Follower {
            session,
            callbacks,
            limits,
            settings,
        } = *self.follower;
        // Listen mode: a subscriptions/listen stream for this task, kept open alongside.
        let (watch, listen) = match settings.follow {
            TaskFollow::Poll => (None, None),
            TaskFollow::Listen => {
                let (watch, updates) = session
                    .inner
                    .shared
                    .route::<TaskWatchers>()
                    .watch(self.task_id);
                let mut filter = SubscriptionFilter::default();
                filter.set_task_ids(Some(vec![self.task_id.to_owned()]));
                let params = SubscriptionsListenRequestParams::new(filter);
                let session = session.clone();
                let stream = tokio::spawn(async move {
                    session
                        .request::<SubscriptionsListen>(params, &RequestOptions::new())
                        .await
                });
                (Some((watch, updates)), Some(AbortOnDropHandle::new(stream)))
            }
        };
        let (mut updates, _watch) = match watch {
            Some((watch, updates)) => (Some(updates), Some(watch)),
            None => (None, None),
        };
        let mut interval = settings.interval(suggested);
        let mut answered = BTreeSet::new();
        let mut last: Option<DetailedTask> = initial;
        let mut next = Some(session.get_task(self.task_id).await?);
        loop {
            let task = match next.take() {
                Some(task) => task,
                None => {
                    // Listening: the stream brings changes; polling is the slow safety net.
                    let pause = match &updates {
                        Some(_) if !listen.as_ref().is_some_and(AbortOnDropHandle::is_finished) => {
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
            interval = settings.interval(task.poll_interval_ms.or(suggested));
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
                    modelctx_types::ErrorObject::internal("the task failed without an error")
                })));
            }
            if *status == TaskStatus::CANCELLED {
                return Err(ClientError::TaskCancelled {
                    task_id: self.task_id.to_owned(),
                });
            }
            if *status == TaskStatus::INPUT_REQUIRED {
                let fresh: modelctx_types::InputRequests = task
                    .input_requests
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if !fresh.is_empty() {
                    self.budget.next_round(limits)?;
                    let keys: Vec<String> = fresh.keys().cloned().collect();
                    let answers = Box::pin(answer_all(
                        callbacks,
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

fn protocol(message: &str) -> ClientError {
    ClientError::Protocol(message.to_owned())
}

/// Where `notifications/tasks` for a watched task go (listen mode): a route of the core.
#[derive(Default)]
pub(crate) struct TaskWatchers(Mutex<HashMap<String, mpsc::UnboundedSender<DetailedTask>>>);

impl TaskWatchers {
    /// Sends the `notifications/tasks` of `task_id` to the returned receiver until the guard
    /// drops.
    fn watch(self: Arc<Self>, task_id: &str) -> (TaskWatch, mpsc::UnboundedReceiver<DetailedTask>) {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.0).insert(task_id.to_owned(), tx);
        let guard = TaskWatch {
            watchers: self,
            task_id: task_id.to_owned(),
        };
        (guard, rx)
    }
}

impl Route for TaskWatchers {
    /// After `Client::listen`'s subscriptions (order 1): a notification both would take goes
    /// to the subscription.
    fn order(&self) -> u8 {
        2
    }

    fn route(&self, notification: &Notification) -> bool {
        if notification.method != TaskStatusNotification::NAME {
            return false;
        }
        let Ok(task) = notification.params_as::<DetailedTask>() else {
            return false;
        };
        let watcher = lock(&self.0).get(&task.task_id).cloned();
        match watcher {
            Some(watcher) => {
                let _ = watcher.send(task);
                true
            }
            None => false,
        }
    }
}

/// Unregisters a watch when dropped.
struct TaskWatch {
    watchers: Arc<TaskWatchers>,
    task_id: String,
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        lock(&self.watchers.0).remove(&self.task_id);
    }
}
