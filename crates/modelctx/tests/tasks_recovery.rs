//! Restarts and crashes with the SQLite store: tasks waiting for input survive a restart, a
//! task whose instance died mid-work is resumed from its checkpoint by another instance (or
//! failed, by policy), and expired tasks disappear.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use modelctx::server::tasks::{OrphanPolicy, SqliteTaskStore, TaskStore, Tasks, TasksBuilder};
use modelctx_test_support::tasks::*;
use serde_json::json;

/// A database file in a fresh temporary folder, removed when dropped.
struct Database(PathBuf);

impl Database {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mcp-tasks-recovery-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// A new connection, as a new process would open it.
    fn open(&self) -> Arc<dyn TaskStore> {
        Arc::new(SqliteTaskStore::open(self.0.join("tasks.db")).unwrap())
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

async fn instance(builder: TasksBuilder) -> (HttpServer, Tasks) {
    let tasks = builder.build();
    (HttpServer::start(server(tasks.clone())).await, tasks)
}

async fn approve(server: &HttpServer, id: &str, name: &str) {
    let responses = json!({"approve": {"action": "accept", "content": {"name": name}}});
    let (status, reply) = server
        .call(
            7,
            "tasks/update",
            json!({"taskId": id, "inputResponses": responses}),
            &with_tasks(),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
}

/// Sweeps until the task ended here (at most 10 s: the lease must lapse first). The instance's
/// own startup sweep may be the one that claims it.
async fn sweep_until_done(tasks: &Tasks, id: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        tasks.sweep().await.unwrap();
        let task = tasks.task(id).await.unwrap().unwrap();
        if task.status.is_terminal() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never resumed: {task:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_crashed_instance_s_task_resumes_elsewhere_from_its_checkpoint() {
    let db = Database::new();
    let probe = Arc::new(Probe::default());
    let (a, tasks_a) = instance(tasks(db.open(), &probe)).await;
    let id = start(&a, "staged", json!({})).await;
    poll_status(&a, &id, "input_required").await;

    // A restart while the task waits for input loses nothing.
    tasks_a.shutdown().await;
    drop(a);
    let (a, tasks_a) = instance(tasks(db.open(), &probe)).await;
    let waiting = poll_status(&a, &id, "input_required").await;
    assert!(waiting["inputRequests"].get("approve").is_some());

    // Approved: stage one runs, is checkpointed, and the run waits at the gate; then the
    // instance dies without a word to the store.
    approve(&a, &id, "Ada").await;
    probe.reached_gate(1).await;
    tasks_a.halt();
    drop(a);
    assert_eq!(probe.stage_one.load(Ordering::SeqCst), 1);

    // Another instance claims the task once the lease lapsed and runs it from the checkpoint.
    probe.pass_gate.store(1, Ordering::SeqCst);
    let (b, tasks_b) = instance(tasks(db.open(), &probe)).await;
    assert_ne!(tasks_b.instance_id(), tasks_a.instance_id());
    sweep_until_done(&tasks_b, &id).await;
    let done = poll_status(&b, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "approved by Ada; stage one ran 1 time(s)"
    );
    assert_eq!(
        probe.stage_one.load(Ordering::SeqCst),
        1,
        "the checkpoint was honoured"
    );
    assert_eq!(probe.runs.load(Ordering::SeqCst), 3, "asked, ran, resumed");
}

#[tokio::test]
async fn a_restarted_instance_with_a_stable_id_reclaims_its_tasks_at_once() {
    let db = Database::new();
    let probe = Arc::new(Probe::default());
    // A long lease: only the stable id lets the restart reclaim before it lapses.
    let builder = || {
        tasks(db.open(), &probe)
            .instance_id("node-1")
            .lease(Duration::from_secs(60))
    };
    let (a, tasks_a) = instance(builder()).await;
    let id = start(&a, "staged", json!({})).await;
    poll_status(&a, &id, "input_required").await;
    approve(&a, &id, "Lin").await;
    probe.reached_gate(1).await;
    tasks_a.halt();
    drop(a);

    probe.pass_gate.store(1, Ordering::SeqCst);
    let (a, tasks_a) = instance(builder()).await;
    // Ending well within the 60 s lease proves the reclaim did not wait for it.
    sweep_until_done(&tasks_a, &id).await;
    let done = poll_status(&a, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "approved by Lin; stage one ran 1 time(s)"
    );
}

#[tokio::test]
async fn the_fail_policy_ends_orphans_failed() {
    let db = Database::new();
    let probe = Arc::new(Probe::default());
    let (a, tasks_a) = instance(tasks(db.open(), &probe)).await;
    let id = start(&a, "staged", json!({})).await;
    poll_status(&a, &id, "input_required").await;
    approve(&a, &id, "Kay").await;
    probe.reached_gate(1).await;
    tasks_a.halt();
    drop(a);

    let (b, tasks_b) = instance(tasks(db.open(), &probe).orphans(OrphanPolicy::Fail)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        tasks_b.sweep().await.unwrap();
        let (_, reply) = b
            .call(2, "tasks/get", json!({"taskId": id}), &with_tasks())
            .await;
        if reply["result"]["status"] == "failed" {
            assert_eq!(reply["result"]["error"]["code"], -32603);
            break;
        }
        assert_eq!(reply["result"]["status"], "working");
        assert!(tokio::time::Instant::now() < deadline, "never failed");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(probe.runs.load(Ordering::SeqCst), 2, "not run again");
}

#[tokio::test]
async fn expired_tasks_are_gone() {
    let db = Database::new();
    let builder = tasks(db.open(), &Arc::default()).ttl(Some(Duration::from_millis(300)));
    let (a, tasks_a) = instance(builder).await;
    let id = start(&a, "sleepy", json!({"ms": 1})).await;
    let done = poll_status(&a, &id, "completed").await;
    assert_eq!(done["ttlMs"], 300);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, reply) = a
            .call(2, "tasks/get", json!({"taskId": id}), &with_tasks())
            .await;
        if status == 400 {
            assert_eq!(reply["error"]["code"], -32602);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never expired");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tasks_a.sweep().await.unwrap();
    assert!(
        tasks_a.task(&id).await.unwrap().is_none(),
        "purged from the store"
    );
}
