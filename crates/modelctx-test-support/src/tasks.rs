//! Shared by the tasks tests: task-tool fixtures, a server on HTTP at 127.0.0.1, raw requests
//! with the routing headers, and polling helpers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use modelctx::server::Server;
use modelctx::server::http::HttpConfig;
use modelctx::server::tasks::{
    Preflight, TaskContext, TaskInput, TaskStep, TaskStore, TaskSupport, TaskTool, Tasks,
    TasksBuilder,
};
use modelctx::types::*;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

/// The tasks extension's identifier.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

pub use crate::json::object;

/// A form elicitation asking for one string field.
pub fn ask_text(message: &str, field: &str) -> InputRequest {
    let schema = serde_json::from_value(json!({
        "type": "object", "properties": {field: {"type": "string"}}, "required": [field]
    }))
    .unwrap();
    InputRequest::elicit(ElicitRequestFormParams::new(message, schema))
}

fn answer_text(input: &TaskInput, key: &str, field: &str) -> Option<String> {
    input
        .accepted(key)?
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// What the staged fixture has done, for the tests to assert on.
#[derive(Debug, Default)]
pub struct Probe {
    /// How many times stage one (the expensive part) ran.
    pub stage_one: AtomicUsize,
    /// How many times the handler ran at all.
    pub runs: AtomicUsize,
    /// How many runs reached the gate (stage one checkpointed); see [`Probe::reached_gate`].
    pub at_gate: AtomicUsize,
    gate: Notify,
    /// While zero, runs wait at the gate (until dropped); each run decrements it.
    pub pass_gate: AtomicUsize,
}

impl Probe {
    /// Waits until `times` runs in all reached the gate; panics after 10 s, so a run that never
    /// gets there fails the test instead of hanging it.
    pub async fn reached_gate(&self, times: usize) {
        let wait = async {
            loop {
                let changed = self.gate.notified();
                if self.at_gate.load(Ordering::SeqCst) >= times {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} of {times} runs reached the gate in 10 s",
                    self.at_gate.load(Ordering::SeqCst)
                )
            });
    }
}

