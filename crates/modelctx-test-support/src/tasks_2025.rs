//! A 2025-11-25 server with the experimental tasks (SEP-1686), on the SDK's low-level server
//! in the handshake era: what the reference "everything" server does, scripted for tests.
//!
//! It speaks only the handshake era (`server/discover` is unknown, so clients fall back to
//! `initialize`), and declares `tasks.requests.tools.call` (patched into `initialize`'s result by a middleware,
//! which also turns a task-augmented `tools/call` into a task), and answers `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel`. Its tools:
//!
//! * `research` (`taskSupport: "required"`): the task goes `input_required` at once (status
//!   message `waiting for the depth of <topic>`); its
//!   `tasks/result` asks the client (an `elicitation/create` tied to the task by its
//!   related-task `_meta`, sent on `tasks/result`'s own stream) for a `depth`, then completes
//!   with `research on <topic> at depth <depth>`.
//! * `quick` (`"optional"`): as a task, completes at once with `quick <topic> as a task`;
//!   without one, answers `quick <topic>`.
//! * `slow` (`"required"`): works until cancelled.
//! * `wait_ended` (`{"taskId"}`): waits (at most 10 s) until that task ended, and answers its
//!   status — how a test over any transport sees that a `tasks/cancel` arrived.
//! * `async_elicit` / `async_sample`: ask the client to run an `elicitation/create` /
//!   `sampling/createMessage` as a task, poll its `tasks/get`, check `tasks/list`, fetch
//!   `tasks/result`, ask `tasks/result` about a made-up id, and answer a JSON report of it all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::server::middleware::{Middleware, Next, Reply, Request};
use modelctx::server::{BoxFuture, RequestContext, Server};
use modelctx::types::tasks_2025::{
    CreateTaskResult, RELATED_TASK_META, Task, TaskIdParams, TaskStatus, ToolExecution,
    related_task_meta,
};
use modelctx::types::{CallToolRequestParams, CallToolResult, ErrorObject, Tool};
use serde_json::{Value, json};
use tokio::sync::watch;

/// The interval the server suggests, in milliseconds (below the client's floor on purpose).
pub const SUGGESTED_POLL_MS: u64 = 10;

struct Entry {
    task: Task,
    topic: String,
    /// The final result or error, once the task ended.
    outcome: Option<Result<Value, ErrorObject>>,
}

/// The server's tasks.
#[derive(Default)]
struct Tasks {
    entries: Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
    /// Bumped on every change, for the waits.
    changed: Mutex<Option<watch::Sender<u64>>>,
}

