//! The 2025-11-25 experimental tasks (SEP-1686) on the client, against the project's own
//! 2025-11-25 task server (`modelctx_test_support::tasks_2025`) over stdio and HTTP:
//! task-augmented `tools/call` (required with an `input_required` detour, optional, cancelled)
//! and client-side tasks (elicitation and sampling run as tasks the server polls).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{
    Client, ClientBuilder, ClientError, Mode, RequestOptions, Tasks2025Settings,
};
use modelctx::types::{CallToolRequestParams, CreateMessageResult, ElicitResult, Era};
use modelctx_test_support::server::{serve_http_background, stdio_child};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy)]
enum Via {
    Http,
    Stdio,
}

const VIAS: [Via; 2] = [Via::Http, Via::Stdio];

async fn connect(builder: ClientBuilder, via: Via) -> Client {
    let builder = builder.mode(Mode::Handshake);
    match via {
        Via::Http => {
            let url = serve_http_background(modelctx_test_support::tasks_2025::server()).await;
            builder.connect_http(&url).await.unwrap()
        }
        Via::Stdio => builder
            .connect_stdio(stdio_child(
                "child_stdio_server",
                "MCP_TASKS_2025_STDIO_SERVER",
            ))
            .await
            .unwrap(),
    }
}

/// The stdio server process (this binary re-run; ignored in normal runs).
#[tokio::test]
#[ignore = "entry point of the stdio server child process"]
async fn child_stdio_server() {
    if std::env::var_os("MCP_TASKS_2025_STDIO_SERVER").is_some() {
        modelctx_test_support::tasks_2025::serve_stdio()
            .await
            .unwrap();
    }
}

/// The statuses a call reports, as `status — message` lines, and the task's id.
#[derive(Debug, Clone, Default)]
struct Statuses(Arc<Mutex<(String, Vec<String>)>>);

impl Statuses {
    fn options(&self) -> RequestOptions {
        let seen = self.clone();
        RequestOptions::new().on_task_2025_status(move |task| {
            let mut seen = seen.0.lock().unwrap();
            seen.0.clone_from(&task.task_id);
            seen.1.push(format!(
                "{} — {}",
                task.status,
                task.status_message.as_deref().unwrap_or("")
            ));
        })
    }

    fn id(&self) -> String {
        self.0.lock().unwrap().0.clone()
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().1.clone()
    }
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    CallToolRequestParams::new(name, Some(arguments))
}

/// The questions the elicitation callback saw.
type Asked = Arc<Mutex<Vec<String>>>;

fn answering(asked: &Asked) -> ClientBuilder {
    let asked = Arc::clone(asked);
    Client::builder()
        .on_elicitation(
            move |_context, params: modelctx::types::ElicitRequestParams| {
                asked.lock().unwrap().push(params.message().to_owned());
                async move {
                    let mut content = serde_json::Map::new();
                    let field = if params.message().contains("depth") {
                        ("depth", "deep")
                    } else {
                        ("name", "Ada")
                    };
                    content.insert(field.0.to_owned(), json!(field.1));
                    Ok(ElicitResult::accept(content))
                }
            },
        )
        .on_sampling(|_context, _params| async {
            Ok(CreateMessageResult::text("test-model", "hi from the model"))
        })
}

/// A tool with `taskSupport: "required"` is sent as a task by a plain `call_tool`; its
/// `input_required` detour is answered by the elicitation callback on `tasks/result`.
#[tokio::test]
async fn a_required_task_with_an_input_required_detour() {
    for via in VIAS {
        let asked = Asked::default();
        let client = connect(answering(&asked), via).await;
        assert_eq!(client.era(), Era::Handshake);
        let statuses = Statuses::default();
        let result = client
            .call_tool_with(
                call("research", json!({"topic": "tides"})),
                statuses.options(),
            )
            .await
            .unwrap_or_else(|e| panic!("{via:?}: {e}"));
        assert_eq!(
            result.first_text(),
            Some("research on tides at depth deep"),
            "{via:?}"
        );
        assert_eq!(
            statuses.lines(),
            [
                "working — started",
                "input_required — waiting for the depth of tides",
                "completed — done"
            ],
            "{via:?}"
        );
        assert_eq!(
            *asked.lock().unwrap(),
            ["Which depth for the research on tides?"],
            "{via:?}"
        );
        client.close().await.unwrap();
    }
}

