//! The tasks extension's wire shapes against its authoritative schema: `schema/draft/schema.json`
//! of `modelcontextprotocol/ext-tasks` (commit e434597, generated from `schema.ts`), vendored in
//! `tasks_support/`. Both the types built by hand and what our server actually sends (every
//! task status, the acks, `notifications/tasks`, the requests our client sends) validate.

use std::sync::{Arc, OnceLock};

use modelctx::server::tasks::MemoryTaskStore;
use modelctx::types::jsonrpc::{encode_notification, encode_request};
use modelctx::types::tasks::{
    CancelTask, CancelTaskRequestParams, CreateTaskResult, DetailedTask, GetTask,
    GetTaskRequestParams, GetTaskResult, Task, TaskStatus, TaskStatusNotification, UpdateTask,
    UpdateTaskRequestParams,
};
use modelctx::types::{
    ErrorObject, InputRequest, InputResponse, InputResponses, Method, NotificationMethod, RequestId,
};
use modelctx_test_support::tasks::*;
use serde_json::{Value, json};

fn defs() -> &'static Value {
    static DEFS: OnceLock<Value> = OnceLock::new();
    DEFS.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(include_str!("data/ext-tasks.schema.json")).unwrap();
        schema["$defs"].clone()
    })
}

fn errors(def: &str, instance: &Value) -> Vec<String> {
    assert!(defs().get(def).is_some(), "no definition {def}");
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs(),
        "$ref": format!("#/$defs/{def}"),
    });
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[track_caller]
fn assert_valid(def: &str, instance: &Value) {
    let errors = errors(def, instance);
    assert!(
        errors.is_empty(),
        "{def} rejects {instance}:\n{}",
        errors.join("\n")
    );
}

fn task(status: TaskStatus) -> Task {
    let mut task = Task::new("t-1", status, "2026-07-28T10:30:00.000Z", Some(60_000));
    task.poll_interval_ms = Some(500);
    task
}

fn detailed(status: &TaskStatus) -> DetailedTask {
    let mut detailed = DetailedTask::from_task(task(status.clone()));
    if *status == TaskStatus::INPUT_REQUIRED {
        detailed.input_requests = Some([("k".to_owned(), InputRequest::list_roots())].into());
    } else if *status == TaskStatus::COMPLETED {
        detailed.result = Some(object(json!({"content": [{"type": "text", "text": "ok"}]})));
    } else if *status == TaskStatus::FAILED {
        detailed.error = Some(ErrorObject::internal("boom"));
    }
    detailed
}

const STATUSES: [TaskStatus; 5] = [
    TaskStatus::WORKING,
    TaskStatus::INPUT_REQUIRED,
    TaskStatus::COMPLETED,
    TaskStatus::FAILED,
    TaskStatus::CANCELLED,
];

#[test]
fn the_types_validate_against_the_ext_tasks_schema() {
    for ttl in [Some(60_000), None] {
        let mut task = task(TaskStatus::WORKING);
        task.ttl_ms = ttl;
        assert_valid("Task", &serde_json::to_value(&task).unwrap());
        assert_valid(
            "CreateTaskResult",
            &serde_json::to_value(CreateTaskResult::from(task)).unwrap(),
        );
    }
    for status in STATUSES {
        let detailed = detailed(&status);
        detailed.check().unwrap();
        assert_valid("DetailedTask", &serde_json::to_value(&detailed).unwrap());
        let result = GetTaskResult::from(detailed.clone());
        assert_valid("GetTaskResult", &serde_json::to_value(&result).unwrap());
        let notification: Value = serde_json::from_slice(
            &encode_notification(TaskStatusNotification::NAME, Some(&detailed)).unwrap(),
        )
        .unwrap();
        assert_valid("TaskStatusNotification", &notification);
    }
    let id = RequestId::Number(1);
    let request = |method: &str, params: Value| -> Value {
        serde_json::from_slice(&encode_request(&id, method, &params).unwrap()).unwrap()
    };
    let get = serde_json::to_value(GetTaskRequestParams::new("t-1")).unwrap();
    assert_valid("GetTaskRequest", &request(GetTask::NAME, get));
    let answers =
        InputResponses::from([("k".to_owned(), InputResponse(json!({"action": "cancel"})))]);
    let update = serde_json::to_value(UpdateTaskRequestParams::new("t-1", answers)).unwrap();
    assert_valid("UpdateTaskRequest", &request(UpdateTask::NAME, update));
    let cancel = serde_json::to_value(CancelTaskRequestParams::new("t-1")).unwrap();
    assert_valid("CancelTaskRequest", &request(CancelTask::NAME, cancel));

    // The schema is strict where our shape checks are: a sanity check of the validator.
    let mut broken =
        serde_json::to_value(GetTaskResult::from(detailed(&TaskStatus::COMPLETED))).unwrap();
    broken.as_object_mut().unwrap().remove("result");
    assert!(!errors("GetTaskResult", &broken).is_empty());
    let mut no_ttl = serde_json::to_value(task(TaskStatus::WORKING)).unwrap();
    no_ttl.as_object_mut().unwrap().remove("ttlMs");
    assert!(!errors("Task", &no_ttl).is_empty());
}

#[tokio::test]
async fn what_the_server_sends_validates_too() {
    let tasks = tasks(Arc::new(MemoryTaskStore::new()), &Arc::default()).build();
    let server = HttpServer::start(server(tasks)).await;
    let caps = with_tasks();

    let (_, created) = server
        .call(1, "tools/call", json!({"name": "ask_twice"}), &caps)
        .await;
    assert_valid("CreateTaskResult", &created["result"]);
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = |id: String| {
        let server = &server;
        async move {
            let (_, reply) = server
                .call(2, "tasks/get", json!({"taskId": id}), &with_tasks())
                .await;
            reply["result"].clone()
        }
    };
    let asking = poll_status(&server, &id, "input_required").await;
    assert_valid("GetTaskResult", &asking);
    let (_, ack) = server
        .call(
            3,
            "tasks/update",
            json!({"taskId": id, "inputResponses":
            {"first": {"action": "accept", "content": {"name": "A"}}}}),
            &caps,
        )
        .await;
    assert_valid("UpdateTaskResult", &ack["result"]);
    let (_, ack) = server
        .call(4, "tasks/cancel", json!({"taskId": id}), &caps)
        .await;
    assert_valid("CancelTaskResult", &ack["result"]);
    assert_valid(
        "GetTaskResult",
        &poll_status(&server, &id, "cancelled").await,
    );

    for (tool, status) in [
        ("sleepy", "working"),
        ("sleepy", "completed"),
        ("rpc_error", "failed"),
    ] {
        let arguments = if status == "working" {
            json!({"ms": 60_000})
        } else {
            json!({})
        };
        let id = start(&server, tool, arguments).await;
        let task = poll_status(&server, &id, status).await;
        assert_valid("GetTaskResult", &task);
        assert_valid("GetTaskResult", &get(id).await);
    }
}
