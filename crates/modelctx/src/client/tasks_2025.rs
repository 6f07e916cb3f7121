//! The experimental tasks of 2025-11-25 (SEP-1686) on a handshake-era session, client side:
//! task-augmented `tools/call` ([`modelctx_types::tasks_2025`] for the wire shapes).
//!
//! This is **not** the 2026-07-28 tasks extension of `client/tasks.rs`: there the server decides
//! to run a call as a task and inlines the result in `tasks/get`; here the client asks for a task
//! (`params.task`), polls `tasks/get` and fetches the result — or the error — with
//! `tasks/result`, which also carries the server's questions while the task is
//! `input_required`. Those questions are ordinary back-channel requests, answered by the same
//! callbacks as any other.
//!
//! [`Client::call_tool`](super::Client::call_tool) does it by itself in a 2025-11-25 session
//! whose server declares `tasks.requests.tools.call`: a tool listed with
//! `execution.taskSupport: "required"` is always called as a task, an `"optional"` one when
//! [`RequestOptions::as_task_2025`] asks. [`RequestOptions::on_task_2025_status`] reports each
//! status. Dropping the call (or running out of [`Tasks2025Settings::timeout`]) sends
//! `tasks/cancel`.
//!
//! What a server can make this cost is bounded: the polling interval it suggests is clamped to
//! [`Tasks2025Settings::poll_bounds`] (50 ms – 30 s), and the whole task — polls and the
//! `tasks/result` wait included — to [`Tasks2025Settings::timeout`] (10 minutes by default;
//! [`ClientBuilder::loop_timeout`](super::ClientBuilder::loop_timeout) bounds it too).
//!
//! The other direction — the server asking the client to run `elicitation/create` or
//! `sampling/createMessage` as a task — is opt-in with
//! [`ClientBuilder::tasks_2025`](super::ClientBuilder::tasks_2025) (`client/tasks_2025_table.rs`).

use std::sync::Arc;
use std::time::Duration;

use modelctx_types::tasks_2025::{
    CallToolAsTask, CancelTask, CreateTaskResult, GetTask, GetTaskPayload, ListTasks,
    ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus, TaskSupport,
    server_runs_tool_tasks,
};
use modelctx_types::{CallToolRequestParams, CallToolResult, Extra, PaginatedRequestParams};
use serde_json::Value;
use tokio::time::Instant;

use super::error::ClientError;
use super::session::{RequestOptions, RoundOutcome, Session};
use super::task_cancel::CancelGuard;
use super::tasks_2025_table::TableLimits;

/// How the client handles the 2025-11-25 experimental tasks
/// ([`ClientBuilder::tasks_2025`](super::ClientBuilder::tasks_2025)).
#[derive(Debug, Clone)]
pub struct Tasks2025Settings {
    pub(crate) min_interval: Duration,
    pub(crate) max_interval: Duration,
    pub(crate) default_interval: Duration,
    pub(crate) timeout: Duration,
    pub(crate) ttl: Option<u64>,
    pub(crate) cancel_on_drop: bool,
    /// Client-side tasks: the most tasks kept at once (running or finished).
    pub(crate) max_tasks: usize,
    /// Client-side tasks: the longest a finished task's result is kept.
    pub(crate) max_retention: Duration,
    /// Client-side tasks: the polling interval suggested to the server.
    pub(crate) suggested_interval: Duration,
}

impl Default for Tasks2025Settings {
    fn default() -> Self {
        Self::new()
    }
}

impl Tasks2025Settings {
    /// Polling at the server's interval bounded to 50 ms – 30 s (1 s when it suggests none);
    /// a task may take 10 minutes; no `ttl` asked; cancel on drop. Client-side tasks: at most
    /// 16 kept, a finished one at most 5 minutes, polling suggested every 500 ms.
    pub fn new() -> Self {
        Self {
            min_interval: Duration::from_millis(50),
            max_interval: Duration::from_secs(30),
            default_interval: Duration::from_secs(1),
            timeout: Duration::from_secs(600),
            ttl: None,
            cancel_on_drop: true,
            max_tasks: 16,
            max_retention: Duration::from_secs(300),
            suggested_interval: Duration::from_millis(500),
        }
    }

