//! The demo server of `mcp serve demo`: every kind of question a server can put to a user,
//! built with the high-level [`McpServer`].
//!
//! | surface | asks |
//! |---|---|
//! | tool `provision {name}` | the region (one form field), then reports progress |
//! | tool `deploy {service}` | where and how many replicas: two questions in one round |
//! | tool `summarize {text}` | the client's LLM (sampling) |
//! | tool `where_am_i` | the client's roots |
//! | tool `connect_account {service}` | consent to open a URL (URL-mode elicitation, asked by returning an `InputRequiredResult`; bridged on 2025-11-25) |
//! | tool `echo {text}` | nothing |
//! | prompt `briefing {topic}` | the audience |
//! | template `report://{quarter}` | the format (a choice) |
//! | tool `touch_report {quarter}` | nothing: marks `report://{quarter}` changed, so its listeners (on every instance sharing `--bus`) are notified |
//! | resource `demo://regions` | nothing |
//! | task tool `long_report {quarter}` | runs as a task (tasks extension): steps with status messages, then the format |
//! | tool `pick_region` (MCP App `ui://demo/region-picker.html`) | nothing: a host that renders apps shows a picker whose buttons call the app-only tool `choose_region` ([`crate::demo_app`]) |
//!
//! Request state is sealed: with the keys of [`RequestStateSecurity::from_env`]
//! (`MCP_REQUEST_STATE_KEYS`, `MCP_REQUEST_STATE_TTL`) every instance that shares them accepts
//! the others' tokens.

use std::sync::Arc;
use std::time::Duration;

use modelctx::seal::RequestStateSecurity;
use modelctx::server::bus::RedisBus;
use modelctx::server::tasks::{
    MemoryTaskStore, TaskContext, TaskInput, TaskStep, TaskStore, TaskTool, Tasks,
};
use modelctx::server::{BuildError, Change, Context, Elicit, ListRoots, McpServer, Sample};
use modelctx::types::{
    CallToolResult, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestUrlParams, ErrorObject, InputRequest, InputRequiredResult, ListRootsResult,
    OneOrMany, Outcome, Tool,
};
use modelctx::{prompt, resolver, resource, tool};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::demo_app::REGIONS;

/// The demo server's name (also the audience of its sealed state).
pub const NAME: &str = "mcp-demo";

/// How long each step of `provision` takes when the client asked for progress.
const STEP: Duration = Duration::from_millis(150);

/// The region of a new database.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Region {
    /// The cloud region, e.g. eu-west-1.
    pub region: String,
}

/// Asks which region the database should live in.
#[resolver]
pub async fn region() -> Elicit<Region> {
    Elicit::new("Which region should the database live in?")
}

/// Provision a database; asks which region it should live in.
#[tool]
pub async fn provision(
    /// The database's name.
    name: String,
    #[resolve(region)] region: Region,
    ctx: Context,
) -> String {
    let request = ctx.request_context();
    let steps = [
        "allocating storage",
        "creating the database",
        "configuring backups",
    ];
    for (done, step) in (1u32..).zip(steps) {
        if request.progress_token().is_some() {
            // Only a client that shows progress waits: the steps take a moment so that a
            // progress bar has something to show.
            tokio::time::sleep(STEP).await;
        }
        request
            .progress(f64::from(done), Some(3.0), Some(step))
            .await;
    }
    format!("Provisioned '{name}' in {}.", region.region)
}

/// Where a service runs.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    /// The staging environment.
    Staging,
    /// The production environment.
    Production,
}

/// Where to deploy.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Placement {
    /// The environment.
    pub environment: Environment,
}

/// How many replicas to run.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Replicas {
    /// Replicas (1 to 10).
    #[schemars(range(min = 1, max = 10))]
    pub count: u32,
}

/// Asks where to deploy the service.
#[resolver]
pub async fn placement(service: String) -> Elicit<Placement> {
    Elicit::new(format!("Where should {service} be deployed?"))
}

/// Asks how many replicas to run.
#[resolver]
pub async fn replicas(service: String) -> Elicit<Replicas> {
    Elicit::new(format!("How many replicas of {service}?"))
}

