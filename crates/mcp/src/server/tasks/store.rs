//! Where tasks live: the [`TaskStore`] trait, the record it stores, and an in-memory store.
//!
//! A store is deliberately small — create (within limits), load, compare-and-swap, list the
//! unfinished, purge the expired — so that a new backend (Postgres, DynamoDB, …) is an
//! afternoon's work. Every
//! state transition of a task is a read-modify-write by the runtime, made safe by the version
//! check of [`TaskStore::swap`]: two instances that race on one task (a `tasks/cancel` here, the
//! worker's completion there) never overwrite each other; the loser reloads and retries.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::Mutex;

use futures::future::BoxFuture;
use mcp_types::tasks::TaskStatus;
use mcp_types::{ClientCapabilities, ErrorObject, Extra, InputRequests, InputResponses};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sync::lock;

/// A backend failure (connection lost, disk full, a record that does not decode).
#[derive(Debug, thiserror::Error)]
#[error("task store: {message}")]
pub struct StoreError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StoreError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// Wraps a backend error.
    pub fn backend(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            message: error.to_string(),
            source: Some(Box::new(error)),
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(error: serde_json::Error) -> Self {
        Self::backend(error)
    }
}

/// Who runs a `working` task right now: an instance id and the time (Unix milliseconds) its
/// claim lapses unless renewed. An expired lease means the worker died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The instance that runs the task.
    pub owner: String,
    /// When the claim lapses (Unix milliseconds).
    pub until_ms: u64,
}

/// Everything the SDK persists about one task: enough to answer `tasks/get` from any instance
/// and to re-run the tool from its last checkpoint after a restart.
///
/// Stores treat it as an opaque JSON document plus the few fields they index
/// ([`TaskRecord::task_id`], [`TaskRecord::version`], [`TaskRecord::is_terminal`],
/// [`TaskRecord::expires_at_ms`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id.
    pub task_id: String,
    /// Bumped by every write; the compare-and-swap token.
    pub version: u64,
    /// The tool the task runs.
    pub tool: String,
    /// The tool's arguments.
    pub arguments: Extra,
    /// The capabilities the client declared on the `tools/call` that created the task (what
    /// the task may ask it).
    pub client_capabilities: ClientCapabilities,
    /// The authenticated principal that created the task; only it may see or steer the task.
    pub principal: Option<String>,
    /// The status.
    pub status: TaskStatus,
    /// The status message.
    pub status_message: Option<String>,
    /// Creation time (Unix milliseconds).
    pub created_at_ms: u64,
    /// Time of the last change (Unix milliseconds).
    pub updated_at_ms: u64,
    /// Lifetime from creation in milliseconds (`None`: unlimited).
    pub ttl_ms: Option<u64>,
    /// The suggested polling interval in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// The tool's last checkpoint.
    pub state: Option<Value>,
    /// Outstanding input requests (status `input_required`).
    pub pending: InputRequests,
    /// Every answer received over the task's life, by key.
    pub answers: InputResponses,
    /// Every input-request key ever issued (keys are unique over the task's life).
    pub issued_keys: BTreeSet<String>,
    /// The final result (status `completed`).
    pub result: Option<Extra>,
    /// The JSON-RPC error (status `failed`).
    pub error: Option<ErrorObject>,
    /// A client asked to cancel; the worker stops at its next look at the store.
    pub cancel_requested: bool,
    /// The worker's claim, while `working`.
    pub lease: Option<Lease>,
}

impl TaskRecord {
    /// A fresh record (version 1, status `working`, created `now_ms`), e.g. to test a store.
    pub fn new(task_id: String, tool: String, now_ms: u64) -> Self {
        Self {
            task_id,
            version: 1,
            tool,
            arguments: Extra::new(),
            client_capabilities: ClientCapabilities::new(),
            principal: None,
            status: TaskStatus::WORKING,
            status_message: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            ttl_ms: None,
            poll_interval_ms: None,
            state: None,
            pending: InputRequests::new(),
            answers: InputResponses::new(),
            issued_keys: BTreeSet::new(),
            result: None,
            error: None,
            cancel_requested: false,
            lease: None,
        }
    }

    /// Whether the task reached `completed`, `failed` or `cancelled`.
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// When the task may be discarded (Unix milliseconds), if ever.
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms
            .map(|ttl| self.created_at_ms.saturating_add(ttl))
    }

    /// Whether the TTL elapsed before `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|at| at <= now_ms)
    }
}

/// Caps on the live tasks of a store, checked by [`TaskStore::create`]. A task is live from its
/// creation until its TTL elapses ([`TaskRecord::is_expired`]), finished or not: a finished
/// task's result is kept, and that is what the caps bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskLimits {
    /// The most live tasks of one principal. Tasks without a principal are not counted here —
    /// there is no identity to be fair to, and one shared count would let one anonymous client
    /// lock out every other for a TTL — only against [`TaskLimits::total`].
    pub per_principal: Option<usize>,
    /// The most live tasks in the whole store.
    pub total: Option<usize>,
}