    /// Bounds on the polling interval, whatever the server suggests.
    #[must_use]
    pub fn poll_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.min_interval = min;
        self.max_interval = max.max(min);
        self
    }

    /// Gives up a task after this long ([`ClientError::Timeout`]; the task is cancelled unless
    /// [`Tasks2025Settings::cancel_on_drop`] is off).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The `ttl` asked of the server for each task, in milliseconds (none by default: the
    /// server's choice).
    #[must_use]
    pub fn ttl(mut self, ttl_ms: u64) -> Self {
        self.ttl = Some(ttl_ms);
        self
    }

    /// Whether a call dropped (or timed out) before its task ended sends `tasks/cancel`
    /// (default on).
    #[must_use]
    pub fn cancel_on_drop(mut self, cancel: bool) -> Self {
        self.cancel_on_drop = cancel;
        self
    }

    /// Client-side tasks: at most `max` tasks kept at once; a task-augmented request beyond
    /// that is refused with an error (default 16).
    #[must_use]
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max.max(1);
        self
    }

    /// Client-side tasks: a finished task's result is kept for the `ttl` the server asked,
    /// but never longer than this (default 5 minutes).
    #[must_use]
    pub fn max_retention(mut self, retention: Duration) -> Self {
        self.max_retention = retention;
        self
    }

    /// The bounds of the client-side task table.
    pub(crate) fn table_limits(&self) -> TableLimits {
        TableLimits {
            max_tasks: self.max_tasks,
            max_retention: self.max_retention,
            suggested_interval: self.suggested_interval,
        }
    }

    pub(crate) fn interval(&self, suggested: Option<u64>) -> Duration {
        suggested
            .map_or(self.default_interval, Duration::from_millis)
            .clamp(self.min_interval, self.max_interval)
    }
}

impl RequestOptions {
    /// 2025-11-25: calls a tool whose `execution.taskSupport` is `"optional"` as a task (a
    /// `"required"` one always is).
    #[must_use]
    pub fn as_task_2025(mut self) -> Self {
        self.task_2025 = true;
        self
    }

    /// 2025-11-25: reports each status of the task a `tools/call` runs as, on the calling task.
    #[must_use]
    pub fn on_task_2025_status(mut self, callback: impl Fn(&Task) + Send + Sync + 'static) -> Self {
        self.task_2025_status = Some(Arc::new(callback));
        self
    }
}

/// What a task-augmented `tools/call` got back.
enum Started {
    Task(CreateTaskResult),
    /// A server that ignored `params.task` answered at once.
    Complete(CallToolResult),
}

/// The raw 2025-11-25 task methods, for callers that follow a task themselves.
impl Session {
    /// `tasks/get` (2025-11-25).
    ///
    /// # Errors
    /// See [`ClientError`]; an unknown task is a [`ClientError::Rpc`].
    pub async fn get_task_2025(&self, task_id: &str) -> Result<Task, ClientError> {
        only_complete(
            self.request::<GetTask>(TaskIdParams::new(task_id), &RequestOptions::new())
                .await?,
        )
    }

    /// `tasks/result` (2025-11-25): waits for the task's end and returns the original request's
    /// result; its error is [`ClientError::Rpc`]. `timeout` bounds the wait (else the client's
    /// request timeout does).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn task_result_2025(
        &self,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<Extra, ClientError> {
        let mut options = RequestOptions::new();
        options.timeout = timeout;
        only_complete(
            self.request::<GetTaskPayload>(TaskIdParams::new(task_id), &options)
                .await?,
        )
    }