/// Deploy a service; asks where and how many replicas, both in one round.
#[tool]
pub async fn deploy(
    /// The service to deploy.
    service: String,
    #[resolve(placement)] placement: Placement,
    #[resolve(replicas)] replicas: Replicas,
) -> String {
    let environment = match placement.environment {
        Environment::Staging => "staging",
        Environment::Production => "production",
    };
    format!(
        "Deployed {service} to {environment} with {} replica(s).",
        replicas.count
    )
}

/// Asks the client's LLM for a summary.
#[resolver]
pub async fn llm_summary(text: String) -> Sample {
    Sample::text(format!("Summarize in one sentence: {text}"), 100)
}

/// Summarize text with the client's LLM (sampling).
#[tool]
pub async fn summarize(
    /// The text to summarize.
    text: String,
    #[resolve(llm_summary)] summary: CreateMessageResult,
) -> String {
    let sampled = match &summary.content {
        OneOrMany::One(block) => block.as_text().unwrap_or("?").to_owned(),
        OneOrMany::Many(blocks) => blocks
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let _ = text;
    format!("Summary by {}: {sampled}", summary.model)
}

/// Asks for the client's roots.
#[resolver]
pub async fn client_roots() -> ListRoots {
    ListRoots
}

/// List the directories the client shares (roots).
#[tool]
pub async fn where_am_i(#[resolve(client_roots)] roots: ListRootsResult) -> String {
    let roots: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    format!("Your roots: {}", roots.join(", "))
}

/// Connect an external account; asks you to open a URL (URL-mode elicitation).
///
/// It asks by returning an `InputRequiredResult` itself (the 2026-07-28 way); on a 2025-11-25
/// session the SDK bridges it over the back-channel. Consent counts only when the state says
/// this very question was asked: the state is sealed and bound to the call's arguments, so an
/// `accept` sent without it, or for another service, is not consent.
#[tool]
pub async fn connect_account(
    /// The service, e.g. github.
    service: String,
    ctx: Context,
) -> Outcome<String> {
    let asked = format!("connect:{service}");
    let answer = ctx
        .elicit_result("consent")
        .filter(|_| ctx.request_state() == Some(asked.as_str()));
    match answer {
        Some(answer) if answer.action == ElicitAction::Accept => {
            Outcome::Complete(format!("Connected your {service} account."))
        }
        Some(answer) => Outcome::Complete(format!(
            "Your {service} account was not connected ({}).",
            match answer.action {
                ElicitAction::Decline => "declined",
                _ => "cancelled",
            }
        )),
        None => Outcome::InputRequired(
            InputRequiredResult::new()
                .with_request(
                    "consent",
                    InputRequest::elicit(ElicitRequestUrlParams::new(
                        format!("Sign in to {service} to connect your account."),
                        format!("https://accounts.example.com/connect?service={service}"),
                    )),
                )
                .with_state(asked),
        ),
    }
}

/// Return the given text unchanged.
#[tool(read_only, idempotent)]
pub async fn echo(
    /// The text.
    text: String,
) -> String {
    text
}

/// Who a briefing is for.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Audience {
    /// The audience, e.g. the board.
    pub audience: String,
}

/// Asks who the briefing is for.
#[resolver]
pub async fn audience(topic: String) -> Elicit<Audience> {
    Elicit::new(format!("Who is the audience for the briefing on {topic}?"))
}

/// A briefing prompt; asks who the audience is.
#[prompt]
pub async fn briefing(
    /// What the briefing is about.
    topic: String,
    #[resolve(audience)] audience: Audience,
) -> String {
    format!("Brief {} on {topic}.", audience.audience)
}

/// A report's format.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Plain text.
    Text,
    /// Markdown.
    Markdown,
    /// Comma-separated values.
    Csv,
}

/// The format to render a report in.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct ReportFormat {
    /// The format.
    pub format: Format,
}

