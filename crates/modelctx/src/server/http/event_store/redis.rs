//! [`RedisEventStore`]: the events of resumable streams in Redis.

use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;

use super::{EventStore, EventStoreError, StoredEvent};
use crate::redis_link::RedisLink;

/// The events of resumable streams in Redis: one list `<prefix>:<stream>` per stream, each
/// entry `<seq> <message>`. An append pushes, trims the list to its newest
/// `max_events_per_stream` entries and sets the list's expiry to the retention, in one atomic
/// transaction, so Redis forgets a stream `retention` after its last event.
///
/// Events survive a restart of the instance that wrote them (not of Redis, unless it persists),
/// which matters for `GET` streams resumed after a deployment. A command that fails or takes
/// longer than the connection's response timeout fails the append (logged; the open stream
/// still gets the event) or the resumption (503).
#[derive(Clone)]
pub struct RedisEventStore {
    link: RedisLink,
    max_events_per_stream: usize,
    retention: Duration,
}

impl std::fmt::Debug for RedisEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.link.debug("RedisEventStore", f)
    }
}

impl RedisEventStore {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`); keys start with `prefix` (e.g.
    /// `mcp-events`). Keeps 1 024 events per stream for 5 minutes after its last event.
    ///
    /// # Errors
    /// An invalid URL, or Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, EventStoreError> {
        let link = RedisLink::connect(url, prefix)
            .await
            .map_err(EventStoreError::new)?;
        Ok(Self {
            link,
            max_events_per_stream: 1_024,
            retention: Duration::from_secs(5 * 60),
        })
    }

    /// Keeps at most `events` events per stream.
    #[must_use]
    pub fn max_events_per_stream(mut self, events: usize) -> Self {
        self.max_events_per_stream = events.max(1);
        self
    }

    /// Keeps a stream this long after its last event (at least a millisecond).
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention.max(Duration::from_millis(1));
        self
    }

    async fn push(&self, stream: &str, seq: u64, message: &[u8]) -> redis::RedisResult<()> {
        let key = self.link.key(stream);
        let mut entry = Vec::with_capacity(message.len() + 21);
        entry.extend_from_slice(seq.to_string().as_bytes());
        entry.push(b' ');
        entry.extend_from_slice(message);
        let keep = i64::try_from(self.max_events_per_stream).unwrap_or(i64::MAX);
        let millis = u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX);
        let mut connection = self.link.connection.clone();
        redis::pipe()
            .atomic()
            .cmd("RPUSH")
            .arg(&key)
            .arg(entry)
            .ignore()
            .cmd("LTRIM")
            .arg(&key)
            .arg(-keep)
            .arg(-1)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(millis)
            .ignore()
            .query_async(&mut connection)
            .await
    }

    async fn range(&self, stream: &str, seq: u64) -> redis::RedisResult<Vec<StoredEvent>> {
        let mut connection = self.link.connection.clone();
        let entries: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(self.link.key(stream))
            .arg(0)
            .arg(-1)
            .query_async(&mut connection)
            .await?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| parse_entry(&entry))
            .filter(|event| event.seq > seq)
            .collect())
    }
}

/// `<seq> <message>`; `None` for an entry not written by this store.
fn parse_entry(entry: &[u8]) -> Option<StoredEvent> {
    let space = entry.iter().position(|&b| b == b' ')?;
    let seq = std::str::from_utf8(&entry[..space]).ok()?.parse().ok()?;
    Some(StoredEvent {
        seq,
        message: Bytes::copy_from_slice(&entry[space + 1..]),
    })
}

impl EventStore for RedisEventStore {
    fn append<'a>(
        &'a self,
        stream: &'a str,
        seq: u64,
        message: &'a [u8],
    ) -> BoxFuture<'a, Result<(), EventStoreError>> {
        Box::pin(async move {
            self.push(stream, seq, message)
                .await
                .map_err(EventStoreError::new)
        })
    }

    fn after<'a>(
        &'a self,
        stream: &'a str,
        seq: u64,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, EventStoreError>> {
        Box::pin(async move { self.range(stream, seq).await.map_err(EventStoreError::new) })
    }
}

#[cfg(test)]
mod tests {
    use modelctx_test_support::redis::{Persistence, Redis};

    use super::*;

    #[test]
    fn entries_that_are_not_ours_are_skipped() {
        assert_eq!(parse_entry(b"12 {}").map(|e| e.seq), Some(12));
        assert_eq!(parse_entry(b"0 ").map(|e| e.message.len()), Some(0));
        assert!(parse_entry(b"x {}").is_none());
        assert!(parse_entry(b"12").is_none());
    }

    /// The store's contract on a real Redis: events after a number in order, the newest kept
    /// per stream, streams apart, and a stream forgotten once its retention is over.
    #[tokio::test]
    async fn keeps_replays_and_forgets_streams() {
        let redis = Redis::start(Persistence::Off).await;
        let store = RedisEventStore::connect(&redis.url, "events")
            .await
            .unwrap()
            .max_events_per_stream(3);
        for seq in 0..5 {
            store
                .append("s1", seq, format!("m{seq}").as_bytes())
                .await
                .unwrap();
        }
        store.append("s2", 0, b"").await.unwrap();
        let events = store.after("s1", 2).await.unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(events[1].message, Bytes::from_static(b"m4"));
        assert_eq!(store.after("s1", 0).await.unwrap().len(), 3, "trimmed to 3");
        assert!(store.after("s2", 0).await.unwrap().is_empty());
        assert!(store.after("unknown", 0).await.unwrap().is_empty());

        let short = store.clone().retention(Duration::from_millis(1));
        short.append("s3", 1, b"x").await.unwrap();
        // Redis expires the key on its own clock; poll (bounded) rather than sleep a guess.
        let mut forgotten = false;
        for _ in 0..10_000 {
            if short.after("s3", 0).await.unwrap().is_empty() {
                forgotten = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(forgotten, "the stream expired in Redis");
    }
}
