//! Caps on live tasks: per principal and per store, answered `-32603` with
//! `data.reason = "task_limit"`, exact under concurrent creation on every store (the stores' limit contract,
//! `modelctx::server::tasks::contract::task_limits`, runs in `tests/store_*.rs`).

use std::sync::Arc;

use modelctx::server::tasks::{MemoryTaskStore, TaskStore};
use modelctx_test_support::tasks::*;
use serde_json::json;

/// The task fixtures on a memory store with these limits.
fn limited(per_principal: usize, total: usize) -> modelctx::server::tasks::Tasks {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
    tasks(store, &Arc::default())
        .max_tasks_per_principal(Some(per_principal))
        .max_tasks(Some(total))
        .build()
}

#[tokio::test]
async fn a_tools_call_past_a_limit_is_refused_and_the_server_keeps_serving() {
    let server = HttpServer::start(server_by_user(limited(2, 3))).await;
    let create = request(1, "tools/call", json!({"name": "ask_twice"}), &with_tasks());
    let as_user = |user: &'static str| [("x-user", Some(user))];
    let refused =
        |scope: &str, limit: u64| json!({"reason": "task_limit", "scope": scope, "limit": limit});
    for _ in 0..2 {
        let (_, created) = server.post(&create, &as_user("alice")).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
    }
    let (status, reply) = server.post(&create, &as_user("alice")).await;
    assert_eq!(status, 200);
    assert_eq!(reply["error"]["code"], -32603);
    assert_eq!(reply["error"]["data"], refused("principal", 2));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Too many tasks"),
        "{reply}"
    );
    let (_, created) = server.post(&create, &as_user("bob")).await;
    let bobs = created["result"]["taskId"].as_str().unwrap().to_owned();
    let (_, reply) = server.post(&create, &as_user("bob")).await;
    assert_eq!(reply["error"]["data"], refused("server", 3));
    // Still serving: the task that was created is there, and untasked calls work.
    let get = request(2, "tasks/get", json!({"taskId": bobs}), &with_tasks());
    let (status, task) = server.post(&get, &as_user("bob")).await;
    assert_eq!(
        (status, &task["result"]["status"]),
        (200, &json!("input_required"))
    );
    let (_, plain) = server
        .post(
            &request(3, "tools/call", json!({"name": "never"}), &with_tasks()),
            &as_user("bob"),
        )
        .await;
    assert_eq!(plain["result"]["content"][0]["text"], "inline: true");
}

/// Anonymous clients are held to the store's limit only: one of them cannot use up a count
/// that every other anonymous client shares.
#[tokio::test]
async fn tasks_without_a_principal_count_against_the_total_only() {
    let server = HttpServer::start(server(limited(2, 4))).await;
    let create = request(1, "tools/call", json!({"name": "ask_twice"}), &with_tasks());
    for _ in 0..4 {
        let (_, created) = server.post(&create, &[]).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
    }
    let (status, reply) = server.post(&create, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        reply["error"]["data"],
        json!({"reason": "task_limit", "scope": "server", "limit": 4})
    );
}
