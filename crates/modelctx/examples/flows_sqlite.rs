//! Durable client flows in SQLite: a request that asks the user is saved, the user answers
//! later, and a worker — another process — resumes it.
//!
//! Without arguments the example runs the whole story on its own: it serves a `provision` tool
//! (sealed state) on 127.0.0.1, starts a flow, records the answer, runs itself again as a worker
//! process that resumes the flow, and prints the result from the database. With arguments each
//! step is a command, against any server whose `provision` tool asks `region` (e.g. `mcp serve
//! demo --http 8765` from `crates/modelctx-cli`):
//!
//! ```sh
//! cargo run -p modelctx --example flows_sqlite -- start  flows.db http://127.0.0.1:8765/mcp orders
//! cargo run -p modelctx --example flows_sqlite -- list   flows.db
//! cargo run -p modelctx --example flows_sqlite -- answer flows.db <flow-id> eu-west-1
//! cargo run -p modelctx --example flows_sqlite -- work   flows.db http://127.0.0.1:8765/mcp
//! ```

#![allow(
    clippy::print_stdout,
    reason = "the example shows the flow's life to the reader"
)]

use modelctx::client::Client;
use modelctx::client::flows::{
    DeferToFlows as _, FlowFilter, FlowRecord, FlowRunner, FlowStart, SqliteFlowStore,
};
use modelctx::seal::RequestStateSecurity;
use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestParams, ElicitResult, ErrorObject, InputRequest, InputRequiredResult,
    InputResponse, InputResponses, Outcome, Tool,
};
use serde_json::{Map, Value, json};

type Error = Box<dyn std::error::Error>;

/// The label flows of the provision server are saved under (workers resume by it).
const SERVER: &str = "provisioner";

/// A client that starts and resumes flows: it declares elicitation, which the user answers
/// through the database rather than this process.
async fn connect(url: &str) -> Result<Client, Error> {
    Ok(Client::builder()
        .defer_elicitation()
        .connect_http(url)
        .await?)
}

fn describe(flow: &FlowRecord) -> String {
    let questions: Vec<&String> = flow
        .questions()
        .map(|q| q.keys().collect())
        .unwrap_or_default();
    format!(
        "{} {} round {} ({}) asks {:?}",
        flow.id, flow.status, flow.round, flow.method, questions
    )
}

async fn start(db: &str, url: &str, name: &str) -> Result<String, Error> {
    let runner = FlowRunner::new(SqliteFlowStore::open(db)?);
    let client = connect(url).await?;
    let params =
        CallToolRequestParams::new("provision", json!({"name": name}).as_object().cloned());
    let id = match runner.start(&client, SERVER, None, params).await? {
        FlowStart::Complete(result) => {
            println!(
                "complete at once: {}",
                result.first_text().unwrap_or_default()
            );
            String::new()
        }
        FlowStart::Pending(flow) => {
            println!("saved: {}", describe(&flow));
            flow.id
        }
    };
    client.close().await?;
    Ok(id)
}

/// Answers every form question of the flow's current round by filling each of its fields with
/// `value` (the answers go under the server's keys, e.g. `region`: for a `#[resolver]`, its
/// name).
async fn answer(db: &str, id: &str, value: &str) -> Result<(), Error> {
    let runner = FlowRunner::new(SqliteFlowStore::open(db)?);
    let flow = runner.get(id).await?.ok_or("no such flow")?;
    let mut answers = InputResponses::new();
    for (key, question) in flow.questions().into_iter().flatten() {
        let InputRequest::Elicit(elicit) = question else {
            return Err(format!("question {key} is not an elicitation").into());
        };
        let ElicitRequestParams::Form(form) = &elicit.params else {
            return Err(format!("question {key} is not a form").into());
        };
        let content: Map<String, Value> = form
            .requested_schema
            .properties
            .keys()
            .map(|field| (field.clone(), Value::from(value)))
            .collect();
        answers.insert(
            key.clone(),
            InputResponse::elicit(&ElicitResult::accept(content)),
        );
    }
    let flow = runner.answer(id, answers).await?;
    println!("answered: {}", describe(&flow));
    Ok(())
}