impl Tasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap()
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        let mut changed = self.changed.lock().unwrap();
        changed
            .get_or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    fn bump(&self) {
        if let Some(sender) = self.changed.lock().unwrap().as_ref() {
            sender.send_modify(|n| *n += 1);
        }
    }

    fn create(&self, tool: &str, topic: String) -> Task {
        let id = format!("{tool}-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let mut task = Task::new(
            id.clone(),
            TaskStatus::WORKING,
            "2025-11-25T00:00:00Z",
            "2025-11-25T00:00:00Z",
            Some(60_000),
        );
        task.poll_interval = Some(SUGGESTED_POLL_MS);
        task.status_message = Some("started".to_owned());
        let created = task.clone();
        let mut entry = Entry {
            task,
            topic,
            outcome: None,
        };
        // What the task does next (seen from the first `tasks/get` on).
        match tool {
            "research" => {
                entry.task.status = TaskStatus::INPUT_REQUIRED;
                // The topic is the caller's text, echoed: how a test sends hostile bytes
                // through a status line.
                entry.task.status_message =
                    Some(format!("waiting for the depth of {}", entry.topic));
            }
            "quick" => {
                let result = CallToolResult::text(format!("quick {} as a task", entry.topic));
                Self::end(&mut entry, Ok(serde_json::to_value(result).unwrap()));
            }
            _ => {}
        }
        self.lock().insert(id, entry);
        self.bump();
        created
    }

    fn end(entry: &mut Entry, outcome: Result<Value, ErrorObject>) {
        entry.task.status = if outcome.is_ok() {
            TaskStatus::COMPLETED
        } else {
            TaskStatus::FAILED
        };
        entry.task.status_message = Some("done".to_owned());
        entry.outcome = Some(outcome);
    }

    fn get(&self, id: &str) -> Result<Task, ErrorObject> {
        self.lock()
            .get(id)
            .map(|entry| entry.task.clone())
            .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown task {id}")))
    }

    fn cancel(&self, id: &str) -> Result<Task, ErrorObject> {
        let task = {
            let mut entries = self.lock();
            let entry = entries
                .get_mut(id)
                .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown task {id}")))?;
            if entry.task.status.is_terminal() {
                return Err(ErrorObject::invalid_params(format!(
                    "Task {id} is already {}",
                    entry.task.status
                )));
            }
            entry.task.status = TaskStatus::CANCELLED;
            entry.task.status_message = Some("cancelled by the client".to_owned());
            entry.outcome = Some(Err(ErrorObject::new(
                modelctx::types::ErrorCode::INVALID_REQUEST,
                "Task cancelled",
            )));
            entry.task.clone()
        };
        self.bump();
        Ok(task)
    }

    /// Waits until task `id` ended (at most `bound`); its status then.
    async fn ended(&self, id: &str, bound: Duration) -> Result<Task, ErrorObject> {
        let mut changed = self.subscribe();
        let wait = async {
            loop {
                let task = self.get(id)?;
                if task.status.is_terminal() {
                    return Ok(task);
                }
                if changed.changed().await.is_err() {
                    return Err(ErrorObject::internal("gone"));
                }
            }
        };
        tokio::time::timeout(bound, wait)
            .await
            .unwrap_or_else(|_| Err(ErrorObject::internal("the task did not end in time")))
    }

    /// `tasks/result`: asks the `research` question on this request's stream when the task
    /// waits for it, then waits for the end.
    async fn result(&self, ctx: &RequestContext, id: &str) -> Result<Value, ErrorObject> {
        let asking = {
            let entries = self.lock();
            let entry = entries
                .get(id)
                .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown task {id}")))?;
            (entry.task.status == TaskStatus::INPUT_REQUIRED).then(|| entry.topic.clone())
        };
        if let Some(topic) = asking {
            let question = json!({
                "mode": "form",
                "message": format!("Which depth for the research on {topic}?"),
                "requestedSchema": {"type": "object",
                    "properties": {"depth": {"type": "string"}}, "required": ["depth"]},
                "_meta": related_task_meta(id),
            });
            let answer = ctx.request_client("elicitation/create", &question).await?;
            let depth = answer["content"]["depth"]
                .as_str()
                .unwrap_or("none")
                .to_owned();
            let result = CallToolResult::text(format!("research on {topic} at depth {depth}"));
            if let Some(entry) = self.lock().get_mut(id) {
                Self::end(entry, Ok(serde_json::to_value(result).unwrap()));
            }
            self.bump();
        }
        self.ended(id, Duration::from_secs(600)).await?;
        let outcome = self
            .lock()
            .get(id)
            .and_then(|entry| entry.outcome.clone())
            .unwrap_or_else(|| Err(ErrorObject::internal("no outcome")))?;
        let mut outcome = outcome;
        outcome["_meta"] = json!({ RELATED_TASK_META: {"taskId": id} });
        Ok(outcome)
    }
}

/// Declares the tasks capability, and runs task-augmented `tools/call`s as tasks.
struct TaskCalls(Arc<Tasks>);

fn task_tool(name: &str, support: &'static str) -> Tool {
    Tool::new(
        name,
        serde_json::from_value(json!({"type": "object",
            "properties": {"topic": {"type": "string"}, "taskId": {"type": "string"}}}))
        .unwrap(),
    )
    .with_execution(ToolExecution::default().with_task_support(support))
}

