//! The wire side of the tasks extension: the `tools/call` of a task tool (task, preflight, or
//! synchronous run) and the `tasks/get`, `tasks/update`, `tasks/cancel` handlers.

use std::sync::Arc;

use modelctx_seal::Reason;
use modelctx_types::methods::CallTool;
use modelctx_types::tasks::{
    CancelTaskRequestParams, GetTaskRequestParams, GetTaskResult, TASKS_EXTENSION,
    UpdateTaskRequestParams, tasks_capability,
};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, Era, ErrorObject, ExtensionResult, InputRequiredResult,
    InputResponses, Meta, Method as _, Outcome, ResultType,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::handler::{Preflight, TaskContext, TaskInput, TaskStep, TaskSupport, TaskTool};
use super::runtime::Runtime;
use crate::server::bridge::{Rounds, ask_all};
use crate::server::message::{invalid_request_state, log_rejected_state};
use crate::server::{BoxFuture, MethodHandler, RequestContext, ToolHandler};

/// The prefix of the `requestState` this module mints when it runs a task tool synchronously
/// (a client without the extension): what follows is [`InlineState`] as JSON. The server seals
/// it like any other state when sealing is on.
const INLINE_PREFIX: &str = "mcp-task:";

/// The progress of a synchronous run, carried in `requestState` between rounds.
#[derive(Serialize, Deserialize)]
struct InlineState {
    #[serde(default)]
    state: Option<Value>,
    #[serde(default)]
    answers: InputResponses,
}

/// The registry entry of a task tool.
pub(crate) struct TaskToolHandler {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) name: String,
}

impl ToolHandler for TaskToolHandler {
    fn call(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<CallToolResult>, ErrorObject>> {
        let runtime = Arc::clone(&self.runtime);
        let name = self.name.clone();
        Box::pin(async move {
            let tool = runtime
                .tools
                .get(&name)
                .cloned()
                .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown tool: {name}")))?;
            call_tool(&runtime, &tool, ctx, params).await
        })
    }
}

/// `tools/call` of a task tool.
async fn call_tool(
    runtime: &Runtime,
    tool: &TaskTool,
    ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    // Per request, never per session: only a client that declares the extension on *this*
    // request may receive a task.
    let declared = ctx.era() == Era::Modern && ctx.client_capabilities().extension(TASKS_EXTENSION);
    if !declared {
        if tool.support == TaskSupport::Required {
            ctx.require_capabilities(&tasks_capability())?;
        }
        return run_inline(tool, &ctx, params).await;
    }
    if tool.support == TaskSupport::Forbidden {
        return run_inline(tool, &ctx, params).await;
    }
    // Multi-round-trip exchanges first, synchronously, as the spec recommends.
    let state = match &tool.preflight {
        None => None,
        Some(preflight) => match preflight.check(ctx.clone(), params.clone()).await? {
            Preflight::Start(state) => state,
            Preflight::Ask(irr) => return Ok(Outcome::InputRequired(irr)),
            Preflight::Complete(result) => return Ok(Outcome::Complete(result)),
        },
    };
    let mut created = runtime
        .create(
            &tool.tool.name,
            params.arguments.unwrap_or_default(),
            ctx.client_capabilities().clone(),
            ctx.principal().map(|p| p.as_str().to_owned()),
            state,
        )
        .await?;
    created
        .meta
        .get_or_insert_with(Meta::new)
        .set_server_info(ctx.server().info());
    let raw = serde_json::value::to_raw_value(&created)
        .map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Outcome::Extension(ExtensionResult::new(
        ResultType::TASK,
        raw,
    )))
}

/// Runs a task tool within the request: its questions become an `InputRequiredResult` (2026)
/// or back-channel requests (handshake era), its progress travels in `requestState`.
async fn run_inline(
    tool: &TaskTool,
    ctx: &RequestContext,
    mut params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let resumed = params
        .request_state
        .as_deref()
        .and_then(|s| s.strip_prefix(INLINE_PREFIX))
        .map(serde_json::from_str::<InlineState>)
        .transpose()
        .map_err(|_| {
            // Logged like every other refused state (a WARN line), then the one error.
            log_rejected_state(CallTool::NAME, Some(&tool.tool.name), Reason::Malformed);
            invalid_request_state()
        })?;
    // One count for the preflight's rounds and the handler's, as for any other request.
    let mut rounds = Rounds::default();
    let InlineState {
        mut state,
        mut answers,
    } = match resumed {
        Some(mut saved) => {
            saved
                .answers
                .extend(params.input_responses.take().unwrap_or_default());
            saved
        }
        None => match &tool.preflight {
            None => InlineState {
                state: None,
                answers: InputResponses::new(),
            },
            Some(_) => match preflight_inline(tool, ctx, &mut params, &mut rounds).await? {
                Ok(state) => InlineState {
                    state,
                    answers: InputResponses::new(),
                },
                Err(outcome) => return Ok(outcome),
            },
        },
    };
    loop {
        let input = TaskInput {
            arguments: params.arguments.clone().unwrap_or_default(),
            state: state.clone(),
            responses: answers.clone(),
        };
        match tool.handler.run(TaskContext::inline(ctx), input).await? {
            TaskStep::Complete(result) => return Ok(Outcome::Complete(result)),
            TaskStep::Ask {
                requests,
                state: next,
            } => {
                if next.is_some() {
                    state = next;
                }
                if ctx.era() == Era::Handshake {
                    rounds.next(CallTool::NAME)?;
                    answers.extend(ask_all(ctx, requests).await?);
                    continue;
                }
                let saved = serde_json::to_string(&InlineState { state, answers })
                    .map_err(|e| ErrorObject::internal(e.to_string()))?;
                let mut irr =
                    InputRequiredResult::new().with_state(format!("{INLINE_PREFIX}{saved}"));
                irr.input_requests = Some(requests);
                return Ok(Outcome::InputRequired(irr));
            }
        }
    }
}

