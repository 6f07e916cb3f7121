//! [`MemoryStore`]: records in this process's memory.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;

use super::{Inserted, Limits, Record, Scan, StoreError, VersionedStore};
use crate::sync::lock;

/// Records in this process's memory: fast, shared by clones, and gone with the process. For
/// tests and for applications that accept losing their records on restart.
#[derive(Debug, Clone)]
pub struct MemoryStore<R> {
    inner: Arc<Mutex<Memory<R>>>,
}

impl<R> Default for MemoryStore<R> {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Memory {
                records: HashMap::new(),
                live: LiveCounts::default(),
            })),
        }
    }
}

#[derive(Debug)]
struct Memory<R> {
    records: HashMap<String, R>,
    live: LiveCounts,
}

/// The live records of a counted schema, counted as they are inserted and retired as they
/// expire or are removed, so that an insertion checks the limits in `O(log n)` instead of
/// walking every record.
///
/// Counts are retired up to the latest time an insertion or a purge names; an insertion that
/// names an earlier time (the wall clock stepped back) counts as live the records that were live
/// at the latest one, which errs towards refusing. A record's group and expiry never change
/// after insertion, so swaps leave the counts alone.
#[derive(Debug, Default)]
pub(crate) struct LiveCounts {
    pub(crate) total: usize,
    per_group: HashMap<String, usize>,
    /// When each counted record with an expiry stops counting, soonest first, its id and group.
    pub(crate) expiries: BinaryHeap<Reverse<(u64, String, Option<String>)>>,
    /// The latest time counts were retired to.
    retired_to: u64,
    /// Expiry entries of records removed before they expired: skipped when they come due.
    removed: HashSet<(u64, String)>,
}

impl LiveCounts {
    fn add<R: Record>(&mut self, record: &R) {
        self.total += 1;
        let group = record.counted_in().map(str::to_owned);
        if let Some(group) = &group {
            *self.per_group.entry(group.clone()).or_default() += 1;
        }
        if let Some(at) = record.expires_at_ms() {
            self.expiries
                .push(Reverse((at, record.id().to_owned(), group)));
        }
    }

    fn subtract(&mut self, group: Option<&str>) {
        self.total -= 1;
        if let Some(group) = group
            && let Some(count) = self.per_group.get_mut(group)
        {
            *count -= 1;
            if *count == 0 {
                self.per_group.remove(group);
            }
        }
    }

    /// Stops counting `record`, removed before it expired.
    fn remove<R: Record>(&mut self, record: &R) {
        match record.expires_at_ms() {
            Some(at) if at <= self.retired_to => {}
            Some(at) => {
                self.removed.insert((at, record.id().to_owned()));
                self.subtract(record.counted_in());
            }
            None => self.subtract(record.counted_in()),
        }
    }

    /// Stops counting the records whose expiry passed by `now_ms`.
    fn retire(&mut self, now_ms: u64) {
        self.retired_to = self.retired_to.max(now_ms);
        while self
            .expiries
            .peek()
            .is_some_and(|Reverse((at, _, _))| *at <= now_ms)
        {
            let Some(Reverse((at, id, group))) = self.expiries.pop() else {
                break;
            };
            if !self.removed.remove(&(at, id)) {
                self.subtract(group.as_deref());
            }
        }
    }

    pub(crate) fn of(&self, group: &str) -> usize {
        self.per_group.get(group).copied().unwrap_or(0)
    }
}

