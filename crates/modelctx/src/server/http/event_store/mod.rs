//! Where the events of resumable handshake-era streams are kept ([`EventStore`]), so that a
//! client whose stream broke gets what it missed when it reconnects with `Last-Event-ID`
//! (2025-11-25 streamable HTTP, "Resumability and Redelivery"; revision 2026-07-28 removed it).
//!
//! The store is a plain log per stream: the endpoint names each stream, numbers its events and
//! mints the event ids it sends (`<stream>:<number>`), checks that a `Last-Event-ID` names a
//! stream of the session that presents it, and asks the store only for "the events of this
//! stream after that number". A store keeps each stream's newest events, bounded, and forgets
//! streams some time after their last event. [`MemoryEventStore`] keeps them in this process;
//! `RedisEventStore` (feature `events-redis`) in Redis, for a fleet whose proxy sends a session
//! back to the same instance but whose instances restart or move.

use bytes::Bytes;
use futures::future::BoxFuture;

mod memory;
#[cfg(feature = "events-redis")]
mod redis;

pub use memory::{MemoryEventStore, MemoryEventStoreLimits};
#[cfg(feature = "events-redis")]
pub use redis::RedisEventStore;

/// One event as a store keeps it: its number in its stream and the JSON-RPC message it carried
/// (empty for the priming event that opens a stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The event's number in its stream: 0 for the priming event, then 1, 2, … in order.
    pub seq: u64,
    /// The encoded JSON-RPC message (a single line of JSON), empty for the priming event.
    pub message: Bytes,
}

/// A store of the events of resumable streams. Implement it to keep events elsewhere (a
/// database, a queue); the endpoint calls it from the task that feeds a stream, one event at a
/// time and in order, and when a client resumes.
///
/// A store may forget: events past its bounds or older than its retention are gone, and a
/// client resuming after them gets the events still kept (a stream's last event, the response,
/// is the newest and so the last one forgotten).
pub trait EventStore: Send + Sync + 'static {
    /// Appends event `seq` of `stream` (`seq` grows by one from 0 for each stream).
    ///
    /// # Errors
    /// The store cannot keep the event; the endpoint still sends it on the open stream, and
    /// logs the failure (a resumption then misses it).
    fn append<'a>(
        &'a self,
        stream: &'a str,
        seq: u64,
        message: &'a [u8],
    ) -> BoxFuture<'a, Result<(), EventStoreError>>;

    /// The events of `stream` numbered above `seq` that are still kept, oldest first; empty
    /// when there are none or the stream is unknown.
    ///
    /// # Errors
    /// The store cannot be read; the client's `GET` gets 503 and may retry.
    fn after<'a>(
        &'a self,
        stream: &'a str,
        seq: u64,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, EventStoreError>>;
}

/// A store failed (its backend is unreachable, say).
#[derive(Debug, thiserror::Error)]
#[error("event store: {0}")]
pub struct EventStoreError(pub Box<dyn std::error::Error + Send + Sync>);

impl EventStoreError {
    /// Wraps a backend's error.
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(error.into())
    }
}
