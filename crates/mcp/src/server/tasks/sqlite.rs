//! [`SqliteStore`]: tasks in an SQLite database (SQLite is compiled in). Durable across
//! restarts; several processes on one host may share the file (WAL mode, busy timeout).

use std::path::Path;

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension as _, Transaction, TransactionBehavior, params};

use super::store::{Admission, StoreError, TaskLimits, TaskRecord, TaskStore};
use crate::sqlite::SharedConnection;

/// A task store in an SQLite database: one row per task (the record as JSON, plus the columns
/// the sweep and the purge query). Every write is committed with `synchronous = FULL` before
/// its future completes.
#[derive(Clone)]
pub struct SqliteStore {
    connection: SharedConnection,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

const SCHEMA: &str = "
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

/// The live tasks as of `?1`, counted up to `?2` in each of its two parts (enough to compare
/// with a limit of `?2`: a capped count reaches the limit exactly when the true one does). Two
/// index ranges on `mcp_tasks_expiry` — those that expire later, those that never do — so a
/// creation reads only the index entries of live tasks, and at most twice the limit of them;
/// expired rows the sweep has not purged yet are not visited.
const COUNT_LIVE: &str = "
    SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM mcp_tasks WHERE expires_at > ?1 LIMIT ?2))
         + (SELECT COUNT(*) FROM (SELECT 1 FROM mcp_tasks WHERE expires_at IS NULL LIMIT ?2))
";

/// [`COUNT_LIVE`] for the tasks whose principal is `?3`, on the index `mcp_tasks_principal`
/// (the principal expression, then the expiry): it needs no new column in databases made before
/// the limits.
const COUNT_LIVE_OF: &str = "
    SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM mcp_tasks
                WHERE json_extract(record, '$.principal') = ?3 AND expires_at > ?1 LIMIT ?2))
         + (SELECT COUNT(*) FROM (SELECT 1 FROM mcp_tasks
                WHERE json_extract(record, '$.principal') = ?3 AND expires_at IS NULL LIMIT ?2))
";