impl<R: Record> MemoryStore<R> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn memory(&self) -> MutexGuard<'_, Memory<R>> {
        lock(&self.inner)
    }

    /// The live counts and the number of records (for the counting tests).
    #[cfg(test)]
    pub(crate) fn inspect<T>(&self, look: impl FnOnce(&LiveCounts, usize) -> T) -> T {
        let memory = self.memory();
        look(&memory.live, memory.records.len())
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl<R: Record> VersionedStore<R> for MemoryStore<R> {
    fn scope(&self) -> crate::state_scope::StateScope {
        crate::state_scope::StateScope::Process
    }

    fn insert<'a>(
        &'a self,
        record: &'a R,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Inserted, StoreError>> {
        let mut memory = self.memory();
        let Memory { records, live } = &mut *memory;
        let inserted = if records.contains_key(record.id()) {
            Inserted::Exists
        } else {
            let admission = if R::SCHEMA.counted {
                live.retire(limits.now_ms);
                let mine = limits.counted_group(record).map(|g| live.of(g));
                limits.admit(mine, live.total)
            } else {
                Inserted::Yes
            };
            if admission == Inserted::Yes {
                if R::SCHEMA.counted {
                    live.add(record);
                }
                records.insert(record.id().to_owned(), record.clone());
            }
            admission
        };
        ready(Ok(inserted))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<R>, StoreError>> {
        ready(Ok(self.memory().records.get(id).cloned()))
    }

    fn load_many<'a>(
        &'a self,
        ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<R>>, StoreError>> {
        let memory = self.memory();
        ready(Ok(ids
            .iter()
            .map(|id| memory.records.get(*id).cloned())
            .collect()))
    }

    fn swap<'a>(&'a self, record: &'a R, expected: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        let swapped = match self.memory().records.get_mut(record.id()) {
            Some(stored) if stored.version() == expected => {
                *stored = record.clone();
                true
            }
            _ => false,
        };
        ready(Ok(swapped))
    }

    fn scan<'a>(&'a self, scan: &'a Scan) -> BoxFuture<'a, Result<Vec<R>, StoreError>> {
        let records = self
            .memory()
            .records
            .values()
            .filter(|r| scan.matches(*r))
            .cloned()
            .collect();
        ready(Ok(scan.apply(records)))
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut memory = self.memory();
        let Memory { records, live } = &mut *memory;
        let removed = match records.get(id) {
            Some(stored) if expected.is_none_or(|v| v == stored.version()) => {
                if R::SCHEMA.counted {
                    live.remove(stored);
                }
                records.remove(id);
                true
            }
            _ => false,
        };
        ready(Ok(removed))
    }

    fn purge_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        let mut memory = self.memory();
        if R::SCHEMA.counted {
            memory.live.retire(now_ms);
        }
        let records = &mut memory.records;
        let before = records.len();
        records.retain(|_, r| r.expires_at_ms().is_none_or(|at| at > now_ms));
        ready(Ok(before - records.len()))
    }
}

#[cfg(all(test, feature = "test-util"))]
mod tests {
    use super::super::contract::ContractRecord;
    use super::{Inserted, Limits, MemoryStore, VersionedStore};

    fn record(id: &str, group: &str, ttl_ms: Option<u64>) -> ContractRecord {
        let mut record = ContractRecord::new(id);
        record.group = Some(group.to_owned());
        record.expires_at_ms = ttl_ms;
        record
    }

    /// A record removed before it expires stops counting at once, and its expiry, when it
    /// comes, does not retire the record that took its id.
    #[tokio::test]
    async fn a_removal_stops_counting_exactly_once() {
        let store = MemoryStore::new();
        let limits = |now_ms| Limits {
            per_group: Some(1),
            total: Some(2),
            now_ms,
        };
        let insert = |record: ContractRecord, now| {
            let store = &store;
            async move { store.insert(&record, limits(now)).await.unwrap() }
        };
        assert_eq!(insert(record("a", "g", Some(10)), 0).await, Inserted::Yes);
        assert_eq!(insert(record("b", "g", None), 0).await, Inserted::GroupFull);
        assert!(store.remove("a", None).await.unwrap());
        assert_eq!(insert(record("a", "g", Some(10)), 1).await, Inserted::Yes);
        assert_eq!(insert(record("c", "h", None), 1).await, Inserted::Yes);
        assert_eq!(insert(record("d", "i", None), 1).await, Inserted::TotalFull);
        // At 10 the second "a" expires: one retirement for it, none for the removed one.
        assert_eq!(insert(record("d", "i", None), 10).await, Inserted::Yes);
        assert!(store.remove("c", Some(1)).await.unwrap());
        store.inspect(|live, records| {
            assert_eq!(
                (live.total, records),
                (1, 2),
                "d counts; the expired a is kept"
            );
            assert_eq!((live.of("g"), live.of("h"), live.of("i")), (0, 0, 1));
        });
    }
}