async fn work(db: &str, url: &str) -> Result<(), Error> {
    let runner = FlowRunner::new(SqliteFlowStore::open(db)?);
    let client = connect(url).await?;
    for flow in runner.resume_ready(&client, SERVER).await? {
        match flow.result_as::<CallToolResult>()? {
            Some(result) => println!(
                "{} resumed flow {}: {}",
                runner.worker(),
                flow.id,
                result.first_text().unwrap_or_default()
            ),
            None => println!("{} resumed: {}", runner.worker(), describe(&flow)),
        }
    }
    client.close().await?;
    Ok(())
}

async fn list(db: &str) -> Result<(), Error> {
    let runner = FlowRunner::new(SqliteFlowStore::open(db)?);
    for flow in runner.list(&FlowFilter::new()).await? {
        println!("{}", describe(&flow));
    }
    Ok(())
}

/// The low-level `provision` tool: round 1 asks for the region, the retry provisions.
async fn provision(
    _ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let name = params
        .arguments
        .as_ref()
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("db")
        .to_owned();
    let answer = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("region"))
        .and_then(|r| r.as_elicit().ok());
    match answer {
        Some(answer) if answer.action == ElicitAction::Accept => {
            let region = answer
                .content
                .as_ref()
                .and_then(|c| c.get("region"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            Ok(Outcome::Complete(CallToolResult::text(format!(
                "Provisioned '{name}' in {region}."
            ))))
        }
        Some(_) => Ok(Outcome::Complete(CallToolResult::error("declined"))),
        None => {
            let schema = serde_json::from_value(json!({
                "type": "object",
                "properties": {"region": {"type": "string"}},
                "required": ["region"],
            }))
            .map_err(|e| ErrorObject::internal(e.to_string()))?;
            Ok(Outcome::InputRequired(
                InputRequiredResult::new()
                    .with_request(
                        "region",
                        InputRequest::elicit(ElicitRequestFormParams::new(
                            "Which region should the database live in?",
                            schema,
                        )),
                    )
                    .with_state("provision-v1"),
            ))
        }
    }
}

/// Serves the provision tool on 127.0.0.1 (state sealed with a fixed demo key, so another
/// instance with the same key could resume the flows too). Returns its URL.
async fn serve() -> Result<String, Error> {
    let tool = Tool::new(
        "provision",
        json!({"type": "object", "properties": {"name": {"type": "string"}}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let server = Server::builder(SERVER, "1.0.0")
        .tool(tool, provision)
        .seal_request_state(RequestStateSecurity::with_keys([
            "flows-example-key-flows-example-key-0001",
        ])?)
        .build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        server
            .serve_http_on(listener, HttpConfig::default(), std::future::pending())
            .await
    });
    Ok(url)
}

/// The whole story: start and answer here, resume in another process.
async fn demo() -> Result<(), Error> {
    let dir = std::env::temp_dir().join(format!("mcp-flows-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("flows.db").display().to_string();
    let url = serve().await?;
    let id = start(&db, &url, "orders").await?;
    answer(&db, &id, "eu-west-1").await?;
    // The worker: this example again, as another process.
    let status = tokio::process::Command::new(std::env::current_exe()?)
        .args(["work", &db, &url])
        .status()
        .await?;
    if !status.success() {
        return Err(format!("the worker process failed: {status}").into());
    }
    let flow = FlowRunner::new(SqliteFlowStore::open(&db)?)
        .get(&id)
        .await?
        .ok_or("the flow is gone")?;
    let text = flow
        .result_as::<CallToolResult>()?
        .and_then(|r| r.first_text().map(str::to_owned))
        .unwrap_or_default();
    println!(
        "in the database: {} by {:?}: {text}",
        flow.status, flow.worker
    );
    let _ = std::fs::remove_dir_all(&dir);
    if text != "Provisioned 'orders' in eu-west-1." {
        return Err(format!("unexpected result {text:?}").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => demo().await,
        ["start", db, url, name] => start(db, url, name).await.map(drop),
        ["answer", db, id, region] => answer(db, id, region).await,
        ["work", db, url] => work(db, url).await,
        ["list", db] => list(db).await,
        _ => Err(
            "usage: flows_sqlite [start DB URL NAME | answer DB ID REGION | work DB URL | list DB]"
                .into(),
        ),
    }
}
