//! [`ResponseCache`]: serving the cacheable methods from a [`CacheStore`] as the server's hints
//! allow — freshness from `ttlMs`, sharing from `cacheScope`, one era's entries never served to
//! another — and invalidating what the server's notifications make stale (through a route of
//! the client's core, [`CacheRoute`]).

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use futures::FutureExt as _;
use modelctx_types::jsonrpc::Notification;
use modelctx_types::{CacheScope, Era, ProtocolVersion};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::config::{CacheConfig, MAX_TTL};
use super::mode::CacheMode;
use super::notifications::{Target, stale_targets};
use super::store::{Arm, CacheClock, CacheEntry, CacheKey, CacheStore};
use crate::client::error::ClientError;
use crate::client::shared::Route;
use crate::sync::lock;

/// How many invalidated targets are remembered exactly (for the race between a fetch and a
/// notification); older ones are summed up in one floor, which errs towards not storing.
const MAX_GUARDS: usize = 4096;
/// How many deletes of a store whose futures are not ready at once may run in the background;
/// past it an invalidation's delete is dropped (the entry ages out) and logged.
const MAX_BACKGROUND_DELETES: usize = 256;
/// The longest params (a URI) a result is cached under; longer ones always go to the server.
const MAX_PARAMS_BYTES: usize = 4096;
/// How many decoded results (and how many bytes of their JSON) the cache keeps beside its own
/// entries, so that a hit on an entry it wrote clones the result instead of decoding it.
const MEMO_ENTRIES: usize = 64;
const MEMO_BYTES: usize = 4 << 20;

/// What the server said about a result's caching (over all the pages of a listing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hints {
    /// `ttlMs`, when every page had one: the smallest.
    pub(crate) ttl_ms: Option<u64>,
    /// Whether every page was `cacheScope: "public"`.
    pub(crate) public: bool,
}

impl Hints {
    /// The hints of one result.
    pub(crate) fn of(ttl_ms: Option<u64>, scope: Option<&CacheScope>) -> Self {
        Self {
            ttl_ms,
            public: scope == Some(&CacheScope::PUBLIC),
        }
    }

    /// The hints of a listing of several pages: the shortest life, the narrowest scope.
    pub(crate) fn and(self, page: Self) -> Self {
        Self {
            ttl_ms: match (self.ttl_ms, page.ttl_ms) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            },
            public: self.public && page.public,
        }
    }
}

/// A result from the server, and whether it may be stored at all (a result reached through
/// input-required rounds never is).
pub(crate) struct Fetched<T> {
    pub(crate) value: T,
    pub(crate) hints: Hints,
    pub(crate) storable: bool,
}

/// A result as served, and whether it was another client's entry (a shared store).
pub(crate) struct Served<T> {
    pub(crate) value: T,
    pub(crate) foreign: bool,
}

/// What the cache did so far (see [`ResponseCache::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Calls served from the cache.
    pub hits: u64,
    /// Calls in `Use` or `Refresh` mode that went to the server.
    pub misses: u64,
    /// Results stored.
    pub stored: u64,
    /// Results not stored: no `ttlMs` (or zero), too large, or reached through input rounds.
    pub not_stored: u64,
    /// Targets invalidated (by notifications, or by hand).
    pub invalidations: u64,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
    not_stored: AtomicU64,
    invalidations: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// When each target was last invalidated, in a counter of invalidations: a fetch that started
/// before a target's latest invalidation must not store what it fetched.
#[derive(Default)]
struct Guards {
    next: u64,
    invalidated: HashMap<Target, u64>,
    order: VecDeque<Target>,
    /// The latest invalidation of every target no longer remembered.
    floor: u64,
}

impl Guards {
    fn moved(&self, target: &Target, since: u64) -> bool {
        self.invalidated
            .get(target)
            .copied()
            .unwrap_or(0)
            .max(self.floor)
            > since
    }

    fn invalidate(&mut self, target: Target) {
        self.next += 1;
        if let Some(at) = self.invalidated.get_mut(&target) {
            *at = self.next;
            return;
        }
        if self.order.len() >= MAX_GUARDS
            && let Some(oldest) = self.order.pop_front()
            && let Some(at) = self.invalidated.remove(&oldest)
        {
            self.floor = self.floor.max(at);
        }
        self.order.push_back(target.clone());
        self.invalidated.insert(target, self.next);
    }
}