/// Asks which format to render the report in.
#[resolver]
pub async fn report_format(quarter: String) -> Elicit<ReportFormat> {
    Elicit::new(format!("Which format for the {quarter} report?"))
}

/// A quarterly report; asks which format to render.
#[resource("report://{quarter}", mime_type = "text/plain")]
pub async fn report(quarter: String, #[resolve(report_format)] format: ReportFormat) -> String {
    match format.format {
        Format::Text => format!("Report {quarter}: revenue up 4%."),
        Format::Markdown => format!("# Report {quarter}\n\n* revenue up 4%"),
        Format::Csv => format!("quarter,revenue_change\n{quarter},4%"),
    }
}

/// The longest quarter `touch_report` takes (the URI is announced to every listener).
const MAX_QUARTER: usize = 32;

/// Mark a quarter's report (report://{quarter}) as changed: its subscribers are notified, on
/// every instance sharing the server's bus.
#[tool(idempotent)]
pub async fn touch_report(
    /// The quarter, e.g. 2026-q3 (letters, digits, `-` and `_`).
    quarter: String,
    ctx: Context,
) -> CallToolResult {
    let valid = !quarter.is_empty()
        && quarter.len() <= MAX_QUARTER
        && quarter
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return CallToolResult::error(format!(
            "quarter must be 1 to {MAX_QUARTER} letters, digits, '-' or '_'"
        ));
    }
    let uri = format!("report://{quarter}");
    ctx.request_context()
        .server()
        .notify(Change::ResourceUpdated(uri.clone()));
    CallToolResult::text(format!("Touched {uri}."))
}

/// The regions the demo knows.
#[resource("demo://regions", mime_type = "text/plain")]
pub async fn regions() -> String {
    REGIONS.join("\n")
}

/// How often clients following a `long_report` task are told to poll.
const TASK_POLL: Duration = Duration::from_millis(100);

/// How long each step of `long_report` takes.
const REPORT_STEP: Duration = Duration::from_millis(300);

/// The steps of `long_report` before it asks for the format.
const REPORT_STEPS: [&str; 2] = ["collecting the figures", "computing the totals"];

/// `long_report {quarter}`: a tool that runs as a task for clients that declare the tasks
/// extension (synchronously for the others). It works through its steps (each a status
/// message and a checkpoint, so a resumed run skips what is done), asks which format to render
/// in, then renders. Cancellation stops it between steps; a quarter that does not end with
/// Q1–Q4 fails the task (`-32602`).
pub fn long_report() -> TaskTool {
    let schema = json!({
        "type": "object",
        "properties": {
            "quarter": {"type": "string", "description": "The quarter, e.g. Q3."}
        },
        "required": ["quarter"],
    });
    let mut tool = Tool::new("long_report", object(schema));
    tool.description = Some(
        "Build a long quarterly report as a task: reports its steps, asks the format.".to_owned(),
    );
    TaskTool::new(tool, run_long_report)
}

