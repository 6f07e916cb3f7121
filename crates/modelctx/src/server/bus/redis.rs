//! The Redis change bus: pub/sub on one channel per fleet (`<prefix>:changes`).
//!
//! Two connections: a subscriber, owned by a loop that hands every message to the server and
//! reconnects with jittered backoff when the connection drops (or stops answering pings), then
//! resyncs the listeners; and a reconnecting publisher fed by a bounded queue, so that
//! `Server::notify` never waits for Redis. Why pub/sub and not Streams: see DESIGN.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use tokio::sync::mpsc;

use super::{BusSink, ChangeBus, Complaints, Delivery, Event, wire};
use crate::server::Change;
use crate::sync::lock;

/// How many changes may wait for the publisher (Redis slow or down) before they are replaced
/// by one resync message.
const QUEUE: usize = 1024;
/// The first and the largest pause between reconnection (or publishing) attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How often the subscriber pings Redis, and how long a ping (or a connection attempt) may
/// take before the connection counts as lost: a half-open TCP connection delivers nothing and
/// reports nothing.
const PING_EVERY: Duration = Duration::from_secs(15);
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// A [`ChangeBus`] on Redis pub/sub. Cheap to clone; give one to each server
/// ([`ServerBuilder::bus`](crate::server::ServerBuilder::bus)).
///
/// Every instance of a fleet connects with the same `prefix`; the channel is
/// `<prefix>:changes`, so fleets with different prefixes share a Redis without hearing each
/// other. Anything that can publish on the channel can make listeners refetch; see the
/// [module docs](super) for what it cannot do.
#[derive(Clone)]
pub struct RedisBus {
    shared: Arc<Shared>,
}

struct Shared {
    client: redis::Client,
    channel: String,
    /// The runtime `connect` ran on: the bus's loops run there, wherever the server is built.
    runtime: tokio::runtime::Handle,
    queue: mpsc::Sender<Bytes>,
    /// Changes were dropped because the queue was full: publish a resync once it drains.
    overflowed: Arc<AtomicBool>,
    /// Taken by the first `attach`: the publisher's end of the queue and its connection, and
    /// the subscription `connect` made (so that nothing published after `connect` returns is
    /// missed by the first server attached).
    pending: Mutex<Option<Pending>>,
}

struct Pending {
    queue: mpsc::Receiver<Bytes>,
    publisher: ConnectionManager,
    subscription: PubSub,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("channel", &self.shared.channel)
            .finish_non_exhaustive()
    }
}

impl RedisBus {
    /// Connects to `url` (`redis://host:6379/0`) and subscribes to `<prefix>:changes`; when
    /// this returns, the subscription is live.
    ///
    /// # Errors
    /// Redis cannot be reached or refused the subscription.
    pub async fn connect(url: &str, prefix: &str) -> redis::RedisResult<Self> {
        let client = redis::Client::open(url)?;
        let channel = format!("{prefix}:changes");
        let subscription = subscribe(&client, &channel).await?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(ANSWER_WITHIN))
            .set_response_timeout(Some(ANSWER_WITHIN));
        let publisher = client.get_connection_manager_with_config(config).await?;
        let (queue, receiver) = mpsc::channel(QUEUE);
        Ok(Self {
            shared: Arc::new(Shared {
                client,
                channel,
                runtime: tokio::runtime::Handle::current(),
                queue,
                overflowed: Arc::new(AtomicBool::new(false)),
                pending: Mutex::new(Some(Pending {
                    queue: receiver,
                    publisher,
                    subscription,
                })),
            }),
        })
    }

    /// The channel this bus publishes and listens on.
    pub fn channel(&self) -> &str {
        &self.shared.channel
    }
}

impl ChangeBus for RedisBus {
    fn attach(&self, sink: BusSink) {
        let shared = &self.shared;
        let pending = lock(&shared.pending).take();
        let subscription = match pending {
            Some(pending) => {
                let resync = wire::encode(&sink.inner.instance, &Event::Change(Change::Resync));
                shared.runtime.spawn(publish_loop(
                    pending.publisher,
                    shared.channel.clone(),
                    pending.queue,
                    Arc::clone(&shared.overflowed),
                    resync.map(Bytes::from),
                ));
                Some(pending.subscription)
            }
            // A second server on the same bus: its own subscription, made by the loop.
            None => None,
        };
        shared.runtime.spawn(subscribe_loop(
            shared.client.clone(),
            shared.channel.clone(),
            subscription,
            sink,
        ));
    }

    fn publish(&self, message: Bytes) {
        match self.shared.queue.try_send(message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.shared.overflowed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "change bus: Redis is not keeping up; changes are dropped and other \
                         instances will be told to resync"
                    );
                }
            }
            // No publisher (never attached, or the runtime is gone): nothing to do.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