/// Every task fixture, on `store`; `probe` observes the staged tool.
pub fn tasks(store: Arc<dyn TaskStore>, probe: &Arc<Probe>) -> TasksBuilder {
    let staged_probe = Arc::clone(probe);
    Tasks::builder_shared(store)
        .poll_interval(Duration::from_millis(50))
        .lease(Duration::from_millis(600))
        .sweep_interval(Duration::from_secs(3600))
        .cancel_grace(Duration::from_millis(100))
        .tool(TaskTool::new(
            Tool::new(
                "sleepy",
                object(json!({"type": "object", "properties": {"ms": {"type": "integer"}}})),
            ),
            |ctx: TaskContext, input: TaskInput| async move {
                let ms = input.argument("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = ctx.cancelled() => return CallToolResult::text("stopped"),
                }
                CallToolResult::text(format!("slept {ms} ms"))
            },
        ))
        .tool(TaskTool::new(
            Tool::new("ask_twice", Tool::empty_input_schema()),
            |_ctx: TaskContext, input: TaskInput| async move {
                let Some(first) = answer_text(&input, "first", "name") else {
                    return TaskStep::ask("first", ask_text("First name?", "name"));
                };
                let Some(last) = answer_text(&input, "last", "name") else {
                    return TaskStep::ask("last", ask_text("Last name?", "name"))
                        .with_state(json!({"first": first}));
                };
                let first_from_state = input.state.as_ref().and_then(|s| s["first"].as_str());
                assert_eq!(first_from_state, Some(first.as_str()), "checkpoint kept");
                TaskStep::Complete(CallToolResult::text(format!("Hello, {first} {last}!")))
            },
        ))
        .tool(TaskTool::new(
            Tool::new("reuse_key", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move {
                TaskStep::ask("same", ask_text("Again?", "name"))
            },
        ))
        .tool(TaskTool::new(
            Tool::new("tool_error", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move {
                CallToolResult::error("the tool could not do it")
            },
        ))
        .tool(TaskTool::new(
            Tool::new("rpc_error", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move {
                Err::<TaskStep, _>(ErrorObject::invalid_params("no such widget"))
            },
        ))
        .tool(TaskTool::new(
            Tool::new("panics", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move {
                if std::hint::black_box(true) {
                    panic!("the handler fell over");
                }
                TaskStep::Complete(CallToolResult::text("unreachable"))
            },
        ))
        .tool(TaskTool::new(
            Tool::new("needs_roots", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move {
                TaskStep::ask("roots", InputRequest::list_roots())
            },
        ))
        .tool(
            TaskTool::new(
                Tool::new("required_only", Tool::empty_input_schema()),
                |_ctx: TaskContext, _input: TaskInput| async move {
                    CallToolResult::text("ran as a task")
                },
            )
            .support(TaskSupport::Required),
        )
        .tool(
            TaskTool::new(
                Tool::new("never", Tool::empty_input_schema()),
                |ctx: TaskContext, _input: TaskInput| async move {
                    CallToolResult::text(format!("inline: {}", ctx.task_id().is_none()))
                },
            )
            .support(TaskSupport::Forbidden),
        )
        .tool(TaskTool::new(
            Tool::new("stubborn", Tool::empty_input_schema()),
            |_ctx: TaskContext, _input: TaskInput| async move {
                // Ignores cancellation: the runtime drops it after the grace period.
                tokio::time::sleep(Duration::from_secs(60)).await;
                CallToolResult::text("finally")
            },
        ))
        .tool(
            TaskTool::new(
                Tool::new("greet_later", Tool::empty_input_schema()),
                |_ctx: TaskContext, input: TaskInput| async move {
                    let name = input
                        .state
                        .as_ref()
                        .and_then(|s| s["name"].as_str())
                        .unwrap_or("?");
                    CallToolResult::text(format!("Hello later, {name}!"))
                },
            )
            .preflight(ask_name_first),
        )
        .tool(TaskTool::new(
            Tool::new("staged", Tool::empty_input_schema()),
            move |ctx: TaskContext, input: TaskInput| {
                let probe = Arc::clone(&staged_probe);
                async move { staged(probe, ctx, input).await }
            },
        ))
}

/// The preflight of `greet_later`: the name is asked (MRTR) before any task exists.
async fn ask_name_first(
    _ctx: modelctx::server::RequestContext,
    params: CallToolRequestParams,
) -> Preflight {
    let name = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("who"))
        .and_then(|r| r.as_elicit().ok())
        .and_then(|a| a.content)
        .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned));
    match name {
        Some(name) => Preflight::Start(Some(json!({"name": name}))),
        None => {
            Preflight::Ask(InputRequiredResult::new().with_request("who", ask_text("Who?", "name")))
        }
    }
}

/// Asks for approval, then runs stage one (checkpointed), waits at the gate, and finishes with
/// stage two. Re-runnable: a resumed run skips what its checkpoint says is done.
async fn staged(
    probe: Arc<Probe>,
    ctx: TaskContext,
    input: TaskInput,
) -> Result<TaskStep, ErrorObject> {
    probe.runs.fetch_add(1, Ordering::SeqCst);
    let Some(approver) = answer_text(&input, "approve", "name") else {
        return Ok(TaskStep::ask("approve", ask_text("Who approves?", "name")));
    };
    let done = input
        .state
        .as_ref()
        .and_then(|s| s["stage"].as_u64())
        .unwrap_or(0);
    if done < 1 {
        probe.stage_one.fetch_add(1, Ordering::SeqCst);
        ctx.checkpoint(json!({"stage": 1})).await?;
        ctx.set_status_message("stage one done").await?;
    }
    probe.at_gate.fetch_add(1, Ordering::SeqCst);
    probe.gate.notify_waiters();
    let passes = probe
        .pass_gate
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if passes.is_err() {
        // Held here until the instance dies (or the task is cancelled).
        ctx.cancelled().await;
        return Ok(TaskStep::Complete(CallToolResult::text(
            "cancelled at the gate",
        )));
    }
    Ok(TaskStep::Complete(CallToolResult::text(format!(
        "approved by {approver}; stage one ran {} time(s)",
        probe.stage_one.load(Ordering::SeqCst)
    ))))
}

/// A server with one plain tool and the task fixtures.
pub fn server(tasks: Tasks) -> Server {
    Server::builder("tasks-test", "1.0.0")
        .tool(
            Tool::new("plain", Tool::empty_input_schema()),
            |_ctx, _params| async { CallToolResult::text("plain") },
        )
        .tasks(tasks)
        .build()
        .unwrap()
}

/// A server with the task fixtures whose principal is the `x-user` header (a gateway's).
pub fn server_by_user(tasks: Tasks) -> Server {
    Server::builder("principals", "1.0.0")
        .bind_principal(|ctx| {
            ctx.http_parts()?
                .headers
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(modelctx::seal::Principal::new)
        })
        .tasks(tasks)
        .build()
        .unwrap()
}

/// The `_meta` of a 2026-07-28 request.
pub fn meta(capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// Client capabilities with the tasks extension and form elicitation.
pub fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {TASKS: {}}})
}