impl Middleware for TaskCalls {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let params: Value = request
                .params()
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or(Value::Null);
            match request.method() {
                // A 2025-11-25 server, as the reference one: no 2026-07-28 probe.
                "server/discover" => Reply::error(ErrorObject::method_not_found("server/discover")),
                "initialize" => {
                    let reply = next.run(request).await;
                    let Some(raw) = reply.result_json() else {
                        return reply;
                    };
                    let mut result: Value = serde_json::from_str(raw.get()).unwrap();
                    result["capabilities"]["tasks"] =
                        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
                    Reply::result(&result)
                }
                "tools/call" if params.get("task").is_some() => {
                    let name = params["name"].as_str().unwrap_or_default();
                    if !matches!(name, "research" | "quick" | "slow") {
                        return Reply::error(ErrorObject::invalid_params(format!(
                            "Tool {name} does not run as a task"
                        )));
                    }
                    let topic = params["arguments"]["topic"]
                        .as_str()
                        .unwrap_or("nothing")
                        .to_owned();
                    Reply::result(&CreateTaskResult::new(self.0.create(name, topic)))
                }
                "tools/call" if matches!(params["name"].as_str(), Some("research" | "slow")) => {
                    Reply::error(ErrorObject::method_not_found(&format!(
                        "Tool {} requires task augmentation (taskSupport: 'required')",
                        params["name"]
                    )))
                }
                _ => next.run(request).await,
            }
        })
    }
}

fn task_id(params: &Value) -> Result<String, ErrorObject> {
    serde_json::from_value::<TaskIdParams>(params.clone())
        .map(|p| p.task_id)
        .map_err(|e| ErrorObject::invalid_params(e.to_string()))
}

/// The fixture server (see the module docs).
pub fn server() -> Server {
    let tasks = Arc::new(Tasks::default());
    let (get, result, list, cancel, ended) = (
        Arc::clone(&tasks),
        Arc::clone(&tasks),
        Arc::clone(&tasks),
        Arc::clone(&tasks),
        Arc::clone(&tasks),
    );
    Server::builder("tasks-2025", "1.0.0")
        .tool(task_tool("research", "required"), |_ctx, _params| async {
            CallToolResult::error("unreachable: the middleware answers")
        })
        .tool(task_tool("slow", "required"), |_ctx, _params| async {
            CallToolResult::error("unreachable: the middleware answers")
        })
        .tool(
            task_tool("quick", "optional"),
            |_ctx, params: CallToolRequestParams| async move {
                let topic = params
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("topic"))
                    .and_then(Value::as_str)
                    .unwrap_or("nothing")
                    .to_owned();
                CallToolResult::text(format!("quick {topic}"))
            },
        )
        .tool(
            task_tool("wait_ended", "forbidden"),
            move |_ctx, params: CallToolRequestParams| {
                let tasks = Arc::clone(&ended);
                async move {
                    let id = params
                        .arguments
                        .as_ref()
                        .and_then(|a| a.get("taskId"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let task = tasks.ended(&id, Duration::from_secs(10)).await?;
                    Ok::<_, ErrorObject>(CallToolResult::text(task.status.to_string()))
                }
            },
        )
        .tool(
            Tool::new("async_elicit", Tool::empty_input_schema()),
            |ctx: RequestContext, _params| async move {
                let question = json!({
                    "mode": "form",
                    "message": "Your name, at your pace?",
                    "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}, "required": ["name"]},
                    "task": {"ttl": 60_000},
                });
                client_task(&ctx, "elicitation/create", &question).await
            },
        )
        .tool(
            Tool::new("async_sample", Tool::empty_input_schema()),
            |ctx: RequestContext, _params| async move {
                let question = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                    "maxTokens": 50,
                    "task": {"ttl": 60_000},
                });
                client_task(&ctx, "sampling/createMessage", &question).await
            },
        )
        .method("tasks/get", move |_ctx, params: Value| {
            let tasks = Arc::clone(&get);
            async move {
                serde_json::to_value(tasks.get(&task_id(&params)?)?)
                    .map_err(|e| ErrorObject::internal(e.to_string()))
            }
        })
        .method("tasks/result", move |ctx: RequestContext, params: Value| {
            let tasks = Arc::clone(&result);
            async move { tasks.result(&ctx, &task_id(&params)?).await }
        })
        .method("tasks/list", move |_ctx, _params: Value| {
            let tasks = Arc::clone(&list);
            async move {
                let all: Vec<Task> = tasks.lock().values().map(|e| e.task.clone()).collect();
                Ok::<_, ErrorObject>(json!({ "tasks": all }))
            }
        })
        .method("tasks/cancel", move |_ctx, params: Value| {
            let tasks = Arc::clone(&cancel);
            async move {
                serde_json::to_value(tasks.cancel(&task_id(&params)?)?)
                    .map_err(|e| ErrorObject::internal(e.to_string()))
            }
        })
        .middleware(TaskCalls(tasks))
        .build()
        .expect("the fixture builds")
}

