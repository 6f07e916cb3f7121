//! [`MemoryEventStore`]: the events of resumable streams in this process, bounded.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::time::Instant;

use super::{EventStore, EventStoreError, StoredEvent};
use crate::sync::lock;

/// The bounds of a [`MemoryEventStore`]. A client can make a server open streams and fill
/// them (every request it sends may become one), so every dimension is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryEventStoreLimits {
    /// Streams kept at once (default 10 000); a new one past it drops the oldest stream.
    pub max_streams: usize,
    /// Events kept per stream (default 1 024); older ones are dropped first.
    pub max_events_per_stream: usize,
    /// Message bytes kept in all (default 64 MiB); past it the oldest streams are dropped.
    pub max_bytes: usize,
    /// How long a stream is kept after its last event (default 5 minutes): the time a client
    /// has to reconnect.
    pub retention: Duration,
}

impl Default for MemoryEventStoreLimits {
    fn default() -> Self {
        Self {
            max_streams: 10_000,
            max_events_per_stream: 1_024,
            max_bytes: 64 * 1024 * 1024,
            retention: Duration::from_secs(5 * 60),
        }
    }
}

impl MemoryEventStoreLimits {
    /// Keeps at most `streams` streams.
    #[must_use]
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams.max(1);
        self
    }

    /// Keeps at most `events` events per stream.
    #[must_use]
    pub fn max_events_per_stream(mut self, events: usize) -> Self {
        self.max_events_per_stream = events.max(1);
        self
    }

    /// Keeps at most `bytes` message bytes in all.
    #[must_use]
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Keeps a stream this long after its last event.
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }
}

/// The events of resumable streams, kept in this process: right for one server instance (or a
/// fleet whose proxy sends each session to one instance, as handshake-era sessions need
/// anyway), and lost when it restarts. Bounded by [`MemoryEventStoreLimits`].
#[derive(Debug, Default)]
pub struct MemoryEventStore {
    limits: MemoryEventStoreLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    streams: HashMap<String, Log>,
    /// Stream names in the order they were opened: the first to go when a bound is reached.
    /// A name may have been dropped since (skipped then).
    opened: VecDeque<String>,
    bytes: usize,
    next_sweep: Option<Instant>,
}

#[derive(Debug)]
struct Log {
    events: VecDeque<StoredEvent>,
    last_append: Instant,
}

impl MemoryEventStore {
    /// A store with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store with these limits.
    pub fn with_limits(limits: MemoryEventStoreLimits) -> Self {
        Self {
            limits,
            state: Mutex::default(),
        }
    }

    /// How many streams the store holds (for tests and metrics).
    pub fn stream_count(&self) -> usize {
        lock(&self.state).streams.len()
    }

    fn append_now(&self, stream: &str, seq: u64, message: &[u8], now: Instant) {
        let limits = &self.limits;
        if message.len() > limits.max_bytes {
            // An event larger than the whole budget cannot be kept; the stream keeps what it
            // had (a resumption misses this one event).
            return;
        }
        let mut state = lock(&self.state);
        state.sweep_if_due(now, limits.retention);
        if !state.streams.contains_key(stream) {
            while state.streams.len() >= limits.max_streams.max(1) && state.drop_oldest() {}
            state.opened.push_back(stream.to_owned());
            state.streams.insert(
                stream.to_owned(),
                Log {
                    events: VecDeque::new(),
                    last_append: now,
                },
            );
        }
        while state.bytes + message.len() > limits.max_bytes && state.drop_oldest_but(stream) {}
        let State { streams, bytes, .. } = &mut *state;
        let Some(log) = streams.get_mut(stream) else {
            return;
        };
        while log.events.len() >= limits.max_events_per_stream.max(1)
            || (*bytes + message.len() > limits.max_bytes && !log.events.is_empty())
        {
            if let Some(dropped) = log.events.pop_front() {
                *bytes -= dropped.message.len();
            }
        }
        log.events.push_back(StoredEvent {
            seq,
            message: Bytes::copy_from_slice(message),
        });
        log.last_append = now;
        *bytes += message.len();
    }

