//! Durable client flows with the embedded SQLite store (`modelctx::client::flows`), against our
//! provision server sealed with a shared key: a flow started and answered in this process is
//! resumed by another process with its own server instance; worker processes racing over the
//! same answered flows resume each exactly once; further rounds are saved again; failures end
//! up in the flow. The worker processes are this test binary, re-run with
//! `MCP_FLOWS_CHILD_MODE` set (the ignored `flows_child` entry point).

use std::net::TcpListener as StdListener;
use std::sync::Arc;
use std::time::Instant;

use modelctx::client::flows::{
    DeferToFlows as _, FlowError, FlowFilter, FlowRunner, FlowStart, FlowStatus, FlowStore,
    SqliteFlowStore,
};
use modelctx::client::{Client, Mode};
use modelctx::types::{
    ElicitRequestParams, ElicitResult, ErrorObject, GetPromptRequestParams, GetPromptResult,
    InputResponse, InputResponses, ProtocolVersion,
};
use modelctx_test_support::flows::*;
use serde_json::{Map, Value, json};

/// The worker process entry point (ignored in normal runs).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "entry point of the worker processes of the flows tests"]
async fn flows_child() {
    child_main().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[allow(clippy::print_stderr, reason = "the figures RELIABILITY.md records")]
async fn of_eight_connections_claiming_the_same_answered_flow_exactly_one_wins() {
    let dir = TempDir::new("sqlite-race");
    let path = dir.path().join("flows.db");
    let stores: Vec<Arc<dyn FlowStore>> = (0..8)
        .map(|_| Arc::new(SqliteFlowStore::open(&path).unwrap()) as Arc<dyn FlowStore>)
        .collect();
    let started = Instant::now();
    let tried = modelctx::client::flows::contract::flow_claim_race(stores, 50).await;
    eprintln!(
        "FIGURES sqlite claim race: 50 flows x 8 connections = {tried} claims, 50 won, {} lost, {} ms",
        tried - 50,
        started.elapsed().as_millis()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flow_started_here_is_resumed_by_another_process_with_its_own_server() {
    let dir = TempDir::new("sqlite-resume");
    let spec = StoreSpec::Sqlite(dir.path().join("flows.db"));
    resume_in_another_process(&spec, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_processes_racing_over_the_same_answered_flows_resume_each_exactly_once() {
    let dir = TempDir::new("sqlite-process-race");
    let spec = StoreSpec::Sqlite(dir.path().join("flows.db"));
    let figures = race_processes(
        &spec,
        dir.path(),
        env_number("MCP_FLOWS_RACE_FLOWS", 40),
        env_number("MCP_FLOWS_RACE_WORKERS", 3),
    )
    .await;
    print_race("sqlite", &figures);
}

#[tokio::test(flavor = "multi_thread")]
async fn further_rounds_are_saved_again_and_state_only_rounds_are_retried() {
    let completions = Completions::default();
    let url = serve(KEY, &completions, None).await;
    let client = flow_client(&url).await;
    let dir = TempDir::new("sqlite-rounds");
    let path = dir.path().join("flows.db");
    let a = FlowRunner::new(SqliteFlowStore::open(&path).unwrap()).worker_id("a");
    let b = FlowRunner::new(SqliteFlowStore::open(&path).unwrap()).worker_id("b");

    // A state-only round first (warmup): `start` retries it and saves the question after it.
    let FlowStart::Pending(flow) = a
        .start(
            &client,
            SERVER,
            None,
            provision_params(json!({"name": "ledger", "warmup": true, "confirm": true})),
        )
        .await
        .unwrap()
    else {
        panic!("provision should ask");
    };
    assert_eq!(flow.round, 1);
    assert!(flow.questions().unwrap().contains_key("region"));
    a.answer(&flow.id, answers("region", "region", json!("eu-west-1")))
        .await
        .unwrap();

    // Worker b resumes; the server asks again: round 2 is saved for the user.
    let round2 = b.resume(&client, &flow.id).await.unwrap().unwrap();
    assert_eq!(round2.status, FlowStatus::AwaitingUser);
    assert_eq!(round2.round, 2);
    assert_eq!(round2.answers, None);
    assert_eq!(round2.worker.as_deref(), Some("b"));
    assert!(round2.questions().unwrap().contains_key("confirm"));
    let state2 = round2.input_required.request_state.clone().unwrap();
    assert!(
        state2.starts_with("v1.") && Some(&state2) != flow.input_required.request_state.as_ref()
    );
    assert_eq!(
        b.resume(&client, &flow.id).await.unwrap(),
        None,
        "awaiting the user"
    );
    assert_eq!(completions.get("ledger"), 0);

    // The confirmation, resumed by worker a.
    a.answer(&round2.id, answers("confirm", "ok", json!(true)))
        .await
        .unwrap();
    let resumed = a.resume_ready(&client, SERVER).await.unwrap();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].status, FlowStatus::Done);
    assert_eq!(resumed[0].round, 2);
    assert_eq!(
        result_text(&resumed[0]),
        "Provisioned 'ledger' in eu-west-1."
    );
    assert_eq!(completions.get("ledger"), 1);

    // A state-only round after the answer: the worker retries it without the user.
    let FlowStart::Pending(settle) = a
        .start(
            &client,
            SERVER,
            None,
            provision_params(json!({"name": "cache", "settle": true})),
        )
        .await
        .unwrap()
    else {
        panic!("provision should ask");
    };
    a.answer(&settle.id, answers("region", "region", json!("us-east-2")))
        .await
        .unwrap();
    let done = b.resume(&client, &settle.id).await.unwrap().unwrap();
    assert_eq!(done.status, FlowStatus::Done);
    assert_eq!(result_text(&done), "Provisioned 'cache' in us-east-2.");

    // A declined question: the tool's own error result ends the flow (done, isError).
    let FlowStart::Pending(declined) = a
        .start(
            &client,
            SERVER,
            None,
            provision_params(json!({"name": "tmp"})),
        )
        .await
        .unwrap()
    else {
        panic!("provision should ask");
    };
    let mut decline = InputResponses::new();
    decline.insert(
        "region".into(),
        InputResponse::elicit(&ElicitResult::decline()),
    );
    a.answer(&declined.id, decline).await.unwrap();
    let done = b.resume(&client, &declined.id).await.unwrap().unwrap();
    assert_eq!(done.status, FlowStatus::Done);
    let result: modelctx::types::CallToolResult = done.result_as().unwrap().unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(completions.get("tmp"), 0);

    // prompts/get flows too; answered with a client's elicitation callback.
    let FlowStart::Pending(prompt) = a
        .start(
            &client,
            SERVER,
            Some("bob"),
            GetPromptRequestParams::new("greeting"),
        )
        .await
        .unwrap()
    else {
        panic!("greeting should ask");
    };
    assert_eq!(
        prompt.method,
        modelctx::client::flows::FlowMethod::GetPrompt
    );
    let asker = Client::builder()
        .on_elicitation(|_context, _params: ElicitRequestParams| async move {
            let mut content = Map::new();
            content.insert("who".into(), Value::from("Ada"));
            Ok::<_, ErrorObject>(ElicitResult::accept(content))
        })
        .connect_http(&url)
        .await
        .unwrap();
    let answered = b.answer_with_callbacks(&asker, &prompt.id).await.unwrap();
    assert_eq!(answered.status, FlowStatus::Answered);
    let done = a.resume(&client, &prompt.id).await.unwrap().unwrap();
    let result: GetPromptResult = done.result_as().unwrap().unwrap();
    let text = serde_json::to_value(&result.messages[0].content).unwrap();
    assert_eq!(text["text"], "Say hello to Ada.");
    asker.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_state_fails_the_flow_until_restarted_and_an_unreachable_server_leaves_it_answered()
 {
    let completions = Completions::default();
    let url = serve(KEY, &completions, None).await;
    let client = flow_client(&url).await;
    let runner = FlowRunner::new(SqliteFlowStore::in_memory().unwrap()).max_attempts(2);

    // A client that declares no elicitation is never asked (-32021): nothing is saved.
    let bare = Client::connect_http(&url).await.unwrap();
    let refused = runner
        .start(
            &bare,
            SERVER,
            None,
            provision_params(json!({"name": "bare"})),
        )
        .await;
    match refused {
        Err(FlowError::Client(error)) => assert_eq!(error.rpc_code().map(|c| c.0), Some(-32021)),
        other => panic!("expected -32021, got {other:?}"),
    }
    assert!(runner.list(&FlowFilter::new()).await.unwrap().is_empty());
    bare.close().await.unwrap();

    let mut flows = Vec::new();
    for name in ["refused", "exhausted", "recovered"] {
        let FlowStart::Pending(flow) = runner
            .start(
                &client,
                SERVER,
                None,
                provision_params(json!({"name": name})),
            )
            .await
            .unwrap()
        else {
            panic!("provision should ask");
        };
        runner
            .answer(&flow.id, answers("region", "region", json!("eu-west-1")))
            .await
            .unwrap();
        flows.push(flow.id);
    }

    // A server with other keys cannot open the sealed state: -32602, the flow fails for good.
    let stranger_completions = Completions::default();
    let stranger_url = serve(
        "another-key-another-key-another-key-0000",
        &stranger_completions,
        None,
    )
    .await;
    let stranger = flow_client(&stranger_url).await;
    let failed = runner.resume(&stranger, &flows[0]).await.unwrap().unwrap();
    assert_eq!(failed.status, FlowStatus::Failed);
    assert_eq!(failed.error.as_ref().and_then(|e| e.code), Some(-32602));
    assert_eq!(runner.resume(&client, &flows[0]).await.unwrap(), None);
    // Restarted there: the server asks again (new state, its keys), the user answers again.
    let restarted = runner.restart(&stranger, &flows[0]).await.unwrap();
    assert_eq!(restarted.status, FlowStatus::AwaitingUser);
    assert_eq!((restarted.round, restarted.attempts), (1, 0));
    assert_eq!(
        (restarted.answers.as_ref(), restarted.error.as_ref()),
        (None, None)
    );
    assert_ne!(
        restarted.input_required.request_state,
        failed.input_required.request_state
    );
    runner
        .answer(&flows[0], answers("region", "region", json!("me-south-1")))
        .await
        .unwrap();
    let done = runner.resume(&stranger, &flows[0]).await.unwrap().unwrap();
    assert_eq!(done.status, FlowStatus::Done);
    assert_eq!(result_text(&done), "Provisioned 'refused' in me-south-1.");
    assert_eq!(stranger_completions.get("refused"), 1);
    let again = runner.restart(&stranger, &flows[0]).await;
    assert!(
        matches!(
            again,
            Err(FlowError::WrongStatus {
                status: FlowStatus::Done,
                ..
            })
        ),
        "{again:?}"
    );

    // Nothing listens: the attempt fails in the transport; the flow is answered again, with
    // the failure recorded, until the attempts run out.
    let port = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = Client::builder()
        .defer_elicitation()
        .mode(Mode::Pinned(ProtocolVersion::V2026_07_28))
        .connect_http(&format!("http://127.0.0.1:{port}/mcp"))
        .await
        .unwrap();
    let first = runner
        .resume(&unreachable, &flows[1])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.status, FlowStatus::Answered);
    assert_eq!(first.attempts, 1);
    let failure = first.error.clone().expect("the failure is recorded");
    assert_eq!(failure.code, None, "a local failure has no server code");
    assert!(failure.message.contains("transport"), "{failure:?}");
    let second = runner
        .resume(&unreachable, &flows[1])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.status, FlowStatus::Failed);
    assert_eq!(second.attempts, 2);

    // One failed attempt, then the server is reachable: the flow finishes.
    let first = runner
        .resume(&unreachable, &flows[2])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.status, FlowStatus::Answered);
    let done = runner.resume(&client, &flows[2]).await.unwrap().unwrap();
    assert_eq!(done.status, FlowStatus::Done);
    assert_eq!(done.attempts, 2);
    assert_eq!(result_text(&done), "Provisioned 'recovered' in eu-west-1.");
    assert_eq!(completions.total(), 1);
    for c in [client, stranger, unreachable] {
        c.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_dies_after_its_claim_is_taken_over_once_the_lease_runs_out() {
    let dir = TempDir::new("sqlite-takeover");
    let spec = StoreSpec::Sqlite(dir.path().join("flows.db"));
    take_over_after_a_dead_worker(&spec, dir.path()).await;
}
