//! `mcp tools|prompts|resources` and `mcp call|prompt|read`.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{
    Client, ClientBuilder, ClientError, RequestOptions, TaskSettings, Tasks2025Settings,
};
use modelctx::types::Method as _;
use modelctx::types::methods::{
    CallTool, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ListTools, ReadResource,
};
use modelctx::types::tasks::DetailedTask;
use modelctx::types::tasks_2025::Task as Task2025;
use modelctx::types::{
    CallToolRequestParams, Era, GetPromptRequestParams, ReadResourceRequestParams,
};
use serde_json::{Map, Value};

use crate::answers::{Answers, lenient_json};
use crate::ask::Asker;
use crate::cli::{AnswerArgs, CallArgs, ConnectArgs, ListArgs, ReadArgs};
use crate::error::{CliError, Result};
use crate::progress::ProgressView;
use crate::read_output;
use crate::render;
use crate::safe_text::line;
use crate::sync::lock;
use crate::target::{Target, close, describe_server, explain, interruptible, timeout};

/// How long `tasks/cancel` may take when the command is interrupted.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// What to suggest when a server says it cannot ask on this (2026-07-28) connection: the mode
/// by the revision's name, as `--help` names it (`legacy` is only its old name, kept for
/// scripts).
const TRY_2025: &str = "the server asks its questions only over 2025-11-25 connections \
    (server-to-client requests, which 2026-07-28 removed): try again with --mode 2025-11-25";

/// What to list.
#[derive(Debug, Clone, Copy)]
pub(crate) enum List {
    Tools,
    Prompts,
    Resources,
}

/// What to get.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Get {
    Tool,
    Prompt,
    Resource,
    /// A task a `tools/call` became, followed to its end.
    Task,
}

/// Runs `work` under `--timeout` (the time spent signing in is not counted). Connecting is not
/// part of it: `--connect-timeout` bounds that.
pub(crate) async fn bounded<T>(
    args: &ConnectArgs,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    let after = timeout(args);
    crate::sign_in_clock::within(after, &args.sign_in, work)
        .await
        .unwrap_or_else(|| {
            Err(CliError::failed(format!(
                "timed out after {} s (--timeout)",
                after.map_or(0.0, |a| a.as_secs_f64())
            )))
        })
}

fn failed(what: &str) -> impl FnOnce(ClientError) -> CliError + '_ {
    move |error| CliError::failed(format!("{what}: {}", describe(&error)))
}

/// A client error in the CLI's terms: a limit names the flag that raises it, not the builder
/// method.
fn describe(error: &ClientError) -> String {
    match error {
        ClientError::SamplingBudgetExceeded { max } => format!(
            "the server asked for more than {max} sampling requests in one request \
             (--max-sampling)"
        ),
        ClientError::TooManyInputRequests { count, max } => {
            format!("the server asked {count} questions in one round; at most {max} are answered")
        }
        other => explain(other, true),
    }
}

/// The task a `tools/call` became, while it runs: for the messages of its end, and to cancel it
/// when the command is interrupted (Ctrl-C) or runs out of time.
#[derive(Debug, Clone, Default)]
struct PendingTask(Arc<Mutex<PendingState>>);

#[derive(Debug, Default)]
struct PendingState {
    /// The task's id, and whether it has ended.
    task: Option<(String, bool)>,
    /// Whether it is a 2025-11-25 task (cancelled with that protocol's `tasks/cancel`).
    handshake: bool,
}

