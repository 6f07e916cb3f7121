//! The requests a client may still cancel, by id, and what the transports do with the
//! `notifications/cancelled` they serve themselves: cancel the request it names.
//!
//! A stdio connection keeps one table for all its requests (both eras); a 2025-11-25 HTTP
//! session keeps one for the requests POSTed on it, whose cancellation arrives as a POST of its
//! own. Cancelling fires the request's token: the handler sees it (`RequestContext`), a
//! back-channel question it is waiting on is withdrawn with a `notifications/cancelled` of the
//! server's own, and it can ask nothing more (`RequestContext` refuses once cancelled).
//!
//! Only a request that waits is registered: both transports poll a request once first, and one
//! answered on that poll (most are) costs the table nothing (no lock, no entry). No
//! cancellation can reach it meanwhile over stdio (nothing is read during the poll); over HTTP
//! one that races the first poll finds nothing, as one that arrives after the answer does,
//! which the spec allows ("the notification may arrive after the request has already
//! finished").
//!
//! Ids are the client's, unique among its requests in flight (JSON-RPC): a client that reuses
//! one while the first still runs can cancel only the later one, and once either ends, neither.
//! It harms only its own requests.
//!
//! The table knows nothing of sessions: `notifications/initialized`, the other notification the
//! transports serve, opens the caller's session (`Served::Initialized`).

use std::collections::HashMap;
#[cfg(feature = "http-server")]
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx_types::methods::{Cancelled, Initialized};
use modelctx_types::{CancelledNotificationParams, NotificationMethod as _, RequestId};
#[cfg(feature = "http-server")]
use modelctx_types::{ErrorCode, ErrorObject};
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// The cancellation tokens of the requests in flight, by id.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    table: Mutex<HashMap<RequestId, CancellationToken>>,
    /// How many entries `table` has, written under its lock: [`InFlight::remove`] reads it
    /// without the lock.
    len: AtomicUsize,
}

impl InFlight {
    /// Makes the request `id` cancellable by a `notifications/cancelled` naming it.
    pub(crate) fn insert(&self, id: RequestId, token: CancellationToken) {
        let mut table = lock(&self.table);
        table.insert(id, token);
        self.len.store(table.len(), Ordering::Release);
    }

    /// The request `id` ended.
    ///
    /// Most requests finish on their first poll and were never registered: with the table
    /// empty this is one load, inlined (no lock, no call, no SipHash of the id). A request that
    /// was registered was so before its work could end here (both transports register it right
    /// after its first poll, before polling it again), so this sees its entry counted.
    #[inline]
    pub(crate) fn remove(&self, id: &RequestId) {
        if self.len.load(Ordering::Acquire) != 0 {
            self.remove_registered(id);
        }
    }

    #[inline(never)]
    fn remove_registered(&self, id: &RequestId) {
        let mut table = lock(&self.table);
        table.remove(id);
        self.len.store(table.len(), Ordering::Release);
    }

    /// [`Self::insert`], removed again when the returned guard is dropped (the request's work
    /// ended, or was dropped with its response).
    #[cfg(feature = "http-server")]
    pub(crate) fn register(
        self: &Arc<Self>,
        id: RequestId,
        token: CancellationToken,
    ) -> Registered {
        self.insert(id.clone(), token);
        Registered {
            table: Arc::clone(self),
            id,
        }
    }

    /// The table, locked: a test holds it to show what is served without it.
    #[cfg(all(test, feature = "http-server"))]
    pub(crate) fn lock_table(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        lock(&self.table)
    }

    /// Cancels the request a `notifications/cancelled` names; `params` is the notification's
    /// params as JSON text. Malformed params or an id not in flight (it just finished) are
    /// ignored, as the spec says a cancellation may arrive late.
    fn cancel_named(&self, params: Option<&str>) {
        if let Some(params) = params
            && let Ok(params) = serde_json::from_str::<CancelledNotificationParams>(params)
            && let Some(token) = lock(&self.table).get(&params.request_id)
        {
            token.cancel();
        }
    }
}

/// A request registered in an [`InFlight`] table, until dropped.
#[cfg(feature = "http-server")]
#[derive(Debug)]
pub(crate) struct Registered {
    table: Arc<InFlight>,
    id: RequestId,
}

#[cfg(feature = "http-server")]
impl Registered {
    /// The request's id.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }
}

#[cfg(feature = "http-server")]
impl Drop for Registered {
    fn drop(&mut self) {
        self.table.remove(&self.id);
    }
}

/// The error answering a 2025-11-25 HTTP request its client cancelled, once its handler has
/// stopped: the POST's response still has to end, and on that wire only a response for its id
/// ends it. LSP's `RequestCancelled` code, which the Python SDK sends here too. (Over stdio
/// nothing is sent for a cancelled request.)
#[cfg(feature = "http-server")]
pub(crate) fn request_cancelled() -> ErrorObject {
    ErrorObject::new(ErrorCode(-32800), "Request cancelled")
}

/// A notification the transport served itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Served {
    /// `notifications/initialized`: the caller opens its handshake-era session, if it has one.
    Initialized,
    /// Anything else: a `notifications/cancelled` cancelled the request of the table it names
    /// (if it is still there); other notifications need nothing of the transport.
    Other,
}

/// What the transport itself does with a notification from the client: `cancelled` cancels the
/// request of `in_flight` it names; `initialized` is reported back (`Served::Initialized`).
pub(crate) fn serve_notification(
    in_flight: &InFlight,
    method: &str,
    params: Option<&str>,
) -> Served {
    if method == Initialized::NAME {
        return Served::Initialized;
    }
    if method == Cancelled::NAME {
        in_flight.cancel_named(params);
    }
    Served::Other
}
