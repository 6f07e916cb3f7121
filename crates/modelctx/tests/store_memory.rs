//! The memory stores keep the store contracts: the kernel's records and limits
//! (`modelctx::store::contract`), tasks and task limits (`modelctx::server::tasks::contract`),
//! flows (`modelctx::client::flows::contract`).

use std::sync::Arc;

use modelctx::client::flows::{self, MemoryFlowStore};
use modelctx::server::tasks::{self, MemoryTaskStore};
use modelctx::store::contract::{self, ContractRecord};

#[tokio::test]
async fn records() {
    let store = modelctx::store::MemoryStore::<ContractRecord>::new();
    contract::records(&store, &store).await;
}

#[tokio::test]
async fn limits() {
    let store = modelctx::store::MemoryStore::<ContractRecord>::new();
    contract::limits(&store, &store).await;
}

#[tokio::test]
async fn tasks() {
    let store = MemoryTaskStore::new();
    tasks::contract::tasks(&store, &store).await;
}

#[tokio::test]
async fn task_limits() {
    let store = MemoryTaskStore::new();
    tasks::contract::task_limits(&store, &store).await;
}

#[tokio::test]
async fn flows() {
    let store = Arc::new(MemoryFlowStore::new());
    flows::contract::flows(store.clone(), store).await;
}
