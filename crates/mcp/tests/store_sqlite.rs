//! The SQLite stores keep the store contracts (`mcp::store::contract`) through two connections
//! to one file, as two processes on one host hold: tasks, task limits, flows.

use std::path::PathBuf;
use std::sync::Arc;

use mcp::client::flows::SqliteFlowStore;
use mcp::server::tasks::SqliteStore;
use mcp::store::contract;

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mcp-store-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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
