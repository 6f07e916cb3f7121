//! The change bus: how a change announced on one server instance reaches the listen streams
//! (and 2025-11-25 sessions) held by every other instance of a fleet.
//!
//! Without a bus, [`Server::notify`](super::Server::notify) feeds a broadcast channel inside the
//! process and nothing else happens (no cost, no task). With one
//! ([`ServerBuilder::bus`](super::ServerBuilder::bus)), every change — `notify`, a tool, prompt
//! or resource added or removed at run time, a task's status — is also published as a small
//! message; each instance feeds the messages of the *other* instances into its own broadcast
//! channel, where listen streams filter them as they filter local changes. Which resource URIs
//! and lists a stream follows stays a per-stream matter: the bus carries every change once per
//! instance, not once per listener.
//!
//! * [`RedisBus`] (feature `bus-redis`) uses Redis pub/sub: one channel per fleet, named from a
//!   prefix so that two fleets on one Redis stay apart. It reconnects on its own; while it is
//!   down the instance keeps serving, and once it is back every listener is told to refetch the
//!   lists it follows (see [`BusSink::resync`]).
//! * [`MemoryBus`] connects several servers inside one process (tests, embedded fleets).
//! * A bus of your own implements [`ChangeBus`]: it moves opaque messages and calls
//!   [`BusSink::deliver`] with what it receives. The SDK encodes, decodes and checks them.
//!
//! A message on the bus is untrusted input: anything that can publish on the channel can send
//! one. [`BusSink::deliver`] bounds its size, decodes it strictly and ignores what does not
//! decode (logged at most once a minute); a message can at most make listeners refetch a list
//! or re-read a resource or task they follow, which they are allowed to do anyway.

#[cfg(feature = "bus-redis")]
mod redis;
mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::broadcast;

#[cfg(feature = "bus-redis")]
pub use redis::RedisBus;
pub(crate) use wire::Event;

use super::Change;
use crate::sync::lock;

/// Moves change messages between the instances of a fleet. See the [module docs](self).
///
/// The server calls [`attach`](Self::attach) once, when it is built, and
/// [`publish`](Self::publish) for every change it makes. Delivery is best effort: a lost message
/// is a notification a listener does not get, so a bus that knows it may have lost some (a
/// reconnection) calls [`BusSink::resync`].
pub trait ChangeBus: Send + Sync + 'static {
    /// From now on, hands every message received from the bus to `sink`
    /// ([`BusSink::deliver`]); messages this instance published come back too and are ignored
    /// there. Called once per server built with this bus.
    fn attach(&self, sink: BusSink);

    /// Sends `message` to every instance. Called from synchronous code (`Server::notify`):
    /// must not block or wait for the network; queue it.
    fn publish(&self, message: Bytes);
}

/// What the server gives its bus: where received messages go. Cheap to clone.
#[derive(Clone)]
pub struct BusSink {
    inner: Arc<SinkInner>,
}

struct SinkInner {
    /// This instance's id, stamped on what it publishes (its own messages come back).
    instance: Arc<str>,
    /// The server's change channel; weak, so a bus does not keep a dropped server's streams alive.
    changes: broadcast::WeakSender<Change>,
    /// The task runtime's update channel (ids of changed tasks), when there is one.
    tasks: Option<broadcast::WeakSender<String>>,
    refused: Complaints,
}

impl std::fmt::Debug for BusSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusSink")
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

/// What became of a delivered message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// Handed to this instance's listeners.
    Delivered,
    /// This instance's own message, or one that did not decode (logged), or a task update on a
    /// server without tasks: nothing to do.
    Ignored,
    /// The server is gone: the bus may stop delivering to this sink.
    Closed,
}

impl BusSink {
    pub(crate) fn new(
        instance: Arc<str>,
        changes: &broadcast::Sender<Change>,
        tasks: Option<&broadcast::Sender<String>>,
    ) -> Self {
        Self {
            inner: Arc::new(SinkInner {
                instance,
                changes: changes.downgrade(),
                tasks: tasks.map(broadcast::Sender::downgrade),
                refused: Complaints::new("change bus: ignored a message that is not a change"),
            }),
        }
    }

    /// Hands one received message to this instance's listeners. Never blocks and never fails:
    /// a message that does not decode is dropped and logged (at most once a minute, with a
    /// count of the others).
    pub fn deliver(&self, message: &[u8]) -> Delivery {
        let Some(changes) = self.inner.changes.upgrade() else {
            return Delivery::Closed;
        };
        let (from, event) = match wire::decode(message) {
            Ok(decoded) => decoded,
            Err(refused) => {
                self.inner.refused.complain(&refused);
                return Delivery::Ignored;
            }
        };
        if *from == *self.inner.instance {
            return Delivery::Ignored;
        }
        match event {
            Event::Change(change) => {
                // No receivers: nobody listens here.
                let _ = changes.send(change);
            }
            Event::Task(id) => match self.inner.tasks.as_ref().and_then(|t| t.upgrade()) {
                Some(tasks) => {
                    let _ = tasks.send(id);
                }
                None => return Delivery::Ignored,
            },
        }
        Delivery::Delivered
    }

    /// Tells every listener of this instance that it may have missed changes
    /// ([`Change::Resync`]: each listen stream gets a list-changed notification for each list
    /// it follows and an update for each resource it follows, so that clients refetch). Call
    /// it when the bus reconnects. Task watchers need nothing: they read the store on their own
    /// every poll interval.
    pub fn resync(&self) {
        if let Some(changes) = self.inner.changes.upgrade() {
            let _ = changes.send(Change::Resync);
        }
    }

