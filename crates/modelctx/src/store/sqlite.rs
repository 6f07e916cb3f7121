//! [`SqliteStore`]: records in an SQLite database (SQLite is compiled in).

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use rusqlite::types::Value as SqlValue;
use rusqlite::{
    Connection, OptionalExtension as _, Transaction, TransactionBehavior, params, params_from_iter,
};

use super::{Field, Inserted, Limits, Record, Scan, StoreError, VersionedStore};
use crate::sqlite::SharedConnection;

/// Records in an SQLite database: one row per record — the record as JSON, its version, and the
/// columns its [`Schema`](super::Schema) indexes. Several processes on one host may share the
/// file (WAL mode, a 5-second busy timeout); every write is committed (`synchronous = FULL`)
/// before its future completes.
///
/// A compare-and-swap is `UPDATE … WHERE id = ? AND version = ?`: SQLite serializes writers,
/// so of two processes swapping the same version exactly one changes a row. A counted insertion
/// ([`Limits`]) counts and inserts inside one `BEGIN IMMEDIATE` transaction, which takes the
/// write lock first; the counts are index ranges over the live records only.
#[derive(Clone)]
pub struct SqliteStore<R> {
    connection: SharedConnection,
    sql: Arc<Statements>,
    record: PhantomData<fn() -> R>,
}

impl<R: Record> std::fmt::Debug for SqliteStore<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("table", &R::SCHEMA.table)
            .finish_non_exhaustive()
    }
}

/// The statements of one schema, written once per store.
struct Statements {
    insert: String,
    load: String,
    swap: String,
    remove: String,
    remove_version: String,
    purge: Option<String>,
    count_live: Option<String>,
    count_live_of: Option<String>,
}

/// The live records as of `?1`, counted up to `?2` in each of its two parts (enough to compare
/// with a limit of `?2`: a capped count reaches the limit exactly when the true one does). Two
/// index ranges on the expiry — those that expire later, those that never do — so an insertion
/// reads only the index entries of live records, and at most twice the limit of them; expired
/// rows not purged yet are not visited. `group` (the group expression `= ?3`) restricts both to
/// one group, on the index `(group expression, expiry)`.
pub(crate) fn count_live(table: &str, expires: &str, group: Option<&str>) -> String {
    let of = group.map(|g| format!("{g} = ?3 AND ")).unwrap_or_default();
    format!(
        "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {of}{expires} > ?1 LIMIT ?2))
              + (SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {of}{expires} IS NULL LIMIT ?2))"
    )
}

impl Statements {
    fn of<R: Record>() -> Self {
        let s = R::SCHEMA;
        let (table, id) = (s.table, s.id_column);
        let columns: Vec<&str> = std::iter::once(id)
            .chain(["version"])
            .chain(s.columns.iter().copied())
            .chain(["record"])
            .collect();
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let set: Vec<String> = columns
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, column)| format!("{column} = ?{}", i + 1))
            .collect();
        let expected = columns.len() + 1;
        Self {
            insert: format!(
                "INSERT INTO {table} ({}) VALUES ({})",
                columns.join(", "),
                marks.join(", ")
            ),
            load: format!("SELECT record FROM {table} WHERE {id} = ?1"),
            swap: format!(
                "UPDATE {table} SET {} WHERE {id} = ?1 AND version = ?{expected}",
                set.join(", ")
            ),
            remove: format!("DELETE FROM {table} WHERE {id} = ?1"),
            remove_version: format!("DELETE FROM {table} WHERE {id} = ?1 AND version = ?2"),
            purge: s.expires_column.map(|expires| {
                format!("DELETE FROM {table} WHERE {expires} IS NOT NULL AND {expires} <= ?1")
            }),
            count_live: s
                .expires_column
                .filter(|_| s.counted)
                .map(|expires| count_live(table, expires, None)),
            count_live_of: s
                .expires_column
                .filter(|_| s.counted)
                .zip(s.group_sql)
                .map(|(expires, group)| count_live(table, expires, Some(group))),
        }
    }
}

