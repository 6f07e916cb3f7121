//! The experimental tasks of the 2025-11-25 revision (SEP-1686), a handshake-era protocol.
//!
//! Not to be confused with [`crate::tasks`], the 2026-07-28 tasks **extension**: the two share
//! method names (`tasks/get`, `tasks/cancel`) and status names but not their shapes.
//!
//! | | 2025-11-25 (this module) | 2026-07-28 extension ([`crate::tasks`]) |
//! |---|---|---|
//! | who asks for a task | the requestor, with `params.task` | the server decides (`resultType: "task"`) |
//! | the handle | `{"task": Task}` | a flat `Task` with `resultType` |
//! | the final result | `tasks/result` (blocks until the task ends) | inlined in `tasks/get` |
//! | input while it runs | ordinary requests, sent on `tasks/result`'s stream | `inputRequests` / `tasks/update` |
//! | both directions | yes: servers may ask clients to run sampling/elicitation as tasks | client→server only |
//! | negotiated by | `capabilities.tasks` at `initialize` | `capabilities.extensions` |
//!
//! A tool says whether it may run as a task with `execution.taskSupport` ([`TaskSupport`]).
//!
//! ```
//! use modelctx_types::tasks_2025::{CreateTaskResult, TaskStatus};
//!
//! let created: CreateTaskResult = serde_json::from_str(r#"{"task":{"taskId":"t1",
//!     "status":"working","createdAt":"2025-11-25T10:30:00Z",
//!     "lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":60000,"pollInterval":500}}"#)?;
//! assert_eq!(created.task.status, TaskStatus::WORKING);
//! assert_eq!(created.task.poll_interval, Some(500));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde_json::Value;

use crate::methods::{Method, NotificationMethod};
use crate::{
    CallToolRequestParams, Cursor, Extra, Meta, PaginatedRequestParams, RequestMeta,
    ServerCapabilities, requests::impl_request_params,
};

/// The `_meta` key that ties a message to a task: `{"taskId": …}`.
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

open_str! {
    /// The status of a 2025-11-25 task. An open set: unknown values are kept.
    pub struct TaskStatus {
        /// The request is being processed.
        const WORKING = "working";
        /// The receiver needs input from the requestor: call `tasks/result` to receive its
        /// requests.
        const INPUT_REQUIRED = "input_required";
        /// The request finished with a result.
        const COMPLETED = "completed";
        /// The request failed (its error comes from `tasks/result`).
        const FAILED = "failed";
        /// The request was cancelled before it finished.
        const CANCELLED = "cancelled";
    }
}

impl TaskStatus {
    /// Whether the task can no longer change: `completed`, `failed` or `cancelled`.
    pub fn is_terminal(&self) -> bool {
        *self == Self::COMPLETED || *self == Self::FAILED || *self == Self::CANCELLED
    }
}

open_str! {
    /// `execution.taskSupport` of a tool: whether a `tools/call` may, must or must not be
    /// task-augmented. Absent means `forbidden`.
    pub struct TaskSupport {
        /// Never as a task (the default).
        const FORBIDDEN = "forbidden";
        /// As a task when the caller asks.
        const OPTIONAL = "optional";
        /// Only as a task; a plain call is refused.
        const REQUIRED = "required";
    }
}

wire_struct! {
    /// `Tool.execution` (2025-11-25).
    #[derive(Default)]
    pub struct ToolExecution {
        /// Whether the tool runs as a task.
        opt "taskSupport" => task_support: TaskSupport,
    }
}