    fn after_now(&self, stream: &str, seq: u64, now: Instant) -> Vec<StoredEvent> {
        let retention = self.limits.retention;
        let state = lock(&self.state);
        match state.streams.get(stream) {
            Some(log) if now.saturating_duration_since(log.last_append) <= retention => log
                .events
                .iter()
                .filter(|event| event.seq > seq)
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl State {
    /// Drops the stream opened first; false when there is none.
    fn drop_oldest(&mut self) -> bool {
        self.drop_oldest_but("")
    }

    /// Drops the stream opened first other than `keep`; false when there is none.
    fn drop_oldest_but(&mut self, keep: &str) -> bool {
        let mut kept = None;
        while let Some(name) = self.opened.pop_front() {
            if name == keep {
                kept = Some(name);
                continue;
            }
            if let Some(log) = self.streams.remove(&name) {
                self.bytes -= log.bytes();
                if let Some(name) = kept {
                    self.opened.push_front(name);
                }
                return true;
            }
        }
        if let Some(name) = kept {
            self.opened.push_front(name);
        }
        false
    }

    /// Drops the streams past their retention, at most every quarter of it.
    fn sweep_if_due(&mut self, now: Instant, retention: Duration) {
        if self.next_sweep.is_some_and(|due| now < due) {
            return;
        }
        self.next_sweep = now.checked_add(retention / 4);
        let mut freed = 0;
        self.streams.retain(|_, log| {
            let keep = now.saturating_duration_since(log.last_append) <= retention;
            if !keep {
                freed += log.bytes();
            }
            keep
        });
        self.bytes -= freed;
        let streams = &self.streams;
        self.opened.retain(|name| streams.contains_key(name));
    }
}

impl Log {
    fn bytes(&self) -> usize {
        self.events.iter().map(|event| event.message.len()).sum()
    }
}

impl EventStore for MemoryEventStore {
    fn append<'a>(
        &'a self,
        stream: &'a str,
        seq: u64,
        message: &'a [u8],
    ) -> BoxFuture<'a, Result<(), EventStoreError>> {
        self.append_now(stream, seq, message, Instant::now());
        Box::pin(std::future::ready(Ok(())))
    }

    fn after<'a>(
        &'a self,
        stream: &'a str,
        seq: u64,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, EventStoreError>> {
        let events = self.after_now(stream, seq, Instant::now());
        Box::pin(std::future::ready(Ok(events)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(events: &[StoredEvent]) -> Vec<u64> {
        events.iter().map(|event| event.seq).collect()
    }

    #[test]
    fn replays_the_events_after_a_number_in_order() {
        let store = MemoryEventStore::new();
        let now = Instant::now();
        for seq in 0..5 {
            store.append_now("a", seq, format!("m{seq}").as_bytes(), now);
        }
        store.append_now("b", 0, b"other", now);
        let events = store.after_now("a", 2, now);
        assert_eq!(seqs(&events), [3, 4]);
        assert_eq!(events[0].message, Bytes::from_static(b"m3"));
        assert!(store.after_now("a", 4, now).is_empty());
        assert!(store.after_now("unknown", 0, now).is_empty());
    }

    #[test]
    fn keeps_the_newest_events_of_a_stream() {
        let limits = MemoryEventStoreLimits::default().max_events_per_stream(3);
        let store = MemoryEventStore::with_limits(limits);
        let now = Instant::now();
        for seq in 0..10 {
            store.append_now("a", seq, b"x", now);
        }
        assert_eq!(seqs(&store.after_now("a", 0, now)), [7, 8, 9]);
        assert_eq!(lock(&store.state).bytes, 3);
    }

    #[test]
    fn a_new_stream_past_the_bound_drops_the_oldest() {
        let store = MemoryEventStore::with_limits(MemoryEventStoreLimits::default().max_streams(2));
        let now = Instant::now();
        for name in ["a", "b", "c"] {
            store.append_now(name, 1, b"x", now);
        }
        assert_eq!(store.stream_count(), 2);
        assert!(
            store.after_now("a", 0, now).is_empty(),
            "a, the oldest, went"
        );
        assert_eq!(seqs(&store.after_now("c", 0, now)), [1]);
        assert_eq!(lock(&store.state).bytes, 2);
    }

    #[test]
    fn the_byte_budget_drops_other_streams_then_old_events() {
        let store = MemoryEventStore::with_limits(MemoryEventStoreLimits::default().max_bytes(10));
        let now = Instant::now();
        store.append_now("a", 1, b"aaaaaa", now);
        store.append_now("b", 1, b"bbbbbb", now);
        assert_eq!(store.stream_count(), 1, "a went to make room for b");
        store.append_now("b", 2, b"bbbbbb", now);
        assert_eq!(seqs(&store.after_now("b", 0, now)), [2]);
        assert!(lock(&store.state).bytes <= 10);
        store.append_now("b", 3, &[b'z'; 11], now);
        assert_eq!(
            seqs(&store.after_now("b", 0, now)),
            [2],
            "too large to keep"
        );
    }

    #[test]
    fn streams_are_forgotten_after_their_retention() {
        let retention = Duration::from_secs(60);
        let store =
            MemoryEventStore::with_limits(MemoryEventStoreLimits::default().retention(retention));
        let start = Instant::now();
        store.append_now("a", 1, b"x", start);
        assert_eq!(store.after_now("a", 0, start + retention).len(), 1);
        let later = start + retention + Duration::from_secs(1);
        assert!(store.after_now("a", 0, later).is_empty());
        store.append_now("b", 1, b"y", later);
        assert_eq!(store.stream_count(), 1, "the sweep dropped a");
        assert_eq!(lock(&store.state).bytes, 1);
    }
}
