//! The memory stores keep the store contracts: tasks and task limits
//! (`modelctx::server::tasks::contract`), flows (`modelctx::client::flows::contract`).

use std::sync::Arc;

use modelctx::client::flows::{self, MemoryFlowStore};
use modelctx::server::tasks::{self, MemoryStore};

#[tokio::test]
async fn tasks() {
    let store = MemoryStore::new();
    tasks::contract::tasks(&store, &store).await;
}

#[tokio::test]
async fn task_limits() {
    let store = MemoryStore::new();
    tasks::contract::task_limits(&store, &store).await;
}

#[tokio::test]
async fn flows() {
    let store = Arc::new(MemoryFlowStore::new());
    flows::contract::flows(store.clone(), store).await;
}