    /// `tasks/list` (2025-11-25), one page.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tasks_2025(
        &self,
        cursor: Option<String>,
    ) -> Result<ListTasksResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        only_complete(
            self.request::<ListTasks>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// `tasks/cancel` (2025-11-25): the task as the server left it.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn cancel_task_2025(&self, task_id: &str) -> Result<Task, ClientError> {
        only_complete(
            self.request::<CancelTask>(TaskIdParams::new(task_id), &RequestOptions::new())
                .await?,
        )
    }

    /// Whether a `tools/call` of `name` goes as a task: the server runs tool tasks, and the
    /// tool requires it (or allows it and the caller asked). A tool not seen in `tools/list`
    /// yet makes the client read it once.
    pub(crate) async fn wants_task_2025(&self, name: &str, asked: bool) -> bool {
        let runs_tasks = self
            .server_capabilities()
            .is_some_and(|caps| server_runs_tool_tasks(&caps));
        if !runs_tasks {
            return false;
        }
        let mut support = self.inner.tools.task_support(name);
        if support.is_none() && self.inner.tools.first_look_task_support(name) {
            if let Err(error) = Box::pin(self.refresh_tools()).await {
                tracing::debug!(tool = %name, %error, "tools/list for taskSupport failed");
            }
            support = self.inner.tools.task_support(name);
        }
        match support {
            Some(support) if support == TaskSupport::REQUIRED => true,
            Some(support) if support == TaskSupport::OPTIONAL => asked,
            _ => false,
        }
    }

    /// Sends `tools/call` with `params.task`.
    async fn start_task_2025(
        &self,
        mut params: CallToolRequestParams,
        ttl: Option<u64>,
        options: &RequestOptions,
    ) -> Result<Started, ClientError> {
        let mut task = TaskMetadata::default();
        task.ttl = ttl;
        let task = serde_json::to_value(task).map_err(|e| ClientError::Protocol(e.to_string()))?;
        params.extra.insert("task".to_owned(), task);
        let raw = only_complete(
            self.request_with_headers::<CallToolAsTask>(&mut params, options, Vec::new())
                .await?,
        )?;
        let raw = Value::Object(raw);
        if raw.get("task").is_some() {
            serde_json::from_value(raw)
                .map(Started::Task)
                .map_err(|e| protocol(&format!("malformed CreateTaskResult: {e}")))
        } else {
            serde_json::from_value(raw)
                .map(Started::Complete)
                .map_err(|e| protocol(&format!("malformed tools/call result: {e}")))
        }
    }

    /// A task-augmented `tools/call`, followed to its end (see the module docs).
    pub(crate) async fn call_tool_as_task_2025(
        &self,
        params: CallToolRequestParams,
        settings: &Tasks2025Settings,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let deadline = Instant::now() + settings.timeout;
        let follow = async {
            let created = match self.start_task_2025(params, settings.ttl, options).await? {
                Started::Complete(result) => return Ok(result),
                Started::Task(created) => created,
            };
            let guard = CancelGuard::new(
                settings.cancel_on_drop.then(|| self.clone()),
                &created.task.task_id,
                |session, task_id| {
                    Box::pin(async move { session.cancel_task_2025(&task_id).await.map(drop) })
                },
            );
            let outcome = self
                .follow_task_2025(created.task, settings, options, deadline)
                .await;
            guard.settle(&outcome);
            outcome
        };
        tokio::time::timeout_at(deadline, follow)
            .await
            .unwrap_or(Err(ClientError::Timeout {
                operation: "task",
                after: settings.timeout,
            }))
    }

    /// Polls a task until it needs input or ends, then takes its result from `tasks/result`.
    async fn follow_task_2025(
        &self,
        created: Task,
        settings: &Tasks2025Settings,
        options: &RequestOptions,
        deadline: Instant,
    ) -> Result<CallToolResult, ClientError> {
        let report = |task: &Task| {
            if let Some(callback) = &options.task_2025_status {
                callback(task);
            }
        };
        report(&created);
        let task_id = created.task_id.clone();
        let mut last = created;
        while last.status != TaskStatus::INPUT_REQUIRED
            && last.status != TaskStatus::COMPLETED
            && last.status != TaskStatus::FAILED
        {
            if last.status == TaskStatus::CANCELLED {
                return Err(ClientError::TaskCancelled { task_id });
            }
            tokio::time::sleep(settings.interval(last.poll_interval)).await;
            let task = self.get_task_2025(&task_id).await?;
            if task.task_id != task_id {
                return Err(protocol("tasks/get answered for another task"));
            }
            if !same_status(&task, &last) {
                report(&task);
            }
            last = task;
        }
        // Needs input or ended: `tasks/result` carries the questions and then the outcome.
        let remaining = deadline.saturating_duration_since(Instant::now());
        let payload = self.task_result_2025(&task_id, Some(remaining)).await;
        if !last.status.is_terminal() {
            // Show how it ended (a failed look is no reason to drop the result).
            if let Ok(task) = self.get_task_2025(&task_id).await
                && task.task_id == task_id
                && !same_status(&task, &last)
            {
                report(&task);
            }
        }
        let result = payload?;
        serde_json::from_value(Value::Object(result))
            .map_err(|e| protocol(&format!("the task's result is not a CallToolResult: {e}")))
    }
}

/// Whether two looks at a task show the same thing to a user.
fn same_status(a: &Task, b: &Task) -> bool {
    a.status == b.status && a.status_message == b.status_message
}

fn only_complete<T>(outcome: RoundOutcome<T>) -> Result<T, ClientError> {
    match outcome {
        RoundOutcome::Complete(result) => Ok(result),
        RoundOutcome::InputRequired(_) => Err(protocol("a task method answered input_required")),
    }
}

fn protocol(message: &str) -> ClientError {
    ClientError::Protocol(message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever interval a server suggests, polling stays within the bounds.
    #[test]
    fn the_poll_interval_is_clamped() {
        let settings = Tasks2025Settings::new();
        assert_eq!(settings.interval(Some(0)), Duration::from_millis(50));
        assert_eq!(settings.interval(Some(250)), Duration::from_millis(250));
        assert_eq!(settings.interval(Some(u64::MAX)), Duration::from_secs(30));
        assert_eq!(settings.interval(None), Duration::from_secs(1));
        let tight = settings.poll_bounds(Duration::from_millis(100), Duration::from_millis(10));
        assert_eq!(tight.interval(Some(1)), Duration::from_millis(100));
        assert_eq!(tight.interval(Some(1000)), Duration::from_millis(100));
    }
}
