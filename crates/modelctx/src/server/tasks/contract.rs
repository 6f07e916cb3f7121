//! The task-store contract: what every [`TaskStore`] keeps, as plain async functions that
//! panic on a violation. Run them against a store of your own (say, Postgres) the way the SDK
//! runs them against its memory, SQLite and Redis stores (`tests/store_memory.rs`,
//! `tests/store_sqlite.rs`, `tests/store_redis.rs`). Each takes two handles on one empty store
//! (two connections, as two instances or processes would hold; pass one handle twice for an
//! in-process store).
//!
//! It lives with the tasks it checks, not in the store kernel below them: the kernel names no
//! runtime (DESIGN.md, "Layers"), and checks its own verbs over a record of its own
//! (`modelctx::store::contract`). Enabled by the `test-util` feature.

#![allow(
    clippy::missing_panics_doc,
    reason = "panicking is how a contract reports"
)]

use super::{Admission, TaskLimits, TaskRecord, TaskStore};
use crate::store::now_ms;

/// The task-store contract: exclusive creation, load (one and many), compare-and-swap, the
/// unfinished list and expiry.
pub async fn tasks(a: &dyn TaskStore, b: &dyn TaskStore) {
    let id = format!("contract-{}", crate::ids::random_hex().unwrap());
    let now = now_ms();
    let mut record = TaskRecord::new(id.clone(), "tool".to_owned(), now);
    record.ttl_ms = Some(60_000);
    let unlimited = TaskLimits::default();
    assert_eq!(
        a.create(&record, unlimited).await.unwrap(),
        Admission::Created
    );
    assert!(
        b.create(&record, unlimited).await.is_err(),
        "create is exclusive"
    );
    assert_eq!(b.load(&id).await.unwrap().as_ref(), Some(&record));
    assert_eq!(a.load("nope").await.unwrap(), None);
    // A batch read answers in the order asked, a missing id with `None`, a repeated one twice.
    assert_eq!(
        b.load_many(&[id.as_str(), "nope", id.as_str()])
            .await
            .unwrap(),
        [Some(record.clone()), None, Some(record.clone())]
    );
    assert_eq!(a.load_many(&[]).await.unwrap(), []);
    assert!(a.active().await.unwrap().contains(&id));

    let mut next = record.clone();
    next.version = 2;
    next.status = modelctx_types::tasks::TaskStatus::COMPLETED;
    assert!(!a.swap(&next, 7).await.unwrap(), "stale version refused");
    assert!(b.swap(&next, 1).await.unwrap());
    assert!(
        !a.swap(&next, 1).await.unwrap(),
        "the loser of a race is told"
    );
    assert_eq!(a.load(&id).await.unwrap().unwrap().version, 2);
    assert!(
        !a.active().await.unwrap().contains(&id),
        "terminal is not active"
    );

    a.purge_expired(now + 30_000).await.unwrap();
    assert!(
        a.load(&id).await.unwrap().is_some(),
        "not purged before its TTL"
    );
    // Stores may rely on their own expiry instead; either way the record is gone or expired.
    a.purge_expired(now + 61_000).await.unwrap();
    if let Some(left) = a.load(&id).await.unwrap() {
        assert!(left.is_expired(now + 61_000));
    }
}

/// The task-limit contract every store keeps: `a` and `b` are two handles on one empty store
/// (two connections, as two instances would hold).
pub async fn task_limits(a: &dyn TaskStore, b: &dyn TaskStore) {
    let now = now_ms();
    let mut next_id = 0;
    let mut record = |principal: Option<&str>, at: u64| {
        next_id += 1;
        let mut record = TaskRecord::new(format!("limits-{next_id}"), "tool".to_owned(), at);
        record.principal = principal.map(str::to_owned);
        record.ttl_ms = Some(60_000);
        record
    };
    let limits = TaskLimits {
        per_principal: Some(2),
        total: Some(5),
    };
    let cases = [
        (Some("alice"), Admission::Created),
        (Some("alice"), Admission::Created),
        (Some("alice"), Admission::PrincipalLimit),
        // Without a principal there is no per-principal count: the total alone applies.
        (None, Admission::Created),
        (None, Admission::Created),
        (None, Admission::Created),
        (Some("bob"), Admission::TotalLimit),
        (None, Admission::TotalLimit),
    ];
    for (i, (principal, expected)) in cases.into_iter().enumerate() {
        let store = if i % 2 == 0 { a } else { b };
        let admission = store.create(&record(principal, now), limits).await.unwrap();
        assert_eq!(admission, expected, "task {i} of {principal:?}");
    }
    assert_eq!(
        a.load(&format!("limits-{}", 3)).await.unwrap(),
        None,
        "a refused task is not stored"
    );
    // A minute later the first five have expired (finished or not): room again.
    let later = now + 60_001;
    assert_eq!(
        a.create(&record(Some("bob"), later), limits).await.unwrap(),
        Admission::Created
    );

    // Two instances racing: exactly the limit is created.
    let racing = TaskLimits {
        per_principal: Some(4),
        total: None,
    };
    let attempts: Vec<TaskRecord> = (0..12).map(|_| record(Some("carol"), now)).collect();
    let created = futures::future::join_all(attempts.iter().enumerate().map(|(i, record)| {
        let store = if i % 2 == 0 { a } else { b };
        store.create(record, racing)
    }))
    .await
    .into_iter()
    .filter(|admission| *admission.as_ref().unwrap() == Admission::Created)
    .count();
    assert_eq!(created, 4);
}
