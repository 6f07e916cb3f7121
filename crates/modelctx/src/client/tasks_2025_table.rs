//! Client-side tasks of 2025-11-25 (SEP-1686): a server that sees
//! `capabilities.tasks.requests.{elicitation,sampling}` may send `elicitation/create` or
//! `sampling/createMessage` with `params.task`; the client answers at once with a task handle,
//! runs the callback in the background, and answers the server's `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel` about it from this table.
//!
//! Opt-in ([`ClientBuilder::tasks_2025`](super::ClientBuilder::tasks_2025)); without it the
//! capability is not declared, `params.task` is ignored (the request is answered as usual) and
//! the `tasks/*` methods are unknown.
//!
//! The table is what a hostile server could make the client keep, so it is bounded: at most
//! `max_tasks` tasks (running or finished; past that a task-augmented request is refused with
//! an error), a finished task is kept for the `ttl` the server asked but never longer than
//! `max_retention`, and `tasks/list` is one page of at most `max_tasks`. Tasks are per
//! connection: an id the table does not hold — another connection's, a made-up one, one that
//! expired — is a `-32602`. Running callbacks obey the back-channel's limits like any other
//! (concurrency, the sampling budget).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use modelctx_types::jsonrpc::{Request, encode_error, encode_result};
use modelctx_types::methods::{CreateMessage, Elicit};
use modelctx_types::tasks_2025::{
    CancelTask, CreateTaskResult, GetTask, GetTaskPayload, ListTasks, ListTasksResult,
    RELATED_TASK_META, Task, TaskIdParams, TaskMetadata, TaskStatus,
};
use modelctx_types::{ErrorCode, ErrorObject, Extra, Method as _};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::sync::lock;

/// What a finished task ended with: the callback's result, or the error it answered.
type Outcome = Result<Box<RawValue>, ErrorObject>;

/// The methods the table answers.
pub(crate) const TABLE_METHODS: &[&str] = &[
    GetTask::NAME,
    GetTaskPayload::NAME,
    ListTasks::NAME,
    CancelTask::NAME,
];

/// Which requests may run as tasks: those the capability declares.
pub(crate) fn runs_as_task(method: &str) -> bool {
    method == Elicit::NAME || method == CreateMessage::NAME
}

#[derive(Deserialize)]
struct TaskProbe {
    #[serde(default)]
    task: Option<TaskMetadata>,
}

/// The `params.task` of a request, when it asks to run as a task.
pub(crate) fn task_request(request: &Request) -> Option<TaskMetadata> {
    request.params_as::<TaskProbe>().ok()?.task
}

struct Entry {
    task: Task,
    /// `None` while the callback runs.
    outcome: watch::Sender<Option<Outcome>>,
    /// The running callback, to stop on `tasks/cancel`.
    abort: Option<AbortHandle>,
    /// When a finished task is forgotten.
    expires: Option<Instant>,
    /// How long to keep it once finished.
    keep: Duration,
}

/// The table's bounds (from `Tasks2025Settings`).
#[derive(Debug, Clone)]
pub(crate) struct TableLimits {
    /// The most tasks kept at once, running or finished.
    pub(crate) max_tasks: usize,
    /// The longest a finished task is kept.
    pub(crate) max_retention: Duration,
    /// The polling interval suggested to the server.
    pub(crate) suggested_interval: Duration,
}

/// See the module docs.
pub(crate) struct TaskTable {
    settings: TableLimits,
    entries: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTable")
            .field("tasks", &lock(&self.entries).len())
            .finish_non_exhaustive()
    }
}

fn now_iso() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn unknown(task_id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "Unknown task id {:?}: this client holds no such task (tasks are per connection and \
         expire)",
        truncated(task_id)
    ))
}

/// At most 64 characters of a peer's id, for an error message.
fn truncated(id: &str) -> &str {
    id.char_indices().nth(64).map_or(id, |(at, _)| &id[..at])
}

