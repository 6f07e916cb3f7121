//! The store kernel: durable, versioned records on memory, SQLite and Redis, written once and
//! shared by the server's tasks and the client's durable flows.
//!
//! A record ([`Record`]) is an opaque JSON document with an id, a version that every write
//! bumps, an optional expiry, and the few fields a backend indexes ([`Schema`]). A store
//! ([`VersionedStore`]) has one set of verbs: [`insert`](VersionedStore::insert) (optionally
//! within [`Limits`] on the live records, counted in the same atomic step),
//! [`load`](VersionedStore::load), [`swap`](VersionedStore::swap) (compare-and-swap on the
//! version), [`scan`](VersionedStore::scan) by an index, [`remove`](VersionedStore::remove) and
//! [`purge_expired`](VersionedStore::purge_expired). Every state transition of a task or a flow
//! is a load followed by a swap on the version read: of two writers racing on one record, the
//! loser sees `false`, reloads and decides again. The domain rules (task transitions and caps,
//! flow claims and leases) live above the kernel, in `server::tasks` and `client::flows`.
//!
//! | backend | feature | for |
//! |---|---|---|
//! | [`MemoryStore`] | `tasks` or `flows` | tests, one process |
//! | [`SqliteStore`] | `tasks-sqlite` or `flows-sqlite` | one host, processes sharing a file |
//! | [`RedisStore`] | `tasks-redis` or `flows-redis` | instances spread over hosts |
//!
//! A third-party backend (Postgres, DynamoDB, …) implements [`VersionedStore`] and checks
//! itself with the kernel's contract, `modelctx::store::contract` (feature `test-util`), over a
//! record the kernel defines for it; the task and flow rules have contracts of their own beside
//! them (`modelctx::server::tasks::contract`, `modelctx::client::flows::contract`). The kernel
//! names neither runtime: it sits below both (DESIGN.md, "Layers").

use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(feature = "test-util")]
pub mod contract;
mod memory;
#[cfg(any(feature = "tasks-redis", feature = "flows-redis"))]
mod redis;
#[cfg(any(feature = "tasks-sqlite", feature = "flows-sqlite"))]
mod sqlite;

pub use crate::state_scope::StateScope;
pub use memory::MemoryStore;
#[cfg(any(feature = "tasks-redis", feature = "flows-redis"))]
pub use redis::RedisStore;
#[cfg(any(feature = "tasks-sqlite", feature = "flows-sqlite"))]
pub use sqlite::SqliteStore;
#[cfg(all(test, feature = "tasks-sqlite"))]
pub(crate) use sqlite::count_live;

/// Milliseconds since the Unix epoch (the clock of leases, TTLs and flow ages). Crate-private:
/// the runtimes and the contracts read it; a store is handed the time (`Limits::now_ms`,
/// `purge_expired(now_ms)`), never reads a clock of its own.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A backend failure (connection lost, disk full, a record that does not decode).
#[derive(Debug, thiserror::Error)]
#[error("store: {message}")]
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

/// The value of an indexed field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    /// Text, or SQL `NULL`.
    Text(Option<String>),
    /// An integer, or SQL `NULL`.
    Int(Option<i64>),
}

impl Field {
    /// An integer field from an unsigned count or time (saturating at `i64::MAX`).
    pub fn int(value: u64) -> Self {
        Self::Int(Some(i64::try_from(value).unwrap_or(i64::MAX)))
    }

    /// The value as the text of a Redis set name (`None` for `NULL`).
    fn tag(&self) -> Option<String> {
        match self {
            Self::Text(text) => text.clone(),
            Self::Int(int) => int.map(|n| n.to_string()),
        }
    }
}

/// A Redis set that lists the ids of the records whose `column` holds `value`: what a scan by
/// that column reads on Redis (which has no secondary indexes of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    /// The indexed column.
    pub column: &'static str,
    /// The value of the column the set lists.
    pub value: &'static str,
    /// The set's key, after `<prefix>:`.
    pub set: &'static str,
}