async fn run_long_report(ctx: TaskContext, input: TaskInput) -> Result<TaskStep, ErrorObject> {
    let quarter = input
        .argument("quarter")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject::invalid_params("quarter: a string is required"))?
        .to_owned();
    if !["Q1", "Q2", "Q3", "Q4"]
        .iter()
        .any(|q| quarter.ends_with(q))
    {
        // Found out by the task itself: it ends `failed` with this error.
        return Err(ErrorObject::invalid_params(format!(
            "no figures for {quarter:?}: a quarter ends with Q1, Q2, Q3 or Q4"
        )));
    }
    let done = input
        .state
        .as_ref()
        .and_then(|s| s["steps_done"].as_u64())
        .unwrap_or(0);
    let total = REPORT_STEPS.len() + 1;
    for (index, step) in (0u64..).zip(REPORT_STEPS).skip_while(|(i, _)| *i < done) {
        ctx.set_status_message(format!("step {}/{total}: {step}", index + 1))
            .await?;
        tokio::select! {
            () = tokio::time::sleep(REPORT_STEP) => {}
            () = ctx.cancelled() => {
                return Ok(TaskStep::Complete(CallToolResult::error("the report was cancelled")));
            }
        }
        ctx.checkpoint(json!({"steps_done": index + 1})).await?;
    }
    let Some(answer) = input.elicitation("format") else {
        ctx.set_status_message("waiting for the format").await?;
        let schema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "format": {
                    "type": "string",
                    "description": "The format.",
                    "enum": ["text", "markdown", "csv"],
                },
            },
            "required": ["format"],
        }))
        .map_err(|e| ErrorObject::internal(e.to_string()))?;
        return Ok(TaskStep::ask(
            "format",
            InputRequest::elicit(ElicitRequestFormParams::new(
                format!("Which format for the {quarter} report?"),
                schema,
            )),
        ));
    };
    let format = match (answer.action, answer.content) {
        (ElicitAction::Accept, Some(content)) => content
            .get("format")
            .and_then(Value::as_str)
            .unwrap_or("text")
            .to_owned(),
        _ => {
            return Ok(TaskStep::Complete(CallToolResult::error(format!(
                "No format chosen: the {quarter} report was not rendered."
            ))));
        }
    };
    ctx.set_status_message(format!("step {total}/{total}: rendering as {format}"))
        .await?;
    tokio::select! {
        () = tokio::time::sleep(REPORT_STEP) => {}
        () = ctx.cancelled() => {
            return Ok(TaskStep::Complete(CallToolResult::error("the report was cancelled")));
        }
    }
    ctx.set_status_message("the report is ready").await?;
    let body = match format.as_str() {
        "markdown" => format!("# Long report {quarter}\n\n* revenue up 4%\n* costs down 2%"),
        "csv" => format!("quarter,revenue_change,cost_change\n{quarter},4%,-2%"),
        _ => format!("Long report {quarter}: revenue up 4%, costs down 2%."),
    };
    Ok(TaskStep::Complete(CallToolResult::text(body)))
}

fn object(value: Value) -> modelctx::types::Extra {
    match value {
        Value::Object(map) => map,
        _ => modelctx::types::Extra::new(),
    }
}

/// The demo server, sealed with `security` (`None`: a random per-process key), its tasks in
/// memory.
///
/// # Errors
/// An invalid registration (never for the demo's own surfaces).
pub fn server(security: Option<RequestStateSecurity>) -> Result<McpServer, BuildError> {
    server_with_tasks(security, Arc::new(MemoryTaskStore::new()), None, None)
}

