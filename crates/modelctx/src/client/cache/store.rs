//! Where cached results live: the [`CacheStore`] trait, its in-memory default
//! [`MemoryCacheStore`] (bounded in entries and bytes, least recently used evicted first), and
//! the clock freshness is read from.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use crate::sync::lock;

/// Who may be served an entry: every client of the server (`Public`, when the server said
/// `cacheScope: "public"` and sharing is on) or one principal (`Private`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arm {
    /// Shared by the clients of one server.
    Public,
    /// One principal's.
    Private,
}

/// The identity of one cached result. Compared field by field (never flattened into one
/// string, so that crafted values cannot collide across fields).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey {
    /// The server: its URL (without user info) for HTTP, else the configured or a per-client
    /// identity.
    pub server: Arc<str>,
    /// Which arm the entry is in.
    pub arm: Arm,
    /// The principal the entry belongs to; `None` for an entry shared by every principal of the
    /// server.
    pub principal: Option<Arc<str>>,
    /// The method (`tools/list`, `resources/read`, …).
    pub method: &'static str,
    /// The params that shape the result: the URI of `resources/read`, `""` for a listing.
    pub params: String,
}

impl CacheKey {
    /// Roughly what the key costs in memory, for the byte bound.
    pub fn weight(&self) -> usize {
        self.server.len()
            + self.principal.as_deref().map_or(0, str::len)
            + self.method.len()
            + self.params.len()
            + size_of::<Self>()
    }
}

/// One cached result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// The result, as JSON (what the client decodes on a hit).
    pub value: Arc<str>,
    /// The protocol version it was fetched under: never served to a session of another.
    pub version: Arc<str>,
    /// Whether the server scoped it `public`.
    pub public: bool,
    /// When it goes stale, in milliseconds since the Unix epoch ([`CacheClock`]).
    pub expires_at_ms: u64,
    /// The cache instance that wrote it (a client's own entries need no re-reading of what it
    /// derives from them, e.g. the `x-mcp-header` index of a tool listing).
    pub writer: u64,
}

/// A store failure; the cache degrades to a miss (or to nothing stored) and logs it.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// Storage for the client response cache. Keys carry the server and the principal, so one
/// store may be shared by many clients (pass it to each with
/// [`CacheConfig::shared_store`](super::CacheConfig::shared_store)); the cache decides what
/// may be served to whom, the store only keeps entries.
///
/// An operation that fails makes the call a miss, never a failed call. A store may drop
/// entries whenever it likes (that is a miss too). Futures that are ready at once (as the
/// in-memory store's are) make invalidation immediate; others are completed in the background,
/// and reads miss meanwhile.
pub trait CacheStore: Send + Sync + 'static {
    /// The entry under `key`, stale or not (the cache checks freshness).
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
    ) -> BoxFuture<'a, Result<Option<CacheEntry>, StoreError>>;
    /// Stores `entry` under `key`, replacing what was there.
    fn set(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Removes the entry under `key`, if any.
    fn delete<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Removes every entry.
    fn clear(&self) -> BoxFuture<'_, Result<(), StoreError>>;
}

/// The wall clock freshness is measured with; injectable for tests.
pub trait CacheClock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// [`CacheClock`] of the system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl CacheClock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
            })
    }
}

/// The default [`CacheStore`]: in memory, at most `max_entries` entries and `max_bytes` bytes
/// (values and keys); past either bound the least recently used entries go. An entry larger
/// than the byte bound is not stored.
#[derive(Debug)]
pub struct MemoryCacheStore {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Lru>,
}

#[derive(Debug, Default)]
struct Lru {
    entries: HashMap<CacheKey, (CacheEntry, u64)>,
    /// Recency: tick → key (the smallest tick is the least recently used).
    order: BTreeMap<u64, CacheKey>,
    tick: u64,
    bytes: usize,
}

fn weight(key: &CacheKey, entry: &CacheEntry) -> usize {
    key.weight() + entry.value.len() + entry.version.len() + size_of::<CacheEntry>()
}

impl Lru {
    fn touch(&mut self, key: &CacheKey) {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, at)) = self.entries.get_mut(key) {
            self.order.remove(at);
            *at = tick;
            self.order.insert(tick, key.clone());
        }
    }

    fn remove(&mut self, key: &CacheKey) {
        if let Some((entry, at)) = self.entries.remove(key) {
            self.order.remove(&at);
            self.bytes -= weight(key, &entry);
        }
    }
}