/// How a record type is laid out in the backends. The names are the ones the SDK has always
/// used, so databases and Redis keys written by earlier versions stay readable.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// The SQLite table.
    pub table: &'static str,
    /// Its id column (the primary key).
    pub id_column: &'static str,
    /// The `CREATE TABLE` / `CREATE INDEX` statements (idempotent).
    pub sqlite_schema: &'static str,
    /// The indexed columns besides the id, `version` and `record`, in the order of
    /// [`Record::fields`].
    pub columns: &'static [&'static str],
    /// The column (among [`Schema::columns`]) holding [`Record::expires_at_ms`], if the records
    /// expire.
    pub expires_column: Option<&'static str>,
    /// The SQL expression of [`Record::counted_in`], backed by an index on `(expression,
    /// expires column)` so that counting is an index range; `None`: no per-group counts.
    pub group_sql: Option<&'static str>,
    /// The column (among [`Schema::columns`]) scans order by, then the id; `None`: by id.
    pub order_column: Option<&'static str>,
    /// The key part of a record on Redis: `<prefix>:<key>:<id>`.
    pub redis_key: &'static str,
    /// The key part of a group's live set on Redis: `<prefix>:<group key>:<group>`.
    pub redis_group_key: &'static str,
    /// The Redis sets a scan reads.
    pub tags: &'static [Tag],
    /// Whether the store counts the live records (every record is counted from its insertion
    /// until its expiry or removal), so that [`VersionedStore::insert`] can enforce
    /// [`Limits`] exactly.
    pub counted: bool,
}

/// A record a [`VersionedStore`] keeps: a JSON document with an id, a version, an optional
/// expiry and indexed fields.
pub trait Record: Clone + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The layout in the backends.
    const SCHEMA: Schema;

    /// The id (unique in a store).
    fn id(&self) -> &str;

    /// Bumped by every write; the compare-and-swap token.
    fn version(&self) -> u64;

    /// When the record may be discarded (Unix milliseconds), if ever. Never changes after
    /// insertion.
    fn expires_at_ms(&self) -> Option<u64> {
        None
    }

    /// The group whose live records a per-group limit counts (a task's principal). Never
    /// changes after insertion.
    fn counted_in(&self) -> Option<&str> {
        None
    }

    /// The values of [`Schema::columns`], in order.
    fn fields(&self) -> Vec<Field>;
}

/// Caps on the live records (inserted, not expired, not removed), checked by
/// [`VersionedStore::insert`] in the same atomic step as the insertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// The most live records of the new record's group ([`Record::counted_in`]); a record
    /// without a group is held to [`Limits::total`] only.
    pub per_group: Option<usize>,
    /// The most live records in the store.
    pub total: Option<usize>,
    /// The time the live records are counted at (Unix milliseconds).
    pub now_ms: u64,
}

impl Limits {
    /// No caps.
    pub const NONE: Self = Self {
        per_group: None,
        total: None,
        now_ms: 0,
    };

    /// The group a store must count to insert `record`: its own, when it has one and
    /// [`Limits::per_group`] is set.
    pub fn counted_group<'r, R: Record>(&self, record: &'r R) -> Option<&'r str> {
        self.per_group.and(record.counted_in())
    }

    /// The verdict for a store holding `total` live records, `mine` of them the new record's
    /// group's (`None` when [`Limits::counted_group`] is). The group's limit is reported first.
    pub fn admit(&self, mine: Option<usize>, total: usize) -> Inserted {
        if let (Some(limit), Some(mine)) = (self.per_group, mine)
            && mine >= limit
        {
            Inserted::GroupFull
        } else if self.total.is_some_and(|limit| total >= limit) {
            Inserted::TotalFull
        } else {
            Inserted::Yes
        }
    }
}

/// What [`VersionedStore::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inserted {
    /// The record is stored.
    Yes,
    /// Not stored: a record with this id exists.
    Exists,
    /// Not stored: its group already has [`Limits::per_group`] live records.
    GroupFull,
    /// Not stored: the store already holds [`Limits::total`] live records.
    TotalFull,
}