wire_struct! {
    /// A task: `Task` of the schema, and also the result of `tasks/get` and `tasks/cancel` and
    /// the params of `notifications/tasks/status` (all `Task` plus `_meta`).
    pub struct Task {
        /// The task identifier.
        req "taskId" => task_id: String,
        /// The current status.
        req "status" => status: TaskStatus,
        /// A human-readable description of the current state.
        opt "statusMessage" => status_message: String,
        /// ISO 8601 creation time.
        req "createdAt" => created_at: String,
        /// ISO 8601 time of the last change.
        req "lastUpdatedAt" => last_updated_at: String,
        /// How long after creation the receiver keeps the task, in milliseconds; `None`
        /// (`null` on the wire) means unlimited.
        req "ttl" => ttl: Option<u64>,
        /// The polling interval the receiver suggests, in milliseconds.
        opt "pollInterval" => poll_interval: u64,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// The answer to a task-augmented request: the task's handle.
    pub struct CreateTaskResult {
        /// The task just created.
        req "task" => task: Task,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// `params.task` of a task-augmented request.
    #[derive(Default)]
    pub struct TaskMetadata {
        /// How long to keep the task after its creation, in milliseconds.
        opt "ttl" => ttl: u64,
    }
}

wire_struct! {
    /// Parameters of `tasks/get`, `tasks/result` and `tasks/cancel`.
    pub struct TaskIdParams {
        /// The task.
        req "taskId" => task_id: String,
        /// Metadata.
        opt "_meta" => meta: Box<RequestMeta>,
    }
}

wire_struct! {
    /// The result of `tasks/list`.
    #[derive(Default)]
    pub struct ListTasksResult {
        /// The tasks.
        req "tasks" => tasks: Vec<Task>,
        /// The cursor of the next page, if any.
        opt "nextCursor" => next_cursor: Cursor,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl_request_params!(TaskIdParams);

/// The `_meta` member `{"io.modelcontextprotocol/related-task": {"taskId": task_id}}`.
pub fn related_task_meta(task_id: &str) -> Meta {
    let mut meta = Meta::new();
    meta.insert(RELATED_TASK_META, serde_json::json!({ "taskId": task_id }));
    meta
}

/// The task a `_meta` says a message belongs to.
pub fn related_task(meta: &Extra) -> Option<&str> {
    meta.get(RELATED_TASK_META)?.get("taskId")?.as_str()
}

/// Whether a server's capabilities allow task-augmented `tools/call`
/// (`tasks.requests.tools.call`).
pub fn server_runs_tool_tasks(capabilities: &ServerCapabilities) -> bool {
    capabilities
        .tasks
        .as_ref()
        .and_then(|tasks| tasks.get("requests"))
        .and_then(|requests| requests.get("tools"))
        .and_then(|tools| tools.get("call"))
        .is_some_and(Value::is_object)
}

/// The `tasks` client capability: `tasks/list` and `tasks/cancel`, and task-augmented
/// `elicitation/create` and `sampling/createMessage` as asked.
pub fn client_tasks_capability(elicitation: bool, sampling: bool) -> Extra {
    let mut requests = Extra::new();
    if elicitation {
        requests.insert("elicitation".into(), serde_json::json!({ "create": {} }));
    }
    if sampling {
        requests.insert(
            "sampling".into(),
            serde_json::json!({ "createMessage": {} }),
        );
    }
    let mut tasks = Extra::new();
    tasks.insert("list".into(), Value::Object(Extra::new()));
    tasks.insert("cancel".into(), Value::Object(Extra::new()));
    tasks.insert("requests".into(), Value::Object(requests));
    tasks
}

/// `tools/call` sent as a task (`params.task` set): answered with a [`CreateTaskResult`] — or,
/// from a server that ignores the request for a task, a plain `CallToolResult`, hence the raw
/// result.
#[derive(Debug, Clone, Copy)]
pub struct CallToolAsTask;

impl Method for CallToolAsTask {
    const NAME: &'static str = "tools/call";
    type Params = CallToolRequestParams;
    type Result = Extra;
}

/// `tasks/get` (2025-11-25).
#[derive(Debug, Clone, Copy)]
pub struct GetTask;

impl Method for GetTask {
    const NAME: &'static str = "tasks/get";
    type Params = TaskIdParams;
    type Result = Task;
}

/// `tasks/result`: the original request's result (or error) once the task ended; while it
/// waits for input, the receiver sends its requests on this request's stream.
#[derive(Debug, Clone, Copy)]
pub struct GetTaskPayload;

impl Method for GetTaskPayload {
    const NAME: &'static str = "tasks/result";
    type Params = TaskIdParams;
    type Result = Extra;
}

/// `tasks/list`.
#[derive(Debug, Clone, Copy)]
pub struct ListTasks;

impl Method for ListTasks {
    const NAME: &'static str = "tasks/list";
    type Params = PaginatedRequestParams;
    type Result = ListTasksResult;
}

/// `tasks/cancel` (2025-11-25): answered with the task, now `cancelled`.
#[derive(Debug, Clone, Copy)]
pub struct CancelTask;

impl Method for CancelTask {
    const NAME: &'static str = "tasks/cancel";
    type Params = TaskIdParams;
    type Result = Task;
}

/// `notifications/tasks/status` (optional; receivers need not send it).
#[derive(Debug, Clone, Copy)]
pub struct TaskStatusNotification;

impl NotificationMethod for TaskStatusNotification {
    const NAME: &'static str = "notifications/tasks/status";
    type Params = Task;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_execution_and_capabilities_round_trip() {
        let tool: crate::Tool = serde_json::from_value(serde_json::json!({
            "name": "research", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"}
        }))
        .unwrap();
        let support = tool.execution.and_then(|e| e.task_support);
        assert_eq!(support, Some(TaskSupport::REQUIRED));

        let caps: ServerCapabilities = serde_json::from_value(serde_json::json!({
            "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}
        }))
        .unwrap();
        assert!(server_runs_tool_tasks(&caps));
        assert!(!server_runs_tool_tasks(&ServerCapabilities::default()));
        let caps: ServerCapabilities =
            serde_json::from_value(serde_json::json!({"tasks": {"requests": {"tools": true}}}))
                .unwrap();
        assert!(!server_runs_tool_tasks(&caps));
    }

    #[test]
    fn ttl_null_is_unlimited_and_required() {
        let task: Task = serde_json::from_value(serde_json::json!({
            "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "a",
            "ttl": null
        }))
        .unwrap();
        assert_eq!(task.ttl, None);
        assert_eq!(serde_json::to_value(&task).unwrap()["ttl"], Value::Null);
        let missing = serde_json::from_value::<Task>(serde_json::json!({
            "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "a"
        }));
        assert!(missing.is_err());
    }
}