/// The demo server with its tasks kept in `store` (e.g. a `SqliteTaskStore`, so that tasks survive
/// a restart), on `bus` when given (changes cross to every instance sharing it), serving
/// `only_era` alone when given (`ServerBuilder::only_era`).
///
/// # Errors
/// An invalid registration (never for the demo's own surfaces).
pub fn server_with_tasks(
    security: Option<RequestStateSecurity>,
    store: Arc<dyn TaskStore>,
    bus: Option<RedisBus>,
    only_era: Option<modelctx::types::Era>,
) -> Result<McpServer, BuildError> {
    let tasks = Tasks::builder_shared(store)
        .poll_interval(TASK_POLL)
        .tool(long_report())
        .build();
    let mut builder = McpServer::builder(NAME, env!("CARGO_PKG_VERSION"))
        .instructions(
            "The mcp CLI's demo server: tools that ask the user (provision, deploy, \
             connect_account), use the client's LLM (summarize) or roots (where_am_i), and a \
             long-running task (long_report).",
        )
        .tool::<provision>()
        .tool::<deploy>()
        .tool::<summarize>()
        .tool::<where_am_i>()
        .tool::<connect_account>()
        .tool::<echo>()
        .tool::<touch_report>()
        .prompt::<briefing>()
        .resource::<report>()
        .resource::<regions>()
        .tool::<crate::demo_app::pick_region>()
        .tool::<crate::demo_app::choose_region>()
        .apps(crate::demo_app::apps())
        .low_level(move |b| {
            let b = b.tasks(tasks);
            let b = match only_era {
                Some(era) => b.only_era(era),
                None => b,
            };
            match bus {
                Some(bus) => b.bus(bus),
                None => b,
            }
        });
    if let Some(policy) = security {
        builder = builder.request_state_security(policy);
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use modelctx::client::{CallbackContext, Client, Mode};
    use modelctx::types::{ElicitRequestParams, ElicitResult, Era};
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    use super::*;

    /// The demo on an in-memory pipe, and a client in `mode` whose elicitation callback
    /// records each question and answers it with `answer`.
    async fn connect(
        mode: Mode,
        asked: Arc<Mutex<Vec<ElicitRequestParams>>>,
        answer: ElicitResult,
    ) -> Client {
        let pipe = modelctx::memory::pipe();
        let demo = server(None).unwrap();
        tokio::spawn(async move { demo.serve_io(pipe.server.reader, pipe.server.writer).await });
        Client::builder()
            .mode(mode)
            .on_elicitation(move |_ctx: CallbackContext, params: ElicitRequestParams| {
                asked.lock().unwrap().push(params);
                let answer = answer.clone();
                async move { Ok::<_, ErrorObject>(answer) }
            })
            .connect_io(pipe.client.reader, pipe.client.writer)
            .await
            .unwrap()
    }

    /// `connect_account` asks by returning an `InputRequiredResult`, and works
    /// on a 2025-11-25 session too (bridged over the back-channel, with an `elicitationId`).
    #[tokio::test]
    async fn connect_account_works_in_both_eras() {
        for (mode, era) in [(Mode::Auto, Era::Modern), (Mode::Handshake, Era::Handshake)] {
            let asked = Arc::new(Mutex::new(Vec::new()));
            let accept = ElicitResult::accept(modelctx::types::Extra::new());
            let client = connect(mode, Arc::clone(&asked), accept).await;
            assert_eq!(client.era(), era);
            let result = client
                .call_tool("connect_account", json!({"service": "github"}))
                .await
                .unwrap();
            assert_eq!(result.first_text(), Some("Connected your github account."));
            let asked = asked.lock().unwrap().clone();
            let [ElicitRequestParams::Url(url)] = asked.as_slice() else {
                panic!("one URL question: {asked:?}");
            };
            assert_eq!(
                url.url,
                "https://accounts.example.com/connect?service=github"
            );
            assert_eq!(url.elicitation_id.is_some(), era == Era::Handshake);
            client.close().await.unwrap();
        }
    }

    /// An `accept` the tool never asked for (no state) is not consent.
    #[tokio::test]
    async fn connect_account_ignores_consent_it_never_asked_for() {
        let pipe = modelctx::memory::pipe();
        let demo = server(None).unwrap();
        tokio::spawn(async move { demo.serve_io(pipe.server.reader, pipe.server.writer).await });
        let mut writer = pipe.client.writer;
        let mut lines = BufReader::new(pipe.client.reader).lines();
        let unasked = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "connect_account", "arguments": {"service": "github"},
            "inputResponses": {"consent": {"action": "accept"}},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}}});
        let mut line = serde_json::to_vec(&unasked).unwrap();
        line.push(b'\n');
        writer.write_all(&line).await.unwrap();
        let reply: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
        assert_eq!(
            reply["result"]["inputRequests"]["consent"]["params"]["mode"],
            "url"
        );
    }

    /// `deploy` advertises 1 to 10 replicas; 4000000000 never reaches it.
    #[tokio::test]
    async fn deploy_refuses_a_replica_count_outside_the_form() {
        for mode in [Mode::Auto, Mode::Handshake] {
            let mut content = modelctx::types::Extra::new();
            content.insert("environment".into(), json!("staging"));
            content.insert("count".into(), json!(4_000_000_000_u64));
            let client = connect(mode, Arc::default(), ElicitResult::accept(content)).await;
            let result = client
                .call_tool("deploy", json!({"service": "api"}))
                .await
                .unwrap();
            assert_eq!(result.is_error, Some(true));
            let text = result.first_text().unwrap();
            assert!(
                text.ends_with("does not match the requested schema"),
                "{text}"
            );
            client.close().await.unwrap();
        }
    }
}
