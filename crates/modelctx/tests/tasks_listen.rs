//! `taskIds` on a listen stream (issue 32, item 3): counted and refused before the store is
//! read when they name more tasks than the client may have, read in batches otherwise — once
//! when the stream starts, and at every poll interval after — on the memory store and on
//! Redis.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use modelctx::seal::Principal;
use modelctx::server::Server;
use modelctx::server::tasks::{
    Admission, MemoryTaskStore, RedisTaskStore, TaskLimits, TaskRecord, TaskStore, Tasks,
};
use modelctx::store::StoreError;
use modelctx::types::TaskStatus;
use modelctx_test_support::redis::{Persistence, Redis};
use modelctx_test_support::server::StdioPeer;
use modelctx_test_support::tasks::{request, with_tasks};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A task store that counts its reads: single loads, batch reads and the ids they cover.
struct Counting {
    inner: Arc<dyn TaskStore>,
    loads: AtomicUsize,
    batches: AtomicUsize,
    batched_ids: AtomicUsize,
    largest_batch: AtomicUsize,
    read: Notify,
}

impl Counting {
    fn new(inner: Arc<dyn TaskStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            loads: AtomicUsize::new(0),
            batches: AtomicUsize::new(0),
            batched_ids: AtomicUsize::new(0),
            largest_batch: AtomicUsize::new(0),
            read: Notify::new(),
        })
    }

    /// (single loads, batch reads, ids read in batches).
    fn reads(&self) -> (usize, usize, usize) {
        (
            self.loads.load(Ordering::SeqCst),
            self.batches.load(Ordering::SeqCst),
            self.batched_ids.load(Ordering::SeqCst),
        )
    }

    /// Waits until the reads reach `loads` single loads and `batches` batch reads in all.
    async fn reads_reach(&self, loads: usize, batches: usize) {
        let wait = async {
            loop {
                let read = self.read.notified();
                let (done_loads, done_batches, _) = self.reads();
                if done_loads >= loads && done_batches >= batches {
                    return;
                }
                read.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the store was read");
    }
}

impl TaskStore for Counting {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        self.inner.create(record, limits)
    }

    fn load<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.read.notify_waiters();
        self.inner.load(task_id)
    }

    fn load_many<'a>(
        &'a self,
        task_ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<TaskRecord>>, StoreError>> {
        self.batched_ids.fetch_add(task_ids.len(), Ordering::SeqCst);
        self.largest_batch
            .fetch_max(task_ids.len(), Ordering::SeqCst);
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.read.notify_waiters();
        self.inner.load_many(task_ids)
    }

    fn swap<'a>(
        &'a self,
        record: &'a TaskRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.swap(record, expected)
    }

    fn active(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        self.inner.active()
    }

    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        self.inner.purge_expired(now_ms)
    }
}

/// A server whose every request is alice's, on `store`, whose tasks she may have 1 000 of,
/// polling it every `poll`.
fn server(store: Arc<Counting>, poll: Duration) -> Server {
    let tasks = Tasks::builder_shared(store)
        .poll_interval(poll)
        .sweep_interval(Duration::from_secs(3600))
        .max_tasks_per_principal(Some(1_000))
        .build();
    Server::builder("tasks-listen", "1.0.0")
        .bind_principal(|_| Some(Principal::new("alice")))
        .tasks(tasks)
        .build()
        .unwrap()
}

/// `count` tasks of alice's waiting for input, straight into the store (unfinished, so a
/// stream reads them again every poll interval; the server's start-up sweep reads each once).
async fn alice_tasks(store: &dyn TaskStore, count: usize) -> Vec<String> {
    let now = u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let mut ids = Vec::new();
    for i in 0..count {
        let id = format!("task-{i:04}");
        let mut record = TaskRecord::new(id.clone(), "tool".to_owned(), now);
        record.principal = Some("alice".to_owned());
        record.status = TaskStatus::INPUT_REQUIRED;
        record.ttl_ms = Some(3_600_000);
        assert_eq!(
            store.create(&record, TaskLimits::default()).await.unwrap(),
            Admission::Created
        );
        ids.push(id);
    }
    ids
}

fn listen(id: i64, task_ids: &[String]) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": task_ids}}),
        &with_tasks(),
    )
}

async fn first_answer(peer: &mut StdioPeer, message: &Value) -> Value {
    peer.send(message).await;
    tokio::time::timeout(Duration::from_secs(30), peer.next())
        .await
        .expect("an answer in time")
        .expect("the server is still there")
}

/// Starts a server on `store` polling every `poll`, once its start-up sweep (orphaned tasks)
/// has read each of the `tasks` unfinished tasks once: the store is then quiet until the
/// tests' requests. Returns the peer and the reads so far.
async fn quiet_server(
    store: &Arc<Counting>,
    poll: Duration,
    tasks: usize,
) -> (StdioPeer, (usize, usize, usize)) {
    let (loads, _, _) = store.reads();
    let peer = StdioPeer::start(server(Arc::clone(store), poll));
    store.reads_reach(loads + tasks, 0).await;
    (peer, store.reads())
}

