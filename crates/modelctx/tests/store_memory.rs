//! The memory stores keep the store contracts (`modelctx::store::contract`): tasks, task limits,
//! flows.

use std::sync::Arc;

use modelctx::client::flows::MemoryFlowStore;
use modelctx::server::tasks::MemoryStore;
use modelctx::store::contract;

#[tokio::test]
async fn tasks() {
    let store = MemoryStore::new();
    contract::tasks(&store, &store).await;
}

#[tokio::test]
async fn task_limits() {
    let store = MemoryStore::new();
    contract::task_limits(&store, &store).await;
}

#[tokio::test]
async fn flows() {
    let store = Arc::new(MemoryFlowStore::new());
    contract::flows(store.clone(), store).await;
}
