//! The tasks extension on the server, over HTTP and the in-memory pipe: negotiation and
//! `-32021`, routing headers, the task lifecycle, input rounds through `tasks/update`, errors,
//! cancellation, principals, listen streams, and the synchronous fallback.

use std::sync::Arc;
use std::time::Duration;

use modelctx::memory;
use modelctx::server::Server;
use modelctx::server::tasks::{MemoryTaskStore, Tasks};
use modelctx::types::tasks::DetailedTask;
use modelctx_test_support::tasks::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

fn fixture() -> (Server, Tasks) {
    let tasks = tasks(Arc::new(MemoryTaskStore::new()), &Arc::default()).build();
    (server(tasks.clone()), tasks)
}

async fn http() -> HttpServer {
    HttpServer::start(fixture().0).await
}

#[tokio::test]
async fn discover_declares_the_extension_and_gating_follows_each_request() {
    let server = http().await;
    let (_, discover) = server
        .call(1, "server/discover", json!({}), &json!({}))
        .await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][TASKS],
        json!({})
    );

    // No extension on this request: a task-supporting tool runs synchronously.
    let (status, sync) = server
        .call(
            2,
            "tools/call",
            json!({"name": "sleepy", "arguments": {"ms": 1}}),
            &json!({}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(sync["result"]["resultType"], "complete");
    assert_eq!(sync["result"]["content"][0]["text"], "slept 1 ms");
    assert!(sync["result"].get("taskId").is_none());

    // The same tool with the extension declared on the request: a task, flat.
    let (_, created) = server
        .call(
            3,
            "tools/call",
            json!({"name": "sleepy", "arguments": {"ms": 1}}),
            &with_tasks(),
        )
        .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task");
    assert_eq!(task["status"], "working");
    assert!(
        task["taskId"].as_str().unwrap().len() >= 32,
        "unguessable id"
    );
    assert!(task["ttlMs"].as_u64().unwrap() > 0);
    assert_eq!(task["pollIntervalMs"], 50);
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(task.get(absent).is_none(), "{absent} in {task}");
    }
    // `2026-07-28T10:30:00.000Z`.
    let created_at = task["createdAt"].as_str().unwrap();
    assert_eq!(created_at.len(), 24);
    assert!(created_at.ends_with('Z') && created_at.as_bytes()[10] == b'T');

    // Required tool, no extension: -32021 naming the extension (HTTP 400).
    let (status, refused) = server
        .call(
            4,
            "tools/call",
            json!({"name": "required_only"}),
            &json!({}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["code"], -32021);
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    // Forbidden tool, extension declared: still synchronous.
    let (_, never) = server
        .call(5, "tools/call", json!({"name": "never"}), &with_tasks())
        .await;
    assert_eq!(never["result"]["content"][0]["text"], "inline: true");
}

#[tokio::test]
async fn task_methods_need_the_extension_a_known_task_and_the_name_header() {
    let server = http().await;
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": "nope", "inputResponses": {}});
        let (status, reply) = server.call(1, method, params.clone(), &json!({})).await;
        assert_eq!(
            (status, reply["error"]["code"].clone()),
            (400, json!(-32021)),
            "{method}"
        );
        let (status, reply) = server.call(2, method, params, &with_tasks()).await;
        assert_eq!(
            (status, reply["error"]["code"].clone()),
            (400, json!(-32602)),
            "{method}"
        );
    }
    for removed in ["tasks/result", "tasks/list"] {
        let (status, reply) = server
            .call(3, removed, json!({"taskId": "x"}), &with_tasks())
            .await;
        assert_eq!(
            (status, reply["error"]["code"].clone()),
            (404, json!(-32601))
        );
    }

    let id = start(&server, "sleepy", json!({"ms": 5000})).await;
    let get = request(4, "tasks/get", json!({"taskId": id}), &with_tasks());
    let (status, reply) = server.post(&get, &[]).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["taskId"], id.as_str());
    assert_eq!(reply["result"]["resultType"], "complete");
    for (header, expect) in [
        (None, 400),
        (Some("someone-else"), 400),
        (Some(" padded "), 400),
    ] {
        let (status, reply) = server.post(&get, &[("mcp-name", header)]).await;
        assert_eq!(status, expect, "{header:?}: {reply}");
        assert_eq!(reply["error"]["code"], -32020);
    }
    let padded = format!("  {id}\t");
    let (status, _) = server.post(&get, &[("mcp-name", Some(&padded))]).await;
    assert_eq!(
        status, 200,
        "optional whitespace around the value is accepted"
    );
}