/// An `"optional"` tool goes as a task only when asked.
#[tokio::test]
async fn an_optional_task_only_when_asked() {
    for via in VIAS {
        let client = connect(Client::builder(), via).await;
        let plain = client
            .call_tool("quick", json!({"topic": "moss"}))
            .await
            .unwrap();
        assert_eq!(plain.first_text(), Some("quick moss"), "{via:?}");
        let statuses = Statuses::default();
        let as_task = client
            .call_tool_with(
                call("quick", json!({"topic": "moss"})),
                statuses.options().as_task_2025(),
            )
            .await
            .unwrap();
        assert_eq!(
            as_task.first_text(),
            Some("quick moss as a task"),
            "{via:?}"
        );
        assert_eq!(
            statuses.lines(),
            ["working — started", "completed — done"],
            "{via:?}"
        );
        client.close().await.unwrap();
    }
}

/// A task that outlives the call's bound is cancelled with `tasks/cancel`: the server sees it
/// cancelled.
#[tokio::test]
async fn a_task_past_its_bound_is_cancelled() {
    for via in VIAS {
        let builder = Client::builder()
            .tasks_2025(Tasks2025Settings::new().timeout(Duration::from_millis(300)));
        let client = connect(builder, via).await;
        let statuses = Statuses::default();
        let error = client
            .call_tool_with(
                call("slow", json!({"topic": "glaciers"})),
                statuses.options(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                ClientError::Timeout {
                    operation: "task",
                    ..
                }
            ),
            "{via:?}: {error}"
        );
        let id = statuses.id();
        assert!(id.starts_with("slow-"), "{via:?}: {id}");
        // The server waits for the task's end (the background tasks/cancel) and says how.
        let ended = client
            .call_tool("wait_ended", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(ended.first_text(), Some("cancelled"), "{via:?}");
        client.close().await.unwrap();
    }
}

/// With `tasks_2025`, the server may ask for an elicitation and a sampling as tasks: the client
/// answers with a handle, runs the callback, and answers the server's `tasks/get`,
/// `tasks/list` and `tasks/result` — and a `-32602` for an id it does not hold.
#[tokio::test]
async fn elicitation_and_sampling_run_as_client_side_tasks() {
    for via in VIAS {
        let asked = Asked::default();
        let client = connect(answering(&asked).tasks_2025(Tasks2025Settings::new()), via).await;
        for (tool, check) in [
            (
                "async_elicit",
                json!({"action": "accept", "content": {"name": "Ada"}}),
            ),
            (
                "async_sample",
                json!({"role": "assistant", "content": {"type": "text", "text": "hi from the model"}}),
            ),
        ] {
            let result = client.call_tool(tool, json!({})).await.unwrap();
            let report: Value = serde_json::from_str(result.first_text().unwrap()).unwrap();
            let statuses = report["statuses"].as_array().unwrap();
            assert_eq!(
                statuses.first(),
                Some(&json!("working")),
                "{via:?} {tool}: {report}"
            );
            assert_eq!(
                statuses.last(),
                Some(&json!("completed")),
                "{via:?} {tool}: {report}"
            );
            assert_eq!(report["listed"], json!(true), "{via:?} {tool}: {report}");
            for (key, value) in check.as_object().unwrap() {
                assert_eq!(&report["result"][key], value, "{via:?} {tool}: {report}");
            }
            let related = &report["result"]["_meta"]["io.modelcontextprotocol/related-task"];
            assert!(related["taskId"].is_string(), "{via:?} {tool}: {report}");
            assert_eq!(
                report["unknown"]["code"],
                json!(-32602),
                "{via:?} {tool}: {report}"
            );
            let message = report["unknown"]["message"].as_str().unwrap();
            assert!(message.starts_with("Unknown task id"), "{message}");
        }
        assert_eq!(
            *asked.lock().unwrap(),
            ["Your name, at your pace?"],
            "{via:?}"
        );
        client.close().await.unwrap();
    }
}
