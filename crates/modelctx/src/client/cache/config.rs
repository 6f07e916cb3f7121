//! [`CacheConfig`]: how a client's response cache is set up.

use std::sync::Arc;
use std::time::Duration;

use super::store::{CacheClock, CacheStore, MemoryCacheStore, SystemClock};

/// The longest a result is kept, whatever `ttlMs` says: 24 hours.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How a [`Client`](crate::client::Client)'s response cache is set up
/// ([`ClientBuilder::cache`](crate::client::ClientBuilder::cache)); see the
/// [module docs](super).
#[derive(Clone)]
pub struct CacheConfig {
    pub(crate) store: Option<Arc<dyn CacheStore>>,
    pub(crate) principal: Option<Arc<str>>,
    pub(crate) server_id: Option<Arc<str>>,
    pub(crate) default_ttl: Duration,
    pub(crate) share_public: bool,
    pub(crate) max_entry_bytes: usize,
    pub(crate) clock: Arc<dyn CacheClock>,
}

impl std::fmt::Debug for CacheConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheConfig")
            .field("shared_store", &self.store.is_some())
            .field("principal", &self.principal.is_some())
            .field("server_id", &self.server_id)
            .field("default_ttl", &self.default_ttl)
            .field("share_public", &self.share_public)
            .field("max_entry_bytes", &self.max_entry_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl CacheConfig {
    /// The default: a [`MemoryCacheStore`] of the client's own (1024 entries, 16 MiB), the
    /// server's `ttlMs` honoured (results without one are not cached), entries up to 1 MiB.
    pub fn new() -> Self {
        Self {
            store: None,
            principal: None,
            server_id: None,
            default_ttl: Duration::ZERO,
            share_public: true,
            max_entry_bytes: 1 << 20,
            clock: Arc::new(SystemClock),
        }
    }

    /// Keeps entries in `store` instead of a store of the client's own.
    #[must_use]
    pub fn store(self, store: impl CacheStore) -> Self {
        self.shared_store(Arc::new(store))
    }

    /// Keeps entries in `store`, which other clients may share: their `public` results for the
    /// same server are served to each other, and private ones to clients of the same
    /// [`principal`](Self::principal). A client on stdio or any byte stream needs a
    /// [`server_id`](Self::server_id) to share a store (connecting fails without one): only an
    /// HTTP URL names its server by itself.
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn CacheStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The authorization context this client acts in, which partitions its `private` results.
    /// Derive it from a verified identity (a user id, the subject of a token you checked) —
    /// never from a secret itself, which a store may keep, nor from what the server says.
    /// Without it each client is a principal of its own: its private results are never served
    /// to another client. Fixed for the client's life: build another client when the principal
    /// changes.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into().into());
        self
    }

    /// The server's identity in cache keys. An HTTP client uses its URL (without user info)
    /// unless this is set; other transports have none of their own.
    #[must_use]
    pub fn server_id(mut self, id: impl Into<String>) -> Self {
        self.server_id = Some(id.into().into());
        self
    }

    /// How long a result without a `ttlMs` hint is kept (default zero: not cached). Handshake-era
    /// (2025-11-25) results never carry hints, so this is what caches them. At most [`MAX_TTL`].
    #[must_use]
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl.min(MAX_TTL);
        self
    }

    /// Whether results the server scoped `public` are shared by every principal of the server
    /// in a shared store (default true, as the spec allows). False keeps every result in its
    /// principal's partition: a server that mislabels a private result cannot leak it then.
    #[must_use]
    pub fn share_public(mut self, share: bool) -> Self {
        self.share_public = share;
        self
    }

    /// The largest result stored, in bytes of JSON (default 1 MiB); larger ones are not cached.
    #[must_use]
    pub fn max_entry_bytes(mut self, bytes: usize) -> Self {
        self.max_entry_bytes = bytes;
        self
    }

    /// The clock freshness is read from (default the system clock).
    #[must_use]
    pub fn clock(mut self, clock: impl CacheClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The store to use: the configured one, or a new one of the client's own.
    pub(crate) fn store_or_default(&self) -> (Arc<dyn CacheStore>, bool) {
        match &self.store {
            Some(store) => (Arc::clone(store), true),
            None => (Arc::new(MemoryCacheStore::new()), false),
        }
    }
}