    /// Whether the server is gone (every handle dropped): a bus may stop its work for this sink.
    pub fn is_closed(&self) -> bool {
        self.inner.changes.upgrade().is_none()
    }
}

/// The server's side of its bus: the transport and the id stamped on what it publishes.
pub(crate) struct Bus {
    transport: Arc<dyn ChangeBus>,
    instance: Arc<str>,
}

impl Bus {
    pub(crate) fn new(transport: Arc<dyn ChangeBus>, instance: String) -> Self {
        Self {
            transport,
            instance: instance.into(),
        }
    }

    /// Attaches the server's channels to the transport.
    pub(crate) fn attach(
        &self,
        changes: &broadcast::Sender<Change>,
        tasks: Option<&broadcast::Sender<String>>,
    ) {
        self.transport
            .attach(BusSink::new(Arc::clone(&self.instance), changes, tasks));
    }

    /// Publishes an event made on this instance (already announced locally).
    pub(crate) fn publish(&self, event: &Event) {
        match wire::encode(&self.instance, event) {
            Some(message) => self.transport.publish(Bytes::from(message)),
            None => tracing::warn!(
                "change bus: a change too large for the bus ({} bytes at most) was announced on \
                 this instance only",
                wire::MAX_MESSAGE
            ),
        }
    }
}

/// Connects the servers of one process: what one publishes, the others receive at once.
/// For tests and fleets embedded in one process; clones share the bus.
#[derive(Clone, Default)]
pub struct MemoryBus {
    sinks: Arc<Mutex<Vec<BusSink>>>,
}

impl std::fmt::Debug for MemoryBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBus")
            .field("servers", &lock(&self.sinks).len())
            .finish()
    }
}

impl MemoryBus {
    /// An empty bus.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ChangeBus for MemoryBus {
    fn attach(&self, sink: BusSink) {
        lock(&self.sinks).push(sink);
    }

    fn publish(&self, message: Bytes) {
        lock(&self.sinks).retain(|sink| sink.deliver(&message) != Delivery::Closed);
    }
}

/// A warning logged at most once per interval, with the count of those it held back: a peer
/// that floods the bus with garbage must not flood the log too.
pub(crate) struct Complaints {
    what: &'static str,
    last: Mutex<Option<Instant>>,
    held_back: AtomicU64,
}

/// How often a repeated complaint is logged.
const COMPLAINT_INTERVAL: Duration = Duration::from_secs(60);

impl Complaints {
    pub(crate) const fn new(what: &'static str) -> Self {
        Self {
            what,
            last: Mutex::new(None),
            held_back: AtomicU64::new(0),
        }
    }

    pub(crate) fn complain(&self, reason: &dyn std::fmt::Display) {
        let now = Instant::now();
        {
            let mut last = lock(&self.last);
            if last.is_some_and(|at| now.duration_since(at) < COMPLAINT_INTERVAL) {
                self.held_back.fetch_add(1, Ordering::Relaxed);
                return;
            }
            *last = Some(now);
        }
        let held_back = self.held_back.swap(0, Ordering::Relaxed);
        tracing::warn!(%reason, held_back, "{}", self.what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(instance: &str, changes: &broadcast::Sender<Change>) -> BusSink {
        BusSink::new(instance.into(), changes, None)
    }

    #[test]
    fn a_sink_ignores_its_own_messages_and_garbage_and_delivers_the_rest() {
        let (changes, mut received) = broadcast::channel(16);
        let sink = sink("b", &changes);
        let from_a = wire::encode("a", &Event::Change(Change::ToolsListChanged)).unwrap();
        let from_b = wire::encode("b", &Event::Change(Change::PromptsListChanged)).unwrap();
        assert_eq!(sink.deliver(b"\xff garbage"), Delivery::Ignored);
        assert_eq!(sink.deliver(&from_b), Delivery::Ignored);
        assert_eq!(sink.deliver(&from_a), Delivery::Delivered);
        assert_eq!(received.try_recv().unwrap(), Change::ToolsListChanged);
        assert!(received.try_recv().is_err());
        // A task update on a server without tasks has nowhere to go.
        let task = wire::encode("a", &Event::Task("t1".into())).unwrap();
        assert_eq!(sink.deliver(&task), Delivery::Ignored);
    }

    #[test]
    fn a_resync_is_delivered_and_a_dropped_server_closes_the_sink() {
        let (changes, mut received) = broadcast::channel(16);
        let sink = sink("b", &changes);
        let resync = wire::encode("a", &Event::Change(Change::Resync)).unwrap();
        assert_eq!(sink.deliver(&resync), Delivery::Delivered);
        assert_eq!(received.try_recv().unwrap(), Change::Resync);
        assert!(!sink.is_closed());
        drop(changes);
        assert!(sink.is_closed());
        assert_eq!(sink.deliver(&resync), Delivery::Closed);
    }

    #[test]
    fn a_complaint_is_logged_once_per_interval() {
        let complaints = Complaints::new("test");
        complaints.complain(&"first");
        complaints.complain(&"second");
        complaints.complain(&"third");
        assert_eq!(complaints.held_back.load(Ordering::Relaxed), 2);
    }
}