/// What [`TaskStore::create`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admission {
    /// The record is stored.
    Created,
    /// Not stored: its principal already has [`TaskLimits::per_principal`] live tasks.
    PrincipalLimit,
    /// Not stored: the store already holds [`TaskLimits::total`] live tasks.
    TotalLimit,
}

impl TaskLimits {
    /// The principal whose live tasks a store must count to create `record`: its own, when it
    /// has one and [`TaskLimits::per_principal`] is set.
    pub fn counted_principal<'r>(&self, record: &'r TaskRecord) -> Option<&'r str> {
        self.per_principal.and(record.principal.as_deref())
    }

    /// The verdict for a store holding `total` live tasks, `mine` of them the new task's
    /// principal's (`None` when [`TaskLimits::counted_principal`] is: only the total applies).
    /// The principal's limit is reported first.
    pub fn admit(&self, mine: Option<usize>, total: usize) -> Admission {
        if let (Some(limit), Some(mine)) = (self.per_principal, mine)
            && mine >= limit
        {
            Admission::PrincipalLimit
        } else if self.total.is_some_and(|limit| total >= limit) {
            Admission::TotalLimit
        } else {
            Admission::Created
        }
    }
}

/// Durable storage of [`TaskRecord`]s.
///
/// Requirements: [`TaskStore::create`] and [`TaskStore::swap`] are durable and visible to every
/// instance sharing the store when their futures complete (the spec forbids returning a task
/// before `tasks/get` would find it); [`TaskStore::swap`] is atomic, and so is
/// [`TaskStore::create`]'s count-and-insert. Stores may drop records after
/// [`TaskRecord::expires_at_ms`].
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new record unless that would exceed `limits` ([`TaskLimits::admit`]), counting
    /// the live tasks as of `record.created_at_ms` — all of them, and those of
    /// [`TaskLimits::counted_principal`] — in the same atomic step as the insert, so that
    /// instances creating tasks at once cannot overshoot. A record without a principal is held
    /// to the total only. Fails if the id exists.
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<Admission, StoreError>>;

    /// The record of `task_id`, if stored.
    fn load<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Replaces the stored record by `record` if the stored version is still `expected`
    /// (`record.version` is the next one). `Ok(false)`: someone else wrote first, or the record
    /// is gone. The principal and TTL are the ones the record was created with (the runtime
    /// never changes them), so a store may keep its limit counts by them.
    fn swap<'a>(
        &'a self,
        record: &'a TaskRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// The ids of the tasks that are not terminal (the orphan sweep reads them).
    fn active(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;

    /// Deletes the tasks whose TTL elapsed before `now_ms`; returns how many.
    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>>;
}

/// A store in this process's memory: fast, shared by the clones of one server, and gone with
/// the process. For tests and for servers that accept losing tasks on restart.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Memory>,
}

#[derive(Debug, Default)]
struct Memory {
    records: HashMap<String, TaskRecord>,
    live: LiveCounts,
}

/// The live tasks, counted as they are created and retired as their TTLs elapse, so that a
/// creation checks the limits in `O(log n)` instead of walking every record.
///
/// Counts are retired up to the latest time a creation or a purge names; a creation that names
/// an earlier time (the wall clock stepped back) counts as live the tasks that were live at the
/// latest one, which errs towards refusing. A record's principal and TTL never change after
/// creation (the runtime sets them once), so swaps leave the counts alone.
#[derive(Debug, Default)]
struct LiveCounts {
    total: usize,
    per_principal: HashMap<String, usize>,
    /// When each counted task with a TTL stops counting, soonest first, and its principal.
    expiries: BinaryHeap<Reverse<(u64, Option<String>)>>,
}

impl LiveCounts {
    fn add(&mut self, record: &TaskRecord) {
        self.total += 1;
        if let Some(principal) = &record.principal {
            *self.per_principal.entry(principal.clone()).or_default() += 1;
        }
        if let Some(at) = record.expires_at_ms() {
            self.expiries.push(Reverse((at, record.principal.clone())));
        }
    }

    /// Stops counting the tasks whose TTL elapsed by `now_ms`.
    fn retire(&mut self, now_ms: u64) {
        while self
            .expiries
            .peek()
            .is_some_and(|Reverse((at, _))| *at <= now_ms)
        {
            let Some(Reverse((_, principal))) = self.expiries.pop() else {
                break;
            };
            self.total -= 1;
            if let Some(principal) = principal
                && let Some(count) = self.per_principal.get_mut(&principal)
            {
                *count -= 1;
                if *count == 0 {
                    self.per_principal.remove(&principal);
                }
            }
        }
    }

    fn of(&self, principal: &str) -> usize {
        self.per_principal.get(principal).copied().unwrap_or(0)
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        lock(&self.inner)
    }
}

