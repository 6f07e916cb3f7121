//! The client with the tasks extension against our server: `call_tool` follows a task to its end
//! and its input round is answered by the elicitation callback (polling and listening, HTTP
//! and the in-memory pipe), status reports, failures, cancellation, and the manual parts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{
    Client, ClientBuilder, ClientError, RequestOptions, TaskFollow, TaskSettings, ToolStart,
};
use modelctx::memory;
use modelctx::server::Server;
use modelctx::server::tasks::{MemoryTaskStore, Tasks};
use modelctx::types::{CallToolRequestParams, ElicitRequestParams, ElicitResult, TaskStatus};
use modelctx_test_support::tasks::*;
use serde_json::{Value, json};

fn fixture() -> (Server, Tasks) {
    let tasks = tasks(Arc::new(MemoryTaskStore::new()), &Arc::default()).build();
    (server(tasks.clone()), tasks)
}

/// A client whose elicitation callback answers every question with a name, recording them.
fn builder(asked: &Arc<Mutex<Vec<(String, String)>>>, settings: TaskSettings) -> ClientBuilder {
    let asked = Arc::clone(asked);
    Client::builder()
        .tasks(settings)
        .on_elicitation(move |context, params: ElicitRequestParams| {
            let asked = Arc::clone(&asked);
            async move {
                let key = context.key().unwrap_or_default().to_owned();
                asked
                    .lock()
                    .unwrap()
                    .push((key.clone(), params.message().to_owned()));
                let name = if key == "first" { "Ada" } else { "Lovelace" };
                let mut content = serde_json::Map::new();
                content.insert("name".into(), Value::from(name));
                Ok(ElicitResult::accept(content))
            }
        })
}

async fn call_with_status(
    client: &Client,
    tool: &str,
) -> (Result<String, ClientError>, Vec<String>) {
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&statuses);
    let options = RequestOptions::new().on_task_status(move |task| {
        seen.lock().unwrap().push(task.status.to_string());
    });
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool_with(CallToolRequestParams::new(tool, None), options),
    )
    .await
    .expect("the call never ended")
    .map(|r| r.first_text().unwrap_or_default().to_owned());
    let statuses = statuses.lock().unwrap().clone();
    (result, statuses)
}

#[tokio::test]
async fn a_task_s_input_round_is_answered_by_the_elicitation_callback_over_http() {
    let server = HttpServer::start(fixture().0).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = builder(&asked, TaskSettings::new())
        .connect_http(&server.url)
        .await
        .unwrap();
    let (result, statuses) = call_with_status(&client, "ask_twice").await;
    assert_eq!(result.unwrap(), "Hello, Ada Lovelace!");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            ("first".to_owned(), "First name?".to_owned()),
            ("last".to_owned(), "Last name?".to_owned())
        ],
        "each question once, under the server's key"
    );
    assert_eq!(
        statuses.first().map(String::as_str),
        Some("working"),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&"input_required".to_owned()),
        "{statuses:?}"
    );
    assert_eq!(statuses.last().map(String::as_str), Some("completed"));
    // A plain tool is unaffected.
    let plain = client.call_tool("plain", Value::Null).await.unwrap();
    assert_eq!(plain.first_text(), Some("plain"));
}

