//! The tasks-extension fixtures (`tasks-*` scenarios, SEP-2663): a sync-only tool, task tools
//! that sleep, fail, ask for input and compose with a multi-round-trip preflight, all on the
//! embedded SQLite store (`MCP_TASKS_DB` names a file; default in memory) or a store the
//! binary passes (the fleet's Redis store).

use std::sync::Arc;
use std::time::Duration;

use modelctx::server::ServerBuilder;
use modelctx::server::tasks::{
    Preflight, SqliteTaskStore, TaskContext, TaskInput, TaskStep, TaskStore, TaskSupport, TaskTool,
    Tasks,
};
use modelctx::store::StoreError;
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ElicitAction, ErrorObject, InputRequiredResult,
};
use serde_json::{Value, json};

use super::mrtr::elicit;
use super::tools::tool;

fn text_argument(input: &TaskInput, name: &str, default: &str) -> String {
    input
        .argument(name)
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_owned()
}

/// `slow_compute {seconds, label}`: sleeps, then reports; stops at once when cancelled.
async fn slow_compute(ctx: TaskContext, input: TaskInput) -> CallToolResult {
    let seconds = input
        .argument("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(1.0)
        .clamp(0.0, 3600.0);
    let label = text_argument(&input, "label", "job");
    if seconds > 0.0 {
        let _ = ctx.set_status_message(format!("computing {label}")).await;
    }
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {
            CallToolResult::text(format!("Computed {label} in {seconds} second(s)"))
        }
        () = ctx.cancelled() => CallToolResult::text(format!("{label} was cancelled")),
    }
}

/// `failing_job`: a tool execution error after about a second (the task still completes).
async fn failing_job(ctx: TaskContext, _input: TaskInput) -> CallToolResult {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
        () = ctx.cancelled() => {}
    }
    CallToolResult::error("The job failed: the input data is invalid")
}

/// `protocol_error_job`: a JSON-RPC error (the task fails).
async fn protocol_error_job(_ctx: TaskContext, _input: TaskInput) -> Result<TaskStep, ErrorObject> {
    Err(ErrorObject::internal(
        "Simulated internal failure of the job",
    ))
}

/// `confirm_delete {filename}`: asks once, then deletes (or not).
async fn confirm_delete(_ctx: TaskContext, input: TaskInput) -> TaskStep {
    let filename = text_argument(&input, "filename", "file");
    match input.elicitation("confirm_delete") {
        None => TaskStep::ask(
            "confirm_delete",
            elicit(
                &format!("Delete {filename}? This cannot be undone."),
                &[("confirm", "boolean")],
            ),
        ),
        Some(answer) if answer.action == ElicitAction::Accept => {
            CallToolResult::text(format!("Deleted {filename}")).into()
        }
        Some(_) => CallToolResult::text(format!("Kept {filename}")).into(),
    }
}

/// `multi_input`: two questions at once; completes when both are answered.
async fn multi_input(_ctx: TaskContext, input: TaskInput) -> TaskStep {
    let name = input.accepted("multi_name");
    let confirm = input.elicitation("multi_confirm");
    match (name, confirm) {
        (Some(name), Some(confirm)) => {
            let who = name.get("name").and_then(Value::as_str).unwrap_or("nobody");
            CallToolResult::text(format!(
                "Got {who}; confirmed: {}",
                confirm.action == ElicitAction::Accept
            ))
            .into()
        }
        _ => TaskStep::ask(
            "multi_name",
            elicit("What is your name?", &[("name", "string")]),
        )
        .and_ask(
            "multi_confirm",
            elicit("Do you confirm?", &[("confirm", "boolean")]),
        ),
    }
}

/// `test_tool_with_task`, phase one: ask for the user's name over MRTR, then start the task
/// with it.
async fn ask_user_name(
    _ctx: modelctx::server::RequestContext,
    params: CallToolRequestParams,
) -> Preflight {
    let name = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("user_name"))
        .and_then(|r| r.as_elicit().ok())
        .filter(|a| a.action == ElicitAction::Accept)
        .and_then(|a| a.content)
        .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned));
    match name {
        Some(name) => Preflight::Start(Some(json!({ "name": name }))),
        None => Preflight::Ask(InputRequiredResult::new().with_request(
            "user_name",
            elicit("What is your name?", &[("name", "string")]),
        )),
    }
}

/// `test_tool_with_task`, phase two: the task greets the name gathered before it existed.
async fn greet_later(_ctx: TaskContext, input: TaskInput) -> CallToolResult {
    let name = input
        .state
        .as_ref()
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("stranger");
    CallToolResult::text(format!("Hello, {name}! (from a task)"))
}

fn no_args(name: &str, description: &str) -> modelctx::types::Tool {
    tool(
        name,
        description,
        json!({"type": "object", "properties": {}}),
    )
}

/// The task runtime with every task fixture.
fn runtime(store: Option<Arc<dyn TaskStore>>) -> Result<Tasks, StoreError> {
    let store: Arc<dyn TaskStore> = match (store, std::env::var("MCP_TASKS_DB")) {
        (Some(store), _) => store,
        (None, Ok(path)) if !path.is_empty() => Arc::new(SqliteTaskStore::open(path)?),
        (None, _) => Arc::new(SqliteTaskStore::in_memory()?),
    };
    let slow = tool(
        "slow_compute",
        "Sleeps for `seconds`, then reports (runs as a task when the client supports tasks).",
        json!({"type": "object", "properties": {
            "seconds": {"type": "number", "description": "How long to work"},
            "label": {"type": "string", "description": "A label for the result"}
        }}),
    );
    let confirm = tool(
        "confirm_delete",
        "Asks for confirmation (as a task input request), then deletes the file.",
        json!({"type": "object", "properties": {
            "filename": {"type": "string", "description": "The file to delete"}
        }}),
    );
    Ok(Tasks::builder_shared(store)
        .poll_interval(Duration::from_millis(500))
        .ttl(Some(Duration::from_secs(3600)))
        .cancel_grace(Duration::from_secs(2))
        .tool(TaskTool::new(slow, slow_compute))
        .tool(
            TaskTool::new(
                no_args("failing_job", "Runs as a task and ends with a tool error."),
                failing_job,
            )
            .support(TaskSupport::Required),
        )
        .tool(TaskTool::new(
            no_args(
                "protocol_error_job",
                "Runs as a task and fails with a JSON-RPC error.",
            ),
            protocol_error_job,
        ))
        .tool(TaskTool::new(confirm, confirm_delete))
        .tool(TaskTool::new(
            no_args(
                "multi_input",
                "Runs as a task that asks two questions at once.",
            ),
            multi_input,
        ))
        .tool(
            TaskTool::new(
                no_args(
                    "test_tool_with_task",
                    "Asks for the user's name (multi-round-trip), then greets them from a task.",
                ),
                greet_later,
            )
            .support(TaskSupport::Required)
            .preflight(ask_user_name),
        )
        .build())
}

pub(crate) fn register(builder: ServerBuilder, store: Option<Arc<dyn TaskStore>>) -> ServerBuilder {
    let builder = builder.tool(
        tool(
            "greet",
            "Greets synchronously (never a task).",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "Who to greet"}
            }}),
        ),
        |_, params: CallToolRequestParams| async move {
            let name = params
                .arguments
                .as_ref()
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("World")
                .to_owned();
            CallToolResult::text(format!("Hello, {name}!"))
        },
    );
    match runtime(store) {
        Ok(tasks) => builder.tasks(tasks),
        Err(error) => {
            tracing::error!(%error, "the task store cannot be opened; serving without tasks");
            builder
        }
    }
}
