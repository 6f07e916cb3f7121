//! The requests a client may still cancel, by id, and what the transports do with the
//! notifications they serve themselves: `notifications/initialized` opens a handshake-era
//! session, `notifications/cancelled` cancels the request it names.
//!
//! A stdio connection keeps one table for all its requests (both eras); a 2025-11-25 HTTP
//! session keeps one for the requests POSTed on it, whose cancellation arrives as a POST of its
//! own. Cancelling fires the request's token: the handler sees it (`RequestContext`), a
//! back-channel question it is waiting on is withdrawn with a `notifications/cancelled` of the
//! server's own, and it can ask nothing more (`RequestContext` refuses once cancelled).
//!
//! Ids are the client's, unique among its requests in flight (JSON-RPC): a client that reuses
//! one while the first still runs can cancel only the later one, and once either ends, neither.
//! It harms only its own requests.

use std::collections::HashMap;
#[cfg(feature = "http-server")]
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx_types::methods::{Cancelled, Initialized};
use modelctx_types::{CancelledNotificationParams, NotificationMethod as _, RequestId};
use tokio_util::sync::CancellationToken;

use super::handshake::HandshakeSession;
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
    /// Most stdio requests finish on their first poll and were never registered: with the table
    /// empty this is one load, inlined (no lock, no call, no SipHash of the id). A request that
    /// was registered was so before its work could end here (stdio registers it before spawning
    /// it, HTTP before running it), so this sees its entry counted.
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
impl Drop for Registered {
    fn drop(&mut self) {
        self.table.remove(&self.id);
    }
}

/// What the transport itself does with a notification from the client: `initialized` opens a
/// handshake-era `session`, `cancelled` cancels the request of `in_flight` it names.
pub(crate) fn serve_notification(
    session: Option<&HandshakeSession>,
    in_flight: &InFlight,
    method: &str,
    params: Option<&str>,
) {
    if method == Initialized::NAME {
        if let Some(session) = session {
            session.mark_initialized();
        }
    } else if method == Cancelled::NAME {
        in_flight.cancel_named(params);
    }
}
