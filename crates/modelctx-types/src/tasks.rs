//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a `tools/call` answered with
//! a task handle (`resultType: "task"`) instead of its result, then `tasks/get`, `tasks/update`,
//! `tasks/cancel` and `notifications/tasks`.
//!
//! The authoritative schema is `schema/draft/schema.ts` of `modelcontextprotocol/ext-tasks`.
//! Every task object is flat: [`CreateTaskResult`] is `Result & Task`, [`GetTaskResult`] is
//! `Result & DetailedTask`, and the notification params are a [`DetailedTask`].
//!
//! ```
//! use modelctx_types::tasks::{DetailedTask, TaskStatus};
//!
//! let task: DetailedTask = serde_json::from_str(r#"{"taskId":"t1","status":"completed",
//!     "createdAt":"2026-07-28T10:30:00Z","lastUpdatedAt":"2026-07-28T10:31:00Z","ttlMs":60000,
//!     "result":{"content":[{"type":"text","text":"done"}],"isError":false}}"#)?;
//! assert_eq!(task.status, TaskStatus::COMPLETED);
//! assert!(task.status.is_terminal());
//! assert!(task.check().is_ok());
//! # Ok::<(), serde_json::Error>(())
//! ```

use crate::methods::{Method, NotificationMethod};
use crate::{
    ClientCapabilities, EmptyResult, ErrorObject, Extra, InputRequests, InputResponses, Meta,
    RequestMeta, ResultType, SubscriptionFilter, requests::impl_request_params,
    result::impl_wire_result,
};

/// The identifier of the tasks extension, in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The member of `subscriptions/listen`'s `notifications` (and of the acknowledgement) that
/// lists the tasks whose `notifications/tasks` the stream carries.
pub const TASK_IDS_FILTER: &str = "taskIds";

