//! The cache's rules with an injected clock and counted fetches: freshness, scope, era,
//! modes, bounds, invalidation races, failing stores.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx_types::{Era, ProtocolVersion};

use super::response_cache::{Fetched, Hints, ResponseCache};
use super::{
    CacheClock, CacheConfig, CacheEntry, CacheKey, CacheMode, CacheStore, MemoryCacheStore,
    StoreError,
};

/// A clock the test moves.
#[derive(Clone, Default)]
struct Manual(Arc<AtomicU64>);

impl Manual {
    fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::Relaxed);
    }
}

impl CacheClock for Manual {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

const MODERN: (Option<Era>, Option<ProtocolVersion>) =
    (Some(Era::Modern), Some(ProtocolVersion::V2026_07_28));
const HANDSHAKE: (Option<Era>, Option<ProtocolVersion>) =
    (Some(Era::Handshake), Some(ProtocolVersion::V2025_11_25));

struct Rig {
    clock: Manual,
    store: Arc<MemoryCacheStore>,
    sent: AtomicU32,
}

impl Rig {
    fn new() -> Self {
        Self {
            clock: Manual::default(),
            store: Arc::new(MemoryCacheStore::new()),
            sent: AtomicU32::new(0),
        }
    }

    fn cache(&self, config: CacheConfig, server: &str, principal: &str) -> ResponseCache {
        let config = config.clock(self.clock.clone());
        let store: Arc<dyn CacheStore> = self.store.clone();
        ResponseCache::new(
            &config,
            store,
            server.into(),
            principal.into(),
            principal.len() as u64,
        )
    }

    /// One `tools/list` through `cache`; the server answers `value` with `hints`. Returns what
    /// was served and whether it reached the server.
    async fn list(
        &self,
        cache: &ResponseCache,
        negotiated: (Option<Era>, Option<ProtocolVersion>),
        mode: CacheMode,
        value: &str,
        hints: Hints,
    ) -> (String, bool) {
        let before = self.sent.load(Ordering::Relaxed);
        let served = cache
            .fetch(("tools/list", ""), negotiated, mode, || async {
                self.sent.fetch_add(1, Ordering::Relaxed);
                Ok(Fetched {
                    value: value.to_owned(),
                    hints,
                    storable: true,
                })
            })
            .await
            .unwrap();
        (served.value, self.sent.load(Ordering::Relaxed) > before)
    }
}

fn private(ttl: u64) -> Hints {
    Hints {
        ttl_ms: Some(ttl),
        public: false,
    }
}

fn public(ttl: u64) -> Hints {
    Hints {
        ttl_ms: Some(ttl),
        public: true,
    }
}

#[tokio::test]
async fn an_entry_is_served_until_its_ttl_has_passed() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new(), "s", "p");
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v1", private(1000))
            .await,
        ("v1".into(), true)
    );
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v2", private(1000))
            .await,
        ("v1".into(), false)
    );
    rig.clock.set(999);
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v2", private(1000))
            .await,
        ("v1".into(), false)
    );
    rig.clock.set(1000);
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v2", private(1000))
            .await,
        ("v2".into(), true)
    );
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses, stats.stored), (2, 2, 2));
}

#[tokio::test]
async fn no_ttl_or_zero_is_not_cached_and_the_ttl_is_capped() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new(), "s", "p");
    for hints in [
        private(0),
        Hints {
            ttl_ms: None,
            public: true,
        },
    ] {
        rig.list(&cache, MODERN, CacheMode::Use, "v", hints).await;
        assert!(rig.list(&cache, MODERN, CacheMode::Use, "v", hints).await.1);
    }
    assert!(rig.store.is_empty());
    // A default life for results without hints.
    let cache = rig.cache(
        CacheConfig::new().default_ttl(Duration::from_millis(50)),
        "s",
        "p",
    );
    let none = Hints {
        ttl_ms: None,
        public: false,
    };
    rig.list(&cache, MODERN, CacheMode::Use, "v", none).await;
    assert!(!rig.list(&cache, MODERN, CacheMode::Use, "v", none).await.1);
    // A year is a day at most.
    rig.list(
        &cache,
        MODERN,
        CacheMode::Refresh,
        "v",
        private(365 * 24 * 3600 * 1000),
    )
    .await;
    rig.clock.set(24 * 3600 * 1000 - 1);
    assert!(!rig.list(&cache, MODERN, CacheMode::Use, "v", none).await.1);
    rig.clock.set(24 * 3600 * 1000);
    assert!(rig.list(&cache, MODERN, CacheMode::Use, "v", none).await.1);
}