fn backend(error: rusqlite::Error) -> StoreError {
    StoreError::backend(error)
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn signed_len(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn sql_value(field: Field) -> SqlValue {
    match field {
        Field::Text(Some(text)) => SqlValue::Text(text),
        Field::Int(Some(int)) => SqlValue::Integer(int),
        Field::Text(None) | Field::Int(None) => SqlValue::Null,
    }
}

/// The row of a record: id, version, the indexed columns, the JSON.
fn row<R: Record>(record: &R) -> Result<Vec<SqlValue>, StoreError> {
    let mut row = vec![
        SqlValue::Text(record.id().to_owned()),
        SqlValue::Integer(signed(record.version())),
    ];
    row.extend(record.fields().into_iter().map(sql_value));
    row.push(SqlValue::Text(serde_json::to_string(record)?));
    Ok(row)
}

fn decode<R: Record>(json: &str) -> Result<R, StoreError> {
    Ok(serde_json::from_str(json)?)
}

impl<R: Record> SqliteStore<R> {
    /// Opens (or creates) the database at `path`. On Unix a new file is created with mode 0600
    /// (readable and writable by its owner only; SQLite's `-wal` and `-shm` files take the same
    /// mode); an existing file keeps its mode, with a WARN line if other users may read or write
    /// it.
    ///
    /// # Errors
    /// The file cannot be opened or initialised.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let connection =
            SharedConnection::open_file(path.as_ref(), R::SCHEMA.sqlite_schema).map_err(backend)?;
        Ok(Self::on(connection))
    }

    /// A private in-memory database (gone with the store; for tests).
    ///
    /// # Errors
    /// SQLite cannot initialise it.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::with_connection(Connection::open_in_memory().map_err(backend)?)
    }

    /// A store on a connection the caller opened and configured (the table is created if
    /// needed).
    ///
    /// # Errors
    /// The table cannot be created.
    pub fn with_connection(connection: Connection) -> Result<Self, StoreError> {
        let connection =
            SharedConnection::with_schema(connection, R::SCHEMA.sqlite_schema).map_err(backend)?;
        Ok(Self::on(connection))
    }

    fn on(connection: SharedConnection) -> Self {
        Self {
            connection,
            sql: Arc::new(Statements::of::<R>()),
            record: PhantomData,
        }
    }

    /// Runs `work` on the connection off the async threads.
    fn run<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&Connection, &Statements) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        let sql = Arc::clone(&self.sql);
        Box::pin(self.connection.run(
            move |c| work(c, &sql),
            |e| StoreError::new(format!("sqlite worker: {e}")),
        ))
    }
}

/// Inserts `row`; `Exists` when the primary key is taken.
fn insert_row(c: &Connection, sql: &str, row: Vec<SqlValue>) -> Result<Inserted, StoreError> {
    match c.execute(sql, params_from_iter(row)) {
        Ok(_) => Ok(Inserted::Yes),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
        {
            Ok(Inserted::Exists)
        }
        Err(e) => Err(backend(e)),
    }
}

impl<R: Record> VersionedStore<R> for SqliteStore<R> {
    fn scope(&self) -> crate::state_scope::StateScope {
        crate::state_scope::StateScope::Host
    }