#[tokio::test]
async fn a_task_runs_to_completion_and_inlines_its_result() {
    let server = http().await;
    let id = start(&server, "sleepy", json!({"ms": 30})).await;
    // Durable before the handle is returned: an immediate get resolves.
    let (_, first) = server
        .call(2, "tasks/get", json!({"taskId": id}), &with_tasks())
        .await;
    assert!(["working", "completed"].contains(&first["result"]["status"].as_str().unwrap()));
    let done = poll_status(&server, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 30 ms");
    assert_eq!(done["result"]["isError"], false);
    assert!(
        done["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );
    let detailed: DetailedTask = serde_json::from_value(done.clone()).unwrap();
    detailed.check().unwrap();
    assert!(done["lastUpdatedAt"].as_str().unwrap() >= done["createdAt"].as_str().unwrap());
    // Cancelling a finished task is an empty ack, and changes nothing.
    let (status, ack) = server
        .call(3, "tasks/cancel", json!({"taskId": id}), &with_tasks())
        .await;
    assert_eq!(status, 200);
    let ack = ack["result"].as_object().unwrap();
    assert_eq!(ack["resultType"], "complete");
    assert!(
        ack.keys().all(|k| k == "resultType" || k == "_meta"),
        "{ack:?}"
    );
    assert_eq!(
        poll_status(&server, &id, "completed").await["status"],
        "completed"
    );
}

#[tokio::test]
async fn input_rounds_go_through_tasks_update_with_keys_unique_over_the_task() {
    let server = http().await;
    let id = start(&server, "ask_twice", json!({})).await;
    let asking = poll_status(&server, &id, "input_required").await;
    let requests = asking["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["first"]);
    assert_eq!(requests["first"]["method"], "elicitation/create");

    let update = |responses: Value| {
        let id = id.clone();
        let server = &server;
        async move {
            server
                .call(
                    9,
                    "tasks/update",
                    json!({"taskId": id, "inputResponses": responses}),
                    &with_tasks(),
                )
                .await
        }
    };
    // Malformed answer to an outstanding key: -32602, nothing recorded.
    let (status, bad) = update(json!({"first": {"content": "no action"}})).await;
    assert_eq!((status, bad["error"]["code"].clone()), (400, json!(-32602)));
    // Answers under keys that are not outstanding are ignored (ack, no change).
    let (status, ack) = update(json!({"unknown": {"ignored": true}})).await;
    assert_eq!(
        (status, ack["result"]["resultType"].clone()),
        (200, json!("complete"))
    );
    assert_eq!(
        poll_status(&server, &id, "input_required").await["inputRequests"],
        asking["inputRequests"]
    );

    update(json!({"first": {"action": "accept", "content": {"name": "Ada"}}})).await;
    let second = poll_until(&server, &id, |t| t["inputRequests"].get("last").is_some()).await;
    assert!(
        second["inputRequests"].get("first").is_none(),
        "answered keys leave"
    );
    // A late duplicate of the first answer is not outstanding any more: ignored.
    update(json!({"first": {"action": "accept", "content": {"name": "Eve"}}})).await;
    update(json!({"last": {"action": "accept", "content": {"name": "Lovelace"}}})).await;
    let done = poll_status(&server, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada Lovelace!");

    // A handler that reuses a key within its task fails the task.
    let id = start(&server, "reuse_key", json!({})).await;
    poll_status(&server, &id, "input_required").await;
    update_raw(
        &server,
        &id,
        json!({"same": {"action": "accept", "content": {"name": "x"}}}),
    )
    .await;
    let failed = poll_status(&server, &id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603);
}

async fn update_raw(server: &HttpServer, id: &str, responses: Value) {
    let (status, reply) = server
        .call(
            8,
            "tasks/update",
            json!({"taskId": id, "inputResponses": responses}),
            &with_tasks(),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
}

#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let server = http().await;
    let id = start(&server, "tool_error", json!({})).await;
    let done = poll_status(&server, &id, "completed").await;
    assert_eq!(done["result"]["isError"], true);
    assert!(done.get("error").is_none());

    let id = start(&server, "rpc_error", json!({})).await;
    let failed = poll_status(&server, &id, "failed").await;
    assert_eq!(
        failed["error"],
        json!({"code": -32602, "message": "no such widget"})
    );
    assert!(failed.get("result").is_none());
    assert_eq!(failed["statusMessage"], "no such widget");

    let id = start(&server, "panics", json!({})).await;
    assert_eq!(
        poll_status(&server, &id, "failed").await["error"]["code"],
        -32603
    );

    // Asking for something the creating request did not declare (roots): -32021 in the task.
    let id = start(&server, "needs_roots", json!({})).await;
    let failed = poll_status(&server, &id, "failed").await;
    assert_eq!(failed["error"]["code"], -32021);
    assert_eq!(
        failed["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
}

#[tokio::test]
async fn cancellation_is_cooperative_with_a_grace_period() {
    let server = http().await;
    let cancel = |id: String| {
        let server = &server;
        async move {
            let (status, ack) = server
                .call(5, "tasks/cancel", json!({"taskId": id}), &with_tasks())
                .await;
            assert_eq!(
                (status, ack["result"]["resultType"].clone()),
                (200, json!("complete"))
            );
        }
    };
    // A handler that watches for cancellation.
    let id = start(&server, "sleepy", json!({"ms": 60_000})).await;
    cancel(id.clone()).await;
    let cancelled = poll_status(&server, &id, "cancelled").await;
    assert!(
        cancelled.get("result").is_none(),
        "the stopped run's result is discarded"
    );
    // One that does not: dropped after the grace period, still cancelled.
    let id = start(&server, "stubborn", json!({})).await;
    cancel(id.clone()).await;
    poll_status(&server, &id, "cancelled").await;
    // A task waiting for input has no worker: cancelled at once.
    let id = start(&server, "ask_twice", json!({})).await;
    poll_status(&server, &id, "input_required").await;
    cancel(id.clone()).await;
    let (_, now) = server
        .call(6, "tasks/get", json!({"taskId": id}), &with_tasks())
        .await;
    assert_eq!(now["result"]["status"], "cancelled");
    assert!(now["result"].get("inputRequests").is_none());
}

#[tokio::test]
async fn tasks_belong_to_the_principal_that_created_them() {
    let tasks = tasks(Arc::new(MemoryTaskStore::new()), &Arc::default()).build();
    let server = HttpServer::start(server_by_user(tasks)).await;
    let create = request(1, "tools/call", json!({"name": "ask_twice"}), &with_tasks());
    let (_, created) = server.post(&create, &[("x-user", Some("alice"))]).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = request(2, "tasks/get", json!({"taskId": id}), &with_tasks());
    let (status, _) = server.post(&get, &[("x-user", Some("alice"))]).await;
    assert_eq!(status, 200);
    for other in [Some("mallory"), None] {
        let (status, reply) = server.post(&get, &[("x-user", other)]).await;
        assert_eq!(
            (status, reply["error"]["code"].clone()),
            (400, json!(-32602))
        );
        let cancel = request(3, "tasks/cancel", json!({"taskId": id}), &with_tasks());
        let (_, reply) = server.post(&cancel, &[("x-user", other)]).await;
        assert_eq!(
            reply["error"]["code"], -32602,
            "cannot cancel another's task"
        );
    }
}

#[tokio::test]
async fn clients_without_the_extension_get_the_questions_as_input_required_results() {
    let server = http().await;
    let caps = json!({"elicitation": {}});
    let (_, first) = server
        .call(1, "tools/call", json!({"name": "ask_twice"}), &caps)
        .await;
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required");
    assert!(first["inputRequests"].get("first").is_some());
    let state = first["requestState"].as_str().unwrap();
    let retry = json!({"name": "ask_twice", "requestState": state, "inputResponses":
        {"first": {"action": "accept", "content": {"name": "Grace"}}}});
    let (_, second) = server.call(2, "tools/call", retry, &caps).await;
    let second = &second["result"];
    assert!(second["inputRequests"].get("last").is_some(), "{second}");
    let retry = json!({"name": "ask_twice", "requestState": second["requestState"],
        "inputResponses": {"last": {"action": "accept", "content": {"name": "Hopper"}}}});
    let (_, done) = server.call(3, "tools/call", retry, &caps).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Grace Hopper!");
    // A tampered state is refused.
    let forged = json!({"name": "ask_twice", "requestState": "mcp-task:{not json"});
    let (_, refused) = server.call(4, "tools/call", forged, &caps).await;
    assert_eq!(refused["error"]["code"], -32602);
}

/// A raw peer on the in-memory pipe (the stdio path), for listen streams.
struct Peer {
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    reader: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Peer {
    fn start(server: Server) -> Self {
        let pipe = memory::pipe();
        tokio::spawn(async move {
            server
                .serve_io(pipe.server.reader, pipe.server.writer)
                .await
        });
        Self {
            writer: pipe.client.writer,
            reader: tokio::io::BufReader::new(pipe.client.reader).lines(),
        }
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.reader.next_line())
            .await
            .expect("the server went quiet")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// The response to request `id`, skipping notifications.
    async fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self.next().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

#[tokio::test]
async fn listen_streams_carry_notifications_for_the_named_tasks() {
    let mut peer = Peer::start(fixture().0);
    // taskIds without the extension: -32021.
    peer.send(&request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": ["x"]}}),
        &json!({}),
    ))
    .await;
    assert_eq!(peer.response(1).await["error"]["code"], -32021);

    peer.send(&request(
        2,
        "tools/call",
        json!({"name": "ask_twice"}),
        &with_tasks(),
    ))
    .await;
    let id = peer.response(2).await["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    peer.send(&request(
        3,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id, "unknown-task"], "toolsListChanged": true}}),
        &with_tasks(),
    ))
    .await;
    let ack = peer.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "only known tasks"
    );

    let mut seen: Vec<String> = Vec::new();
    let mut answered = std::collections::BTreeSet::new();
    let mut next_id = 10;
    while seen.last().map(String::as_str) != Some("completed") {
        let message = peer.next().await;
        if message["method"] != "notifications/tasks" {
            continue;
        }
        let params = &message["params"];
        assert_eq!(params["taskId"], id.as_str());
        assert_eq!(params["_meta"]["io.modelcontextprotocol/subscriptionId"], 3);
        let task: DetailedTask = serde_json::from_value(params.clone()).unwrap();
        task.check().unwrap();
        for key in task.input_requests.iter().flat_map(|r| r.keys()) {
            if answered.insert(key.clone()) {
                let responses = json!({key: {"action": "accept", "content": {"name": "Tim"}}});
                peer.send(&request(
                    next_id,
                    "tasks/update",
                    json!({"taskId": id, "inputResponses": responses}),
                    &with_tasks(),
                ))
                .await;
                next_id += 1;
            }
        }
        let status = task.status.to_string();
        if seen.last() != Some(&status) {
            seen.push(status);
        }
    }
    assert!(seen.contains(&"input_required".to_owned()), "{seen:?}");
    assert_eq!(seen.last().unwrap(), "completed");
}
