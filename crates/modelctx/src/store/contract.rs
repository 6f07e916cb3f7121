//! The kernel's contract: what every [`VersionedStore`] keeps of any record, as plain async
//! functions that panic on a violation, over a record the kernel defines for the purpose
//! ([`ContractRecord`]). Run them against a backend of your own (say, Postgres) the way the SDK
//! runs them against its memory, SQLite and Redis stores (`tests/store_memory.rs`,
//! `tests/store_sqlite.rs`, `tests/store_redis.rs`). Each takes two handles on one empty store
//! (two connections, as two instances or processes would hold; pass one handle twice for an
//! in-process store).
//!
//! The record is the kernel's own so that the kernel names nothing above it (DESIGN.md,
//! "Layers"): the rules of tasks and flows are checked by their own contracts, beside them
//! (`modelctx::server::tasks::contract`, `modelctx::client::flows::contract`), through the same
//! backends. Enabled by the `test-util` feature.

#![allow(
    clippy::missing_panics_doc,
    reason = "panicking is how a contract reports"
)]

use serde::{Deserialize, Serialize};

use super::{Field, Inserted, Limits, Record, Scan, Schema, Tag, VersionedStore, now_ms};

/// The record the contract stores: what a backend must keep of any record — an id, a version,
/// an optional expiry, an optional group that per-group limits count — and two indexed fields
/// that scans read: a `state` (`open` or `closed`, a Redis set each) and a `rank` they order
/// by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractRecord {
    /// The id.
    pub id: String,
    /// Bumped by every write.
    pub version: u64,
    /// `open` or `closed`.
    pub state: String,
    /// Scans order by it.
    pub rank: u64,
    /// The group whose live records a per-group limit counts.
    pub group: Option<String>,
    /// When the record may be discarded (Unix milliseconds).
    pub expires_at_ms: Option<u64>,
}

impl ContractRecord {
    /// An open record of version 1, rank 0, no group, kept a minute from now.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            version: 1,
            state: OPEN.to_owned(),
            rank: 0,
            group: None,
            expires_at_ms: Some(now_ms() + 60_000),
        }
    }
}

const OPEN: &str = "open";
const CLOSED: &str = "closed";

