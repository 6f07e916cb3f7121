//! The bounded queue between the notification router and one subscription
//! ([`Subscription`](super::Subscription)).
//!
//! The router runs on the connection's reader and must never wait for a consumer, or one slow
//! subscription would stop the whole connection; an unbounded queue instead let a fast server
//! outrun a slow consumer without limit (on a multi-thread runtime the reader keeps reading while
//! the consumer works). So the queue holds at most a number of messages and of bytes (the size
//! of their params as the server wrote them); what does not fit is dropped, and the consumer
//! is told that it fell behind ([`Received::Lagged`]) at the place of the loss: once it has read
//! the messages queued before the (latest) drop, so that everything it reads after the news was
//! sent after what was lost. It can then resync (refetch what it follows), as the server does
//! for a listen stream that lags behind its change feed, and no older message read afterwards
//! takes it back to a state before the loss (told first, it would refetch and then read the
//! older queued messages: a task seen `completed` by the refetch would go back to `working`).
//! A message whose loss would leave the consumer wrong (a listen stream's acknowledgement) is
//! kept aside instead — the latest one — and handed over with the lag. The last message (the
//! end of the stream) comes from a task that can wait for room.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::sync::lock;

/// The sending side: the router's (and the listen task's) handle.
pub(crate) struct Outbox<T> {
    tx: mpsc::Sender<(T, usize)>,
    state: Arc<State<T>>,
}

impl<T> Clone for Outbox<T> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            state: Arc::clone(&self.state),
        }
    }
}

/// The receiving side: the subscription's.
pub(crate) struct Inbox<T> {
    rx: mpsc::Receiver<(T, usize)>,
    state: Arc<State<T>>,
    /// How many messages were read: the consumer's place, compared with a loss's.
    received: u64,
    /// How many messages were dropped, as of the last loss reported.
    dropped: u64,
}

struct State<T> {
    /// The bytes the queued messages hold.
    bytes: AtomicUsize,
    max_bytes: usize,
    /// How many messages were ever queued: where in the queue a drop happened.
    queued: AtomicU64,
    /// Something was dropped that the consumer was not told about: the one check each read
    /// makes ([`State::lag`] is locked only once there was a loss). Set and cleared with
    /// `lag` held.
    lagged: AtomicBool,
    lag: Mutex<Lag<T>>,
}

/// What was lost (the slow path: touched when the queue is full, and by the consumer until it
/// is told).
struct Lag<T> {
    /// How many messages were queued at the latest drop: the consumer is told once it has
    /// read them.
    at: u64,
    /// How many messages were dropped, ever.
    dropped: u64,
    /// The latest message to keep that found the queue full.
    kept: Option<T>,
}

/// What the consumer reads.
#[derive(Debug)]
pub(crate) enum Received<T> {
    /// The next message.
    Message(T),
    /// Messages were dropped: the consumer fell behind. Read where the (latest) loss was, after
    /// every message queued before it; `kept` is the latest message offered with
    /// [`Outbox::offer_kept`] that did not fit.
    Lagged { kept: Option<T> },
}

/// A queue of at most `messages` messages and `max_bytes` bytes (a message larger than that is
/// let through when the queue holds nothing else, so that no message is too big ever to pass).
pub(crate) fn channel<T>(messages: usize, max_bytes: usize) -> (Outbox<T>, Inbox<T>) {
    let (tx, rx) = mpsc::channel(messages);
    let state = Arc::new(State {
        bytes: AtomicUsize::new(0),
        max_bytes,
        queued: AtomicU64::new(0),
        lagged: AtomicBool::new(false),
        lag: Mutex::new(Lag {
            at: 0,
            dropped: 0,
            kept: None,
        }),
    });
    (
        Outbox {
            tx,
            state: Arc::clone(&state),
        },
        Inbox {
            rx,
            state,
            received: 0,
            dropped: 0,
        },
    )
}

impl<T> Outbox<T> {
    /// Queues `message` (of `bytes`), or drops it when the queue is full. `false` once the
    /// consumer is gone.
    pub(crate) fn offer(&self, message: T, bytes: usize) -> bool {
        self.queue(message, bytes, false)
    }

    /// Queues `message`, or, when the queue is full, keeps it aside (replacing one kept
    /// before) to be handed over with the news of the loss. `false` once the consumer is gone.
    pub(crate) fn offer_kept(&self, message: T, bytes: usize) -> bool {
        self.queue(message, bytes, true)
    }