#[tokio::test]
async fn private_entries_stay_with_their_principal_and_public_ones_with_their_server() {
    let rig = Rig::new();
    let alice = rig.cache(CacheConfig::new(), "https://a.example/mcp", "alice");
    let bob = rig.cache(CacheConfig::new(), "https://a.example/mcp", "bob");
    let elsewhere = rig.cache(CacheConfig::new(), "https://b.example/mcp", "alice");
    rig.list(&alice, MODERN, CacheMode::Use, "alice's", private(1000))
        .await;
    assert_eq!(
        rig.list(&bob, MODERN, CacheMode::Use, "bob's", private(1000))
            .await,
        ("bob's".into(), true)
    );
    assert_eq!(
        rig.list(&alice, MODERN, CacheMode::Use, "x", private(1000))
            .await,
        ("alice's".into(), false)
    );
    assert!(
        rig.list(&elsewhere, MODERN, CacheMode::Use, "b", private(1000))
            .await
            .1
    );

    // Public: shared by the principals of one server, never with another server.
    let rig = Rig::new();
    let alice = rig.cache(CacheConfig::new(), "https://a.example/mcp", "alice");
    let bob = rig.cache(CacheConfig::new(), "https://a.example/mcp", "bob");
    let elsewhere = rig.cache(CacheConfig::new(), "https://b.example/mcp", "bob");
    rig.list(&alice, MODERN, CacheMode::Use, "shared", public(1000))
        .await;
    assert_eq!(
        rig.list(&bob, MODERN, CacheMode::Use, "x", public(1000))
            .await,
        ("shared".into(), false)
    );
    assert!(
        rig.list(&elsewhere, MODERN, CacheMode::Use, "x", public(1000))
            .await
            .1
    );
    // Unless sharing is off.
    let careful = rig.cache(
        CacheConfig::new().share_public(false),
        "https://a.example/mcp",
        "carol",
    );
    assert!(
        rig.list(&careful, MODERN, CacheMode::Use, "x", public(1000))
            .await
            .1
    );
}

#[tokio::test]
async fn a_scope_change_leaves_one_arm_answering() {
    let rig = Rig::new();
    let alice = rig.cache(CacheConfig::new(), "s", "alice");
    let bob = rig.cache(CacheConfig::new(), "s", "bob");
    rig.list(&alice, MODERN, CacheMode::Use, "public", public(1000))
        .await;
    // The server now scopes it private: alice's refresh removes the shared entry.
    rig.list(&alice, MODERN, CacheMode::Refresh, "private", private(1000))
        .await;
    assert!(
        rig.list(&bob, MODERN, CacheMode::Use, "bob's", private(1000))
            .await
            .1
    );
    assert_eq!(
        rig.list(&alice, MODERN, CacheMode::Use, "x", private(1000))
            .await
            .0,
        "private"
    );
}

#[tokio::test]
async fn hints_count_only_on_2026_and_entries_stay_in_their_era() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new(), "s", "p");
    // A handshake-era peer's members mean nothing: not cached without a default life.
    rig.list(&cache, HANDSHAKE, CacheMode::Use, "old", public(1000))
        .await;
    assert!(
        rig.list(&cache, HANDSHAKE, CacheMode::Use, "old", public(1000))
            .await
            .1
    );
    let cache = rig.cache(
        CacheConfig::new().default_ttl(Duration::from_secs(1)),
        "s",
        "p",
    );
    rig.list(&cache, HANDSHAKE, CacheMode::Use, "old", public(1000))
        .await;
    assert!(
        !rig.list(&cache, HANDSHAKE, CacheMode::Use, "x", public(1000))
            .await
            .1
    );
    // … and private there: another principal does not get it.
    let other = rig.cache(CacheConfig::new(), "s", "q");
    assert!(
        rig.list(&other, HANDSHAKE, CacheMode::Use, "x", public(1000))
            .await
            .1
    );
    // A 2026 session does not get the 2025 entry.
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "new", private(1000))
            .await,
        ("new".into(), true)
    );
}

#[tokio::test]
async fn refresh_replaces_and_bypass_leaves_the_entry() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new(), "s", "p");
    rig.list(&cache, MODERN, CacheMode::Use, "v1", private(1000))
        .await;
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Bypass, "v2", private(1000))
            .await,
        ("v2".into(), true)
    );
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "x", private(1000))
            .await
            .0,
        "v1"
    );
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Refresh, "v3", private(1000))
            .await,
        ("v3".into(), true)
    );
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "x", private(1000))
            .await
            .0,
        "v3"
    );
    // A refresh the server says not to cache drops the entry it superseded.
    rig.list(&cache, MODERN, CacheMode::Refresh, "v4", private(0))
        .await;
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v5", private(0))
            .await,
        ("v5".into(), true)
    );
}