/// The SQLite layout of the contract's records.
const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS mcp_store_contract (
        id         TEXT PRIMARY KEY,
        version    INTEGER NOT NULL,
        state      TEXT NOT NULL,
        rank       INTEGER NOT NULL,
        expires_at INTEGER,
        record     TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS mcp_store_contract_state ON mcp_store_contract (state, rank);
    CREATE INDEX IF NOT EXISTS mcp_store_contract_expiry ON mcp_store_contract (expires_at);
    CREATE INDEX IF NOT EXISTS mcp_store_contract_group
        ON mcp_store_contract (json_extract(record, '$.group'), expires_at);
";

/// Counted by group, like tasks; scanned by state and ordered by rank, like flows.
impl Record for ContractRecord {
    const SCHEMA: Schema = Schema {
        table: "mcp_store_contract",
        id_column: "id",
        sqlite_schema: SQLITE_SCHEMA,
        columns: &["state", "rank", "expires_at"],
        expires_column: Some("expires_at"),
        group_sql: Some("json_extract(record, '$.group')"),
        order_column: Some("rank"),
        redis_key: "record",
        redis_group_key: "group",
        tags: &[
            Tag {
                column: "state",
                value: OPEN,
                set: "state:open",
            },
            Tag {
                column: "state",
                value: CLOSED,
                set: "state:closed",
            },
        ],
        counted: true,
    };

    fn id(&self) -> &str {
        &self.id
    }

    fn version(&self) -> u64 {
        self.version
    }

    fn expires_at_ms(&self) -> Option<u64> {
        self.expires_at_ms
    }

    fn counted_in(&self) -> Option<&str> {
        self.group.as_deref()
    }

    fn fields(&self) -> Vec<Field> {
        vec![
            Field::Text(Some(self.state.clone())),
            Field::int(self.rank),
            Field::Int(
                self.expires_at_ms
                    .map(|at| i64::try_from(at).unwrap_or(i64::MAX)),
            ),
        ]
    }
}

type Store<'a> = &'a dyn VersionedStore<ContractRecord>;

fn ids(records: &[ContractRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

/// The record contract: exclusive insertion, load (one and many), compare-and-swap, scans by
/// index, equality and bound (ordered, limited), removal on a version, expiry.
pub async fn records(a: Store<'_>, b: Store<'_>) {
    let now = now_ms();
    let record = ContractRecord::new("r1");
    assert_eq!(
        a.insert(&record, Limits::NONE).await.unwrap(),
        Inserted::Yes
    );
    assert_eq!(
        b.insert(&record, Limits::NONE).await.unwrap(),
        Inserted::Exists,
        "insertion is exclusive"
    );
    assert_eq!(b.load("r1").await.unwrap().as_ref(), Some(&record));
    assert_eq!(a.load("nope").await.unwrap(), None);
    // A batch read answers in the order asked, a missing id with `None`, a repeated one twice.
    assert_eq!(
        b.load_many(&["r1", "nope", "r1"]).await.unwrap(),
        [Some(record.clone()), None, Some(record.clone())]
    );
    assert_eq!(a.load_many(&[]).await.unwrap(), []);

    let mut next = record.clone();
    next.version = 2;
    next.state = CLOSED.to_owned();
    assert!(!a.swap(&next, 7).await.unwrap(), "stale version refused");
    assert!(b.swap(&next, 1).await.unwrap());
    assert!(
        !a.swap(&next, 1).await.unwrap(),
        "the loser of a race is told"
    );
    assert_eq!(a.load("r1").await.unwrap(), Some(next.clone()));
    let mut gone = ContractRecord::new("never-inserted");
    gone.version = 2;
    assert!(!a.swap(&gone, 1).await.unwrap(), "no record, no swap");

    // Scans: by the tagged index, equalities and a bound; ordered by rank, then id; limited.
    for (id, rank) in [("r4", 3), ("r2", 1), ("r3", 1)] {
        let mut other = ContractRecord::new(id);
        other.rank = rank;
        a.insert(&other, Limits::NONE).await.unwrap();
    }
    let open = Scan::all().by("state", vec![OPEN]);
    assert_eq!(ids(&b.scan(&open).await.unwrap()), ["r2", "r3", "r4"]);
    let both = Scan::all().by("state", vec![OPEN, CLOSED]);
    assert_eq!(ids(&b.scan(&both).await.unwrap()), ["r1", "r2", "r3", "r4"]);
    assert_eq!(
        ids(&b.scan(&Scan::all()).await.unwrap()),
        ["r1", "r2", "r3", "r4"]
    );
    assert_eq!(
        ids(&b
            .scan(&open.clone().equals("rank", Field::int(1)))
            .await
            .unwrap()),
        ["r2", "r3"]
    );
    assert_eq!(
        ids(&b.scan(&both.clone().below("rank", 3)).await.unwrap()),
        ["r1", "r2", "r3"]
    );
    assert_eq!(
        ids(&b.scan(&open.clone().limit(2)).await.unwrap()),
        ["r2", "r3"]
    );

    // Removal: only the version read, when one is given.
    assert!(!a.remove("r2", Some(9)).await.unwrap());
    assert!(a.remove("r2", Some(1)).await.unwrap());
    assert!(!b.remove("r2", None).await.unwrap(), "removed once");
    assert!(b.remove("r3", None).await.unwrap());
    assert_eq!(a.load("r2").await.unwrap(), None);
    assert_eq!(ids(&a.scan(&open).await.unwrap()), ["r4"]);

    // Expiry: not before a record's time. Stores may rely on their own expiry instead of the
    // purge; either way the record is gone or expired.
    a.purge_expired(now + 30_000).await.unwrap();
    assert!(
        a.load("r4").await.unwrap().is_some(),
        "not purged before its expiry"
    );
    a.purge_expired(now + 61_000).await.unwrap();
    if let Some(left) = a.load("r4").await.unwrap() {
        assert!(left.expires_at_ms.is_some_and(|at| at <= now + 61_000));
    }
}

/// The limit contract: a counted insertion checks the group's and the store's live records in
/// the same atomic step as it inserts, so that handles inserting at once never overshoot.
pub async fn limits(a: Store<'_>, b: Store<'_>) {
    let now = now_ms();
    let mut next_id = 0;
    // A record of `group` inserted at `at`, kept a minute.
    let mut record = |group: Option<&str>, at: u64| {
        next_id += 1;
        let mut record = ContractRecord::new(format!("limits-{next_id}"));
        record.group = group.map(str::to_owned);
        record.expires_at_ms = Some(at + 60_000);
        record
    };
    let limits = |now_ms| Limits {
        per_group: Some(2),
        total: Some(5),
        now_ms,
    };
    let cases = [
        (Some("alice"), Inserted::Yes),
        (Some("alice"), Inserted::Yes),
        (Some("alice"), Inserted::GroupFull),
        // Without a group there is no per-group count: the total alone applies.
        (None, Inserted::Yes),
        (None, Inserted::Yes),
        (None, Inserted::Yes),
        (Some("bob"), Inserted::TotalFull),
        (None, Inserted::TotalFull),
    ];
    for (i, (group, expected)) in cases.into_iter().enumerate() {
        let store = if i % 2 == 0 { a } else { b };
        let inserted = store
            .insert(&record(group, now), limits(now))
            .await
            .unwrap();
        assert_eq!(inserted, expected, "record {i} of {group:?}");
    }
    assert_eq!(
        a.load("limits-3").await.unwrap(),
        None,
        "a refused record is not stored"
    );
    // A minute later the first five have expired: room again.
    let later = now + 60_001;
    assert_eq!(
        a.insert(&record(Some("bob"), later), limits(later))
            .await
            .unwrap(),
        Inserted::Yes
    );

    // Two handles racing: exactly the limit is inserted.
    let racing = Limits {
        per_group: Some(4),
        total: None,
        now_ms: now,
    };
    let attempts: Vec<ContractRecord> = (0..12).map(|_| record(Some("carol"), now)).collect();
    let inserted = futures::future::join_all(attempts.iter().enumerate().map(|(i, record)| {
        let store = if i % 2 == 0 { a } else { b };
        store.insert(record, racing)
    }))
    .await
    .into_iter()
    .filter(|inserted| *inserted.as_ref().unwrap() == Inserted::Yes)
    .count();
    assert_eq!(inserted, 4);
}
