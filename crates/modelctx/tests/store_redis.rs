//! The Redis stores keep the store contracts through two connections, as two instances hold:
//! the kernel's records and limits (`modelctx::store::contract`), tasks and task limits
//! (`modelctx::server::tasks::contract`), flows (`modelctx::client::flows::contract`). Needs
//! `redis-server` (`scripts/system-packages.sh` installs it); the tests fail, never skip, when
//! Redis cannot run.

use std::sync::Arc;

use modelctx::client::flows::{self, FlowFilter, FlowStore, RedisFlowStore};
use modelctx::server::tasks::{self, RedisTaskStore};
use modelctx::store::contract::{self, ContractRecord};
use modelctx_test_support::redis::{Persistence, Redis};

#[tokio::test]
async fn records() {
    let redis = Redis::start(Persistence::Off).await;
    let connect = || modelctx::store::RedisStore::<ContractRecord>::connect(&redis.url, "records");
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    contract::records(&a, &b).await;
}

#[tokio::test]
async fn limits() {
    let redis = Redis::start(Persistence::Off).await;
    let connect = || modelctx::store::RedisStore::<ContractRecord>::connect(&redis.url, "{limits}");
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    contract::limits(&a, &b).await;
}

#[tokio::test]
async fn tasks() {
    let redis = Redis::start(Persistence::AppendOnly).await;
    let connect = || RedisTaskStore::connect(&redis.url, "mcp-tasks");
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    tasks::contract::tasks(&a, &b).await;
}

#[tokio::test]
async fn task_limits() {
    let redis = Redis::start(Persistence::AppendOnly).await;
    let connect = || RedisTaskStore::connect(&redis.url, "{mcp-limits}");
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    tasks::contract::task_limits(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn flows() {
    let redis = Redis::start(Persistence::Off).await;
    let connect = |prefix: &'static str| {
        let url = redis.url.clone();
        async move { Arc::new(RedisFlowStore::connect(&url, prefix).await.unwrap()) }
    };
    flows::contract::flows(connect("contract").await, connect("contract").await).await;
    // Another prefix is another store.
    let other = connect("elsewhere").await;
    assert!(other.list(&FlowFilter::new()).await.unwrap().is_empty());
}
