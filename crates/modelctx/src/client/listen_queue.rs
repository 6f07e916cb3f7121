//! The bounded queue between the notification router and one subscription
//! ([`Subscription`](super::Subscription)).
//!
//! The router runs on the connection's reader and must never wait for a consumer, or one slow
//! subscription would stop the whole connection; an unbounded queue instead let a fast server
//! outrun a slow consumer without limit (on a multi-thread runtime the reader keeps reading while
//! the consumer works). So the queue holds at most a number of messages and of bytes (the size
//! of their params as the server wrote them); what does not fit is dropped, and the consumer
//! is told that it fell behind ([`Received::Lagged`]) before the next message it reads, so it
//! can resync (refetch what it follows), as the server does for a listen stream that lags
//! behind its change feed. A message whose loss would leave the consumer wrong (a listen
//! stream's acknowledgement) is kept aside instead — the latest one — and handed over with the
//! lag. The last message (the end of the stream) comes from a task that can wait for room.

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
}

struct State<T> {
    /// The bytes the queued messages hold.
    bytes: AtomicUsize,
    max_bytes: usize,
    /// Something was dropped since the consumer was last told.
    lagged: AtomicBool,
    /// How many messages were dropped, ever.
    dropped: AtomicU64,
    /// The latest message to keep that found the queue full.
    kept: Mutex<Option<T>>,
}

/// What the consumer reads.
#[derive(Debug)]
pub(crate) enum Received<T> {
    /// The next message.
    Message(T),
    /// Messages were dropped since the last read: the consumer fell behind. `kept` is the
    /// latest message offered with [`Outbox::offer_kept`] that did not fit.
    Lagged { kept: Option<T> },
}

/// A queue of at most `messages` messages and `max_bytes` bytes (a message larger than that is
/// let through when the queue holds nothing else, so that no message is too big ever to pass).
pub(crate) fn channel<T>(messages: usize, max_bytes: usize) -> (Outbox<T>, Inbox<T>) {
    let (tx, rx) = mpsc::channel(messages);
    let state = Arc::new(State {
        bytes: AtomicUsize::new(0),
        max_bytes,
        lagged: AtomicBool::new(false),
        dropped: AtomicU64::new(0),
        kept: Mutex::new(None),
    });
    (
        Outbox {
            tx,
            state: Arc::clone(&state),
        },
        Inbox { rx, state },
    )
}

impl<T> Outbox<T> {
    /// Queues `message` (of `bytes`), or drops it when the queue is full. `false` once the
    /// consumer is gone.
    pub(crate) fn offer(&self, message: T, bytes: usize) -> bool {
        self.queue(message, bytes, false)
    }

    /// Queues `message`, or, when the queue is full, keeps it aside (replacing one kept
    /// before) for the consumer's next read. `false` once the consumer is gone.
    pub(crate) fn offer_kept(&self, message: T, bytes: usize) -> bool {
        self.queue(message, bytes, true)
    }

    fn queue(&self, message: T, bytes: usize, keep: bool) -> bool {
        match self.try_queue(message, bytes) {
            Ok(()) => true,
            Err(TrySendError::Full(message)) => {
                if keep {
                    *lock(&self.state.kept) = Some(message);
                }
                self.lag();
                true
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }

    /// Queues `message`, waiting for room (for a task, never the router). `false` once the
    /// consumer is gone.
    pub(crate) async fn send(&self, message: T) -> bool {
        self.tx.send((message, 0)).await.is_ok()
    }

    fn try_queue(&self, message: T, bytes: usize) -> Result<(), TrySendError<T>> {
        let state = &self.state;
        let before = state.bytes.fetch_add(bytes, Ordering::AcqRel);
        if before > 0 && before.saturating_add(bytes) > state.max_bytes {
            state.bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Err(TrySendError::Full(message));
        }
        self.tx.try_send((message, bytes)).map_err(|error| {
            state.bytes.fetch_sub(bytes, Ordering::AcqRel);
            match error {
                TrySendError::Full((message, _)) => TrySendError::Full(message),
                TrySendError::Closed((message, _)) => TrySendError::Closed(message),
            }
        })
    }

    fn lag(&self) {
        self.state.dropped.fetch_add(1, Ordering::Relaxed);
        if !self.state.lagged.swap(true, Ordering::AcqRel) {
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
        // Told before the next message is read: what was dropped is older than anything read
        // after this, so a resync now covers it.
        if self.state.lagged.swap(false, Ordering::AcqRel) {
            let kept = lock(&self.state.kept).take();
            return Poll::Ready(Some(Received::Lagged { kept }));
        }
        let received = ready!(self.rx.poll_recv(cx));
        Poll::Ready(received.map(|(message, bytes)| {
            self.state.bytes.fetch_sub(bytes, Ordering::AcqRel);
            Received::Message(message)
        }))
    }

    /// [`Inbox::poll_recv`] as a future.
    pub(crate) async fn recv(&mut self) -> Option<Received<T>> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// How many messages were dropped since the queue was made.
    pub(crate) fn dropped(&self) -> u64 {
        self.state.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    fn drain(inbox: &mut Inbox<u32>) -> Vec<Received<u32>> {
        std::iter::from_fn(|| inbox.recv().now_or_never().flatten()).collect()
    }

    #[test]
    fn a_full_queue_drops_and_says_so_before_the_next_message() {
        let (outbox, mut inbox) = channel(2, 1_000);
        for n in 0..5 {
            assert!(outbox.offer(n, 1));
        }
        assert_eq!(inbox.dropped(), 3);
        let read = drain(&mut inbox);
        assert!(
            matches!(
                read.as_slice(),
                [
                    Received::Lagged { kept: None },
                    Received::Message(0),
                    Received::Message(1)
                ]
            ),
            "{read:?}"
        );
        // Room again: nothing more is dropped, and no lag is reported.
        assert!(outbox.offer(9, 1));
        assert!(matches!(
            drain(&mut inbox).as_slice(),
            [Received::Message(9)]
        ));
        drop(inbox);
        assert!(!outbox.offer(10, 1));
    }

    #[test]
    fn bytes_are_bounded_but_one_large_message_passes_alone() {
        let (outbox, mut inbox) = channel(100, 10);
        assert!(outbox.offer(1, 50));
        assert!(outbox.offer(2, 1));
        let read = drain(&mut inbox);
        assert!(
            matches!(
                read.as_slice(),
                [Received::Lagged { kept: None }, Received::Message(1)]
            ),
            "{read:?}"
        );
        for n in 0..4 {
            assert!(outbox.offer(n, 3));
        }
        assert_eq!(drain(&mut inbox).len(), 1 + 3, "lag, then three of 3 bytes");
    }

    #[test]
    fn a_kept_message_survives_a_full_queue_the_latest_one() {
        let (outbox, mut inbox) = channel(1, 1_000);
        assert!(outbox.offer(0, 1));
        assert!(outbox.offer_kept(7, 1));
        assert!(outbox.offer_kept(8, 1));
        let read = drain(&mut inbox);
        assert!(
            matches!(
                read.as_slice(),
                [Received::Lagged { kept: Some(8) }, Received::Message(0)]
            ),
            "{read:?}"
        );
    }
}
