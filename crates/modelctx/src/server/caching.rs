//! The caching hints (`ttlMs`, `cacheScope`) a server puts on its cacheable results: settings
//! the builder takes and routing reads, with no knowledge of either.

use modelctx_types::CacheScope;

/// Caching hints (`ttlMs`, `cacheScope`) for one kind of result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachePolicy {
    /// How long the result may be reused, in milliseconds (0: revalidate every time).
    pub ttl_ms: u64,
    /// Who may cache it.
    pub scope: CacheScope,
}

impl CachePolicy {
    /// A policy.
    pub fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        Self { ttl_ms, scope }
    }
}

impl Default for CachePolicy {
    /// `ttlMs: 0`, `cacheScope: "private"`: always correct, whatever the server does per user;
    /// raise it when your lists are static and the same for everyone.
    fn default() -> Self {
        Self {
            ttl_ms: 0,
            scope: CacheScope::PRIVATE,
        }
    }
}

/// Caching hints per kind of cacheable result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caching {
    /// `server/discover`.
    pub discover: CachePolicy,
    /// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`.
    pub lists: CachePolicy,
    /// `resources/read`, unless the handler set its own.
    pub reads: CachePolicy,
}
