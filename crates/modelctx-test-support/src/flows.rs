//! Shared by the durable-flow tests (`flows_sqlite.rs`, `flows_redis.rs`): our low-level
//! provision server (sealed with shared keys, so any instance resumes any flow), the child
//! process that acts as another worker, and a private Redis. The `FlowStore` contract
//! every store keeps is `modelctx::client::flows::contract::flows` (run by `tests/store_*.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use modelctx::client::Client;
use modelctx::client::flows::contract::form_question;
use modelctx::client::flows::{
    DeferToFlows as _, FlowError, FlowFilter, FlowMethod, FlowRecord, FlowRunner, FlowStatus,
    FlowStore, RedisFlowStore, SqliteFlowStore,
};
use modelctx::seal::RequestStateSecurity;
use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ContentBlock, ElicitResult, ErrorObject,
    GetPromptRequestParams, GetPromptResult, InputRequiredResult, InputResponse, InputResponses,
    Outcome, Prompt, PromptMessage, Role, Tool,
};
use serde_json::{Map, Value, json};

pub use crate::json::object;
pub use crate::tempdir::TempDir;

/// The fleet's sealing key: every instance of the provision server has it.
pub const KEY: &str = "flows-test-key-flows-test-key-flows-test-key";
/// The label flows of the provision server are saved under.
pub const SERVER: &str = "provisioner";

/// How many times each database name was provisioned (the final round ran), per server
/// instance.
#[derive(Debug, Clone, Default)]
pub struct Completions(Arc<Mutex<HashMap<String, u32>>>);

impl Completions {
    /// How often `name` was provisioned.
    pub fn get(&self, name: &str) -> u32 {
        self.0.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    /// All completions.
    pub fn total(&self) -> u32 {
        self.0.lock().unwrap().values().sum()
    }

    /// Completions by name.
    pub fn all(&self) -> HashMap<String, u32> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, name: &str) {
        *self.0.lock().unwrap().entry(name.to_owned()).or_default() += 1;
    }
}

fn state_only(state: String) -> InputRequiredResult {
    InputRequiredResult::new().with_state(state)
}

/// The accepted content of the answer under `key`.
fn accepted(params: &CallToolRequestParams, key: &str) -> Option<Map<String, Value>> {
    params.input_responses.as_ref()?.get(key)?.accepted()
}

/// `provision {name, warmup?, confirm?, settle?}`: asks `region` (state `provision-v1`);
/// `warmup` first answers a state-only round; `confirm` asks a second question (`confirm`,
/// state `provision-v2:<region>`); `settle` answers a state-only round after the region. The
/// handler sees plaintext state: the server seals it with the shared key.
async fn provision(
    completions: Completions,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let arguments = params.arguments.clone().unwrap_or_default();
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("db")
        .to_owned();
    let flag = |key: &str| arguments.get(key).and_then(Value::as_bool) == Some(true);
    let state = params.request_state.clone().unwrap_or_default();
    let ask_region = || {
        Outcome::InputRequired(form_question(
            "region",
            "Which region should the database live in?",
            "region",
            "string",
            "provision-v1".to_owned(),
        ))
    };
    let finish = |region: &str| {
        completions.count(&name);
        Outcome::Complete(CallToolResult::text(format!(
            "Provisioned '{name}' in {region}."
        )))
    };
    match state.as_str() {
        "" if flag("warmup") => Ok(Outcome::InputRequired(state_only("warming-up".into()))),
        "" | "warming-up" => Ok(ask_region()),
        "provision-v1" => {
            let Some(content) = accepted(&params, "region") else {
                return Ok(Outcome::Complete(CallToolResult::error(format!(
                    "Provisioning '{name}' was declined."
                ))));
            };
            let region = content
                .get("region")
                .and_then(Value::as_str)
                .ok_or_else(|| ErrorObject::invalid_params("no region"))?
                .to_owned();
            if flag("confirm") {
                Ok(Outcome::InputRequired(form_question(
                    "confirm",
                    &format!("Provision '{name}' in {region}?"),
                    "ok",
                    "boolean",
                    format!("provision-v2:{region}"),
                )))
            } else if flag("settle") {
                Ok(Outcome::InputRequired(state_only(format!(
                    "settling:{region}"
                ))))
            } else {
                Ok(finish(&region))
            }
        }
        other => {
            if let Some(region) = other.strip_prefix("settling:") {
                return Ok(finish(region));
            }
            let region = other
                .strip_prefix("provision-v2:")
                .ok_or_else(|| ErrorObject::invalid_params("unknown state"))?;
            let confirmed = accepted(&params, "confirm")
                .and_then(|c| c.get("ok").and_then(Value::as_bool))
                == Some(true);
            if confirmed {
                Ok(finish(region))
            } else {
                Ok(Outcome::Complete(CallToolResult::error(format!(
                    "Provisioning '{name}' was not confirmed."
                ))))
            }
        }
    }
}