/// The decoded results of the entries this cache wrote, by target: valid while the store
/// hands back the very value it was given (the in-memory store does; a store that copies
/// values decodes on every hit).
#[derive(Default)]
struct Memo {
    decoded: HashMap<Target, (Arc<str>, Arc<dyn Any + Send + Sync>)>,
    order: VecDeque<Target>,
    bytes: usize,
}

impl Memo {
    fn get<T: Clone + 'static>(&self, target: &Target, value: &Arc<str>) -> Option<T> {
        let (json, decoded) = self.decoded.get(target)?;
        if !Arc::ptr_eq(json, value) {
            return None;
        }
        decoded.downcast_ref::<T>().cloned()
    }

    fn remove(&mut self, target: &Target) {
        if let Some((json, _)) = self.decoded.remove(target) {
            self.bytes -= json.len();
            self.order.retain(|kept| kept != target);
        }
    }

    fn insert(&mut self, target: Target, json: Arc<str>, decoded: Arc<dyn Any + Send + Sync>) {
        self.remove(&target);
        self.bytes += json.len();
        self.order.push_back(target.clone());
        self.decoded.insert(target, (json, decoded));
        while self.decoded.len() > MEMO_ENTRIES || self.bytes > MEMO_BYTES {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some((json, _)) = self.decoded.remove(&oldest) {
                self.bytes -= json.len();
            }
        }
    }
}

/// A client's response cache (see the [module docs](super)): reached through
/// [`Client::cache`](crate::client::Client::cache) for its counters and to invalidate by hand.
pub struct ResponseCache {
    store: Arc<dyn CacheStore>,
    clock: Arc<dyn CacheClock>,
    server: Arc<str>,
    principal: Arc<str>,
    share_public: bool,
    default_ttl_ms: u64,
    max_entry_bytes: usize,
    /// This instance, as the writer of its entries.
    writer: u64,
    guards: Mutex<Guards>,
    memo: Mutex<Memo>,
    background_deletes: Arc<AtomicUsize>,
    counters: Counters,
}

