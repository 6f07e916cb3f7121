//! How a stream connection ends, and what bounds each wait of its loop: the drain after end of
//! input or a shutdown (its listen streams closed, the requests in flight answered within the
//! grace period, the writer flushed), and the helpers that bound the loop's other waits by the
//! same grace period (`bounded`, `queue`) or do not wait at all (`refuse`).
//!
//! The loop itself (`stdio.rs`) reads lines and serves them; it calls [`drain`] once, when it
//! ends.

use std::future::Future;

use modelctx_types::jsonrpc::encode_error;
use modelctx_types::{ErrorCode, ErrorObject, RequestId};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::shutdown::Shutdown;

/// Ends a connection whose loop is over: `closing` (the connection's own token) ends its listen
/// streams and the handshake-era `forwarder`; the `requests` and `notifications` in flight
/// answer, within the grace period once a shutdown has begun (dropped when it is over); then
/// the writer flushes what was queued, bounded the same way.
pub(super) async fn drain(
    closing: &CancellationToken,
    forwarder: Option<JoinHandle<()>>,
    mut requests: JoinSet<()>,
    mut notifications: JoinSet<()>,
    mut shutdown: Option<Shutdown>,
    out: mpsc::Sender<Vec<u8>>,
    mut writer_task: JoinHandle<()>,
) {
    // End of input (or a shutdown): this connection's listen streams close (not those of
    // the server's other connections: its child token), requests in flight still answer,
    // within the grace period once a shutdown has begun.
    closing.cancel();
    if let Some(forwarder) = forwarder {
        forwarder.abort();
    }
    let answered = async {
        while requests.join_next().await.is_some() {}
        while notifications.join_next().await.is_some() {}
    };
    let answered = match shutdown.as_mut() {
        None => {
            answered.await;
            true
        }
        Some(shutdown) => shutdown.bound(answered).await.is_some(),
    };
    if !answered {
        tracing::warn!(
            requests = requests.len(),
            "shutdown: the grace period is over; dropping the requests still running"
        );
        requests.shutdown().await;
        notifications.shutdown().await;
    }
    drop(out);
    let written = match shutdown.as_mut() {
        None => Some((&mut writer_task).await),
        // A peer that stopped reading must not hold the shutdown up.
        Some(shutdown) => shutdown.bound(&mut writer_task).await,
    };
    if written.is_none() {
        writer_task.abort();
    }
}

/// Runs `work`, the loop waiting on something other than the input (room for a request, a
/// middleware, the writer), bounded by the grace period of a shutdown that has begun or begins
/// meanwhile: `None` when that is over. Without a shutdown future, `work` to its end.
pub(super) async fn bounded<T>(
    shutdown: &mut Option<Shutdown>,
    work: impl Future<Output = T>,
) -> Option<T> {
    match shutdown {
        None => Some(work.await),
        Some(shutdown) => shutdown.bound(work).await,
    }
}

/// Queues `message` for the writer. A peer that stops reading fills the queue, and the wait
/// for room is [`bounded`]: the message is dropped when the grace period is over.
pub(super) async fn queue(
    out: &mpsc::Sender<Vec<u8>>,
    message: Vec<u8>,
    shutdown: &mut Option<Shutdown>,
) {
    let _ = bounded(shutdown, out.send(message)).await;
}

/// Answers a request that arrives while the server drains with `-32603`. Not awaited: a peer
/// that writes but no longer reads fills the queue, and waiting for room there held the drain
/// past its grace period; the refusal is dropped then, as that peer would not read it anyway.
pub(super) fn refuse(out: &mpsc::Sender<Vec<u8>>, id: &RequestId) {
    let error = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        "Server shutting down: the request was not served",
    );
    let _ = out.try_send(encode_error(Some(id), &error));
}