/// `greeting`: a prompt that asks `who` (state `greet-v1`), then greets.
async fn greeting(params: GetPromptRequestParams) -> Result<Outcome<GetPromptResult>, ErrorObject> {
    let who = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("who"))
        .and_then(|r| r.as_elicit().ok())
        .and_then(|a| a.content)
        .and_then(|c| c.get("who").and_then(Value::as_str).map(str::to_owned));
    match (params.request_state.as_deref(), who) {
        (Some("greet-v1"), Some(who)) => Ok(Outcome::Complete(GetPromptResult::new(vec![
            PromptMessage::new(
                Role::USER,
                ContentBlock::text(format!("Say hello to {who}.")),
            ),
        ]))),
        _ => Ok(Outcome::InputRequired(form_question(
            "who",
            "Whom should I greet?",
            "who",
            "string",
            "greet-v1".to_owned(),
        ))),
    }
}

/// A provision server sealing with `key`; `completions` counts its final rounds.
pub fn provision_server(key: &str, completions: &Completions) -> Server {
    let tool = Tool::new(
        "provision",
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "warmup": {"type": "boolean"},
                "confirm": {"type": "boolean"},
                "settle": {"type": "boolean"},
            },
            "required": ["name"],
        })),
    );
    let completions = completions.clone();
    Server::builder(SERVER, "1.0.0")
        .tool(
            tool,
            move |_ctx: RequestContext, params: CallToolRequestParams| {
                provision(completions.clone(), params)
            },
        )
        .prompt(
            Prompt::new("greeting"),
            |_ctx: RequestContext, params: GetPromptRequestParams| greeting(params),
        )
        .seal_request_state(RequestStateSecurity::with_keys([key]).unwrap())
        .build()
        .unwrap()
}

/// One instance of the provision server on 127.0.0.1, serving until the runtime ends or
/// `stop` fires. Returns its URL.
pub async fn serve(
    key: &str,
    completions: &Completions,
    stop: Option<tokio::sync::oneshot::Receiver<()>>,
) -> String {
    let server = provision_server(key, completions);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let stop = async move {
            match stop {
                Some(stop) => {
                    let _ = stop.await;
                }
                None => std::future::pending().await,
            }
        };
        server
            .serve_http_on(listener, HttpConfig::default(), stop)
            .await
    });
    url
}

/// `tools/call provision` params.
pub fn provision_params(arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("provision", Some(object(arguments)))
}

/// An accepted form answer `{property: value}`.
pub fn accept(property: &str, value: Value) -> InputResponse {
    let mut content = Map::new();
    content.insert(property.to_owned(), value);
    InputResponse::elicit(&ElicitResult::accept(content))
}

/// Answers under one key.
pub fn answers(key: &str, property: &str, value: Value) -> InputResponses {
    let mut answers = InputResponses::new();
    answers.insert(key.to_owned(), accept(property, value));
    answers
}

/// The text of a done `tools/call` flow.
pub fn result_text(record: &FlowRecord) -> String {
    let result: CallToolResult = record.result_as().unwrap().expect("a done flow");
    result.first_text().unwrap_or_default().to_owned()
}

