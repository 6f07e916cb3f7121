//! [`SqliteFlowStore`]: flows in an SQLite database (SQLite is compiled in).

use std::path::Path;

use futures::future::BoxFuture;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, ErrorCode, OptionalExtension as _, params, params_from_iter};

use super::{FlowError, FlowFilter, FlowRecord, FlowStore};
use crate::sqlite::SharedConnection;

/// Flows in an SQLite database: the embedded default. One row per flow — the record as JSON,
/// plus the columns that lists and the compare-and-swap read. Several processes on one host
/// may share the file (WAL mode, a 5-second busy timeout); every write is committed
/// (`synchronous = FULL`) before its future completes.
///
/// A claim is `UPDATE … WHERE id = ? AND version = ?`: SQLite serializes writers, so of two
/// processes claiming the same answered flow exactly one changes a row.
#[derive(Clone)]
pub struct SqliteFlowStore {
    connection: SharedConnection,
}

impl std::fmt::Debug for SqliteFlowStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteFlowStore").finish_non_exhaustive()
    }
}

const SCHEMA: &str = "
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

fn backend(error: rusqlite::Error) -> FlowError {
    FlowError::backend(error)
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The columns of a record.
struct Row {
    id: String,
    server: String,
    owner: Option<String>,
    status: &'static str,
    version: i64,
    updated_at: i64,
    json: String,
}

impl Row {
    fn of(record: &FlowRecord) -> Result<Self, FlowError> {
        Ok(Self {
            id: record.id.clone(),
            server: record.server.clone(),
            owner: record.owner.clone(),
            status: record.status.as_str(),
            version: signed(record.version),
            updated_at: signed(record.updated_at_ms),
            json: serde_json::to_string(record)?,
        })
    }
}

impl SqliteFlowStore {
    /// Opens (or creates) the database at `path`.
    ///
    /// # Errors
    /// The file cannot be opened or initialised.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, FlowError> {
        let connection = SharedConnection::open_file(path.as_ref(), SCHEMA).map_err(backend)?;
        Ok(Self { connection })
    }

    /// A private in-memory database (gone with the store; for tests).
    ///
    /// # Errors
    /// SQLite cannot initialise it.
    pub fn in_memory() -> Result<Self, FlowError> {
        Self::with_connection(Connection::open_in_memory().map_err(backend)?)
    }

    /// A store on a connection the caller opened and configured (the table is created if
    /// needed).
    ///
    /// # Errors
    /// The table cannot be created.
    pub fn with_connection(connection: Connection) -> Result<Self, FlowError> {
        let connection = SharedConnection::with_schema(connection, SCHEMA).map_err(backend)?;
        Ok(Self { connection })
    }

    /// Runs `work` on the connection off the async threads.
    fn run<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&Connection) -> Result<T, FlowError> + Send + 'static,
    ) -> BoxFuture<'a, Result<T, FlowError>> {
        Box::pin(self.connection.run(work, FlowError::backend))
    }
}

fn decode(json: &str) -> Result<FlowRecord, FlowError> {
    Ok(serde_json::from_str(json)?)
}

impl FlowStore for SqliteFlowStore {
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        let row = Row::of(record);
        self.run(move |c| {
            let row = row?;
            let inserted = c.execute(
                "INSERT INTO mcp_client_flows (id, server, owner, status, version, updated_at, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![row.id, row.server, row.owner, row.status, row.version, row.updated_at, row.json],
            );
            match inserted {
                Ok(_) => Ok(()),
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == ErrorCode::ConstraintViolation =>
                {
                    Err(FlowError::Exists(row.id))
                }
                Err(e) => Err(backend(e)),
            }
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        let id = id.to_owned();
        self.run(move |c| {
            let json: Option<String> = c
                .query_row(
                    "SELECT record FROM mcp_client_flows WHERE id = ?1",
                    params![id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(backend)?;
            json.as_deref().map(decode).transpose()
        })
    }

    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        let row = Row::of(record);
        self.run(move |c| {
            let row = row?;
            let changed = c
                .execute(
                    "UPDATE mcp_client_flows
                     SET server = ?2, owner = ?3, status = ?4, version = ?5, updated_at = ?6, record = ?7
                     WHERE id = ?1 AND version = ?8",
                    params![
                        row.id,
                        row.server,
                        row.owner,
                        row.status,
                        row.version,
                        row.updated_at,
                        row.json,
                        signed(expected)
                    ],
                )
                .map_err(backend)?;
            Ok(changed == 1)
        })
    }

    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>> {
        let filter = filter.clone();
        self.run(move |c| {
            let mut sql = String::from("SELECT record FROM mcp_client_flows WHERE 1 = 1");
            let mut args: Vec<SqlValue> = Vec::new();
            if !filter.statuses.is_empty() {
                let marks = vec!["?"; filter.statuses.len()].join(", ");
                sql.push_str(&format!(" AND status IN ({marks})"));
                args.extend(
                    filter
                        .statuses
                        .iter()
                        .map(|s| SqlValue::Text(s.as_str().to_owned())),
                );
            }
            if let Some(server) = &filter.server {
                sql.push_str(" AND server = ?");
                args.push(SqlValue::Text(server.clone()));
            }
            if let Some(owner) = &filter.owner {
                sql.push_str(" AND owner = ?");
                args.push(SqlValue::Text(owner.clone()));
            }
            if let Some(before) = filter.updated_before_ms {
                sql.push_str(" AND updated_at < ?");
                args.push(SqlValue::Integer(signed(before)));
            }
            sql.push_str(" ORDER BY updated_at, id");
            if let Some(limit) = filter.limit {
                sql.push_str(" LIMIT ?");
                args.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
            }
            let mut statement = c.prepare(&sql).map_err(backend)?;
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
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        let id = id.to_owned();
        self.run(move |c| {
            let changed = match expected {
                Some(version) => c.execute(
                    "DELETE FROM mcp_client_flows WHERE id = ?1 AND version = ?2",
                    params![id, signed(version)],
                ),
                None => c.execute("DELETE FROM mcp_client_flows WHERE id = ?1", params![id]),
            }
            .map_err(backend)?;
            Ok(changed == 1)
        })
    }
}