impl TaskTable {
    pub(crate) fn new(settings: TableLimits) -> Self {
        Self {
            settings,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Forgets the finished tasks whose retention is over.
    fn purge(entries: &mut HashMap<String, Entry>) {
        let now = Instant::now();
        entries.retain(|_, entry| entry.expires.is_none_or(|at| at > now));
    }

    /// Registers a new task for a request that asked for one; refused when the table is full.
    pub(crate) fn create(&self, meta: &TaskMetadata) -> Result<Task, ErrorObject> {
        let task_id = crate::ids::random_hex().map_err(|error| {
            tracing::error!(%error, "no system randomness for a task id");
            ErrorObject::internal("Internal error")
        })?;
        let keep = meta
            .ttl
            .map_or(self.settings.max_retention, Duration::from_millis)
            .min(self.settings.max_retention);
        let now = now_iso();
        let mut task = Task::new(
            task_id.clone(),
            TaskStatus::WORKING,
            now.clone(),
            now,
            Some(u64::try_from(keep.as_millis()).unwrap_or(u64::MAX)),
        );
        task.poll_interval =
            Some(u64::try_from(self.settings.suggested_interval.as_millis()).unwrap_or(u64::MAX));
        let (outcome, _) = watch::channel(None);
        let mut entries = lock(&self.entries);
        Self::purge(&mut entries);
        if entries.len() >= self.settings.max_tasks {
            tracing::warn!(
                max = self.settings.max_tasks,
                "refused a task-augmented request: the task table is full"
            );
            return Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Too many tasks: this client keeps at most {} tasks at a time",
                    self.settings.max_tasks
                ),
            ));
        }
        entries.insert(
            task_id,
            Entry {
                task: task.clone(),
                outcome,
                abort: None,
                expires: None,
                keep,
            },
        );
        Ok(task)
    }

    /// Forgets a task that never started (its request was refused after all).
    pub(crate) fn discard(&self, task_id: &str) {
        lock(&self.entries).remove(task_id);
    }

    /// Remembers the running callback of `task_id`, to stop it on `tasks/cancel`.
    pub(crate) fn running(&self, task_id: &str, abort: AbortHandle) {
        match lock(&self.entries).get_mut(task_id) {
            Some(entry) if entry.outcome.borrow().is_none() => entry.abort = Some(abort),
            // Cancelled (or forgotten) before it started.
            _ => abort.abort(),
        }
    }

    /// Records how a task's callback ended (unless it was cancelled first).
    pub(crate) fn finish(&self, task_id: &str, outcome: Outcome) {
        let mut entries = lock(&self.entries);
        let Some(entry) = entries.get_mut(task_id) else {
            return;
        };
        if entry.outcome.borrow().is_some() {
            return;
        }
        let status = if outcome.is_ok() {
            TaskStatus::COMPLETED
        } else {
            TaskStatus::FAILED
        };
        Self::end(entry, status, outcome);
    }

    fn end(entry: &mut Entry, status: TaskStatus, outcome: Outcome) {
        entry.task.status = status;
        entry.task.last_updated_at = now_iso();
        entry.abort = None;
        entry.expires = Some(Instant::now() + entry.keep);
        entry.outcome.send_replace(Some(outcome));
    }

    fn task(&self, task_id: &str) -> Result<Task, ErrorObject> {
        let mut entries = lock(&self.entries);
        Self::purge(&mut entries);
        entries
            .get(task_id)
            .map(|entry| entry.task.clone())
            .ok_or_else(|| unknown(task_id))
    }

    fn list(&self) -> ListTasksResult {
        let mut entries = lock(&self.entries);
        Self::purge(&mut entries);
        let mut tasks: Vec<Task> = entries.values().map(|entry| entry.task.clone()).collect();
        tasks.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        ListTasksResult::new(tasks)
    }

    fn cancel(&self, task_id: &str) -> Result<Task, ErrorObject> {
        let mut entries = lock(&self.entries);
        Self::purge(&mut entries);
        let entry = entries.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
        if entry.task.status.is_terminal() {
            return Err(ErrorObject::invalid_params(format!(
                "Cannot cancel a task that is already {}",
                entry.task.status
            )));
        }
        if let Some(abort) = entry.abort.take() {
            abort.abort();
        }
        Self::end(
            entry,
            TaskStatus::CANCELLED,
            Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                "The task was cancelled",
            )),
        );
        Ok(entry.task.clone())
    }

    /// Waits for the end of `task_id` and returns its result, tagged with the task.
    async fn result(&self, task_id: &str) -> Outcome {
        let mut receiver = {
            let mut entries = lock(&self.entries);
            Self::purge(&mut entries);
            entries
                .get(task_id)
                .ok_or_else(|| unknown(task_id))?
                .outcome
                .subscribe()
        };
        let outcome = receiver
            .wait_for(Option::is_some)
            .await
            .map_err(|_| unknown(task_id))?
            .clone()
            .unwrap_or_else(|| Err(unknown(task_id)));
        let result = outcome?;
        with_related_task(&result, task_id)
    }

    /// Answers one of [`TABLE_METHODS`] and returns the encoded response.
    pub(crate) async fn answer(&self, request: &Request) -> Vec<u8> {
        let id = &request.id;
        let task_id = || {
            request
                .params_as::<TaskIdParams>()
                .map(|params| params.task_id)
                .map_err(|e| ErrorObject::invalid_params(e.to_string()))
        };
        let encoded = match request.method.as_str() {
            GetTask::NAME => task_id()
                .and_then(|t| self.task(&t))
                .map(|t| encode_result(id, &t)),
            ListTasks::NAME => Ok(encode_result(id, &self.list())),
            CancelTask::NAME => task_id()
                .and_then(|t| self.cancel(&t))
                .map(|t| encode_result(id, &t)),
            GetTaskPayload::NAME => match task_id() {
                Ok(task) => self.result(&task).await.map(|r| encode_result(id, &r)),
                Err(error) => Err(error),
            },
            other => Err(ErrorObject::method_not_found(other)),
        };
        match encoded {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(error)) => encode_error(Some(id), &ErrorObject::internal(error.to_string())),
            Err(error) => encode_error(Some(id), &error),
        }
    }
}

