//! The SQLite stores keep the store contracts (`modelctx::store::contract`) through two connections
//! to one file, as two processes on one host hold: tasks, task limits, flows.

use std::sync::Arc;

use modelctx::client::flows::SqliteFlowStore;
use modelctx::server::tasks::SqliteStore;
use modelctx::store::contract;
use modelctx_test_support::tempdir::TempDir;

#[tokio::test]
async fn tasks() {
    let dir = TempDir::new("tasks");
    let path = dir.file("tasks.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    contract::tasks(&a, &b).await;
    let memory = SqliteStore::in_memory().unwrap();
    contract::tasks(&memory, &memory).await;
}

#[tokio::test]
async fn task_limits() {
    let dir = TempDir::new("limits");
    let path = dir.file("tasks.db");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    contract::task_limits(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn flows() {
    let dir = TempDir::new("flows");
    let path = dir.file("flows.db");
    contract::flows(
        Arc::new(SqliteFlowStore::open(&path).unwrap()),
        Arc::new(SqliteFlowStore::open(&path).unwrap()),
    )
    .await;
    let memory = SqliteFlowStore::in_memory().unwrap();
    contract::flows(Arc::new(memory.clone()), Arc::new(memory)).await;
}

/// A new database is readable and writable by its owner only, and so are the `-wal` and `-shm`
/// files SQLite makes beside it (they take the database's mode), under the usual umask that makes
/// other files world-readable; a file that exists keeps the mode someone chose.
#[cfg(unix)]
#[tokio::test]
async fn a_new_database_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |path: &std::path::Path| {
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        format!("{:o}", mode & 0o777)
    };
    // The common umask, whatever this process was started with, so that the check can fail.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    let dir = TempDir::new("private");
    let tasks = dir.file("tasks.db");
    let flows = dir.file("flows.db");
    // Opening creates the schema, a write: SQLite has made the WAL and its index by then.
    let _tasks = SqliteStore::open(&tasks).unwrap();
    let _flows = SqliteFlowStore::open(&flows).unwrap();
    for path in [&tasks, &flows] {
        for suffix in ["", "-wal", "-shm"] {
            let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
            assert_eq!(mode(&file), "600", "{}", file.display());
        }
    }
    let shared = dir.file("shared.db");
    std::fs::write(&shared, b"").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    let _shared = SqliteStore::open(&shared).unwrap();
    assert_eq!(mode(&shared), "640", "an existing file keeps its mode");
}
