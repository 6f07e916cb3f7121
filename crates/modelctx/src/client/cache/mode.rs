//! The per-call cache mode: a leaf, so that [`RequestOptions`](super::super::RequestOptions)
//! (in the session, below the cache) can carry it.

/// How one call uses the client's response cache (see [`cache`](super)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CacheMode {
    /// Serve a fresh cached result when there is one; otherwise ask the server and store what
    /// it allows. The default.
    #[default]
    Use,
    /// Always ask the server, and store (or drop) what it answers: the cached entry is replaced.
    Refresh,
    /// Always ask the server and leave the cache as it is.
    Bypass,
}