#[tokio::test]
async fn an_oversized_result_is_not_cached() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new().max_entry_bytes(8), "s", "p");
    rig.list(&cache, MODERN, CacheMode::Use, "123456789", private(1000))
        .await;
    assert!(rig.store.is_empty());
    assert_eq!(cache.stats().not_stored, 1);
    rig.list(&cache, MODERN, CacheMode::Use, "12345", private(1000))
        .await;
    assert_eq!(rig.store.len(), 1);
}

#[tokio::test]
async fn an_invalidation_drops_the_entry_and_what_was_in_flight() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new(), "s", "p");
    rig.list(&cache, MODERN, CacheMode::Use, "v1", public(1000))
        .await;
    cache.invalidate_list("tools/list");
    assert!(rig.store.is_empty());
    // A notification that lands while the request is out: its result may predate the
    // change, so it is served but not stored.
    let served = cache
        .fetch(("tools/list", ""), MODERN, CacheMode::Use, || async {
            cache.invalidate_list("tools/list");
            Ok(Fetched {
                value: "v2".to_owned(),
                hints: public(1000),
                storable: true,
            })
        })
        .await
        .unwrap();
    assert_eq!(served.value, "v2");
    assert!(rig.store.is_empty());
    assert!(
        rig.list(&cache, MODERN, CacheMode::Use, "v3", public(1000))
            .await
            .1
    );
    assert!(
        !rig.list(&cache, MODERN, CacheMode::Use, "v4", public(1000))
            .await
            .1
    );
    // Other targets are untouched; a resource is dropped by its URI.
    cache.invalidate_resource("file:///other");
    assert!(
        !rig.list(&cache, MODERN, CacheMode::Use, "v4", public(1000))
            .await
            .1
    );
    cache.clear().await.unwrap();
    assert!(
        rig.list(&cache, MODERN, CacheMode::Use, "v5", public(1000))
            .await
            .1
    );
}

#[tokio::test]
async fn a_result_reached_through_input_rounds_is_not_stored() {
    let rig = Rig::new();
    let cache = rig.cache(CacheConfig::new(), "s", "p");
    cache
        .fetch(
            ("resources/read", "file:///a"),
            MODERN,
            CacheMode::Use,
            || async {
                Ok(Fetched {
                    value: 1,
                    hints: public(1000),
                    storable: false,
                })
            },
        )
        .await
        .unwrap();
    assert!(rig.store.is_empty());
}

/// A store that fails every operation.
struct Broken;

impl CacheStore for Broken {
    fn get<'a>(&'a self, _: &'a CacheKey) -> BoxFuture<'a, Result<Option<CacheEntry>, StoreError>> {
        Box::pin(async { Err("down".into()) })
    }
    fn set(&self, _: CacheKey, _: CacheEntry) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Err("down".into()) })
    }
    fn delete<'a>(&'a self, _: &'a CacheKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err("down".into()) })
    }
    fn clear(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async { Err("down".into()) })
    }
}

#[tokio::test]
async fn a_failing_store_makes_misses_not_failed_calls() {
    let rig = Rig::new();
    let config = CacheConfig::new().clock(rig.clock.clone());
    let cache = ResponseCache::new(&config, Arc::new(Broken), "s".into(), "p".into(), 1);
    for _ in 0..2 {
        assert_eq!(
            rig.list(&cache, MODERN, CacheMode::Use, "v", public(1000))
                .await,
            ("v".into(), true)
        );
    }
    cache.invalidate_list("tools/list");
    assert!(cache.clear().await.is_err());
}

/// A store that hands back copies (as a store that serializes does): hits decode the JSON.
struct Copying(MemoryCacheStore);

impl CacheStore for Copying {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
    ) -> BoxFuture<'a, Result<Option<CacheEntry>, StoreError>> {
        Box::pin(async move {
            Ok(self.0.get(key).await?.map(|mut entry| {
                entry.value = entry.value.to_string().into();
                entry
            }))
        })
    }
    fn set(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, Result<(), StoreError>> {
        self.0.set(key, entry)
    }
    fn delete<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.delete(key)
    }
    fn clear(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.0.clear()
    }
}

#[tokio::test]
async fn a_store_that_copies_values_is_decoded_on_a_hit() {
    let rig = Rig::new();
    let config = CacheConfig::new().clock(rig.clock.clone());
    let store = Arc::new(Copying(MemoryCacheStore::new()));
    let cache = ResponseCache::new(&config, store, "s".into(), "p".into(), 1);
    rig.list(&cache, MODERN, CacheMode::Use, "v1", private(1000))
        .await;
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v2", private(1000))
            .await,
        ("v1".into(), false)
    );
    rig.list(&cache, MODERN, CacheMode::Refresh, "v3", private(1000))
        .await;
    assert_eq!(
        rig.list(&cache, MODERN, CacheMode::Use, "v4", private(1000))
            .await,
        ("v3".into(), false)
    );
}