/// Which store a child process opens.
#[derive(Debug, Clone)]
pub enum StoreSpec {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A Redis URL and key prefix.
    Redis(String, String),
}

impl StoreSpec {
    /// The spec as one environment-variable value.
    pub fn encode(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite {}", path.display()),
            Self::Redis(url, prefix) => format!("redis {url} {prefix}"),
        }
    }

    /// The inverse of [`StoreSpec::encode`].
    pub fn decode(text: &str) -> Self {
        let parts: Vec<&str> = text.splitn(3, ' ').collect();
        match parts.as_slice() {
            ["sqlite", path] => Self::Sqlite(PathBuf::from(path)),
            ["redis", url, prefix] => Self::Redis((*url).to_owned(), (*prefix).to_owned()),
            _ => panic!("bad store spec {text}"),
        }
    }

    /// A new connection to the store, as another process would open.
    pub async fn open(&self) -> Arc<dyn FlowStore> {
        match self {
            Self::Sqlite(path) => Arc::new(SqliteFlowStore::open(path).unwrap()),
            Self::Redis(url, prefix) => {
                Arc::new(RedisFlowStore::connect(url, prefix.clone()).await.unwrap())
            }
        }
    }
}

/// What a child worker did (written as JSON to its report file).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ChildReport {
    /// The worker's name.
    pub worker: String,
    /// Flows it claimed and resumed, with the status they ended in.
    pub resumed: BTreeMap<String, FlowStatus>,
    /// Flows it tried to claim.
    pub attempted: usize,
    /// How long the worker ran.
    pub elapsed_ms: u64,
}

/// Runs this test binary's `flows_child` entry point as a worker process:
/// `mode` = `resume_ready` (one pass of `FlowRunner::resume_ready`) or `claim_each` (list the
/// answered flows, then `FlowRunner::resume` each, counting the claims won). `url` = the
/// server to resume against; `None` makes the child start its own instance (same key).
pub fn spawn_child(
    mode: &str,
    store: &StoreSpec,
    url: Option<&str>,
    worker: &str,
    report: &Path,
) -> tokio::process::Child {
    spawn_child_with(mode, store, url, worker, report, &[])
}

/// [`spawn_child`] with extra environment variables.
pub fn spawn_child_with(
    mode: &str,
    store: &StoreSpec,
    url: Option<&str>,
    worker: &str,
    report: &Path,
    env: &[(&str, &str)],
) -> tokio::process::Child {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "flows_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MCP_FLOWS_CHILD_MODE", mode)
        .env("MCP_FLOWS_CHILD_STORE", store.encode())
        .env("MCP_FLOWS_CHILD_WORKER", worker)
        .env("MCP_FLOWS_CHILD_REPORT", report)
        .stdout(Stdio::null())
        .kill_on_drop(true);
    if let Some(url) = url {
        command.env("MCP_FLOWS_CHILD_URL", url);
    }
    command.envs(env.iter().copied());
    command.spawn().expect("the child worker did not start")
}

/// Milliseconds since the Unix epoch.
pub fn wall_ms() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    u64::try_from(since.as_millis()).unwrap()
}

/// A number from the environment, or `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits for a child worker (bounded: 25 s, or `MCP_FLOWS_CHILD_TIMEOUT_S` for big runs) and
/// reads its report.
pub async fn child_report(mut child: tokio::process::Child, report: &Path) -> ChildReport {
    let bound = Duration::from_secs(env_number("MCP_FLOWS_CHILD_TIMEOUT_S", 25) as u64);
    let status = tokio::time::timeout(bound, child.wait())
        .await
        .unwrap_or_else(|_| panic!("the child worker did not finish within {bound:?}"))
        .unwrap();
    assert!(status.success(), "the child worker failed: {status}");
    serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap()
}

