//! The host's requests in flight, for the questions a 2025-11-25 upstream asks.
//!
//! A 2026-07-28 upstream asks within the call's own result (`InputRequiredResult`, relayed by
//! `forward`). A 2025-11-25 upstream sends `elicitation/create`, `sampling/createMessage` or
//! `roots/list` on its own, and the client answers them in its callbacks, which do not know
//! which call the question belongs to. The bridge serves one host over one stdio pipe, so any
//! request of the host in flight reaches the same host: the question goes over the
//! back-channel of the latest one (a 2025-11-25 host request; a 2026-07-28 host has no
//! back-channel, and the question is refused with an error saying so).

use std::sync::{Arc, Mutex};

use modelctx::client::CallbackContext;
use modelctx::server::RequestContext;
use modelctx::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, Era,
    ErrorObject, ListRootsResult,
};

/// The host's requests being relayed, oldest first.
#[derive(Clone, Default)]
pub(crate) struct HostRequests {
    in_flight: Arc<Mutex<Vec<(u64, RequestContext)>>>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

/// Removes its request from [`HostRequests`] when the relay ends (or is dropped, cancelled).
pub(crate) struct InFlight {
    requests: HostRequests,
    number: u64,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.requests
            .lock()
            .retain(|(number, _)| *number != self.number);
    }
}

impl HostRequests {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, RequestContext)>> {
        crate::sync::lock(&self.in_flight)
    }

    /// Records `ctx` while the returned guard lives.
    pub(crate) fn enter(&self, ctx: &RequestContext) -> InFlight {
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().push((number, ctx.clone()));
        InFlight {
            requests: self.clone(),
            number,
        }
    }

    /// The latest handshake-era request, whose back-channel can carry a question.
    fn latest(&self) -> Result<RequestContext, ErrorObject> {
        let requests = self.lock();
        if let Some((_, ctx)) = requests
            .iter()
            .rev()
            .find(|(_, ctx)| ctx.era() == Era::Handshake)
        {
            return Ok(ctx.clone());
        }
        Err(ErrorObject::internal(if requests.is_empty() {
            "the bridge has no host request in flight to ask this question in"
        } else {
            "the host speaks 2026-07-28, which has no back-channel to ask a question in the middle \
             of a call; relaying a 2025-11-25 server's questions to it is not supported yet"
        }))
    }

    /// Asks the host's user (form or URL elicitation).
    pub(crate) async fn elicit(
        self,
        _question: CallbackContext,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorObject> {
        self.latest()?.elicit(params).await
    }

    /// Asks the host's model.
    pub(crate) async fn create_message(
        self,
        _question: CallbackContext,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.latest()?.create_message(&params).await
    }

    /// Asks the host's roots.
    pub(crate) async fn list_roots(
        self,
        _question: CallbackContext,
    ) -> Result<ListRootsResult, ErrorObject> {
        self.latest()?.list_roots().await
    }
}