async fn subscribe(client: &redis::Client, channel: &str) -> redis::RedisResult<PubSub> {
    let connect = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok(pubsub)
    };
    tokio::time::timeout(ANSWER_WITHIN, connect)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

fn timed_out() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
}

/// Receives until the server is gone; reconnects (and resyncs the listeners) when the
/// subscription is lost.
async fn subscribe_loop(
    client: redis::Client,
    channel: String,
    mut subscription: Option<PubSub>,
    sink: BusSink,
) {
    static FAILED: Complaints = Complaints::new("change bus: cannot subscribe on Redis yet");
    let mut backoff = Backoff::default();
    let mut lost = false;
    loop {
        let pubsub = match subscription.take() {
            Some(pubsub) => pubsub,
            None => match subscribe(&client, &channel).await {
                Ok(pubsub) => pubsub,
                Err(error) => {
                    FAILED.complain(&error);
                    tokio::time::sleep(backoff.next()).await;
                    if sink.is_closed() {
                        return;
                    }
                    continue;
                }
            },
        };
        backoff = Backoff::default();
        if lost {
            tracing::info!(channel, "change bus: subscribed again; listeners resync");
            sink.resync();
        }
        if !receive(pubsub, &sink).await {
            return;
        }
        lost = true;
        tracing::warn!(
            channel,
            "change bus: lost the Redis subscription; serving on, reconnecting"
        );
    }
}

/// Hands messages to `sink` until the connection is lost (`true`) or the server is gone.
async fn receive(pubsub: PubSub, sink: &BusSink) -> bool {
    let (mut control, mut messages) = pubsub.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    loop {
        tokio::select! {
            message = messages.next() => match message {
                Some(message) => {
                    if sink.deliver(message.get_payload_bytes()) == Delivery::Closed {
                        return false;
                    }
                }
                None => return true,
            },
            _ = ping.tick() => {
                if sink.is_closed() {
                    return false;
                }
                let answer = tokio::time::timeout(ANSWER_WITHIN, control.ping::<redis::Value>());
                if !matches!(answer.await, Ok(Ok(_))) {
                    return true;
                }
            }
        }
    }
}

/// Publishes the queue in order; a message that cannot be published is retried with backoff
/// (the queue fills meanwhile, and past [`QUEUE`] a resync replaces what is dropped).
async fn publish_loop(
    mut connection: ConnectionManager,
    channel: String,
    mut queue: mpsc::Receiver<Bytes>,
    overflowed: Arc<AtomicBool>,
    resync: Option<Bytes>,
) {
    static FAILED: Complaints = Complaints::new("change bus: cannot publish on Redis yet");
    loop {
        let message = match queue.try_recv() {
            Ok(message) => message,
            Err(mpsc::error::TryRecvError::Disconnected) => return,
            Err(mpsc::error::TryRecvError::Empty) => {
                match (&resync, overflowed.swap(false, Ordering::Relaxed)) {
                    (Some(resync), true) => resync.clone(),
                    _ => match queue.recv().await {
                        Some(message) => message,
                        None => return,
                    },
                }
            }
        };
        let mut backoff = Backoff::default();
        loop {
            let mut command = redis::cmd("PUBLISH");
            command.arg(&channel).arg(message.as_ref());
            let sent = command.query_async::<()>(&mut connection);
            match tokio::time::timeout(ANSWER_WITHIN, sent).await {
                Ok(Ok(())) => break,
                Ok(Err(error)) => FAILED.complain(&error),
                Err(_) => FAILED.complain(&timed_out()),
            }
            if queue.is_closed() {
                return;
            }
            tokio::time::sleep(backoff.next()).await;
        }
    }
}

/// Exponential backoff from [`BACKOFF_MIN`] to [`BACKOFF_MAX`], each pause drawn uniformly
/// from its upper half so that a fleet that lost Redis together does not reconnect in step.
#[derive(Default)]
struct Backoff {
    attempts: u32,
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let ceiling = BACKOFF_MIN
            .saturating_mul(1 << self.attempts.min(16))
            .min(BACKOFF_MAX);
        self.attempts = self.attempts.saturating_add(1);
        let half = ceiling / 2;
        // No randomness: the full pause, which is still bounded.
        let jitter = getrandom::u32().map_or(1.0, |r| f64::from(r) / f64::from(u32::MAX));
        half + half.mul_f64(jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_bound_with_jitter() {
        let mut backoff = Backoff::default();
        let first = backoff.next();
        assert!(
            first >= BACKOFF_MIN / 2 && first <= BACKOFF_MIN,
            "{first:?}"
        );
        let later: Vec<Duration> = (0..20).map(|_| backoff.next()).collect();
        assert!(later.iter().all(|d| *d <= BACKOFF_MAX), "{later:?}");
        assert!(later[19] >= BACKOFF_MAX / 2, "{later:?}");
    }
}
