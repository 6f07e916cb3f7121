//! The SQLite stores keep the store contracts (`modelctx::store::contract`) through two connections
//! to one file, as two processes on one host hold: tasks, task limits, flows.

use std::sync::Arc;

use modelctx::client::flows::SqliteFlowStore;
use modelctx::server::tasks::SqliteStore;
use modelctx::store::contract;
use modelctx_test_support::tempdir::TempDir;

#[tokio::test]
async fn tasks() {
    let dir = TempDir::new("tasks");
    let path = dir.file("tasks.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    contract::tasks(&a, &b).await;
    let memory = SqliteStore::in_memory().unwrap();
    contract::tasks(&memory, &memory).await;
}

#[tokio::test]
async fn task_limits() {
    let dir = TempDir::new("limits");
    let path = dir.file("tasks.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    contract::task_limits(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn flows() {
    let dir = TempDir::new("flows");
    let path = dir.file("flows.db");
    contract::flows(
        Arc::new(SqliteFlowStore::open(&path).unwrap()),
        Arc::new(SqliteFlowStore::open(&path).unwrap()),
    )
    .await;
    let memory = SqliteFlowStore::in_memory().unwrap();
    contract::flows(Arc::new(memory.clone()), Arc::new(memory)).await;
}