#[tokio::test]
async fn listening_follows_a_task_without_waiting_for_polls() {
    let server = HttpServer::start(fixture().0).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    // Polls are 30 s apart: only notifications/tasks can finish this within the timeout.
    let settings = TaskSettings::new()
        .follow(TaskFollow::Listen)
        .poll_bounds(Duration::from_secs(30), Duration::from_secs(30));
    let client = builder(&asked, settings)
        .connect_http(&server.url)
        .await
        .unwrap();
    let (result, statuses) = call_with_status(&client, "ask_twice").await;
    assert_eq!(result.unwrap(), "Hello, Ada Lovelace!", "{statuses:?}");
    assert_eq!(asked.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn tasks_work_over_the_in_memory_pipe_too() {
    let pipe = memory::pipe();
    let (server, _tasks) = fixture();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = builder(&asked, TaskSettings::new().follow(TaskFollow::Listen))
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .unwrap();
    let (result, _) = call_with_status(&client, "ask_twice").await;
    assert_eq!(result.unwrap(), "Hello, Ada Lovelace!");
}

#[tokio::test]
async fn a_preflight_asks_before_the_task_and_old_clients_are_served_inline() {
    let server = HttpServer::start(fixture().0).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    // Task-aware: the preflight's MRTR round, then a task that knows the answer.
    let aware = builder(&asked, TaskSettings::new())
        .connect_http(&server.url)
        .await
        .unwrap();
    let (result, statuses) = call_with_status(&aware, "greet_later").await;
    assert_eq!(result.unwrap(), "Hello later, Lovelace!");
    assert_eq!(statuses.last().map(String::as_str), Some("completed"));
    // Not task-aware (2026): preflight and handler run within the request.
    let plain = Client::builder()
        .on_elicitation(|_context, _params: ElicitRequestParams| async {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), Value::from("Plain"));
            Ok(ElicitResult::accept(content))
        })
        .connect_http(&server.url)
        .await
        .unwrap();
    let result = plain.call_tool("greet_later", Value::Null).await.unwrap();
    assert_eq!(result.first_text(), Some("Hello later, Plain!"));
    let result = plain.call_tool("ask_twice", Value::Null).await.unwrap();
    assert_eq!(result.first_text(), Some("Hello, Plain Plain!"));
    // The handshake era: the questions go over the back-channel.
    let handshake = Client::builder()
        .mode(modelctx::client::Mode::Handshake)
        .on_elicitation(|_context, _params: ElicitRequestParams| async {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), Value::from("Old"));
            Ok(ElicitResult::accept(content))
        })
        .connect_http(&server.url)
        .await
        .unwrap();
    let result = handshake
        .call_tool("greet_later", Value::Null)
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("Hello later, Old!"));
    let result = handshake.call_tool("ask_twice", Value::Null).await.unwrap();
    assert_eq!(result.first_text(), Some("Hello, Old Old!"));
}

#[tokio::test]
async fn outcomes_map_to_results_and_errors() {
    let server = HttpServer::start(fixture().0).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = builder(&asked, TaskSettings::new())
        .connect_http(&server.url)
        .await
        .unwrap();
    // A tool error completes: a result with isError.
    let result = client.call_tool("tool_error", Value::Null).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    // A protocol error fails: the server's error, as if tools/call had returned it.
    let error = client
        .call_tool("rpc_error", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(error.rpc_error().unwrap().message, "no such widget");
    // A required-task tool works for a task-aware client…
    let result = client
        .call_tool("required_only", Value::Null)
        .await
        .unwrap();
    assert_eq!(result.first_text(), Some("ran as a task"));
    // …and is refused to one that is not.
    let plain = Client::builder().connect_http(&server.url).await.unwrap();
    let refused = plain
        .call_tool("required_only", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(refused.rpc_code().map(|c| c.0), Some(-32021));
    // A task-unaware client gets task-supporting tools synchronously.
    let sync = plain.call_tool("sleepy", json!({"ms": 1})).await.unwrap();
    assert_eq!(sync.first_text(), Some("slept 1 ms"));
}

#[tokio::test]
async fn dropping_a_call_cancels_its_task_and_the_parts_work_alone() {
    let (server, tasks) = fixture();
    let server = HttpServer::start(server).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = builder(&asked, TaskSettings::new())
        .connect_http(&server.url)
        .await
        .unwrap();

    // start_tool hands the task back without waiting.
    let ToolStart::Task(task) = client
        .start_tool("sleepy", json!({"ms": 60_000}))
        .await
        .unwrap()
    else {
        panic!("sleepy did not become a task");
    };
    assert_eq!(task.status, TaskStatus::WORKING);
    assert_eq!(
        client.get_task(&task.task_id).await.unwrap().status,
        TaskStatus::WORKING
    );
    // Following it, then giving up: the abandoned task is cancelled in the background.
    let options = RequestOptions::new();
    let follow = client.wait_task(&task.task_id, &options);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), follow)
            .await
            .is_err()
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tasks.task(&task.task_id).await.unwrap().unwrap().status != TaskStatus::CANCELLED {
        assert!(tokio::time::Instant::now() < deadline, "never cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Waiting on a cancelled task reports it.
    let error = client
        .wait_task(&task.task_id, &RequestOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::TaskCancelled { .. }),
        "{error}"
    );

    // Explicit cancel of a running task, from another client.
    let ToolStart::Task(task) = client
        .start_tool("sleepy", json!({"ms": 60_000}))
        .await
        .unwrap()
    else {
        panic!("sleepy did not become a task");
    };
    let other = builder(&asked, TaskSettings::new())
        .connect_http(&server.url)
        .await
        .unwrap();
    other.cancel_task(&task.task_id).await.unwrap();
    let error = client
        .wait_task(&task.task_id, &RequestOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::TaskCancelled { .. }),
        "{error}"
    );
    // An unknown task is the server's -32602.
    let error = client.get_task("no-such-task").await.unwrap_err();
    assert_eq!(error.rpc_code().map(|c| c.0), Some(-32602));
}