/// The child worker's body (called by each test binary's ignored `flows_child` test).
pub async fn child_main() {
    let mode = std::env::var("MCP_FLOWS_CHILD_MODE").expect("run by the flows tests");
    let store = StoreSpec::decode(&std::env::var("MCP_FLOWS_CHILD_STORE").unwrap());
    let worker = std::env::var("MCP_FLOWS_CHILD_WORKER").unwrap();
    let report = std::env::var("MCP_FLOWS_CHILD_REPORT").unwrap();
    let url = match std::env::var("MCP_FLOWS_CHILD_URL") {
        Ok(url) => url,
        // Its own instance: another process, another server, the same key.
        Err(_) => serve(KEY, &Completions::default(), None).await,
    };
    let client = flow_client(&url).await;
    let runner = FlowRunner::with_store(store.open().await).worker_id(worker.clone());
    let started = Instant::now();
    let (resumed, attempted) = match mode.as_str() {
        "resume_ready" => {
            let resumed = runner.resume_ready(&client, SERVER).await.unwrap();
            let attempted = resumed.len();
            (resumed, attempted)
        }
        "claim_each" => {
            let answered = runner
                .list(
                    &FlowFilter::new()
                        .statuses([FlowStatus::Answered])
                        .server(SERVER),
                )
                .await
                .unwrap();
            let mut resumed = Vec::new();
            for flow in &answered {
                if let Some(record) = runner.resume(&client, &flow.id).await.unwrap() {
                    resumed.push(record);
                }
            }
            (resumed, answered.len())
        }
        "claim_and_exit" => {
            // A worker that dies right after its claims: it holds them until the lease runs
            // out, and never resumes anything.
            let lease_ms: u64 = std::env::var("MCP_FLOWS_CHILD_LEASE_MS")
                .unwrap()
                .parse()
                .unwrap();
            let answered = runner
                .list(&FlowFilter::new().statuses([FlowStatus::Answered]))
                .await
                .unwrap();
            let mut claimed = Vec::new();
            for flow in &answered {
                let now = wall_ms();
                if let Some(record) = runner
                    .store()
                    .claim(&flow.id, &worker, now, lease_ms)
                    .await
                    .unwrap()
                {
                    claimed.push(record);
                }
            }
            (claimed, answered.len())
        }
        other => panic!("unknown child mode {other}"),
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap();
    let report_body = ChildReport {
        worker,
        resumed: resumed.iter().map(|r| (r.id.clone(), r.status)).collect(),
        attempted,
        elapsed_ms,
    };
    std::fs::write(report, serde_json::to_vec(&report_body).unwrap()).unwrap();
    client.close().await.unwrap();
}

/// A flow started and answered in this process is resumed by a child process that runs its
/// own server instance (same key) against the same store; the result lands in the store.
pub async fn resume_in_another_process(spec: &StoreSpec, scratch: &Path) {
    let completions = Completions::default();
    let url = serve(KEY, &completions, None).await;
    let client = flow_client(&url).await;
    let runner = FlowRunner::with_store(spec.open().await).worker_id("starter");

    let start = runner
        .start(
            &client,
            SERVER,
            Some("alice"),
            provision_params(json!({"name": "orders"})),
        )
        .await
        .unwrap();
    let modelctx::client::flows::FlowStart::Pending(flow) = start else {
        panic!("provision should ask for the region");
    };
    assert_eq!(flow.status, FlowStatus::AwaitingUser);
    assert_eq!(flow.method, FlowMethod::CallTool);
    assert_eq!(
        (flow.server.as_str(), flow.owner.as_deref()),
        (SERVER, Some("alice"))
    );
    assert_eq!(flow.round, 1);
    assert!(flow.questions().unwrap().contains_key("region"));
    let state = flow.input_required.request_state.clone().unwrap();
    assert!(
        state.starts_with("v1."),
        "sealed state expected, got {state}"
    );
    assert_eq!(flow.params["name"], "provision");
    assert!(flow.params.get("inputResponses").is_none());

    // Nothing to resume before the user answers.
    assert!(
        runner
            .resume_ready(&client, SERVER)
            .await
            .unwrap()
            .is_empty()
    );
    let answered = runner
        .answer(&flow.id, answers("region", "region", json!("ap-south-1")))
        .await
        .unwrap();
    assert_eq!(answered.status, FlowStatus::Answered);
    let again = runner
        .answer(&flow.id, answers("region", "region", json!("eu-west-1")))
        .await;
    assert!(
        matches!(again, Err(FlowError::WrongStatus { .. })),
        "{again:?}"
    );

    // Another process, another server instance, the same store.
    let report = scratch.join("child-1.json");
    let child = spawn_child("resume_ready", spec, None, "worker-b", &report);
    let report = child_report(child, &report).await;
    assert_eq!(
        report.resumed,
        BTreeMap::from([(flow.id.clone(), FlowStatus::Done)])
    );
    let done = runner.get(&flow.id).await.unwrap().unwrap();
    assert_eq!(done.status, FlowStatus::Done);
    assert_eq!(done.worker.as_deref(), Some("worker-b"));
    assert_eq!(done.attempts, 1);
    assert_eq!(result_text(&done), "Provisioned 'orders' in ap-south-1.");
    assert_eq!(
        completions.total(),
        0,
        "the retry went to the child's own server instance"
    );

    // A second worker pass finds nothing left.
    let report = scratch.join("child-2.json");
    let child = spawn_child("resume_ready", spec, Some(&url), "worker-c", &report);
    assert!(child_report(child, &report).await.resumed.is_empty());
    client.close().await.unwrap();
}

/// Figures of a race between worker processes.
#[derive(Debug)]
pub struct RaceFigures {
    /// Flows raced for.
    pub flows: usize,
    /// What each worker reported.
    pub workers: Vec<ChildReport>,
    /// Wall-clock time of the whole race.
    pub wall_ms: u64,
}

/// `flows` flows started and answered here; `workers` child processes each list the answered
/// flows and try to resume every one, all at once, against this process's server. Each flow is
/// resumed by exactly one worker, and the server runs each final round exactly once.
pub async fn race_processes(
    spec: &StoreSpec,
    scratch: &Path,
    flows: usize,
    workers: usize,
) -> RaceFigures {
    let completions = Completions::default();
    let url = serve(KEY, &completions, None).await;
    let client = flow_client(&url).await;
    let runner = FlowRunner::with_store(spec.open().await).worker_id("starter");
    let mut ids = Vec::new();
    for i in 0..flows {
        let start = runner
            .start(
                &client,
                SERVER,
                None,
                provision_params(json!({"name": format!("db-{i}")})),
            )
            .await
            .unwrap();
        let modelctx::client::flows::FlowStart::Pending(flow) = start else {
            panic!("provision should ask");
        };
        runner
            .answer(
                &flow.id,
                answers("region", "region", json!(format!("r-{i}"))),
            )
            .await
            .unwrap();
        ids.push((flow.id, i));
    }

    let started = Instant::now();
    let children: Vec<_> = (0..workers)
        .map(|w| {
            let report = scratch.join(format!("race-{w}.json"));
            let child = spawn_child(
                "claim_each",
                spec,
                Some(&url),
                &format!("racer-{w}"),
                &report,
            );
            (child, report)
        })
        .collect();
    let mut reports = Vec::new();
    for (child, report) in children {
        reports.push(child_report(child, &report).await);
    }
    let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap();

    // Every flow resumed by exactly one worker, and done.
    let mut owner_of = HashMap::new();
    for report in &reports {
        for (id, status) in &report.resumed {
            assert_eq!(*status, FlowStatus::Done);
            let previous = owner_of.insert(id.clone(), report.worker.clone());
            assert!(previous.is_none(), "flow {id} resumed twice");
        }
    }
    assert_eq!(owner_of.len(), flows, "every flow resumed");
    for (id, i) in &ids {
        let flow = runner.get(id).await.unwrap().unwrap();
        assert_eq!(flow.status, FlowStatus::Done);
        assert_eq!(flow.attempts, 1, "claimed once");
        assert_eq!(flow.worker.as_ref(), owner_of.get(id));
        assert_eq!(
            result_text(&flow),
            format!("Provisioned 'db-{i}' in r-{i}.")
        );
        assert_eq!(
            completions.get(&format!("db-{i}")),
            1,
            "db-{i} provisioned once"
        );
    }
    assert_eq!(completions.total() as usize, flows);
    client.close().await.unwrap();
    RaceFigures {
        flows,
        workers: reports,
        wall_ms,
    }
}

/// Prints race figures (for RELIABILITY.md).
#[allow(clippy::print_stderr, reason = "the figures RELIABILITY.md records")]
pub fn print_race(store: &str, figures: &RaceFigures) {
    let workers: Vec<String> = figures
        .workers
        .iter()
        .map(|w| {
            format!(
                "{}: tried {} won {} lost {} in {} ms",
                w.worker,
                w.attempted,
                w.resumed.len(),
                w.attempted - w.resumed.len(),
                w.elapsed_ms
            )
        })
        .collect();
    eprintln!(
        "FIGURES {store} process race: {} flows, {} workers, wall {} ms; {}",
        figures.flows,
        figures.workers.len(),
        figures.wall_ms,
        workers.join("; ")
    );
}

/// A client that starts and resumes flows: it declares elicitation, answered by the user
/// through `FlowRunner::answer`.
pub async fn flow_client(url: &str) -> Client {
    Client::builder()
        .defer_elicitation()
        .connect_http(url)
        .await
        .unwrap()
}

/// A worker process claims an answered flow and dies without resuming it: nobody can take
/// the flow while the dead worker's lease lasts; once it runs out, another worker resumes it
/// (the second attempt) and the server runs the final round once.
pub async fn take_over_after_a_dead_worker(spec: &StoreSpec, scratch: &Path) {
    let completions = Completions::default();
    let url = serve(KEY, &completions, None).await;
    let client = flow_client(&url).await;
    let runner = FlowRunner::with_store(spec.open().await).worker_id("survivor");
    let modelctx::client::flows::FlowStart::Pending(flow) = runner
        .start(
            &client,
            SERVER,
            None,
            provision_params(json!({"name": "orphan"})),
        )
        .await
        .unwrap()
    else {
        panic!("provision should ask");
    };
    runner
        .answer(&flow.id, answers("region", "region", json!("sa-east-1")))
        .await
        .unwrap();

    let report = scratch.join("dead.json");
    let child = spawn_child_with(
        "claim_and_exit",
        spec,
        Some(&url),
        "dead-worker",
        &report,
        &[("MCP_FLOWS_CHILD_LEASE_MS", "400")],
    );
    let report = child_report(child, &report).await;
    assert_eq!(
        report.resumed,
        BTreeMap::from([(flow.id.clone(), FlowStatus::Resuming)])
    );

    // Held by the dead worker's lease.
    assert!(
        runner
            .resume_ready(&client, SERVER)
            .await
            .unwrap()
            .is_empty()
    );
    let held = runner.get(&flow.id).await.unwrap().unwrap();
    assert_eq!(held.status, FlowStatus::Resuming);
    assert_eq!(held.worker.as_deref(), Some("dead-worker"));
    let until = held.lease_until_ms.unwrap();

    // Poll (bounded) until the lease has run out, then take over.
    let deadline = Instant::now() + Duration::from_secs(5);
    while wall_ms() < until {
        assert!(Instant::now() < deadline, "the lease never ran out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resumed = runner.resume_ready(&client, SERVER).await.unwrap();
    assert_eq!(resumed.len(), 1);
    let done = &resumed[0];
    assert_eq!(done.status, FlowStatus::Done);
    assert_eq!(done.worker.as_deref(), Some("survivor"));
    assert_eq!(
        done.attempts, 2,
        "the dead worker's claim counts as an attempt"
    );
    assert_eq!(result_text(done), "Provisioned 'orphan' in sa-east-1.");
    assert_eq!(completions.get("orphan"), 1);
    client.close().await.unwrap();
}