impl std::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseCache")
            .field("server", &self.server)
            .field("share_public", &self.share_public)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl ResponseCache {
    /// A cache for one client of `server`, acting as `principal`.
    pub(crate) fn new(
        config: &CacheConfig,
        store: Arc<dyn CacheStore>,
        server: Arc<str>,
        principal: Arc<str>,
        writer: u64,
    ) -> Self {
        Self {
            store,
            clock: Arc::clone(&config.clock),
            server,
            principal,
            share_public: config.share_public,
            default_ttl_ms: u64::try_from(config.default_ttl.as_millis()).unwrap_or(u64::MAX),
            max_entry_bytes: config.max_entry_bytes,
            writer,
            guards: Mutex::new(Guards::default()),
            memo: Mutex::new(Memo::default()),
            background_deletes: Arc::new(AtomicUsize::new(0)),
            counters: Counters::default(),
        }
    }

    /// What the cache did so far.
    pub fn stats(&self) -> CacheStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CacheStats {
            hits: get(&self.counters.hits),
            misses: get(&self.counters.misses),
            stored: get(&self.counters.stored),
            not_stored: get(&self.counters.not_stored),
            invalidations: get(&self.counters.invalidations),
        }
    }

    /// Drops the cached listing of `method` (`tools/list`, `prompts/list`, `resources/list`,
    /// `resources/templates/list`), as a `list_changed` notification does.
    pub fn invalidate_list(&self, method: &str) {
        use modelctx_types::Method as _;
        use modelctx_types::methods::{
            ListPrompts, ListResourceTemplates, ListResources, ListTools,
        };
        let known = [
            ListTools::NAME,
            ListPrompts::NAME,
            ListResources::NAME,
            ListResourceTemplates::NAME,
        ];
        if let Some(method) = known.into_iter().find(|known| *known == method) {
            self.invalidate((method, String::new()));
        }
    }

    /// Drops the cached contents of resource `uri`, as `notifications/resources/updated` does.
    pub fn invalidate_resource(&self, uri: &str) {
        use modelctx_types::Method as _;
        self.invalidate((modelctx_types::methods::ReadResource::NAME, uri.to_owned()));
    }

    /// Empties the store — every client's entries when it is shared.
    ///
    /// # Errors
    /// The store's.
    pub async fn clear(&self) -> Result<(), super::store::StoreError> {
        {
            // Fetches in flight do not store what they fetched before the clear.
            let mut guards = lock(&self.guards);
            guards.next += 1;
            guards.floor = guards.next;
        }
        self.store.clear().await
    }

    /// Serves `target` from the cache as `mode` allows, else fetches it with `send` and stores
    /// what the server's hints allow.
    pub(crate) async fn fetch<T, F, Fut>(
        &self,
        target: (&'static str, &str),
        negotiated: (Option<Era>, Option<ProtocolVersion>),
        mode: CacheMode,
        send: F,
    ) -> Result<Served<T>, ClientError>
    where
        T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Fetched<T>, ClientError>>,
    {
        let (method, params) = target;
        let version = negotiated.1.as_ref().map_or("", ProtocolVersion::as_str);
        if mode == CacheMode::Bypass || params.len() > MAX_PARAMS_BYTES {
            return send().await.map(|fetched| Served {
                value: fetched.value,
                foreign: false,
            });
        }
        if mode == CacheMode::Use
            && let Some(served) = self.read(method, params, version).await
        {
            bump(&self.counters.hits);
            return Ok(served);
        }
        bump(&self.counters.misses);
        let since = lock(&self.guards).next;
        let fetched = send().await?;
        let modern = negotiated.0 == Some(Era::Modern);
        self.write((method, params), &fetched, since, mode, version, modern)
            .await;
        Ok(Served {
            value: fetched.value,
            foreign: false,
        })
    }

    fn key(&self, arm: Arm, method: &'static str, params: &str) -> CacheKey {
        let principal = match arm {
            Arm::Public if self.share_public => None,
            _ => Some(Arc::clone(&self.principal)),
        };
        CacheKey {
            server: Arc::clone(&self.server),
            arm,
            principal,
            method,
            params: params.to_owned(),
        }
    }

    /// A fresh entry of this era: the principal's own first, then the shared one.
    async fn read<T: DeserializeOwned + Clone + 'static>(
        &self,
        method: &'static str,
        params: &str,
        version: &str,
    ) -> Option<Served<T>> {
        // A background delete may still be on its way: what it deletes must not be served.
        if self.background_deletes.load(Ordering::Acquire) > 0 {
            return None;
        }
        let now = self.clock.now_ms();
        for arm in [Arm::Private, Arm::Public] {
            let key = self.key(arm, method, params);
            let entry = match self.store.get(&key).await {
                Ok(Some(entry)) => entry,
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(%error, "the response cache store failed; a miss");
                    return None;
                }
            };
            // Stale (a later private entry does not shadow a fresh public one, after the
            // server changed the scope), of another era, or a shared entry the server scoped
            // private: not served.
            if entry.expires_at_ms <= now
                || *entry.version != *version
                || (arm == Arm::Public && !entry.public)
            {
                continue;
            }
            let foreign = entry.writer != self.writer;
            let target = (method, params.to_owned());
            if let Some(value) = lock(&self.memo).get::<T>(&target, &entry.value) {
                return Some(Served { value, foreign });
            }
            match serde_json::from_str(&entry.value) {
                Ok(value) => {
                    return Some(Served { value, foreign });
                }
                Err(error) => tracing::debug!(%error, method, "an unreadable cache entry; a miss"),
            }
        }
        None
    }

    /// The life and sharing the hints allow: hints count only on 2026-07-28 (a handshake-era
    /// peer may send the same members, unspecified there); at most [`MAX_TTL`].
    fn resolve(&self, hints: &Hints, modern: bool) -> (u64, bool) {
        let ttl_ms = match hints.ttl_ms {
            Some(ttl) if modern => ttl,
            _ => self.default_ttl_ms,
        };
        let max = u64::try_from(MAX_TTL.as_millis()).unwrap_or(u64::MAX);
        (ttl_ms.min(max), modern && hints.public)
    }

    async fn write<T: Serialize + Clone + Send + Sync + 'static>(
        &self,
        target: (&'static str, &str),
        fetched: &Fetched<T>,
        since: u64,
        mode: CacheMode,
        version: &str,
        modern: bool,
    ) {
        let (method, params) = target;
        let target_key = (method, params.to_owned());
        // A notification arrived while the request was out: what it fetched may predate it.
        if lock(&self.guards).moved(&target_key, since) {
            bump(&self.counters.not_stored);
            return;
        }
        let (ttl_ms, public) = self.resolve(&fetched.hints, modern);
        let private_key = self.key(Arm::Private, method, params);
        let public_key = self.key(Arm::Public, method, params);
        let json = if ttl_ms > 0 && fetched.storable {
            serde_json::to_string(&fetched.value)
                .ok()
                .filter(|json| json.len() <= self.max_entry_bytes)
        } else {
            None
        };
        let Some(json) = json else {
            bump(&self.counters.not_stored);
            if mode == CacheMode::Refresh {
                // The refetch superseded what was cached.
                self.delete(&private_key).await;
                self.delete(&public_key).await;
            }
            return;
        };
        let (own, opposite) = if public {
            (public_key, private_key)
        } else {
            (private_key, public_key)
        };
        // Never two arms answering for one target: the other goes first, and a failure there
        // stores nothing.
        if !self.delete(&opposite).await {
            self.delete(&own).await;
            bump(&self.counters.not_stored);
            return;
        }
        let json: Arc<str> = json.into();
        let entry = CacheEntry {
            value: Arc::clone(&json),
            version: version.into(),
            public,
            expires_at_ms: self.clock.now_ms().saturating_add(ttl_ms),
            writer: self.writer,
        };
        if let Err(error) = self.store.set(own.clone(), entry).await {
            tracing::warn!(%error, "the response cache store failed; nothing stored");
            self.delete(&own).await;
            bump(&self.counters.not_stored);
            return;
        }
        // An invalidation may have landed while the store wrote.
        if lock(&self.guards).moved(&target_key, since) {
            self.delete(&own).await;
            bump(&self.counters.not_stored);
            return;
        }
        lock(&self.memo).insert(target_key, json, Arc::new(fetched.value.clone()));
        bump(&self.counters.stored);
    }

    async fn delete(&self, key: &CacheKey) -> bool {
        match self.store.delete(key).await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "the response cache store failed to delete");
                false
            }
        }
    }

    /// Invalidates `target` now: fetches in flight will not store it, and its entries are
    /// deleted — at once with a store whose futures are ready (the in-memory one), else in the
    /// background (reads miss until that is done).
    pub(crate) fn invalidate(&self, target: Target) {
        bump(&self.counters.invalidations);
        let (method, params) = (target.0, target.1.clone());
        lock(&self.memo).remove(&target);
        lock(&self.guards).invalidate(target);
        for arm in [Arm::Private, Arm::Public] {
            let key = self.key(arm, method, &params);
            let store = Arc::clone(&self.store);
            let mut delete = Box::pin(async move { store.delete(&key).await });
            match (&mut delete).now_or_never() {
                Some(Ok(())) => {}
                Some(Err(error)) => {
                    tracing::warn!(%error, "the response cache store failed to delete");
                }
                None => self.delete_in_background(delete),
            }
        }
    }

    fn delete_in_background(
        &self,
        delete: std::pin::Pin<
            Box<dyn Future<Output = Result<(), super::store::StoreError>> + Send>,
        >,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let pending = Arc::clone(&self.background_deletes);
        if pending.fetch_add(1, Ordering::AcqRel) >= MAX_BACKGROUND_DELETES {
            pending.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!("too many response cache deletes pending; an entry is left to age out");
            return;
        }
        runtime.spawn(async move {
            if let Err(error) = delete.await {
                tracing::warn!(%error, "the response cache store failed to delete");
            }
            pending.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// The cache's share of the server's notifications: it looks at every one first and takes
/// none, so a subscription or callback still gets it.
#[derive(Default)]
pub(crate) struct CacheRoute {
    cache: OnceLock<Weak<ResponseCache>>,
}

impl CacheRoute {
    /// Invalidates `cache` from now on (once per connection).
    pub(crate) fn attach(&self, cache: &Arc<ResponseCache>) {
        let _ = self.cache.set(Arc::downgrade(cache));
    }
}

impl Route for CacheRoute {
    /// Before the subscriptions: a subscriber that refetches on an event finds the entry gone.
    fn order(&self) -> u8 {
        0
    }

    fn route(&self, notification: &Notification) -> bool {
        if let Some(cache) = self.cache.get().and_then(Weak::upgrade) {
            for target in stale_targets(notification) {
                cache.invalidate(target);
            }
        }
        false
    }
}
