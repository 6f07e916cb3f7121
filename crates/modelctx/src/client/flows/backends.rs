//! Flows on the [store kernel](crate::store): [`FlowRecord`]'s layout there (a kernel
//! [`Record`]: the SQLite table and the Redis sets), the kernel's three backends under the flow
//! stores' names, and every [`VersionedStore`] of flow records a [`FlowStore`]. The binding is
//! the top of the stores: the trait and the record know nothing of the kernel.

use std::fmt;

use futures::future::BoxFuture;

use super::error::FlowError;
use super::record::FlowRecord;
use super::status::FlowStatus;
use super::store::{FlowFilter, FlowStore};
use crate::store::{Field, Inserted, Limits, Record, Scan, Schema, Tag, VersionedStore};

/// Flows in memory: gone with the process. For tests, and for applications whose flows need
/// not outlive it. Clones share the flows. The kernel's [`crate::store::MemoryStore`] for
/// [`FlowRecord`]s.
pub type MemoryFlowStore = crate::store::MemoryStore<FlowRecord>;

/// Flows in an SQLite database: the embedded default. One row per flow (table
/// `mcp_client_flows`) — the record as JSON, plus the columns that lists and the
/// compare-and-swap read. The kernel's [`crate::store::SqliteStore`] for [`FlowRecord`]s: of
/// two processes claiming the same answered flow exactly one changes a row.
#[cfg(feature = "flows-sqlite")]
pub type SqliteFlowStore = crate::store::SqliteStore<FlowRecord>;

/// Flows in Redis: each flow is a hash under `<prefix>:flow:<id>`, and one set per status
/// (`<prefix>:status:<status>`) lists the ids. The kernel's [`crate::store::RedisStore`] for
/// [`FlowRecord`]s: of two workers claiming the same answered flow, exactly one script sees the
/// version it read.
#[cfg(feature = "flows-redis")]
pub type RedisFlowStore = crate::store::RedisStore<FlowRecord>;

/// The SQLite layout of flows.
const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS mcp_client_flows (
        id         TEXT PRIMARY KEY,
        server     TEXT NOT NULL,
        owner      TEXT,
        status     TEXT NOT NULL,
        version    INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        record     TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mcp_client_flows_status
        ON mcp_client_flows (status, server, updated_at);
";

/// A Redis set per status lists the flows a worker looks for.
const fn status_tag(status: FlowStatus, set: &'static str) -> Tag {
    Tag {
        column: "status",
        value: status.as_str(),
        set,
    }
}

/// Flows are listed by status, server, owner and age, oldest change first; they never expire on
/// their own ([`FlowRunner::expire`](super::FlowRunner::expire) removes them) and are not
/// counted.
impl Record for FlowRecord {
    const SCHEMA: Schema = Schema {
        table: "mcp_client_flows",
        id_column: "id",
        sqlite_schema: SQLITE_SCHEMA,
        columns: &["server", "owner", "status", "updated_at"],
        expires_column: None,
        group_sql: None,
        order_column: Some("updated_at"),
        redis_key: "flow",
        redis_group_key: "owner",
        tags: &[
            status_tag(FlowStatus::AwaitingUser, "status:awaiting_user"),
            status_tag(FlowStatus::Answered, "status:answered"),
            status_tag(FlowStatus::Resuming, "status:resuming"),
            status_tag(FlowStatus::Done, "status:done"),
            status_tag(FlowStatus::Failed, "status:failed"),
        ],
        counted: false,
    };

    fn id(&self) -> &str {
        &self.id
    }

    fn version(&self) -> u64 {
        self.version
    }

    fn fields(&self) -> Vec<Field> {
        vec![
            Field::Text(Some(self.server.clone())),
            Field::Text(self.owner.clone()),
            Field::Text(Some(self.status.as_str().to_owned())),
            Field::int(self.updated_at_ms),
        ]
    }
}

impl FlowFilter {
    /// The kernel scan that selects the same flows.
    fn scan(&self) -> Scan {
        let mut scan = Scan::all();
        if !self.statuses.is_empty() {
            scan = scan.by("status", self.statuses.iter().map(|s| s.as_str()).collect());
        }
        if let Some(server) = &self.server {
            scan = scan.equals("server", Field::Text(Some(server.clone())));
        }
        if let Some(owner) = &self.owner {
            scan = scan.equals("owner", Field::Text(Some(owner.clone())));
        }
        if let Some(before) = self.updated_before_ms {
            scan = scan.below("updated_at", i64::try_from(before).unwrap_or(i64::MAX));
        }
        if let Some(limit) = self.limit {
            scan = scan.limit(limit);
        }
        scan
    }
}

/// Every kernel store of flow records is a flow store.
impl<S: VersionedStore<FlowRecord> + fmt::Debug> FlowStore for S {
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        Box::pin(async move {
            match VersionedStore::insert(self, record, Limits::NONE).await? {
                Inserted::Yes => Ok(()),
                _ => Err(FlowError::Exists(record.id.clone())),
            }
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        Box::pin(async move { Ok(VersionedStore::load(self, id).await?) })
    }

    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        Box::pin(async move { Ok(VersionedStore::swap(self, record, expected).await?) })
    }

    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>> {
        Box::pin(async move { Ok(self.scan(&filter.scan()).await?) })
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        Box::pin(async move { Ok(VersionedStore::remove(self, id, expected).await?) })
    }
}
