//! The SQLite stores keep the store contracts through two connections to one file, as two
//! processes on one host hold: the kernel's records and limits (`modelctx::store::contract`),
//! tasks and task limits (`modelctx::server::tasks::contract`), flows
//! (`modelctx::client::flows::contract`).

use std::sync::Arc;

use modelctx::client::flows::{self, SqliteFlowStore};
use modelctx::server::tasks::{self, SqliteTaskStore};
use modelctx::store::contract::{self, ContractRecord};
use modelctx_test_support::tempdir::TempDir;

/// Two connections to one new file.
fn two_kernel_stores(
    dir: &TempDir,
) -> (
    modelctx::store::SqliteStore<ContractRecord>,
    modelctx::store::SqliteStore<ContractRecord>,
) {
    let path = dir.file("records.db");
    let open = || modelctx::store::SqliteStore::open(&path).unwrap();
    (open(), open())
}

#[tokio::test]
async fn records() {
    let dir = TempDir::new("records");
    let (a, b) = two_kernel_stores(&dir);
    contract::records(&a, &b).await;
    let memory = modelctx::store::SqliteStore::<ContractRecord>::in_memory().unwrap();
    contract::records(&memory, &memory).await;
}

#[tokio::test]
async fn limits() {
    let dir = TempDir::new("kernel-limits");
    let (a, b) = two_kernel_stores(&dir);
    contract::limits(&a, &b).await;
}

#[tokio::test]
async fn tasks() {
    let dir = TempDir::new("tasks");
    let path = dir.file("tasks.db");
    let (a, b) = (
        SqliteTaskStore::open(&path).unwrap(),
        SqliteTaskStore::open(&path).unwrap(),
    );
    tasks::contract::tasks(&a, &b).await;
    let memory = SqliteTaskStore::in_memory().unwrap();
    tasks::contract::tasks(&memory, &memory).await;
}

/// A batch read of more ids than SQLite binds in one statement (a third party's caller; the
/// SDK reads 100 at a time) answers every id in order, again and again on the cached
/// statements.
#[tokio::test]
async fn a_long_batch_read_answers_every_id() {
    use modelctx::server::tasks::{TaskLimits, TaskRecord, TaskStore};
    let store = SqliteTaskStore::in_memory().unwrap();
    let mut stored = Vec::new();
    for i in [0, 499, 500, 1_199] {
        let record = TaskRecord::new(format!("task-{i}"), "tool".to_owned(), 1);
        store.create(&record, TaskLimits::default()).await.unwrap();
        stored.push((i, record));
    }
    let ids: Vec<String> = (0..1_200).map(|i| format!("task-{i}")).collect();
    let names: Vec<&str> = ids.iter().map(String::as_str).collect();
    for _ in 0..3 {
        let found = store.load_many(&names).await.unwrap();
        assert_eq!(found.len(), 1_200);
        for (i, record) in &stored {
            assert_eq!(found[*i].as_ref(), Some(record), "task-{i}");
        }
        assert_eq!(found.iter().filter(|r| r.is_some()).count(), stored.len());
    }
}

#[tokio::test]
async fn task_limits() {
    let dir = TempDir::new("limits");
    let path = dir.file("tasks.db");
    let (a, b) = (
        SqliteTaskStore::open(&path).unwrap(),
        SqliteTaskStore::open(&path).unwrap(),
    );
    tasks::contract::task_limits(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn flows() {
    let dir = TempDir::new("flows");
    let path = dir.file("flows.db");
    flows::contract::flows(
        Arc::new(SqliteFlowStore::open(&path).unwrap()),
        Arc::new(SqliteFlowStore::open(&path).unwrap()),
    )
    .await;
    let memory = SqliteFlowStore::in_memory().unwrap();
    flows::contract::flows(Arc::new(memory.clone()), Arc::new(memory)).await;
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
    let _tasks = SqliteTaskStore::open(&tasks).unwrap();
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
    let _shared = SqliteTaskStore::open(&shared).unwrap();
    assert_eq!(mode(&shared), "640", "an existing file keeps its mode");
}