open_str! {
    /// The status of a task. An open set: unknown values are kept.
    pub struct TaskStatus {
        /// The request is being processed.
        const WORKING = "working";
        /// The task waits for the answers to its `inputRequests` (through `tasks/update`).
        const INPUT_REQUIRED = "input_required";
        /// The request finished with a result (a tool result with `isError: true` included).
        const COMPLETED = "completed";
        /// The request failed with a JSON-RPC error.
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

/// Declares a wire struct that starts with the members of `Task`, so that the flat intersections
/// of the schema (`Result & Task`, `Result & DetailedTask`) stay flat in Rust too.
macro_rules! task_struct {
    (@with [$($own:ident),*] $(#[$smeta:meta])* $name:ident { $($rest:tt)* }) => {
        wire_struct! {
            $(#[$smeta])*
            pub struct $name {
                $(@own $own;)*
                /// The task identifier (unguessable; it may act as a bearer token).
                req "taskId" => task_id: String,
                /// The current status.
                req "status" => status: TaskStatus,
                /// A human-readable description of the current state (progress, why it waits,
                /// why it failed).
                opt "statusMessage" => status_message: String,
                /// ISO 8601 creation time.
                req "createdAt" => created_at: String,
                /// ISO 8601 time of the last change.
                req "lastUpdatedAt" => last_updated_at: String,
                /// How long after creation the server keeps the task, in milliseconds; `None`
                /// (`null` on the wire, never absent) means unlimited.
                req "ttlMs" => ttl_ms: Option<u64>,
                /// The polling interval the server suggests, in milliseconds.
                opt "pollIntervalMs" => poll_interval_ms: u64,
                $($rest)*
            }
        }
    };
    // `@own …;` (see `wire_struct!`) goes first, before the members of `Task`.
    (
        $(#[$smeta:meta])*
        pub struct $name:ident { @own $($own:ident),+; $($rest:tt)* }
    ) => {
        task_struct!(@with [$($own),+] $(#[$smeta])* $name { $($rest)* });
    };
    (
        $(#[$smeta:meta])*
        pub struct $name:ident { $($rest:tt)* }
    ) => {
        task_struct!(@with [] $(#[$smeta])* $name { $($rest)* });
    };
}

task_struct! {
    /// The metadata of a task, common to every shape that carries one.
    pub struct Task {
        @own new;
    }
}

task_struct! {
    /// The answer of a `tools/call` the server chose to run as a task (`resultType: "task"`):
    /// `Result & Task`, with no `result`, `error`, `inputRequests` or `requestState`.
    pub struct CreateTaskResult {
        /// Always `"task"`.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

task_struct! {
    /// A task with the members of its status inlined: `inputRequests` when `input_required`,
    /// `result` when `completed`, `error` when `failed`. The params of `notifications/tasks`,
    /// and the body of a `tasks/get` result.
    pub struct DetailedTask {
        /// The outstanding questions (status `input_required`), keyed by keys unique over the
        /// whole life of the task.
        opt "inputRequests" => input_requests: InputRequests,
        /// The final result (status `completed`): what the original request would have
        /// returned, e.g. a `CallToolResult`.
        opt "result" => result: Extra,
        /// The JSON-RPC error the request failed with (status `failed`).
        opt "error" => error: ErrorObject,
        /// Metadata (on a listen stream: the subscription id).
        opt "_meta" => meta: Meta,
    }
}

task_struct! {
    /// The result of `tasks/get`: `Result & DetailedTask` with `resultType: "complete"`.
    pub struct GetTaskResult {
        /// See [`DetailedTask::input_requests`].
        opt "inputRequests" => input_requests: InputRequests,
        /// See [`DetailedTask::result`].
        opt "result" => result: Extra,
        /// See [`DetailedTask::error`].
        opt "error" => error: ErrorObject,
        /// `"complete"`.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

/// Why a [`DetailedTask`] does not match its status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {status} task {problem}")]
#[non_exhaustive]
pub struct TaskShapeError {
    /// The status.
    pub status: String,
    /// What is wrong.
    pub problem: &'static str,
}

impl Task {
    /// A task in status `status`, created and last updated at `created_at`.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        ttl_ms: Option<u64>,
    ) -> Self {
        let created_at = created_at.into();
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            last_updated_at: created_at.clone(),
            created_at,
            ttl_ms,
            poll_interval_ms: None,
            extra: Extra::new(),
        }
    }
}

impl From<Task> for CreateTaskResult {
    fn from(task: Task) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            ttl_ms: task.ttl_ms,
            poll_interval_ms: task.poll_interval_ms,
            result_type: Some(ResultType::TASK),
            meta: None,
            extra: task.extra,
        }
    }
}

impl CreateTaskResult {
    /// The task metadata.
    pub fn task(&self) -> Task {
        Task {
            task_id: self.task_id.clone(),
            status: self.status.clone(),
            status_message: self.status_message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: self.last_updated_at.clone(),
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            extra: Extra::new(),
        }
    }
}

impl DetailedTask {
    /// The task metadata, without the status-specific members.
    pub fn task(&self) -> Task {
        Task {
            task_id: self.task_id.clone(),
            status: self.status.clone(),
            status_message: self.status_message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: self.last_updated_at.clone(),
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            extra: Extra::new(),
        }
    }

    /// A detailed task with no status-specific member yet.
    pub fn from_task(task: Task) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            ttl_ms: task.ttl_ms,
            poll_interval_ms: task.poll_interval_ms,
            input_requests: None,
            result: None,
            error: None,
            meta: None,
            extra: task.extra,
        }
    }

    /// Checks the status-specific members: `inputRequests` exactly when `input_required`,
    /// `result` exactly when `completed`, `error` exactly when `failed` (unknown statuses carry
    /// whatever they carry).
    ///
    /// # Errors
    /// The first mismatch.
    pub fn check(&self) -> Result<(), TaskShapeError> {
        let fail = |problem| {
            Err(TaskShapeError {
                status: self.status.to_string(),
                problem,
            })
        };
        if !self.status.is_known() {
            return Ok(());
        }
        let asks = self.status == TaskStatus::INPUT_REQUIRED;
        let done = self.status == TaskStatus::COMPLETED;
        let failed = self.status == TaskStatus::FAILED;
        match (
            self.input_requests.is_some(),
            self.result.is_some(),
            self.error.is_some(),
        ) {
            (false, _, _) if asks => fail("must carry inputRequests"),
            (true, _, _) if !asks => fail("must not carry inputRequests"),
            (_, false, _) if done => fail("must carry result"),
            (_, true, _) if !done => fail("must not carry result"),
            (_, _, false) if failed => fail("must carry error"),
            (_, _, true) if !failed => fail("must not carry error"),
            _ => Ok(()),
        }
    }
}

impl From<DetailedTask> for GetTaskResult {
    fn from(task: DetailedTask) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            ttl_ms: task.ttl_ms,
            poll_interval_ms: task.poll_interval_ms,
            input_requests: task.input_requests,
            result: task.result,
            error: task.error,
            result_type: Some(ResultType::COMPLETE),
            meta: task.meta,
            extra: task.extra,
        }
    }
}

impl From<GetTaskResult> for DetailedTask {
    fn from(result: GetTaskResult) -> Self {
        Self {
            task_id: result.task_id,
            status: result.status,
            status_message: result.status_message,
            created_at: result.created_at,
            last_updated_at: result.last_updated_at,
            ttl_ms: result.ttl_ms,
            poll_interval_ms: result.poll_interval_ms,
            input_requests: result.input_requests,
            result: result.result,
            error: result.error,
            meta: result.meta,
            extra: result.extra,
        }
    }
}

wire_struct! {
    /// Parameters of `tasks/get`.
    #[derive(Default)]
    pub struct GetTaskRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The task to query.
        req "taskId" => task_id: String,
    }
}

wire_struct! {
    /// Parameters of `tasks/update`: answers to a task's outstanding input requests (a subset
    /// is fine; answers under keys that are not outstanding are ignored).
    #[derive(Default)]
    pub struct UpdateTaskRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The task to update.
        req "taskId" => task_id: String,
        /// Answers keyed like the `inputRequests` they answer.
        req "inputResponses" => input_responses: InputResponses,
    }
}

wire_struct! {
    /// Parameters of `tasks/cancel`.
    #[derive(Default)]
    pub struct CancelTaskRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The task to cancel.
        req "taskId" => task_id: String,
    }
}

/// The result of `tasks/update`: an empty acknowledgement (`resultType: "complete"`).
pub type UpdateTaskResult = EmptyResult;

/// The result of `tasks/cancel`: an empty acknowledgement (`resultType: "complete"`).
pub type CancelTaskResult = EmptyResult;

impl_request_params!(
    GetTaskRequestParams,
    UpdateTaskRequestParams,
    CancelTaskRequestParams
);
impl_wire_result!(CreateTaskResult, GetTaskResult);

/// `tasks/get`.
#[derive(Debug, Clone, Copy)]
pub struct GetTask;

impl Method for GetTask {
    const NAME: &'static str = "tasks/get";
    type Params = GetTaskRequestParams;
    type Result = GetTaskResult;
}

/// `tasks/update`.
#[derive(Debug, Clone, Copy)]
pub struct UpdateTask;

impl Method for UpdateTask {
    const NAME: &'static str = "tasks/update";
    type Params = UpdateTaskRequestParams;
    type Result = UpdateTaskResult;
}

/// `tasks/cancel`.
#[derive(Debug, Clone, Copy)]
pub struct CancelTask;

impl Method for CancelTask {
    const NAME: &'static str = "tasks/cancel";
    type Params = CancelTaskRequestParams;
    type Result = CancelTaskResult;
}

/// `notifications/tasks`: a task's full [`DetailedTask`], on a `subscriptions/listen` stream
/// opened with `taskIds`.
#[derive(Debug, Clone, Copy)]
pub struct TaskStatusNotification;

impl NotificationMethod for TaskStatusNotification {
    const NAME: &'static str = "notifications/tasks";
    type Params = DetailedTask;
}

/// The three methods of the extension, whose `Mcp-Name` header carries `params.taskId`.
pub const TASK_METHODS: &[&str] = &[GetTask::NAME, UpdateTask::NAME, CancelTask::NAME];

/// The client capabilities that declare the extension (`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`),
/// e.g. for the `requiredCapabilities` of a `-32021`.
pub fn tasks_capability() -> ClientCapabilities {
    ClientCapabilities::new().with_extension(TASKS_EXTENSION)
}

/// The `taskIds` member of a subscription filter (`subscriptions/listen` and its
/// acknowledgement), which the core filter keeps among its unmodelled members.
pub trait TaskIdsFilter {
    /// The task ids, when present and well formed.
    fn task_ids(&self) -> Option<Vec<String>>;
    /// Sets (or, with `None`, removes) the task ids.
    fn set_task_ids(&mut self, ids: Option<Vec<String>>);
}

impl TaskIdsFilter for SubscriptionFilter {
    fn task_ids(&self) -> Option<Vec<String>> {
        serde_json::from_value(self.extra.get(TASK_IDS_FILTER)?.clone()).ok()
    }

    fn set_task_ids(&mut self, ids: Option<Vec<String>>) {
        match ids {
            Some(ids) => {
                self.extra
                    .insert(TASK_IDS_FILTER.to_owned(), serde_json::Value::from(ids));
            }
            None => {
                self.extra.remove(TASK_IDS_FILTER);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{ErrorCode, InputRequest, Outcome, ResultTypes, decode_result, methods::CallTool};

    fn task(status: TaskStatus) -> Task {
        Task::new("t-1", status, "2026-07-28T10:30:00.000Z", Some(60_000))
    }

    #[test]
    fn create_task_result_is_flat_and_keeps_ttl_null() {
        let mut created = CreateTaskResult::from(Task::new(
            "abc",
            TaskStatus::WORKING,
            "2026-07-28T10:30:00Z",
            None,
        ));
        created.poll_interval_ms = Some(500);
        let value = serde_json::to_value(&created).unwrap();
        assert_eq!(
            value,
            json!({"taskId":"abc","status":"working","createdAt":"2026-07-28T10:30:00Z",
                "lastUpdatedAt":"2026-07-28T10:30:00Z","ttlMs":null,"pollIntervalMs":500,
                "resultType":"task"})
        );
        let back: CreateTaskResult = serde_json::from_value(value).unwrap();
        assert_eq!(back, created);
        // `ttlMs` is required (nullable, never absent).
        let missing = json!({"taskId":"a","status":"working","createdAt":"x","lastUpdatedAt":"x"});
        assert!(serde_json::from_value::<Task>(missing).is_err());
    }

    #[test]
    fn a_task_result_decodes_only_when_the_extension_is_negotiated() {
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(
            r#"{"resultType":"task","taskId":"t","status":"working","createdAt":"a",
                "lastUpdatedAt":"a","ttlMs":1000}"#,
        )
        .unwrap();
        assert!(decode_result::<CallTool>(&raw, &ResultTypes::core()).is_err());
        let Outcome::Extension(ext) =
            decode_result::<CallTool>(&raw, &ResultTypes::core().with(ResultType::TASK)).unwrap()
        else {
            panic!("not an extension result");
        };
        let created: CreateTaskResult = serde_json::from_str(ext.raw.get()).unwrap();
        assert_eq!(created.task_id, "t");
        assert_eq!(created.ttl_ms, Some(1000));
    }

    #[test]
    fn detailed_task_shapes_follow_the_status() {
        let mut working = DetailedTask::from_task(task(TaskStatus::WORKING));
        assert!(working.check().is_ok());
        working.result = Some(Extra::new());
        assert!(working.check().is_err());

        let mut asking = DetailedTask::from_task(task(TaskStatus::INPUT_REQUIRED));
        assert!(asking.check().is_err());
        asking.input_requests = Some([("k1".to_owned(), InputRequest::list_roots())].into());
        assert!(asking.check().is_ok());

        let mut failed = DetailedTask::from_task(task(TaskStatus::FAILED));
        failed.error = Some(ErrorObject::internal("boom"));
        assert!(failed.check().is_ok());
        let value = serde_json::to_value(&failed).unwrap();
        assert_eq!(value["error"], json!({"code": -32603, "message": "boom"}));

        let done = DetailedTask::from_task(task(TaskStatus::COMPLETED));
        assert!(done.check().is_err());
        let unknown = DetailedTask::from_task(task(TaskStatus::new("paused")));
        assert!(unknown.check().is_ok());
        assert!(!TaskStatus::new("paused").is_terminal());
    }

    #[test]
    fn get_task_result_round_trips_through_detailed_task() {
        let mut detailed = DetailedTask::from_task(task(TaskStatus::COMPLETED));
        detailed.result =
            serde_json::from_value(json!({"content":[{"type":"text","text":"ok"}],"isError":true}))
                .unwrap();
        let result = GetTaskResult::from(detailed.clone());
        let value = serde_json::to_value(&result).unwrap();
        assert_eq!(value["resultType"], "complete");
        assert_eq!(value["result"]["isError"], true);
        assert_eq!(DetailedTask::from(result), detailed);
    }

    #[test]
    fn params_and_methods() {
        let params = UpdateTaskRequestParams::new(
            "t",
            InputResponses::from([(
                "k".to_owned(),
                crate::InputResponse(json!({"action": "decline"})),
            )]),
        );
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"taskId":"t","inputResponses":{"k":{"action":"decline"}}})
        );
        assert_eq!(GetTask::NAME, "tasks/get");
        const { assert!(!GetTask::INPUT_REQUIRED) };
        assert_eq!(TaskStatusNotification::NAME, "notifications/tasks");
        assert!(TASK_METHODS.contains(&"tasks/cancel"));
        assert_eq!(
            serde_json::to_value(tasks_capability()).unwrap(),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        let error = ErrorObject::missing_required_client_capability("x", &tasks_capability());
        assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    }

    #[test]
    fn task_ids_live_in_the_subscription_filter() {
        let mut filter: SubscriptionFilter =
            serde_json::from_value(json!({"toolsListChanged": true, "taskIds": ["a", "b"]}))
                .unwrap();
        assert_eq!(
            filter.task_ids(),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        filter.set_task_ids(None);
        assert_eq!(
            serde_json::to_value(&filter).unwrap(),
            json!({"toolsListChanged": true})
        );
        filter.set_task_ids(Some(vec!["c".to_owned()]));
        assert_eq!(
            serde_json::to_value(&filter).unwrap()["taskIds"],
            Value::from(vec!["c"])
        );
    }
}
