//! The client response cache: results of `tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list` and `resources/read` served again for as long as the server's
//! `ttlMs` says, to whom its `cacheScope` allows.
//!
//! On by default, with a store of the client's own: servers send `ttlMs: 0` unless they know
//! better (ours by default, [`CachePolicy`](crate::server::CachePolicy)), and then nothing is
//! cached. Turn it off with [`ClientBuilder::no_cache`](crate::client::ClientBuilder::no_cache);
//! set it up with [`ClientBuilder::cache`](crate::client::ClientBuilder::cache) and a
//! [`CacheConfig`].
//!
//! * **Freshness**: an entry is served until `ttlMs` has passed (at most [`MAX_TTL`]). A result
//!   without `ttlMs` — every handshake-era (2025-11-25) result — is kept for
//!   [`CacheConfig::default_ttl`] (zero by default: not at all). A listing of several pages is
//!   one entry, as fresh as its shortest-lived page and as shared as its narrowest.
//! * **Who is served what**: keys carry the server (an HTTP URL, or
//!   [`CacheConfig::server_id`]) and, for `private` results, the principal
//!   ([`CacheConfig::principal`]; by default each client is its own). A `public` result is
//!   shared by the clients of the same server in a shared store (unless
//!   [`CacheConfig::share_public`] is off). An entry is never served to a session of another
//!   protocol version, nor for other params.
//! * **Per call**: [`CacheMode`] — `Use` (the default), `Refresh` (ask the server, replace the
//!   entry), `Bypass` (ask the server, leave the cache alone) — through
//!   [`RequestOptions::cache`](crate::client::RequestOptions::cache) and the `*_with` methods
//!   (`client.list_tools_with(RequestOptions::new().cache(CacheMode::Refresh))`). A call with a
//!   progress callback always reaches the server. `resources/read` stores only a result that
//!   came in one round: one reached through input requests (retries with `inputResponses` or
//!   `requestState`) is never cached, nor is a resumed read.
//! * **Invalidation**: `notifications/tools/list_changed` (and prompts, resources — which also
//!   drops the templates) drop the listing, `notifications/resources/updated` the resource; in
//!   both eras, whether they come unsolicited or on a listen stream, and whether or not a
//!   subscription takes them. A listen stream's acknowledgement drops what it follows: changes
//!   before it were told to nobody. A fetch in flight when its target is invalidated does not
//!   store its result.
//! * **Bounds**: [`MemoryCacheStore`] holds at most 1024 entries and 16 MiB, least recently
//!   used first out; a result over [`CacheConfig::max_entry_bytes`] (1 MiB) is not stored.
//! * **Stores**: [`CacheStore`] is four async operations on [`CacheKey`] / [`CacheEntry`]; a
//!   failing store makes a miss, never a failed call.
//!
//! ```no_run
//! use modelctx::client::cache::{CacheConfig, CacheMode};
//! use modelctx::client::{Client, RequestOptions};
//!
//! # async fn demo() -> Result<(), modelctx::client::ClientError> {
//! let client = Client::builder()
//!     .cache(CacheConfig::new().principal("user-42"))
//!     .connect_http("http://127.0.0.1:8000/mcp")
//!     .await?;
//! let tools = client.list_tools().await?; // from the server
//! let again = client.list_tools().await?; // from the cache, while the server's ttlMs lasts
//! let fresh = client
//!     .list_tools_with(RequestOptions::new().cache(CacheMode::Refresh))
//!     .await?;
//! # drop((tools, again, fresh));
//! println!("{:?}", client.cache().map(|cache| cache.stats()));
//! # Ok(()) }
//! ```

mod config;
pub(crate) mod mode;
mod notifications;
mod response_cache;
mod store;

pub use config::{CacheConfig, MAX_TTL};
pub use mode::CacheMode;
pub(crate) use response_cache::{CacheRoute, Fetched, Hints, Served};
pub use response_cache::{CacheStats, ResponseCache};
pub use store::{
    Arm, CacheClock, CacheEntry, CacheKey, CacheStore, MemoryCacheStore, StoreError, SystemClock,
};
#[cfg(test)]
mod tests;