/// A request with `_meta` for `capabilities`.
pub fn request(id: i64, method: &str, params: Value, capabilities: &Value) -> Value {
    let mut params = params;
    params
        .as_object_mut()
        .unwrap()
        .insert("_meta".into(), meta(capabilities));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The server on HTTP at 127.0.0.1 on a free port; stops when dropped.
#[derive(Debug)]
pub struct HttpServer {
    /// `http://<addr>/mcp`.
    pub url: String,
    /// An HTTP client for raw requests.
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
}

impl HttpServer {
    /// Serves `server` on a free port.
    pub async fn start(server: Server) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            server
                .serve_http_on(listener, HttpConfig::default(), async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self {
            url: format!("http://localhost:{port}/mcp"),
            // Bounded, so a server that stops answering fails the test instead of hanging it.
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            stop: Some(stop),
        }
    }

    /// POSTs `body` with the routing headers (`Mcp-Name` from `name`, `taskId` or `uri`),
    /// adjusted by `overrides` (`None` removes a header); returns the status and the last
    /// JSON-RPC message.
    pub async fn post(&self, body: &Value, overrides: &[(&str, Option<&str>)]) -> (u16, Value) {
        let method = body["method"].as_str().unwrap_or_default();
        let params = &body["params"];
        let name = params["name"]
            .as_str()
            .or(params["taskId"].as_str())
            .or(params["uri"].as_str());
        let mut headers = vec![
            (
                "accept",
                Some("application/json, text/event-stream".to_owned()),
            ),
            ("content-type", Some("application/json".to_owned())),
            ("mcp-protocol-version", Some("2026-07-28".to_owned())),
            ("mcp-method", Some(method.to_owned())),
            ("mcp-name", name.map(str::to_owned)),
        ];
        for (header, value) in overrides {
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(header));
            headers.push((header, value.map(str::to_owned)));
        }
        let mut request = self.client.post(&self.url).json(body);
        for (header, value) in headers {
            if let Some(value) = value {
                request = request.header(header, value);
            }
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let sse = response.headers().get("content-type").is_some_and(|v| {
            v.to_str()
                .unwrap_or_default()
                .starts_with("text/event-stream")
        });
        let bytes = response.bytes().await.unwrap();
        let message = if sse {
            let mut parser = modelctx::__fuzz::SseParser::default();
            let events = parser.feed(&bytes).unwrap();
            serde_json::from_str(&events.last().unwrap().data).unwrap()
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        (status, message)
    }

    /// A request with capabilities; returns the status and the response.
    pub async fn call(&self, id: i64, method: &str, params: Value, caps: &Value) -> (u16, Value) {
        self.post(&request(id, method, params, caps), &[]).await
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Polls `tasks/get` (at most 10 s) until `done` holds for the task.
pub async fn poll_until(
    server: &HttpServer,
    task_id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, reply) = server
            .call(0, "tasks/get", json!({"taskId": task_id}), &with_tasks())
            .await;
        assert_eq!(status, 200, "{reply}");
        let task = reply["result"].clone();
        if done(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {task_id} never got there; last {task}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls until the task has `status`.
pub async fn poll_status(server: &HttpServer, task_id: &str, status: &str) -> Value {
    poll_until(server, task_id, |t| t["status"] == status).await
}

/// Starts `tool` as a task; returns the task id.
pub async fn start(server: &HttpServer, tool: &str, arguments: Value) -> String {
    let (status, reply) = server
        .call(
            1,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            &with_tasks(),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    reply["result"]["taskId"].as_str().unwrap().to_owned()
}