/// The reads of `store` since `baseline`: (single loads, batch reads, ids read in batches).
fn reads_since(store: &Counting, baseline: (usize, usize, usize)) -> (usize, usize, usize) {
    let (loads, batches, batched) = store.reads();
    (
        loads - baseline.0,
        batches - baseline.1,
        batched - baseline.2,
    )
}

/// Receives the `count` task states a stream sends first.
async fn first_states(peer: &mut StdioPeer, count: usize) {
    for _ in 0..count {
        let message = tokio::time::timeout(Duration::from_secs(30), peer.next())
            .await
            .expect("the tasks' states in time")
            .unwrap();
        assert_eq!(message["method"], "notifications/tasks", "{message}");
    }
}

/// A `tasks/get` round trip: no notification comes with it (an unchanged task is not sent
/// again).
async fn nothing_more_sent(peer: &mut StdioPeer, id: i64) {
    let (answer, notes) = peer
        .request(&request(
            id,
            "tasks/get",
            json!({"taskId": "task-0000"}),
            &with_tasks(),
        ))
        .await;
    assert_eq!(answer["result"]["taskId"], "task-0000", "{answer}");
    assert!(
        notes.is_empty(),
        "unchanged tasks are not sent again: {notes:?}"
    );
}

#[allow(
    clippy::print_stderr,
    reason = "the acknowledgement time the docs record"
)]
/// Following the most tasks a client may have reads each once, in batches of at most 100, to
/// start the stream — the acknowledgement waits for ten reads, where it waited for a thousand
/// sequential ones, and the states sent first are those reads' — and again in ten batches at
/// every poll interval after, the first one interval later; naming more is refused before the
/// store is read at all, the probe (300 000 made-up ids) among them.
async fn taskids_are_bounded_and_read_in_batches(inner: Arc<dyn TaskStore>) {
    let store = Counting::new(inner);
    let mut ids = alice_tasks(&*store, 999).await;
    // A poll interval no test waits for: every read of this server's is the start's.
    let (mut peer, baseline) = quiet_server(&store, Duration::from_secs(3600), 999).await;
    let reads = || reads_since(&store, baseline);

    let probe: Vec<String> = (0..300_000).map(|i| format!("made-up-{i}")).collect();
    let too_many: Vec<String> = (0..1_001).map(|i| format!("made-up-{i}")).collect();
    for (id, asked, says) in [
        (1, &probe, "exceeds the limit of 131072 bytes"),
        (
            2,
            &too_many,
            "taskIds names more than 1000 distinct tasks, the most this client may have",
        ),
    ] {
        let answer = first_answer(&mut peer, &listen(id, asked)).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    assert_eq!(reads(), (0, 0, 0), "refused before the store was read");

    // The most she may follow: her 999 tasks and one made up, each named three times.
    ids.push("made-up".to_owned());
    let named: Vec<String> = ids.iter().chain(&ids).chain(&ids).cloned().collect();
    let started = Instant::now();
    let ack = first_answer(&mut peer, &listen(3, &named)).await;
    let took = started.elapsed();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!(ids[..999]),
        "each of hers once, in order; the made-up one left out"
    );
    assert_eq!(reads(), (0, 10, 1_000), "ten batch reads, each id once");
    assert_eq!(store.largest_batch.load(Ordering::SeqCst), 100);
    eprintln!("acknowledged a listen naming 1 000 tasks (3 000 ids) in {took:?}");
    // Every task's current state, once, as the acknowledgement's reads found it: not read
    // again, neither for the first states nor by a first poll at once.
    first_states(&mut peer, 999).await;
    nothing_more_sent(&mut peer, 4).await;
    assert_eq!(
        reads(),
        (1, 10, 1_000),
        "the start read each task once (the load is tasks/get's)"
    );
    drop(peer);

    // Every poll interval reads the 999 again, in ten batches, and sends nothing new.
    let (mut peer, baseline) = quiet_server(&store, Duration::from_millis(50), 999).await;
    let ack = first_answer(&mut peer, &listen(1, &ids)).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    first_states(&mut peer, 999).await;
    let (_, batches, _) = reads_since(&store, baseline);
    let (loads, ..) = store.reads();
    store.reads_reach(loads, store.reads().1 + 10).await;
    let (loads, after, _) = reads_since(&store, baseline);
    assert_eq!(loads, 0, "no task read alone");
    assert!(
        after >= batches + 10,
        "a poll: {batches} then {after} batch reads"
    );
    assert_eq!(store.largest_batch.load(Ordering::SeqCst), 100);
    nothing_more_sent(&mut peer, 2).await;
}

#[tokio::test]
async fn taskids_are_bounded_and_read_in_batches_in_memory() {
    taskids_are_bounded_and_read_in_batches(Arc::new(MemoryTaskStore::new())).await;
}

#[tokio::test]
async fn taskids_are_bounded_and_read_in_batches_on_redis() {
    let redis = Redis::start(Persistence::Off).await;
    let store = RedisTaskStore::connect(&redis.url, "{listen}")
        .await
        .unwrap();
    taskids_are_bounded_and_read_in_batches(Arc::new(store)).await;
}