/// The handle a task-augmented request is answered with.
pub(crate) fn created(task: Task) -> CreateTaskResult {
    CreateTaskResult::new(task)
}

/// `result` with `_meta["io.modelcontextprotocol/related-task"] = {"taskId": task_id}`.
fn with_related_task(result: &RawValue, task_id: &str) -> Outcome {
    let mut object: Extra = serde_json::from_str(result.get())
        .map_err(|e| ErrorObject::internal(format!("the task's result is not an object: {e}")))?;
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(Extra::new()));
    if let serde_json::Value::Object(meta) = meta {
        meta.insert(
            RELATED_TASK_META.to_owned(),
            serde_json::json!({ "taskId": task_id }),
        );
    }
    serde_json::value::to_raw_value(&object).map_err(|e| ErrorObject::internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use modelctx_types::RequestId;
    use serde_json::json;

    use super::*;

    fn request(method: &str, params: &serde_json::Value) -> Request {
        Request {
            id: RequestId::Number(1),
            method: method.to_owned(),
            params: Some(RawValue::from_string(params.to_string()).unwrap()),
        }
    }

    fn reply(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    fn table(max_tasks: usize, max_retention: Duration) -> TaskTable {
        TaskTable::new(TableLimits {
            max_tasks,
            max_retention,
            suggested_interval: Duration::from_millis(500),
        })
    }

    /// A full table refuses new tasks with a clear error; finished tasks are forgotten once
    /// their retention (the server's ttl, capped) is over, which frees room.
    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded_in_size_and_retention() {
        let table = table(2, Duration::from_secs(60));
        // The server asks for a day; the cap is a minute.
        let day = TaskMetadata::new().with_ttl(86_400_000_u64);
        let first = table.create(&day).unwrap();
        assert_eq!(first.ttl, Some(60_000));
        let second = table.create(&TaskMetadata::new()).unwrap();
        let refused = table.create(&TaskMetadata::new()).unwrap_err();
        assert_eq!(refused.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(
            refused.message,
            "Too many tasks: this client keeps at most 2 tasks at a time"
        );
        table.finish(
            &first.task_id,
            Ok(serde_json::value::to_raw_value(&json!({})).unwrap()),
        );
        // Still kept (and still counted) within its retention…
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(table.create(&TaskMetadata::new()).is_err());
        let got = reply(
            &table
                .answer(&request("tasks/get", &json!({"taskId": first.task_id})))
                .await,
        );
        assert_eq!(got["result"]["status"], "completed");
        // …then forgotten: its id is unknown, and there is room again. A running task is kept.
        tokio::time::advance(Duration::from_secs(2)).await;
        let gone = reply(
            &table
                .answer(&request("tasks/get", &json!({"taskId": first.task_id})))
                .await,
        );
        assert_eq!(gone["error"]["code"], -32602, "{gone}");
        assert!(table.create(&TaskMetadata::new()).is_ok());
        let running = reply(
            &table
                .answer(&request("tasks/get", &json!({"taskId": second.task_id})))
                .await,
        );
        assert_eq!(running["result"]["status"], "working");
    }

    /// `tasks/result` and `tasks/cancel` for an id the table does not hold, or with no id,
    /// get a -32602 with a clear message; a finished task cannot be cancelled; a cancelled
    /// task's `tasks/result` is its error.
    #[tokio::test]
    async fn unknown_ids_and_cancellation() {
        let table = table(4, Duration::from_secs(60));
        let unknown = reply(
            &table
                .answer(&request(
                    "tasks/result",
                    &json!({"taskId": "x".repeat(1000)}),
                ))
                .await,
        );
        assert_eq!(unknown["error"]["code"], -32602);
        let message = unknown["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Unknown task id"), "{message}");
        assert!(message.len() < 200, "the peer's id is truncated: {message}");
        let no_id = reply(&table.answer(&request("tasks/result", &json!({}))).await);
        assert_eq!(no_id["error"]["code"], -32602);

        let task = table.create(&TaskMetadata::new()).unwrap();
        let cancelled = reply(
            &table
                .answer(&request("tasks/cancel", &json!({"taskId": task.task_id})))
                .await,
        );
        assert_eq!(cancelled["result"]["status"], "cancelled");
        let again = reply(
            &table
                .answer(&request("tasks/cancel", &json!({"taskId": task.task_id})))
                .await,
        );
        assert_eq!(again["error"]["code"], -32602);
        let result = reply(
            &table
                .answer(&request("tasks/result", &json!({"taskId": task.task_id})))
                .await,
        );
        assert_eq!(result["error"]["message"], "The task was cancelled");
        let listed = reply(&table.answer(&request("tasks/list", &json!({}))).await);
        assert_eq!(listed["result"]["tasks"].as_array().unwrap().len(), 1);
    }

    /// A finished task's result carries the related-task `_meta`.
    #[tokio::test]
    async fn a_result_names_its_task() {
        let table = table(4, Duration::from_secs(60));
        let task = table.create(&TaskMetadata::new()).unwrap();
        let outcome = serde_json::value::to_raw_value(&json!({"action": "decline"})).unwrap();
        table.finish(&task.task_id, Ok(outcome));
        let result = reply(
            &table
                .answer(&request("tasks/result", &json!({"taskId": task.task_id})))
                .await,
        );
        assert_eq!(result["result"]["action"], "decline");
        assert_eq!(
            result["result"]["_meta"][RELATED_TASK_META]["taskId"],
            json!(task.task_id)
        );
    }
}