/// Asks the client to run `method` as a task and follows it as the reference server does;
/// answers a JSON report: the statuses polled, whether `tasks/list` showed the task, the
/// result, and the error of a `tasks/result` about a made-up id.
async fn client_task(
    ctx: &RequestContext,
    method: &'static str,
    params: &Value,
) -> Result<CallToolResult, ErrorObject> {
    let created = ctx.request_client(method, params).await?;
    let created: CreateTaskResult = serde_json::from_value(created)
        .map_err(|e| ErrorObject::internal(format!("not a CreateTaskResult: {e}")))?;
    let id = created.task.task_id.clone();
    let interval = Duration::from_millis(created.task.poll_interval.unwrap_or(100).clamp(10, 1000));
    let mut statuses = vec![created.task.status.to_string()];
    // At most 500 polls: a client that never finishes fails the test rather than hang it.
    for _ in 0..500 {
        let task: Task = serde_json::from_value(
            ctx.request_client("tasks/get", &json!({"taskId": id}))
                .await?,
        )
        .map_err(|e| ErrorObject::internal(format!("not a Task: {e}")))?;
        if statuses.last() != Some(&task.status.to_string()) {
            statuses.push(task.status.to_string());
        }
        if task.status.is_terminal() {
            break;
        }
        tokio::time::sleep(interval).await;
    }
    let listed = ctx.request_client("tasks/list", &json!({})).await?;
    let listed = listed["tasks"]
        .as_array()
        .is_some_and(|tasks| tasks.iter().any(|t| t["taskId"] == json!(id)));
    let result = ctx
        .request_client("tasks/result", &json!({"taskId": id}))
        .await?;
    let unknown = match ctx
        .request_client("tasks/result", &json!({"taskId": "no-such-task"}))
        .await
    {
        Ok(value) => json!({"unexpected": value}),
        Err(error) => json!({"code": error.code.0, "message": error.message}),
    };
    let report = json!({
        "statuses": statuses,
        "listed": listed,
        "result": result,
        "unknown": unknown,
    });
    Ok(CallToolResult::text(report.to_string()))
}

/// Serves [`server`] on stdin/stdout as a 2025-11-25-only server: a `server/discover` probe is
/// refused with `-32601` before it reaches the SDK (which would otherwise commit the connection
/// to 2026-07-28), so clients in `Mode::Auto` fall back to `initialize` as they do with the
/// reference server.
///
/// # Errors
/// I/O errors on stdin or stdout.
pub async fn serve_stdio() -> std::io::Result<()> {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    // One writer for stdout: the server's lines and the refusals.
    let (lines, mut outgoing) = tokio::sync::mpsc::channel::<String>(64);
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = outgoing.recv().await {
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let from_server_lines = lines.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(from_server).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if from_server_lines.send(format!("{line}\n")).await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = stdin.next_line().await {
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if message["method"] == "server/discover" {
                let refusal = json!({"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32601, "message": "Method not found: server/discover"}});
                if lines.send(format!("{refusal}\n")).await.is_err() {
                    break;
                }
                continue;
            }
            if to_server
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
        // Dropping `to_server` ends the server.
    });
    server().serve_io(server_in, server_out).await
}