    fn insert<'a>(
        &'a self,
        record: &'a R,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Inserted, StoreError>> {
        let row = row(record);
        let group = limits.counted_group(record).map(str::to_owned);
        self.run(move |c, sql| {
            let row = row?;
            let (count_live, count_live_of) = match (&sql.count_live, &sql.count_live_of) {
                (Some(all), of) if limits.per_group.is_some() || limits.total.is_some() => {
                    (all, of.as_ref())
                }
                _ => return insert_row(c, &sql.insert, row),
            };
            // IMMEDIATE takes the write lock before counting: the writers of every process
            // sharing the file count and insert one after the other.
            let tx =
                Transaction::new_unchecked(c, TransactionBehavior::Immediate).map_err(backend)?;
            let now = signed(limits.now_ms);
            let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| {
                tx.query_row(sql, params, |row| row.get::<_, i64>(0))
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                    .map_err(backend)
            };
            // Only what a limit needs is counted, and only up to it.
            let mine = match (group, limits.per_group, count_live_of) {
                (Some(group), Some(limit), Some(of)) => {
                    Some(count(of, params![now, signed_len(limit), group])?)
                }
                _ => None,
            };
            let total = match limits.total {
                Some(limit) => count(count_live, params![now, signed_len(limit)])?,
                None => 0,
            };
            let admission = limits.admit(mine, total);
            if admission != Inserted::Yes {
                return Ok(admission);
            }
            let inserted = insert_row(&tx, &sql.insert, row)?;
            tx.commit().map_err(backend)?;
            Ok(inserted)
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<R>, StoreError>> {
        let id = id.to_owned();
        self.run(move |c, sql| {
            let json: Option<String> = c
                .query_row(&sql.load, params![id], |row| row.get(0))
                .optional()
                .map_err(backend)?;
            json.as_deref().map(decode).transpose()
        })
    }

    fn load_many<'a>(
        &'a self,
        ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<R>>, StoreError>> {
        let ids: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
        self.run(move |c, _| {
            let schema = R::SCHEMA;
            let mut found: std::collections::HashMap<String, String> =
                std::collections::HashMap::new();
            // The SDK reads at most 100 ids at a time (`LOAD_BATCH` of the task watch), but
            // `load_many` is public (a `VersionedStore`, and `TaskStore` through it) and takes
            // any number: the chunks keep a third party's longer list within SQLite's oldest
            // limit on bound parameters (999).
            for chunk in ids.chunks(500) {
                let marks = vec!["?"; chunk.len()].join(", ");
                let query = format!(
                    "SELECT {id}, record FROM {table} WHERE {id} IN ({marks})",
                    id = schema.id_column,
                    table = schema.table
                );
                // Cached: a stream reads the same full batches every poll interval, so the
                // statement is compiled once per batch size, not once per read.
                let mut statement = c.prepare_cached(&query).map_err(backend)?;
                let rows = statement
                    .query_map(params_from_iter(chunk), |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                    })
                    .map_err(backend)?;
                for row in rows {
                    let (id, json) = row.map_err(backend)?;
                    found.insert(id, json);
                }
            }
            ids.iter()
                .map(|id| found.get(id).map(|json| decode(json)).transpose())
                .collect()
        })
    }

    fn swap<'a>(&'a self, record: &'a R, expected: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        let row = row(record);
        self.run(move |c, sql| {
            let mut row = row?;
            row.push(SqlValue::Integer(signed(expected)));
            let changed = c
                .execute(&sql.swap, params_from_iter(row))
                .map_err(backend)?;
            Ok(changed == 1)
        })
    }

    fn scan<'a>(&'a self, scan: &'a Scan) -> BoxFuture<'a, Result<Vec<R>, StoreError>> {
        let scan = scan.clone();
        self.run(move |c, _| {
            let schema = R::SCHEMA;
            let mut query = format!("SELECT record FROM {} WHERE 1 = 1", schema.table);
            let mut args: Vec<SqlValue> = Vec::new();
            if let Some((column, values)) = &scan.index {
                let marks = vec!["?"; values.len()].join(", ");
                query.push_str(&format!(" AND {column} IN ({marks})"));
                args.extend(values.iter().map(|v| SqlValue::Text((*v).to_owned())));
            }
            for (column, value) in scan.equals {
                match sql_value(value) {
                    SqlValue::Null => query.push_str(&format!(" AND {column} IS NULL")),
                    value => {
                        query.push_str(&format!(" AND {column} = ?"));
                        args.push(value);
                    }
                }
            }
            if let Some((column, bound)) = scan.below {
                query.push_str(&format!(" AND {column} < ?"));
                args.push(SqlValue::Integer(bound));
            }
            match schema.order_column {
                Some(order) => query.push_str(&format!(" ORDER BY {order}, {}", schema.id_column)),
                None => query.push_str(&format!(" ORDER BY {}", schema.id_column)),
            }
            if let Some(limit) = scan.limit {
                query.push_str(" LIMIT ?");
                args.push(SqlValue::Integer(signed_len(limit)));
            }
            let mut statement = c.prepare(&query).map_err(backend)?;
            let rows = statement
                .query_map(params_from_iter(args), |row| row.get::<_, String>(0))
                .map_err(backend)?;
            let mut records = Vec::new();
            for json in rows {
                records.push(decode(&json.map_err(backend)?)?);
            }
            Ok(records)
        })
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let id = id.to_owned();
        self.run(move |c, sql| {
            let changed = match expected {
                Some(version) => c.execute(&sql.remove_version, params![id, signed(version)]),
                None => c.execute(&sql.remove, params![id]),
            }
            .map_err(backend)?;
            Ok(changed == 1)
        })
    }

    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        self.run(move |c, sql| match &sql.purge {
            Some(purge) => c.execute(purge, params![signed(now_ms)]).map_err(backend),
            None => Ok(0),
        })
    }
}