impl TaskStore for MemoryStore {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        let mut memory = self.memory();
        let Memory { records, live } = &mut *memory;
        let result = if records.contains_key(&record.task_id) {
            Err(StoreError::new(format!("task {} exists", record.task_id)))
        } else {
            live.retire(record.created_at_ms);
            let mine = limits.counted_principal(record).map(|p| live.of(p));
            let admission = limits.admit(mine, live.total);
            if admission == Admission::Created {
                live.add(record);
                records.insert(record.task_id.clone(), record.clone());
            }
            Ok(admission)
        };
        Box::pin(std::future::ready(result))
    }

    fn load<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let record = self.memory().records.get(task_id).cloned();
        Box::pin(std::future::ready(Ok(record)))
    }

    fn swap<'a>(
        &'a self,
        record: &'a TaskRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut memory = self.memory();
        let swapped = match memory.records.get_mut(&record.task_id) {
            Some(stored) if stored.version == expected => {
                *stored = record.clone();
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(swapped)))
    }

    fn active(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let ids = self
            .memory()
            .records
            .values()
            .filter(|r| !r.is_terminal())
            .map(|r| r.task_id.clone())
            .collect();
        Box::pin(std::future::ready(Ok(ids)))
    }

    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        let mut memory = self.memory();
        memory.live.retire(now_ms);
        let records = &mut memory.records;
        let before = records.len();
        records.retain(|_, r| !r.is_expired(now_ms));
        let purged = before - records.len();
        Box::pin(std::future::ready(Ok(purged)))
    }
}

#[cfg(test)]
pub(crate) mod contract {
    //! The behaviour every store must have; run against each implementation.

    use super::{TaskRecord, TaskStore};

    pub(crate) async fn check(store: &dyn TaskStore, prefix: &str) {
        let id = format!("{prefix}-contract-{}", crate::ids::random_hex().unwrap());
        let now = super::super::rules::now_ms();
        let mut record = TaskRecord::new(id.clone(), "tool".to_owned(), now);
        record.ttl_ms = Some(60_000);
        let unlimited = super::TaskLimits::default();
        assert_eq!(
            store.create(&record, unlimited).await.unwrap(),
            super::Admission::Created
        );
        assert!(
            store.create(&record, unlimited).await.is_err(),
            "create is exclusive"
        );
        assert_eq!(store.load(&id).await.unwrap().as_ref(), Some(&record));
        assert_eq!(store.load("nope").await.unwrap(), None);
        assert!(store.active().await.unwrap().contains(&id));

        let mut next = record.clone();
        next.version = 2;
        next.status = mcp_types::tasks::TaskStatus::COMPLETED;
        assert!(
            !store.swap(&next, 7).await.unwrap(),
            "stale version refused"
        );
        assert!(store.swap(&next, 1).await.unwrap());
        assert!(
            !store.swap(&next, 1).await.unwrap(),
            "a second swap on v1 loses"
        );
        assert_eq!(store.load(&id).await.unwrap().unwrap().version, 2);
        assert!(
            !store.active().await.unwrap().contains(&id),
            "terminal is not active"
        );

        store.purge_expired(now + 30_000).await.unwrap();
        assert!(
            store.load(&id).await.unwrap().is_some(),
            "not purged before its TTL"
        );
        // Stores may rely on their own expiry instead; either way the record is gone or expired.
        store.purge_expired(now + 61_000).await.unwrap();
        if let Some(left) = store.load(&id).await.unwrap() {
            assert!(left.is_expired(now + 61_000));
        }
    }

    #[tokio::test]
    async fn memory_store_keeps_the_contract() {
        check(&super::MemoryStore::new(), "memory").await;
    }

    /// The memory store's counts follow creation, expiry and purges without walking records.
    #[tokio::test]
    async fn memory_counts_follow_expiry_and_purges() {
        use super::{Admission, TaskLimits};
        let store = super::MemoryStore::new();
        let limits = TaskLimits {
            per_principal: Some(2),
            total: Some(3),
        };
        let create = |id: &str, principal: Option<&str>, at: u64| {
            let mut record = TaskRecord::new(id.to_owned(), "tool".to_owned(), at);
            record.principal = principal.map(str::to_owned);
            record.ttl_ms = Some(10);
            let store = &store;
            async move { store.create(&record, limits).await.unwrap() }
        };
        assert_eq!(create("a0", Some("a"), 0).await, Admission::Created);
        assert_eq!(create("a1", Some("a"), 1).await, Admission::Created);
        assert_eq!(create("a2", Some("a"), 2).await, Admission::PrincipalLimit);
        assert_eq!(create("n2", None, 2).await, Admission::Created);
        assert_eq!(create("b5", Some("b"), 5).await, Admission::TotalLimit);
        // At 10 the first task's TTL has elapsed (it is still stored): one slot for anyone.
        assert_eq!(create("a10", Some("a"), 10).await, Admission::Created);
        assert_eq!(create("b10", Some("b"), 10).await, Admission::TotalLimit);
        assert_eq!(store.purge_expired(12).await.unwrap(), 3);
        assert_eq!(create("b12", Some("b"), 12).await, Admission::Created);
        let memory = store.memory();
        assert_eq!(memory.live.total, memory.records.len());
        assert_eq!((memory.live.of("a"), memory.live.of("b")), (1, 1));
        assert_eq!(memory.live.expiries.len(), 2);
    }
}