/// Which records [`VersionedStore::scan`] returns: those whose `index` column holds one of the
/// values (every record when `None`; on Redis, every record listed by a [`Tag`]), that match
/// every `equals`, whose `below` column is strictly less than the bound; ordered by
/// [`Schema::order_column`] then id; at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Scan {
    /// The indexed column and the values selected (a [`Tag`]ged column, for Redis).
    pub index: Option<(&'static str, Vec<&'static str>)>,
    /// Columns that must hold these values.
    pub equals: Vec<(&'static str, Field)>,
    /// A column that must be strictly below this value.
    pub below: Option<(&'static str, i64)>,
    /// At most this many.
    pub limit: Option<usize>,
}

impl Scan {
    /// Every record.
    pub fn all() -> Self {
        Self::default()
    }

    /// Only the records whose `column` holds one of `values`.
    #[must_use]
    pub fn by(mut self, column: &'static str, values: Vec<&'static str>) -> Self {
        self.index = Some((column, values));
        self
    }

    /// Only the records whose `column` holds `value`.
    #[must_use]
    pub fn equals(mut self, column: &'static str, value: Field) -> Self {
        self.equals.push((column, value));
        self
    }

    /// Only the records whose `column` is below `value`.
    #[must_use]
    pub fn below(mut self, column: &'static str, value: i64) -> Self {
        self.below = Some((column, value));
        self
    }

    /// At most `limit` records.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Whether `record` passes (the backend-independent check).
    pub fn matches<R: Record>(&self, record: &R) -> bool {
        let fields = record.fields();
        let field = |column: &str| {
            R::SCHEMA
                .columns
                .iter()
                .position(|c| *c == column)
                .and_then(|i| fields.get(i))
        };
        self.index.as_ref().is_none_or(|(column, values)| {
            field(column)
                .and_then(Field::tag)
                .is_some_and(|tag| values.contains(&tag.as_str()))
        }) && self
            .equals
            .iter()
            .all(|(column, value)| field(column) == Some(value))
            && self.below.as_ref().is_none_or(
                |(column, bound)| matches!(field(column), Some(Field::Int(Some(n))) if n < bound),
            )
    }

    /// Keeps the matching records, orders them and applies the limit: for backends that
    /// filter in memory.
    pub(crate) fn apply<R: Record>(&self, mut records: Vec<R>) -> Vec<R> {
        records.retain(|r| self.matches(r));
        let order = R::SCHEMA
            .order_column
            .and_then(|column| R::SCHEMA.columns.iter().position(|c| *c == column));
        records.sort_by_cached_key(|r| {
            let key = order.and_then(|i| r.fields().into_iter().nth(i));
            (key, r.id().to_owned())
        });
        if let Some(limit) = self.limit {
            records.truncate(limit);
        }
        records
    }
}

/// Durable storage of versioned records of type `R`, with one set of verbs for every backend.
///
/// Requirements: [`insert`](Self::insert), [`swap`](Self::swap) and [`remove`](Self::remove)
/// are atomic, durable and visible to every handle on the store when their futures complete;
/// `insert` counts the live records for its [`Limits`] in the same atomic step as the insert,
/// so handles inserting at once cannot overshoot. Stores may drop records after
/// [`Record::expires_at_ms`].
///
/// The methods return boxed futures so that the trait is object-safe.
pub trait VersionedStore<R: Record>: Send + Sync + 'static {
    /// Stores a new record unless its id exists or that would exceed `limits`.
    fn insert<'a>(
        &'a self,
        record: &'a R,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Inserted, StoreError>>;

    /// The record with this id, if stored.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<R>, StoreError>>;

    /// The records with these ids, in their order (`None` where one is not stored), read in
    /// one step where the backend can: one query on SQLite, one pipelined round trip on Redis,
    /// one lock in memory. The default loads them one after the other; a backend of your own
    /// should override it when a round trip is dear. Callers keep `ids` short (the tasks'
    /// listen streams read 100 at a time).
    fn load_many<'a>(
        &'a self,
        ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<R>>, StoreError>> {
        load_one_by_one(ids, |id| self.load(id))
    }

    /// Replaces the stored record with `record` if, and only if, the stored one's version is
    /// `expected`. `Ok(false)`: someone else wrote first, or the record is gone.
    fn swap<'a>(&'a self, record: &'a R, expected: u64) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// The records that pass `scan`.
    fn scan<'a>(&'a self, scan: &'a Scan) -> BoxFuture<'a, Result<Vec<R>, StoreError>>;

    /// Removes the record, if its version is `expected` (any version when `None`). Returns
    /// whether it did.
    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes the records whose expiry is at or before `now_ms`; returns how many (stores
    /// that expire records on their own may return 0).
    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>>;

    /// Who shares the records (default: every instance that reaches the store). The memory
    /// store answers [`StateScope::Process`], SQLite [`StateScope::Host`]: a deployment that
    /// spreads requests over instances refuses them at start-up.
    fn scope(&self) -> StateScope {
        StateScope::Shared
    }
}

/// The default of the batch reads (`load_many`): each id loaded after the other.
pub(crate) fn load_one_by_one<'a, R: Send + 'a>(
    ids: &'a [&'a str],
    load: impl Fn(&'a str) -> BoxFuture<'a, Result<Option<R>, StoreError>> + Send + 'a,
) -> BoxFuture<'a, Result<Vec<Option<R>>, StoreError>> {
    Box::pin(async move {
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            records.push(load(id).await?);
        }
        Ok(records)
    })
}
