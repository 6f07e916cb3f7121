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
    /// A new file is created readable and writable by its owner only (see [`create_private`]).
    pub(crate) fn open_file(path: &Path, schema: &str) -> rusqlite::Result<Self> {
        create_private(path).map_err(|error| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("cannot create {}: {error}", path.display())),
            )
        })?;
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

/// Creates the database file at `path`, empty, with mode 0600 on Unix, unless something is
/// there already: the databases hold what users entered (task arguments and results, the answers
/// of durable flows), and SQLite would create the file with the process's umask (0644 as a
/// rule: readable by every local user). SQLite gives the `-wal` and `-shm` files it creates
/// beside the database the database's own mode, so they follow. An empty file is a new database
/// to SQLite.
///
/// An existing file keeps its mode: it may be shared on purpose (a group of worker accounts),
/// and changing permissions someone chose is not the store's to do. A file readable or writable
/// beyond its owner is reported (WARN), so that a database an older version created with the
/// umask gets noticed. Paths SQLite reads as no file (`""`, `:memory:`) or as a URI (`file:…`)
/// are left to it.
fn create_private(path: &Path) -> std::io::Result<()> {
    let text = path.as_os_str();
    if text.is_empty() || text == ":memory:" || text.as_encoded_bytes().starts_with(b"file:") {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    // `create_new`: never follows a symbolic link someone planted, never truncates.
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            warn_if_shared(path);
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// The WARN line for an existing database that other users may read or write.
fn warn_if_shared(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(metadata) = std::fs::metadata(path)
            && metadata.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %path.display(),
                mode = format_args!("{:o}", metadata.permissions().mode() & 0o777),
                "the database is readable or writable by other users; `chmod 600` it unless they are meant to share it"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

impl std::fmt::Debug for SharedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedConnection").finish_non_exhaustive()
    }
}
