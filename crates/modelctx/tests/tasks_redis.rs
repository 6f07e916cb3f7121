//! Two server instances sharing a Redis task store: a task started on one is answered and
//! finished through the other, across a restart and a crash, and Redis expires tasks itself.
//! Needs `redis-server`: `scripts/redis.sh install` provides it (CI runs as root); the test
//! fails, never skips, when Redis cannot run.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{Client, RequestOptions, TaskSettings, ToolStart};
use modelctx::server::tasks::{RedisTaskStore, TaskLimits, TaskRecord, TaskStore, Tasks};
use modelctx::types::{ElicitRequestParams, ElicitResult, TaskStatus};
use modelctx_test_support::redis::{Persistence, Redis};
use modelctx_test_support::tasks::*;
use serde_json::{Value, json};

/// A new connection to the shared store, as another process would open.
async fn connect(redis: &Redis) -> Arc<dyn TaskStore> {
    Arc::new(
        RedisTaskStore::connect(&redis.url, "{mcp-test}")
            .await
            .unwrap(),
    )
}

async fn instance(redis: &Redis, probe: &Arc<Probe>) -> (HttpServer, Tasks) {
    let tasks = tasks(connect(redis).await, probe).build();
    (HttpServer::start(server(tasks.clone())).await, tasks)
}

/// A task-aware client whose elicitation callback approves as `name`.
async fn client(url: &str, name: &'static str, asked: &Arc<Mutex<Vec<String>>>) -> Client {
    let asked = Arc::clone(asked);
    Client::builder()
        .tasks(
            TaskSettings::new().poll_bounds(Duration::from_millis(20), Duration::from_millis(100)),
        )
        .on_elicitation(move |context, _params: ElicitRequestParams| {
            let asked = Arc::clone(&asked);
            async move {
                asked
                    .lock()
                    .unwrap()
                    .push(context.key().unwrap_or_default().to_owned());
                let mut content = serde_json::Map::new();
                content.insert("name".into(), Value::from(name));
                Ok(ElicitResult::accept(content))
            }
        })
        .connect_http(url)
        .await
        .unwrap()
}

#[tokio::test]
async fn two_instances_share_tasks_through_redis_across_a_restart_and_a_crash() {
    let redis = Redis::start(Persistence::AppendOnly).await;
    let probe = Arc::new(Probe::default());
    probe.pass_gate.store(1, Ordering::SeqCst);
    let (a, tasks_a) = instance(&redis, &probe).await;
    let (b, tasks_b) = instance(&redis, &probe).await;
    let asked = Arc::new(Mutex::new(Vec::new()));

    // Started on A.
    let on_a = client(&a.url, "Grace", &asked).await;
    let ToolStart::Task(task) = on_a.start_tool("staged", json!({})).await.unwrap() else {
        panic!("staged did not become a task");
    };
    let waiting = on_a.get_task(&task.task_id).await.unwrap();
    assert!(matches!(
        waiting.status.as_str(),
        "working" | "input_required"
    ));

    // A restarts while the task waits: nothing is lost.
    tasks_a.shutdown().await;
    drop((a, on_a));
    let (a, tasks_a) = instance(&redis, &probe).await;

    // B answers the input request (its client's elicitation callback) and finishes the task.
    let on_b = client(&b.url, "Grace", &asked).await;
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&statuses);
    let options = RequestOptions::new().on_task_status(move |t| {
        seen.lock().unwrap().push(t.status.to_string());
    });
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        on_b.wait_task(&task.task_id, &options),
    )
    .await
    .expect("never finished")
    .unwrap();
    assert_eq!(
        result.first_text(),
        Some("approved by Grace; stage one ran 1 time(s)")
    );
    assert_eq!(*asked.lock().unwrap(), ["approve"]);
    assert!(
        statuses
            .lock()
            .unwrap()
            .contains(&"input_required".to_owned())
    );
    // A (restarted) sees the same finished task.
    let on_a = client(&a.url, "Grace", &asked).await;
    let seen_on_a = on_a.get_task(&task.task_id).await.unwrap();
    assert_eq!(seen_on_a.status, TaskStatus::COMPLETED);
    assert_eq!(
        seen_on_a.result,
        on_b.get_task(&task.task_id).await.unwrap().result
    );

    // A second task: answered through B, whose worker dies mid-work (after stage one's
    // checkpoint); A resumes it from the checkpoint once B's lease lapses.
    probe.stage_one.store(0, Ordering::SeqCst);
    probe.pass_gate.store(0, Ordering::SeqCst);
    let ToolStart::Task(second) = on_a.start_tool("staged", json!({})).await.unwrap() else {
        panic!("staged did not become a task");
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let key = loop {
        let now = on_b.get_task(&second.task_id).await.unwrap();
        if let Some(requests) = now.input_requests {
            break requests.into_keys().next().unwrap();
        }
        assert!(tokio::time::Instant::now() < deadline, "never asked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let answers = on_b.answer_input_requests_for(&second.task_id, &key).await;
    on_b.update_task(&second.task_id, answers).await.unwrap();
    // The first task passed the gate once; this one's run on B is the second to reach it.
    probe.reached_gate(2).await;
    tasks_b.halt();
    drop(b);
    probe.pass_gate.store(1, Ordering::SeqCst);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tasks_a.sweep().await.unwrap() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "A never resumed B's task"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        on_a.wait_task(&second.task_id, &RequestOptions::new()),
    )
    .await
    .expect("never finished")
    .unwrap();
    assert_eq!(
        result.first_text(),
        Some("approved by Grace; stage one ran 1 time(s)")
    );
    assert_eq!(
        probe.stage_one.load(Ordering::SeqCst),
        1,
        "resumed from the checkpoint"
    );
}

/// Answers one input request of a task with this client's callbacks.
trait AnswerOne {
    async fn answer_input_requests_for(
        &self,
        task_id: &str,
        key: &str,
    ) -> modelctx::types::InputResponses;
}

impl AnswerOne for Client {
    async fn answer_input_requests_for(
        &self,
        task_id: &str,
        key: &str,
    ) -> modelctx::types::InputResponses {
        let task = self.get_task(task_id).await.unwrap();
        let mut requests = task.input_requests.unwrap();
        requests.retain(|k, _| k == key);
        self.answer_input_requests(requests).await.unwrap()
    }
}

/// Expiry is Redis's: a task past its TTL disappears on its own, and the purge drops its id from
/// the active set. (The store contracts run in `tests/store_redis.rs`.)
#[tokio::test]
async fn the_redis_store_lets_redis_expire_tasks() {
    let redis = Redis::start(Persistence::AppendOnly).await;
    let store = connect(&redis).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let unlimited = TaskLimits::default();
    let mut short = TaskRecord::new("short".to_owned(), "tool".to_owned(), now);
    short.ttl_ms = Some(100);
    store.create(&short, unlimited).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while store.load("short").await.unwrap().is_some() {
        assert!(tokio::time::Instant::now() < deadline, "never expired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(store.purge_expired(now + 200).await.unwrap(), 0);
    assert!(
        store.active().await.unwrap().is_empty(),
        "the expired id left the active set"
    );
}