impl PendingTask {
    fn lock(&self) -> std::sync::MutexGuard<'_, PendingState> {
        lock(&self.0)
    }

    fn seen(&self, task: &DetailedTask) {
        self.lock().task = Some((task.task_id.clone(), task.status.is_terminal()));
    }

    fn seen_2025(&self, task: &Task2025) {
        let mut state = self.lock();
        state.task = Some((task.task_id.clone(), task.status.is_terminal()));
        state.handshake = true;
    }

    /// Whether a task status has been seen.
    fn has_task(&self) -> bool {
        self.lock().task.is_some()
    }

    /// The error of a `tools/call`, saying which task failed or was cancelled.
    fn explain(&self, error: ClientError) -> CliError {
        let task = self.lock().task.as_ref().map(|(id, _)| id.clone());
        match (task, &error) {
            (_, ClientError::TaskCancelled { task_id }) => {
                CliError::failed(format!("task {task_id} was cancelled before it finished"))
            }
            (Some(id), ClientError::Rpc(object)) => CliError::failed(format!(
                "task {id} failed with error {}: {}",
                object.code, object.message
            )),
            _ => failed(CallTool::NAME)(error),
        }
    }

    /// Cancels the task if one is still running (waiting at most a few seconds for the server).
    async fn cancel(&self, client: &Client) {
        let (id, handshake) = {
            let mut state = self.lock();
            match state.task.take() {
                Some((id, false)) => (id, state.handshake),
                _ => return,
            }
        };
        let shown = line(&id);
        eprintln!("cancelling task {shown}…");
        let cancel = async {
            if handshake {
                client.cancel_task_2025(&id).await.map(drop)
            } else {
                client.cancel_task(&id).await
            }
        };
        match tokio::time::timeout(CANCEL_WAIT, cancel).await {
            Ok(Ok(())) => eprintln!("task {shown} cancelled"),
            Ok(Err(error)) => eprintln!("tasks/cancel {shown}: {}", line(&error.to_string())),
            Err(_) => eprintln!("tasks/cancel {shown}: no answer within {CANCEL_WAIT:?}"),
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `mcp tools|prompts|resources TARGET`.
pub(crate) async fn list(what: List, args: ListArgs) -> Result<ExitCode> {
    let (target, rest) = Target::split(&args.positional, &args.command)?;
    if let Some(extra) = rest.first() {
        return Err(CliError::usage(format!("unexpected argument {extra:?}")));
    }
    let client = interruptible(target.connect(Client::builder(), &args.connect)).await?;
    let listing = bounded(&args.connect, async {
        Ok(match what {
            List::Tools => {
                let tools = to_json(&client.list_tools().await.map_err(failed(ListTools::NAME))?);
                let human = render::tools(tools.as_array().map_or(&[], Vec::as_slice));
                (tools, human)
            }
            List::Prompts => {
                let prompts = to_json(
                    &client
                        .list_prompts()
                        .await
                        .map_err(failed(ListPrompts::NAME))?,
                );
                let human = render::prompts(prompts.as_array().map_or(&[], Vec::as_slice));
                (prompts, human)
            }
            List::Resources => {
                let resources = to_json(
                    &client
                        .list_resources()
                        .await
                        .map_err(failed(ListResources::NAME))?,
                );
                let templates = to_json(
                    &client
                        .list_resource_templates()
                        .await
                        .map_err(failed(ListResourceTemplates::NAME))?,
                );
                let human = render::resources(
                    resources.as_array().map_or(&[], Vec::as_slice),
                    templates.as_array().map_or(&[], Vec::as_slice),
                );
                let mut both = Map::new();
                both.insert("resources".to_owned(), resources);
                both.insert("resourceTemplates".to_owned(), templates);
                (Value::Object(both), human)
            }
        })
    });
    let (raw, human) = match interruptible(listing).await {
        Ok(listed) => listed,
        Err(error) => {
            close(client).await;
            return Err(error);
        }
    };
    // Shown before the server is closed: its shutdown is not the user's wait.
    if args.json {
        println!("{}", render::json(&raw));
    } else {
        print!("{human}");
    }
    let _ = client.close().await;
    Ok(ExitCode::SUCCESS)
}

/// How `mcp read` shows the contents (`--output`, `--full`).
#[derive(Debug, Default)]
struct Contents {
    output: Option<PathBuf>,
    full: bool,
}

/// `mcp call|prompt|task [TARGET] NAME …`.
pub(crate) async fn get(what: Get, args: CallArgs) -> Result<ExitCode> {
    Box::pin(get_with(what, args, Contents::default())).await
}

/// `mcp read [TARGET] URI [--output FILE] [--full]`.
pub(crate) async fn read(args: ReadArgs) -> Result<ExitCode> {
    let contents = Contents {
        output: args.output,
        full: args.full,
    };
    Box::pin(get_with(Get::Resource, args.call, contents)).await
}

async fn get_with(what: Get, args: CallArgs, contents: Contents) -> Result<ExitCode> {
    let (target, operands) = Target::split(&args.positional, &args.command)?;
    let Some((name, rest)) = operands.split_first() else {
        return Err(CliError::usage(match what {
            Get::Tool => "which tool? `mcp call [TARGET] TOOL [ARGS…]`",
            Get::Prompt => "which prompt? `mcp prompt [TARGET] NAME [key=value…]`",
            Get::Resource => "which resource? `mcp read [TARGET] URI`",
            Get::Task => "which task? `mcp task [TARGET] TASK_ID`",
        }));
    };
    if matches!(what, Get::Resource | Get::Task)
        && let Some(extra) = rest.first()
    {
        return Err(CliError::usage(format!("unexpected argument {extra:?}")));
    }
    if let Some(missing) = missing_name(what, name) {
        return Err(CliError::usage(missing));
    }
    let progress = ProgressView::stderr();
    let pending = PendingTask::default();
    let (client, _) =
        connect_asking(&target, &args.connect, &args.answer, &progress, |b| b).await?;
    let call = bounded(&args.connect, async {
        let shown = progress.clone();
        let tracked = pending.clone();
        let options = RequestOptions::new()
            .on_progress(move |p| shown.update(&p))
            .on_task_status({
                let shown = progress.clone();
                let tracked = tracked.clone();
                move |task| {
                    tracked.seen(task);
                    shown.task(task);
                }
            })
            .on_task_2025_status({
                let shown = progress.clone();
                move |task| {
                    tracked.seen_2025(task);
                    shown.task_2025(task);
                }
            });
        match what {
            Get::Tool => {
                let arguments = tool_arguments(&client, name, rest).await?;
                let params = CallToolRequestParams::new(name.clone(), Some(arguments));
                Box::pin(client.call_tool_with(params, options))
                    .await
                    .map(|r| to_json(&r))
                    .map_err(|error| pending.explain(error))
            }
            Get::Prompt => {
                let params = GetPromptRequestParams::new(name.clone())
                    .with_arguments(prompt_arguments(rest)?);
                Box::pin(client.get_prompt_with(params, options))
                    .await
                    .map(|r| to_json(&r))
                    .map_err(failed(GetPrompt::NAME))
            }
            Get::Task => Box::pin(client.wait_task(name, &options))
                .await
                .map(|r| to_json(&r))
                .map_err(|error| match error {
                    // Before any status: the server does not know the id.
                    ClientError::Rpc(object) if !pending.has_task() => {
                        CliError::failed(format!("task {name}: {}", object.message))
                    }
                    error => pending.explain(error),
                }),
            Get::Resource => Box::pin(
                client.read_resource_with(ReadResourceRequestParams::new(name.clone()), options),
            )
            .await
            .map(|r| to_json(&r))
            .map_err(failed(ReadResource::NAME)),
        }
    });
    let modern = client.era() == Era::Modern;
    let result = match interruptible(call).await {
        Ok(result) => result,
        Err(error) => {
            // Failed, interrupted or out of time: a task still running is cancelled rather than
            // left behind, and the request in flight is abandoned, which the server is told
            // (`notifications/cancelled`, then `DELETE` of a 2025-11-25 HTTP session) before
            // the process exits.
            progress.clear();
            pending.cancel(&client).await;
            close(client).await;
            if modern && cannot_ask_on_2026(&error.to_string()) {
                return Err(error.with_note(TRY_2025));
            }
            return Err(error);
        }
    };
    progress.clear();
    if let Some(path) = &contents.output {
        match read_output::save(&result, path) {
            Ok(said) => eprintln!("{said}"),
            Err(error) => {
                close(client).await;
                return Err(error);
            }
        }
    } else if args.json {
        println!("{}", render::json(&result));
    } else {
        let text = match what {
            Get::Tool | Get::Task => render::tool_result(&result),
            Get::Prompt => render::prompt_result(&result),
            Get::Resource => read_output::shown(&result, contents.full),
        };
        println!("{text}");
    }
    // The server is closed after the result is shown: its shutdown (stdin closed, then up to
    // the grace period for it to exit) is not the user's wait.
    let _ = client.close().await;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let mut said = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|block| block.get("text").and_then(Value::as_str));
        let hint = if modern && said.any(cannot_ask_on_2026) {
            format!("; {TRY_2025}")
        } else {
            String::new()
        };
        eprintln!("error: the tool reported an error (isError){hint}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Connects to `target` as `mcp call` does (and `mcp app`): the server's questions asked in the
/// terminal or answered from `--answer`s, the server named in each; tool calls the server runs
/// as tasks followed to their end. The builder does not cancel an abandoned task itself: the
/// command does, awaited, before the process exits. Both task protocols: the 2026-07-28
/// extension, and 2025-11-25's experimental tasks (which also let a handshake-era server ask
/// its questions as tasks). Returns the client and the asker, for questions of the command's
/// own.
pub(crate) async fn connect_asking(
    target: &Target,
    connect: &ConnectArgs,
    answer: &AnswerArgs,
    progress: &ProgressView,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Result<(Client, Arc<Asker>)> {
    let answers = Answers::from_args(&answer.answers, answer.answers_file.as_deref())?;
    let asker = Arc::new(Asker::new(answers, answer, true, progress.clone())?);
    let builder = asker
        .install(configure(Client::builder()))
        .tasks(TaskSettings::new().cancel_on_drop(false))
        .tasks_2025(Tasks2025Settings::new().cancel_on_drop(false));
    let client = interruptible(target.connect(builder, connect)).await?;
    asker.set_server(format!("{} ({target})", describe_server(&client)));
    Ok((client, asker))
}

/// Whether a server's error says that it cannot ask (elicit, sample, list roots) on a
/// 2026-07-28 connection: a server written for server-to-client requests, such as FastMCP
/// 4.1.6's `ctx.elicit` ("elicitation via server-initiated requests is unavailable on
/// 2026-07-28 connections"), works on 2025-11-25, which a user cannot guess from that text.
fn cannot_ask_on_2026(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("2026-07-28")
        && [
            "unavailable",
            "not available",
            "not supported",
            "unsupported",
            "server-initiated",
        ]
        .iter()
        .any(|why| text.contains(why))
}

/// Says that the tool or prompt name is missing when the first operand is an argument (a JSON
/// object, `key=value` or `key:=JSON`): sent as a name, it would only earn the server's
/// "unknown tool", which does not say what went wrong. Names with `=` or a leading `{` are not
/// names a server gives (the spec's tool names are letters, digits, `_`, `-` and `.`).
fn missing_name(what: Get, name: &str) -> Option<String> {
    let (kind, usage) = match what {
        Get::Tool => ("tool", "mcp call [TARGET] TOOL [ARGS_JSON | key=value …]"),
        Get::Prompt => ("prompt", "mcp prompt [TARGET] NAME [key=value …]"),
        Get::Resource | Get::Task => return None,
    };
    let looks_like = if name.trim_start().starts_with('{') {
        "a JSON object of arguments"
    } else if name.contains('=') {
        "an argument"
    } else {
        return None;
    };
    Some(format!(
        "the {kind} name is missing: {name:?} is {looks_like}, not a {kind} name (`{usage}`)"
    ))
}

/// The tool's arguments: one JSON object, or `key=value` / `key:=JSON` pairs. A `key=value`
/// is a string unless the tool's input schema gives the property another type.
pub(crate) async fn tool_arguments(
    client: &Client,
    tool: &str,
    operands: &[String],
) -> Result<Map<String, Value>> {
    if let [single] = operands
        && single.trim_start().starts_with('{')
    {
        return match serde_json::from_str(single) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) | Err(_) => Err(CliError::usage(format!(
                "{single:?} is not a JSON object of arguments"
            ))),
        };
    }
    let pairs = operands
        .iter()
        .map(|operand| split_pair(operand))
        .collect::<Result<Vec<_>>>()?;
    let mut schema = None;
    if pairs.iter().any(|(_, _, raw)| !raw) {
        // Only `key=value` pairs need the schema to know their type.
        schema = client
            .list_tools()
            .await
            .ok()
            .and_then(|tools| tools.into_iter().find(|t| t.name == tool))
            .map(|t| to_json(&t.input_schema));
    }
    let mut arguments = Map::new();
    for (key, value, raw_json) in pairs {
        let value = if raw_json {
            serde_json::from_str(&value)
                .map_err(|e| CliError::usage(format!("{key}:={value}: not JSON: {e}")))?
        } else {
            let declared = schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(|p| p.get(&key))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str);
            match declared {
                Some("string") | None => Value::String(value),
                Some(_) => lenient_json(&value),
            }
        };
        arguments.insert(key, value);
    }
    Ok(arguments)
}

/// The prompt's arguments (strings): `key=value`, or `key:=JSON` (a JSON string is unquoted,
/// anything else is its JSON text).
fn prompt_arguments(operands: &[String]) -> Result<BTreeMap<String, String>> {
    operands
        .iter()
        .map(|operand| {
            let (key, value, raw_json) = split_pair(operand)?;
            let value = if raw_json {
                match lenient_json(&value) {
                    Value::String(text) => text,
                    other => other.to_string(),
                }
            } else {
                value
            };
            Ok((key, value))
        })
        .collect()
}

/// `key=value` → (key, value, false); `key:=JSON` → (key, JSON, true).
fn split_pair(operand: &str) -> Result<(String, String, bool)> {
    let (key, value) = operand.split_once('=').ok_or_else(|| {
        CliError::usage(format!(
            "{operand:?}: expected key=value, key:=JSON or a single JSON object"
        ))
    })?;
    match key.strip_suffix(':') {
        Some(key) if !key.is_empty() => Ok((key.to_owned(), value.to_owned(), true)),
        _ if !key.is_empty() => Ok((key.to_owned(), value.to_owned(), false)),
        _ => Err(CliError::usage(format!("{operand:?}: the key is empty"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_that_cannot_ask_on_2026_are_recognised() {
        assert!(cannot_ask_on_2026(
            "elicitation via server-initiated requests is unavailable on 2026-07-28 connections."
        ));
        assert!(cannot_ask_on_2026(
            "Error calling tool 'confirm': Sampling is not supported on 2026-07-28 connections"
        ));
        assert!(!cannot_ask_on_2026("the region is unavailable"));
        assert!(!cannot_ask_on_2026("report for 2026-07-28 is ready"));
    }

    #[test]
    fn a_missing_name_is_said_locally() {
        let json = missing_name(Get::Tool, r#"{"text": "hi"}"#).unwrap();
        assert!(
            json.starts_with(r#"the tool name is missing: "{\"text\": \"hi\"}" is a JSON object"#),
            "{json}"
        );
        let pair = missing_name(Get::Prompt, "topic=Q3").unwrap();
        assert!(pair.starts_with("the prompt name is missing"), "{pair}");
        assert_eq!(missing_name(Get::Tool, "echo"), None);
        assert_eq!(missing_name(Get::Tool, "ns.tool-name_2"), None);
        assert_eq!(missing_name(Get::Resource, "demo://x?a=b"), None);
    }

    #[test]
    fn pairs() {
        assert_eq!(
            split_pair("name=orders").unwrap(),
            ("name".into(), "orders".into(), false)
        );
        assert_eq!(split_pair("n:=3").unwrap(), ("n".into(), "3".into(), true));
        assert_eq!(
            split_pair("q=a=b").unwrap(),
            ("q".into(), "a=b".into(), false)
        );
        assert!(split_pair("novalue").is_err());
        assert!(split_pair("=x").is_err());
        let args =
            prompt_arguments(&["topic=Q3".into(), "n:=3".into(), "s:=\"x\"".into()]).unwrap();
        assert_eq!(args["topic"], "Q3");
        assert_eq!(args["n"], "3");
        assert_eq!(args["s"], "x");
    }
}
