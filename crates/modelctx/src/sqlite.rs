//! The SQLite connection behind the durable stores (tasks, client flows).
//!
//! rusqlite is synchronous, so every operation runs on tokio's blocking pool with the one
//! connection locked: the async threads never wait on disk, and SQLite sees one writer per
//! process (other processes are serialised by its own file lock and the busy timeout).

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::task::JoinError;

use crate::sync::lock;

/// Durability for a file database: write-ahead logging, every commit synced before it returns
/// (`synchronous = FULL`), and up to 5 s of waiting for another process's write lock.
const FILE_PRAGMAS: &str =
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;";

/// One connection shared by clones of a store.
#[derive(Clone)]
pub(crate) struct SharedConnection(Arc<Mutex<Connection>>);

impl SharedConnection {
    /// Opens (or creates) the database file at `path` with the durable settings and `schema`.
    pub(crate) fn open_file(path: &Path, schema: &str) -> rusqlite::Result<Self> {
        let connection = Connection::open(path)?;
        connection.execute_batch(FILE_PRAGMAS)?;
        Self::with_schema(connection, schema)
    }

    /// Takes `connection` as opened and configured by the caller, creating `schema` if needed.
    pub(crate) fn with_schema(connection: Connection, schema: &str) -> rusqlite::Result<Self> {
        connection.execute_batch(schema)?;
        Ok(Self(Arc::new(Mutex::new(connection))))
    }

    /// Runs `work` on the connection off the async threads. `worker_failed` maps the one
    /// failure that is not the store's own: the blocking task panicked or was cancelled.
    ///
    /// A panic inside `work` poisons nothing that matters (each operation is one statement or
    /// one transaction that SQLite rolls back), so a poisoned lock is taken over.
    pub(crate) async fn run<T, E>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        worker_failed: impl FnOnce(JoinError) -> E,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        let connection = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || {
            let connection = lock(&connection);
            work(&connection)
        })
        .await
        .map_err(worker_failed)?
    }
}

impl std::fmt::Debug for SharedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedConnection").finish_non_exhaustive()
    }
}
