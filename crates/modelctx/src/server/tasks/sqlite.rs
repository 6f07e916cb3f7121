//! [`SqliteTaskStore`]: tasks in an SQLite database (SQLite is compiled in). Durable across
//! restarts; several processes on one host may share the file (WAL mode, busy timeout).

use super::store::TaskRecord;

/// A task store in an SQLite database: one row per task (table `mcp_tasks`: the record as JSON,
/// plus the columns the sweep, the purge and the limit counts query). Every write is committed
/// with `synchronous = FULL` before its future completes; a creation counts the live tasks and
/// inserts inside one `BEGIN IMMEDIATE`. The kernel's [`crate::store::SqliteStore`] for
/// [`TaskRecord`]s.
pub type SqliteTaskStore = crate::store::SqliteStore<TaskRecord>;

#[cfg(test)]
mod tests {
    use crate::store::{Record as _, count_live};

    use super::super::store::{TaskLimits, TaskStore};
    use super::{SqliteTaskStore, TaskRecord};

    /// The limit counts visit the index entries of live tasks only: each part of each count is
    /// a range search on a covering index, bounded below by the expiry (or `IS NULL`).
    #[test]
    fn the_counts_read_live_index_entries_only() {
        let schema = TaskRecord::SCHEMA;
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection.execute_batch(schema.sqlite_schema).unwrap();
        let principal: &[&dyn rusqlite::ToSql] = &[&0, &10, &"p"];
        let (table, expires) = (schema.table, schema.expires_column.unwrap());
        for (sql, index, params) in [
            (
                count_live(table, expires, None),
                "mcp_tasks_expiry",
                &principal[..2],
            ),
            (
                count_live(table, expires, schema.group_sql),
                "mcp_tasks_principal",
                principal,
            ),
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
        let record = TaskRecord::new("t-1".to_owned(), "tool".to_owned(), 5);
        {
            let store = SqliteTaskStore::open(&path).unwrap();
            TaskStore::create(&store, &record, TaskLimits::default())
                .await
                .unwrap();
        }
        let store = SqliteTaskStore::open(&path).unwrap();
        let loaded = TaskStore::load(&store, "t-1").await.unwrap();
        assert_eq!(loaded, Some(record));
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