impl MemoryCacheStore {
    /// At most 1024 entries and 16 MiB.
    pub fn new() -> Self {
        Self::with_bounds(1024, 16 << 20)
    }

    /// At most `max_entries` entries and `max_bytes` bytes.
    pub fn with_bounds(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            max_entries,
            max_bytes,
            inner: Mutex::new(Lru::default()),
        }
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        lock(&self.inner).entries.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many bytes its entries weigh (values, keys and bookkeeping).
    pub fn bytes(&self) -> usize {
        lock(&self.inner).bytes
    }

    fn get_now(&self, key: &CacheKey) -> Option<CacheEntry> {
        let mut lru = lock(&self.inner);
        let entry = lru.entries.get(key).map(|(entry, _)| entry.clone())?;
        lru.touch(key);
        Some(entry)
    }

    fn set_now(&self, key: CacheKey, entry: CacheEntry) {
        let added = weight(&key, &entry);
        let mut lru = lock(&self.inner);
        lru.remove(&key);
        if added > self.max_bytes || self.max_entries == 0 {
            return;
        }
        while lru.entries.len() >= self.max_entries || lru.bytes + added > self.max_bytes {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            if let Some((entry, _)) = lru.entries.remove(&oldest) {
                lru.bytes -= weight(&oldest, &entry);
            }
        }
        lru.tick += 1;
        let tick = lru.tick;
        lru.order.insert(tick, key.clone());
        lru.bytes += added;
        lru.entries.insert(key, (entry, tick));
    }
}

impl Default for MemoryCacheStore {
    fn default() -> Self {
        Self::new()
    }
}

impl CacheStore for MemoryCacheStore {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
    ) -> BoxFuture<'a, Result<Option<CacheEntry>, StoreError>> {
        let entry = self.get_now(key);
        Box::pin(std::future::ready(Ok(entry)))
    }

    fn set(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, Result<(), StoreError>> {
        self.set_now(key, entry);
        Box::pin(std::future::ready(Ok(())))
    }

    fn delete<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Result<(), StoreError>> {
        lock(&self.inner).remove(key);
        Box::pin(std::future::ready(Ok(())))
    }

    fn clear(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        *lock(&self.inner) = Lru::default();
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(params: &str) -> CacheKey {
        CacheKey {
            server: "s".into(),
            arm: Arm::Private,
            principal: Some("p".into()),
            method: "resources/read",
            params: params.to_owned(),
        }
    }

    fn entry(value: &str) -> CacheEntry {
        CacheEntry {
            value: value.into(),
            version: "2026-07-28".into(),
            public: false,
            expires_at_ms: 1,
            writer: 0,
        }
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let store = MemoryCacheStore::with_bounds(2, usize::MAX);
        store.set_now(key("a"), entry("1"));
        store.set_now(key("b"), entry("2"));
        // Reading `a` makes `b` the least recently used.
        assert!(store.get_now(&key("a")).is_some());
        store.set_now(key("c"), entry("3"));
        assert_eq!(store.len(), 2);
        assert!(store.get_now(&key("b")).is_none());
        assert!(store.get_now(&key("a")).is_some());
        assert!(store.get_now(&key("c")).is_some());
    }

    #[test]
    fn the_byte_bound_evicts_and_refuses_what_cannot_fit() {
        let one = weight(&key("a"), &entry(&"x".repeat(100)));
        let store = MemoryCacheStore::with_bounds(100, one * 2);
        store.set_now(key("a"), entry(&"x".repeat(100)));
        store.set_now(key("b"), entry(&"x".repeat(100)));
        assert_eq!(store.bytes(), one * 2);
        store.set_now(key("c"), entry(&"x".repeat(100)));
        assert_eq!(store.len(), 2, "the oldest made room");
        assert!(store.get_now(&key("a")).is_none());
        // Larger than the whole store: not stored, and nothing evicted for it.
        store.set_now(key("d"), entry(&"x".repeat(one * 2)));
        assert!(store.get_now(&key("d")).is_none());
        assert_eq!(store.len(), 2);
        // Replacing an entry does not count it twice.
        store.set_now(key("b"), entry(&"x".repeat(100)));
        assert_eq!(store.bytes(), one * 2);
        futures::executor::block_on(store.clear()).unwrap();
        assert!(store.is_empty());
        assert_eq!(store.bytes(), 0);
    }
}
