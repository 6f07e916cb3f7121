//! The manual loop across processes: one process sends the first round and saves the pending
//! request (params + `InputRequiredResult`) to a file; another process, with its own
//! connection, answers the questions and finishes the call.
//!
//! Both processes are this test binary, re-run with `MCP_CLIENT_RESUME_PHASE` set (the
//! `child_phase` entry point). Against the Python low-level server with sealed state, over
//! HTTP (one server) and over stdio (each process spawns its own server sharing the sealing
//! key: the flow needs no server memory at all).

use std::path::Path;
use std::process::Command;

use modelctx::client::{Client, PendingRequest, RoundOutcome};
use modelctx::types::{CallToolRequestParams, ElicitRequestParams, ElicitResult, ErrorObject};
use modelctx_test_support::client::{HttpPeer, peer_command};
use serde_json::{Map, Value, json};

const KEY: &str = "resume-test-key-resume-test-key-resume-test-key";

/// Runs one phase in a child process (this binary, only the `child_phase` test).
fn run_phase(phase: &str, file: &Path, target: &str) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_phase",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MCP_CLIENT_RESUME_PHASE", phase)
        .env("MCP_CLIENT_RESUME_FILE", file)
        .env("MCP_CLIENT_RESUME_TARGET", target)
        .status()
        .unwrap();
    assert!(status.success(), "phase {phase} failed");
}

async fn connect(target: &str, answer: Option<&'static str>) -> Client {
    let mut builder = Client::builder();
    if let Some(region) = answer {
        builder = builder.on_elicitation(move |_context, params: ElicitRequestParams| {
            let mut content = Map::new();
            if let ElicitRequestParams::Form(form) = &params {
                for name in form.requested_schema.properties.keys() {
                    content.insert(name.clone(), Value::from(region));
                }
            }
            async move { Ok::<_, ErrorObject>(ElicitResult::accept(content)) }
        });
    }
    if target == "stdio" {
        let mut command = peer_command("provisioner.py", &[]);
        command.env("MCP_REQUEST_STATE_KEYS", KEY);
        builder.connect_stdio(command).await.unwrap()
    } else {
        builder.connect_http(target).await.unwrap()
    }
}

/// The child process entry point (ignored in normal runs).
#[tokio::test]
#[ignore = "entry point of the child processes of the resume tests"]
async fn child_phase() {
    let phase = std::env::var("MCP_CLIENT_RESUME_PHASE").expect("run by the resume tests");
    let file = std::env::var("MCP_CLIENT_RESUME_FILE").unwrap();
    let target = std::env::var("MCP_CLIENT_RESUME_TARGET").unwrap();
    match phase.as_str() {
        "start" => {
            // No elicitation callback here: this process cannot answer, it only saves.
            let client = connect(&target, None).await;
            let params = CallToolRequestParams::new(
                "provision",
                json!({"name": "orders"}).as_object().cloned(),
            );
            let outcome = client
                .session()
                .call_tool(params.clone(), true)
                .await
                .unwrap();
            let RoundOutcome::InputRequired(input_required) = outcome else {
                panic!("expected an input-required round");
            };
            let pending = PendingRequest {
                params,
                input_required,
            };
            std::fs::write(&file, serde_json::to_vec(&pending).unwrap()).unwrap();
            client.close().await.unwrap();
        }
        "resume" => {
            let pending: PendingRequest<CallToolRequestParams> =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            let client = connect(&target, Some("ap-south-1")).await;
            let result = client.resume_call_tool(pending).await.unwrap();
            std::fs::write(&file, result.first_text().unwrap()).unwrap();
            client.close().await.unwrap();
        }
        other => panic!("unknown phase {other}"),
    }
}

fn two_processes(target: &str) {
    let tag = if target == "stdio" { "stdio" } else { "http" };
    let dir = std::env::temp_dir().join(format!("mcp-client-resume-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pending.json");
    run_phase("start", &file, target);
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // The saved round: the original params and the server's sealed state and question.
    assert_eq!(saved["params"]["name"], "provision");
    assert!(saved["params"].get("inputResponses").is_none());
    let state = saved["inputRequired"]["requestState"].as_str().unwrap();
    assert!(
        state.starts_with("v1."),
        "sealed token expected, got {state}"
    );
    assert!(saved["inputRequired"]["inputRequests"]["region"].is_object());
    run_phase("resume", &file, target);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        "Provisioned 'orders' in ap-south-1 (protocol 2026-07-28, state seen by handler: 'provision-v1')."
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_in_another_process_over_http() {
    let server =
        HttpPeer::start_with_env("provisioner.py", &[], &[("MCP_REQUEST_STATE_KEYS", KEY)]).await;
    let url = server.url.clone();
    tokio::task::spawn_blocking(move || two_processes(&url))
        .await
        .unwrap();
}

#[tokio::test]
async fn resume_in_another_process_over_stdio() {
    tokio::task::spawn_blocking(|| two_processes("stdio"))
        .await
        .unwrap();
}