fn backend(error: rusqlite::Error) -> StoreError {
    StoreError::backend(error)
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn signed_len(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`.
    ///
    /// # Errors
    /// The file cannot be opened or initialised.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let connection = SharedConnection::open_file(path.as_ref(), SCHEMA).map_err(backend)?;
        Ok(Self { connection })
    }

    /// A private in-memory database (gone with the store; for tests).
    ///
    /// # Errors
    /// SQLite cannot initialise it.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::with_connection(Connection::open_in_memory().map_err(backend)?)
    }

    fn with_connection(connection: Connection) -> Result<Self, StoreError> {
        let connection = SharedConnection::with_schema(connection, SCHEMA).map_err(backend)?;
        Ok(Self { connection })
    }

    /// Runs `work` on the connection off the async threads.
    fn run<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        Box::pin(
            self.connection
                .run(work, |e| StoreError::new(format!("sqlite worker: {e}"))),
        )
    }
}

fn columns(record: &TaskRecord) -> Result<(String, i64, i64, Option<i64>), StoreError> {
    Ok((
        serde_json::to_string(record)?,
        signed(record.version),
        i64::from(record.is_terminal()),
        record.expires_at_ms().map(signed),
    ))
}

impl TaskStore for SqliteStore {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        let id = record.task_id.clone();
        let principal = limits.counted_principal(record).map(str::to_owned);
        let now = signed(record.created_at_ms);
        let row = columns(record);
        self.run(move |c| {
            let (json, version, terminal, expires) = row?;
            // IMMEDIATE takes the write lock before counting: the writers of every process
            // sharing the file count and insert one after the other.
            let tx =
                Transaction::new_unchecked(c, TransactionBehavior::Immediate).map_err(backend)?;
            let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| {
                tx.query_row(sql, params, |row| row.get::<_, i64>(0))
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                    .map_err(backend)
            };
            // Only what a limit needs is counted, and only up to it.
            let mine = match (principal, limits.per_principal) {
                (Some(principal), Some(limit)) => Some(count(
                    COUNT_LIVE_OF,
                    params![now, signed_len(limit), principal],
                )?),
                _ => None,
            };
            let total = match limits.total {
                Some(limit) => count(COUNT_LIVE, params![now, signed_len(limit)])?,
                None => 0,
            };
            let admission = limits.admit(mine, total);
            if admission == Admission::Created {
                tx.execute(
                    "INSERT INTO mcp_tasks (task_id, version, terminal, expires_at, record)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, version, terminal, expires, json],
                )
                .map_err(backend)?;
                tx.commit().map_err(backend)?;
            }
            Ok(admission)
        })
    }

    fn load<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let id = task_id.to_owned();
        self.run(move |c| {
            let json: Option<String> = c
                .query_row(
                    "SELECT record FROM mcp_tasks WHERE task_id = ?1",
                    params![id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(backend)?;
            json.map(|j| serde_json::from_str(&j).map_err(StoreError::from))
                .transpose()
        })
    }

    fn swap<'a>(
        &'a self,
        record: &'a TaskRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let id = record.task_id.clone();
        let row = columns(record);
        self.run(move |c| {
            let (json, version, terminal, expires) = row?;
            let changed = c
                .execute(
                    "UPDATE mcp_tasks SET version = ?1, terminal = ?2, expires_at = ?3, record = ?4
                     WHERE task_id = ?5 AND version = ?6",
                    params![version, terminal, expires, json, id, signed(expected)],
                )
                .map_err(backend)?;
            Ok(changed == 1)
        })
    }

    fn active(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        self.run(|c| {
            let mut statement = c
                .prepare("SELECT task_id FROM mcp_tasks WHERE terminal = 0")
                .map_err(backend)?;
            let ids = statement
                .query_map([], |row| row.get(0))
                .map_err(backend)?
                .collect::<Result<Vec<String>, _>>()
                .map_err(backend)?;
            Ok(ids)
        })
    }

    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        self.run(move |c| {
            c.execute(
                "DELETE FROM mcp_tasks WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                params![signed(now_ms)],
            )
            .map_err(backend)
        })
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn sqlite_store_keeps_the_contract() {
        let store = super::SqliteStore::in_memory().unwrap();
        super::super::store::contract::check(&store, "sqlite").await;
    }

    /// The limit counts visit the index entries of live tasks only: each part of each count is
    /// a range search on a covering index, bounded below by the expiry (or `IS NULL`).
    #[test]
    fn the_counts_read_live_index_entries_only() {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection.execute_batch(super::SCHEMA).unwrap();
        let principal: &[&dyn rusqlite::ToSql] = &[&0, &10, &"p"];
        for (sql, index, params) in [
            (super::COUNT_LIVE, "mcp_tasks_expiry", &principal[..2]),
            (super::COUNT_LIVE_OF, "mcp_tasks_principal", principal),
        ] {
            let mut plan = connection
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            let steps: Vec<String> = plan
                .query_map(params, |row| row.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let searches: Vec<&String> =
                steps.iter().filter(|s| s.contains("mcp_tasks ")).collect();
            assert_eq!(searches.len(), 2, "{steps:?}");
            for search in searches {
                assert!(
                    search.starts_with(&format!("SEARCH mcp_tasks USING COVERING INDEX {index} ("))
                        && (search.contains("expires_at>?)") || search.contains("expires_at=?)")),
                    "{search} in {steps:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn records_survive_reopening_the_file() {
        let dir = std::env::temp_dir().join(format!(
            "mcp-tasks-sqlite-{}",
            crate::ids::random_hex().unwrap()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tasks.db");
        let record = super::TaskRecord::new("t-1".to_owned(), "tool".to_owned(), 5);
        {
            let store = super::SqliteStore::open(&path).unwrap();
            super::TaskStore::create(&store, &record, super::TaskLimits::default())
                .await
                .unwrap();
        }
        let store = super::SqliteStore::open(&path).unwrap();
        let loaded = super::TaskStore::load(&store, "t-1").await.unwrap();
        assert_eq!(loaded, Some(record));
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