    fn queue(&self, message: T, bytes: usize, keep: bool) -> bool {
        match self.try_queue(message, bytes) {
            Ok(()) => true,
            Err(TrySendError::Full(message)) => {
                self.lag(keep.then_some(message));
                true
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }

    /// Queues `message`, waiting for room (for a task, never the router). `false` once the
    /// consumer is gone.
    pub(crate) async fn send(&self, message: T) -> bool {
        let sent = self.tx.send((message, 0)).await.is_ok();
        if sent {
            self.state.queued.fetch_add(1, Ordering::AcqRel);
        }
        sent
    }

    fn try_queue(&self, message: T, bytes: usize) -> Result<(), TrySendError<T>> {
        let state = &self.state;
        let before = state.bytes.fetch_add(bytes, Ordering::AcqRel);
        if before > 0 && before.saturating_add(bytes) > state.max_bytes {
            state.bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Err(TrySendError::Full(message));
        }
        match self.tx.try_send((message, bytes)) {
            // Counted once in the queue: a drop after this is placed after this message.
            Ok(()) => {
                state.queued.fetch_add(1, Ordering::AcqRel);
                Ok(())
            }
            Err(error) => {
                state.bytes.fetch_sub(bytes, Ordering::AcqRel);
                Err(match error {
                    TrySendError::Full((message, _)) => TrySendError::Full(message),
                    TrySendError::Closed((message, _)) => TrySendError::Closed(message),
                })
            }
        }
    }

    /// Records a drop at the end of what is queued now (a later drop moves the place on: the
    /// consumer is told once, after the messages queued before the latest loss).
    fn lag(&self, kept: Option<T>) {
        let first = {
            let mut lag = lock(&self.state.lag);
            lag.dropped += 1;
            lag.at = self.state.queued.load(Ordering::Acquire);
            if kept.is_some() {
                lag.kept = kept;
            }
            !self.state.lagged.swap(true, Ordering::AcqRel)
        };
        if first {
            tracing::warn!(
                "a subscription's consumer fell behind: notifications were dropped; it resyncs"
            );
        }
    }
}

impl<T> Inbox<T> {
    /// The next message, or the news that some were dropped; `None` once every sender is gone
    /// and the queue is empty.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received<T>>> {
        // Told where the loss was, after the messages queued before it: everything read after
        // this was sent after what was dropped, so a resync now leaves nothing older to read.
        if self.state.lagged.load(Ordering::Acquire) {
            let mut lag = lock(&self.state.lag);
            if self.received >= lag.at && self.state.lagged.swap(false, Ordering::AcqRel) {
                self.dropped = lag.dropped;
                let kept = lag.kept.take();
                return Poll::Ready(Some(Received::Lagged { kept }));
            }
        }
        let received = ready!(self.rx.poll_recv(cx));
        Poll::Ready(received.map(|(message, bytes)| {
            self.state.bytes.fetch_sub(bytes, Ordering::AcqRel);
            self.received += 1;
            Received::Message(message)
        }))
    }

    /// [`Inbox::poll_recv`] as a future.
    pub(crate) async fn recv(&mut self) -> Option<Received<T>> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// How many messages were dropped since the queue was made, as of the last
    /// [`Received::Lagged`] read: a count that grows where the loss is reported, not earlier.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    fn drain(inbox: &mut Inbox<u32>) -> Vec<Received<u32>> {
        std::iter::from_fn(|| inbox.recv().now_or_never().flatten()).collect()
    }

    /// What the consumer reads now, as text (`Received` compares only by its `Debug`).
    fn read(inbox: &mut Inbox<u32>) -> String {
        format!("{:?}", drain(inbox))
    }

    #[test]
    fn a_full_queue_drops_and_says_so_after_what_was_queued_before() {
        let (outbox, mut inbox) = channel(2, 1_000);
        for n in 0..5 {
            assert!(outbox.offer(n, 1));
        }
        // Counted where the consumer is told, not before.
        assert_eq!(inbox.dropped(), 0);
        assert_eq!(
            read(&mut inbox),
            "[Message(0), Message(1), Lagged { kept: None }]"
        );
        assert_eq!(inbox.dropped(), 3);
        // Room again: nothing more is dropped, and no lag is reported.
        assert!(outbox.offer(9, 1));
        assert_eq!(read(&mut inbox), "[Message(9)]");
        drop(inbox);
        assert!(!outbox.offer(10, 1));
    }

    #[test]
    fn a_later_drop_moves_the_news_past_what_was_queued_before_it() {
        let (outbox, mut inbox) = channel(2, 1_000);
        assert!(outbox.offer(0, 1));
        assert!(outbox.offer(1, 1));
        assert!(outbox.offer(2, 1), "dropped after 0 and 1");
        assert!(matches!(
            inbox.recv().now_or_never(),
            Some(Some(Received::Message(0)))
        ));
        assert!(outbox.offer(3, 1), "queued: there is room");
        assert!(outbox.offer(4, 1), "dropped after 3");
        // Told once, after 3: nothing read after the news is older than 4, the latest loss.
        assert_eq!(
            read(&mut inbox),
            "[Message(1), Message(3), Lagged { kept: None }]"
        );
        assert_eq!(inbox.dropped(), 2);
        // A loss after the news is news again.
        for n in 5..8 {
            assert!(outbox.offer(n, 1));
        }
        assert_eq!(
            read(&mut inbox),
            "[Message(5), Message(6), Lagged { kept: None }]"
        );
        assert_eq!(inbox.dropped(), 3);
    }

    #[test]
    fn bytes_are_bounded_but_one_large_message_passes_alone() {
        let (outbox, mut inbox) = channel(100, 10);
        assert!(outbox.offer(1, 50));
        assert!(outbox.offer(2, 1));
        assert_eq!(read(&mut inbox), "[Message(1), Lagged { kept: None }]");
        for n in 0..4 {
            assert!(outbox.offer(n, 3));
        }
        assert_eq!(
            read(&mut inbox),
            "[Message(0), Message(1), Message(2), Lagged { kept: None }]",
            "three of 3 bytes, then the lag"
        );
    }

    #[test]
    fn a_kept_message_survives_a_full_queue_the_latest_one() {
        let (outbox, mut inbox) = channel(1, 1_000);
        assert!(outbox.offer(0, 1));
        assert!(outbox.offer_kept(7, 1));
        assert!(outbox.offer_kept(8, 1));
        assert_eq!(read(&mut inbox), "[Message(0), Lagged { kept: Some(8) }]");
    }
}
