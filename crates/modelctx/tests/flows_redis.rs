//! Durable client flows with the Redis store (`modelctx::client::flows::RedisFlowStore`), for
//! workers spread over processes and hosts: of eight connections claiming one answered flow exactly one wins; a flow
//! started here is resumed by another process with its own server instance; worker processes
//! racing over the same answered flows resume each exactly once.
//!
//! Needs `redis-server`: `scripts/redis.sh install` provides it (CI runs as root); the tests
//! start a private instance on a free 127.0.0.1 port and fail, never skip, when Redis cannot
//! run.

use std::sync::Arc;
use std::time::Instant;

use modelctx::client::flows::{FlowStore, RedisFlowStore};
use modelctx_test_support::flows::*;
use modelctx_test_support::redis::{Persistence, Redis};

/// The worker process entry point (ignored in normal runs).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "entry point of the worker processes of the flows tests"]
async fn flows_child() {
    child_main().await;
}

async fn connect(redis: &Redis, prefix: &str) -> Arc<dyn FlowStore> {
    Arc::new(RedisFlowStore::connect(&redis.url, prefix).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[allow(clippy::print_stderr, reason = "the figures RELIABILITY.md records")]
async fn of_eight_connections_claiming_the_same_answered_flow_exactly_one_wins() {
    let redis = Redis::start(Persistence::Off).await;
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(connect(&redis, "race").await);
    }
    let started = Instant::now();
    let tried = modelctx::client::flows::contract::flow_claim_race(stores, 50).await;
    eprintln!(
        "FIGURES redis claim race: 50 flows x 8 connections = {tried} claims, 50 won, {} lost, {} ms",
        tried - 50,
        started.elapsed().as_millis()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flow_started_here_is_resumed_by_another_process_with_its_own_server() {
    let redis = Redis::start(Persistence::Off).await;
    let dir = TempDir::new("redis-resume");
    let spec = StoreSpec::Redis(redis.url.clone(), "resume".into());
    resume_in_another_process(&spec, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn worker_processes_racing_over_the_same_answered_flows_resume_each_exactly_once() {
    let redis = Redis::start(Persistence::Off).await;
    let dir = TempDir::new("redis-process-race");
    let spec = StoreSpec::Redis(redis.url.clone(), "{mcp-flows}".into());
    let figures = race_processes(
        &spec,
        dir.path(),
        env_number("MCP_FLOWS_RACE_FLOWS", 40),
        env_number("MCP_FLOWS_RACE_WORKERS", 3),
    )
    .await;
    print_race("redis", &figures);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_dies_after_its_claim_is_taken_over_once_the_lease_runs_out() {
    let redis = Redis::start(Persistence::Off).await;
    let dir = TempDir::new("redis-takeover");
    let spec = StoreSpec::Redis(redis.url.clone(), "takeover".into());
    take_over_after_a_dead_worker(&spec, dir.path()).await;
}