/// The preflight of a synchronous run: `Ok(state)` to go on, `Err(outcome)` to answer now.
async fn preflight_inline(
    tool: &TaskTool,
    ctx: &RequestContext,
    params: &mut CallToolRequestParams,
    rounds: &mut Rounds,
) -> Result<Result<Option<Value>, Outcome<CallToolResult>>, ErrorObject> {
    let Some(preflight) = &tool.preflight else {
        return Ok(Ok(None));
    };
    loop {
        match preflight.check(ctx.clone(), params.clone()).await? {
            Preflight::Start(state) => return Ok(Ok(state)),
            Preflight::Complete(result) => return Ok(Err(Outcome::Complete(result))),
            Preflight::Ask(irr) if ctx.era() == Era::Handshake => {
                rounds.next(CallTool::NAME)?;
                let answers = ask_all(ctx, irr.input_requests.unwrap_or_default()).await?;
                params.input_responses = Some(answers);
                params.request_state = irr.request_state;
            }
            Preflight::Ask(irr) => return Ok(Err(Outcome::InputRequired(irr))),
        }
    }
}

/// Which of the three methods.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskMethod {
    Get,
    Update,
    Cancel,
}

/// The handler of one tasks method.
pub(crate) struct TaskMethodHandler {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) method: TaskMethod,
}

impl MethodHandler for TaskMethodHandler {
    fn handle(
        &self,
        ctx: RequestContext,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let runtime = Arc::clone(&self.runtime);
        let method = self.method;
        Box::pin(async move { serve(&runtime, method, &ctx, params).await })
    }
}

fn decode<P: DeserializeOwned>(params: Value) -> Result<P, ErrorObject> {
    serde_json::from_value(params)
        .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
}

/// The order mirrors the ladder: headers (`-32020`), then the capability (`-32021`), then the
/// params and the task itself (`-32602`).
async fn serve(
    runtime: &Runtime,
    method: TaskMethod,
    ctx: &RequestContext,
    params: Value,
) -> Result<Value, ErrorObject> {
    check_name_header(ctx, params.get("taskId").and_then(Value::as_str))?;
    ctx.require_capabilities(&tasks_capability())?;
    let principal = ctx.principal().map(|p| p.as_str().to_owned());
    let principal = principal.as_deref();
    match method {
        TaskMethod::Get => {
            let params: GetTaskRequestParams = decode(params)?;
            let record = runtime.load_visible(&params.task_id, principal).await?;
            let result = GetTaskResult::from(runtime.detailed(&record));
            serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
        }
        TaskMethod::Update => {
            let params: UpdateTaskRequestParams = decode(params)?;
            runtime
                .update(&params.task_id, principal, &params.input_responses)
                .await?;
            Ok(Value::Object(modelctx_types::Extra::new()))
        }
        TaskMethod::Cancel => {
            let params: CancelTaskRequestParams = decode(params)?;
            runtime.cancel(&params.task_id, principal).await?;
            Ok(Value::Object(modelctx_types::Extra::new()))
        }
    }
}

/// On streamable HTTP the client must name the task in `Mcp-Name` (so that gateways can route
/// by task): it must be present, once, and equal `params.taskId` — else `-32020`, as for the
/// other named methods. The ladder has already checked `Mcp-Method` and the version header.
#[cfg(feature = "http-server")]
fn check_name_header(ctx: &RequestContext, task_id: Option<&str>) -> Result<(), ErrorObject> {
    use crate::http::headers;
    let Some(parts) = ctx.http_parts() else {
        return Ok(());
    };
    if ctx.era() == Era::Handshake {
        return Ok(());
    }
    let mut values = parts.headers.get_all(headers::NAME).iter();
    let raw = match (values.next(), values.next()) {
        (None, _) => return Err(ErrorObject::header_mismatch("missing Mcp-Name header")),
        (Some(_), Some(_)) => {
            return Err(ErrorObject::header_mismatch("Mcp-Name header is repeated"));
        }
        (Some(value), None) => value
            .to_str()
            .map_err(|_| ErrorObject::header_mismatch("Mcp-Name header is not valid text"))?
            .trim_matches([' ', '\t']),
    };
    let value = headers::decode_value(raw)
        .map_err(|e| ErrorObject::header_mismatch(format!("Mcp-Name: {e}")))?;
    match task_id {
        Some(task_id) if task_id != value => Err(ErrorObject::header_mismatch(format!(
            "Mcp-Name header value {value:?} does not match body value {task_id:?}"
        ))),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "http-server"))]
fn check_name_header(_ctx: &RequestContext, _task_id: Option<&str>) -> Result<(), ErrorObject> {
    Ok(())
}
