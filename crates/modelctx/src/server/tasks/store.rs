//! Where tasks live: the [`TaskStore`] trait, the record it stores, and the in-memory store.
//!
//! A task store is small — create (within limits), load, compare-and-swap, list the
//! unfinished, purge the expired — and every store of the [store kernel](crate::store) is one:
//! [`TaskRecord`] is a kernel [`Record`], and [`TaskStore`] is implemented for every
//! [`VersionedStore<TaskRecord>`]. Every state transition of a task is a read-modify-write by
//! the runtime, made safe by the version check of [`TaskStore::swap`]: two instances that race
//! on one task (a `tasks/cancel` here, the worker's completion there) never overwrite each
//! other; the loser reloads and retries.

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use modelctx_types::tasks::TaskStatus;
use modelctx_types::{ClientCapabilities, ErrorObject, Extra, InputRequests, InputResponses};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::{
    Field, Inserted, Limits, Record, Scan, Schema, StateScope, StoreError, Tag, VersionedStore,
};

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

    /// The records of `task_ids`, in their order (`None` where one is not stored): what a
    /// listen stream following many tasks reads, 100 at a time, when it starts and at every
    /// poll interval. The default loads them one after the other; every
    /// [`VersionedStore`] reads them in one step ([`VersionedStore::load_many`]).
    fn load_many<'a>(
        &'a self,
        task_ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<TaskRecord>>, StoreError>> {
        crate::store::load_one_by_one(task_ids, |id| self.load(id))
    }

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

    /// Who shares the tasks (default: every instance that reaches the store): a task outlives
    /// the request that started it, and its `tasks/get` may land on another instance, so a
    /// deployment over many instances (`server::lambda`) refuses a store of one process.
    fn scope(&self) -> StateScope {
        StateScope::Shared
    }
}

/// Tasks in this process's memory: fast, shared by the clones of one server, and gone with
/// the process. For tests and for servers that accept losing tasks on restart. The kernel's
/// [`crate::store::MemoryStore`] for [`TaskRecord`]s: it counts the live tasks as they are
/// created and retires them as their TTLs elapse, so a creation checks the limits in
/// `O(log n)`.
pub type MemoryTaskStore = crate::store::MemoryStore<TaskRecord>;

/// The SQLite layout of tasks: one row per task (the record as JSON, plus the columns the sweep,
/// the purge and the limit counts query). The principal is counted through an index on its JSON
/// expression, so databases made before the limits need no new column.
const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS mcp_tasks (
        task_id    TEXT PRIMARY KEY,
        version    INTEGER NOT NULL,
        terminal   INTEGER NOT NULL,
        expires_at INTEGER,
        record     TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mcp_tasks_active ON mcp_tasks (terminal);
    CREATE INDEX IF NOT EXISTS mcp_tasks_expiry ON mcp_tasks (expires_at);
    CREATE INDEX IF NOT EXISTS mcp_tasks_principal
        ON mcp_tasks (json_extract(record, '$.principal'), expires_at);
";

/// Tasks are counted (for [`TaskLimits`]) by principal; a scan for the orphan sweep reads the
/// unfinished ones (`terminal = 0`, the Redis set `<prefix>:active`).
impl Record for TaskRecord {
    const SCHEMA: Schema = Schema {
        table: "mcp_tasks",
        id_column: "task_id",
        sqlite_schema: SQLITE_SCHEMA,
        columns: &["terminal", "expires_at"],
        expires_column: Some("expires_at"),
        group_sql: Some("json_extract(record, '$.principal')"),
        order_column: None,
        redis_key: "task",
        redis_group_key: "owner:p",
        tags: &[Tag {
            column: "terminal",
            value: "0",
            set: "active",
        }],
        counted: true,
    };

    fn id(&self) -> &str {
        &self.task_id
    }

    fn version(&self) -> u64 {
        self.version
    }

    fn expires_at_ms(&self) -> Option<u64> {
        TaskRecord::expires_at_ms(self)
    }

    fn counted_in(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    fn fields(&self) -> Vec<Field> {
        vec![
            Field::Int(Some(i64::from(self.is_terminal()))),
            Field::Int(
                TaskRecord::expires_at_ms(self).map(|at| i64::try_from(at).unwrap_or(i64::MAX)),
            ),
        ]
    }
}

/// Every kernel store of task records is a task store: creation is an insertion counted against
/// the limits as of the task's creation, the active tasks a scan of the unfinished ones.
impl<S: VersionedStore<TaskRecord>> TaskStore for S {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        let limits = Limits {
            per_group: limits.per_principal,
            total: limits.total,
            now_ms: record.created_at_ms,
        };
        Box::pin(async move {
            match self.insert(record, limits).await? {
                Inserted::Yes => Ok(Admission::Created),
                Inserted::GroupFull => Ok(Admission::PrincipalLimit),
                Inserted::TotalFull => Ok(Admission::TotalLimit),
                _ => Err(StoreError::new(format!("task {} exists", record.task_id))),
            }
        })
    }

    fn load<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        VersionedStore::load(self, task_id)
    }

    fn load_many<'a>(
        &'a self,
        task_ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<TaskRecord>>, StoreError>> {
        VersionedStore::load_many(self, task_ids)
    }

    fn swap<'a>(
        &'a self,
        record: &'a TaskRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        VersionedStore::swap(self, record, expected)
    }

    fn active(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let unfinished = Scan::all().by("terminal", vec!["0"]);
            let records = self.scan(&unfinished).await?;
            Ok(records.into_iter().map(|r| r.task_id).collect())
        })
    }

    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        VersionedStore::purge_expired(self, now_ms)
    }

    fn scope(&self) -> StateScope {
        VersionedStore::scope(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{Admission, TaskLimits, TaskRecord, TaskStore};

    /// The memory store's counts follow creation, expiry and purges without walking records.
    #[tokio::test]
    async fn memory_counts_follow_expiry_and_purges() {
        let store = super::MemoryTaskStore::new();
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
        store.inspect(|live, records| {
            assert_eq!(live.total, records);
            assert_eq!((live.of("a"), live.of("b")), (1, 1));
            assert_eq!(live.expiries.len(), 2);
        });
    }
}
