//! The handshake era (2025-11-25 and earlier), served beside 2026-07-28 by the same handlers.
//!
//! A handshake-era session starts with `initialize`, which fixes the protocol version and the
//! client's capabilities for the session (2026-07-28 carries both on every request instead).
//! Handlers may then ask the client mid-call through the back-channel — real server→client
//! JSON-RPC requests (`elicitation/create`, `sampling/createMessage`, `roots/list`) answered by
//! the client's same callbacks — and results carry no `resultType`. A handler that returns an
//! `InputRequiredResult` instead is bridged: the SDK asks its questions over the back-channel and
//! calls it again with the answers (`bridge.rs`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use modelctx_types::jsonrpc::{encode_notification, encode_request};
use modelctx_types::methods::Cancelled;
use modelctx_types::{
    CancelledNotificationParams, ClientCapabilities, ErrorCode, ErrorObject, Implementation,
    LoggingLevel, NotificationMethod, ProtocolVersion, RequestId,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::notifier::Notifier;
use super::subscription_budget::{Client, Followed};
use crate::sync::lock;

type Pending = oneshot::Sender<Result<Box<RawValue>, ErrorObject>>;

/// The state of one handshake-era session (a stdio connection, or an `Mcp-Session-Id`).
pub(crate) struct HandshakeSession {
    pub(crate) version: ProtocolVersion,
    pub(crate) client_capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    log_level: Mutex<Option<LoggingLevel>>,
    /// The URIs of `resources/subscribe`, bounded and charged (`subscription_budget`) to the
    /// client that opened the session.
    pub(super) subscriptions: Mutex<Followed>,
    pending: Mutex<HashMap<RequestId, Pending>>,
    next_id: AtomicI64,
    initialized: AtomicBool,
}

impl HandshakeSession {
    /// A session for a client that skipped `initialize` (tolerated, as the reference does).
    pub(crate) fn uninitialized() -> Self {
        Self::new(
            ProtocolVersion::LATEST_HANDSHAKE,
            ClientCapabilities::default(),
            None,
            None,
        )
    }

    pub(super) fn new(
        version: ProtocolVersion,
        client_capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
        client: Option<Client>,
    ) -> Self {
        Self {
            version,
            client_capabilities,
            client_info,
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(Followed::of(client)),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            initialized: AtomicBool::new(false),
        }
    }

    /// The session-wide log level (`logging/setLevel`).
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *lock(&self.log_level)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// The URIs the session subscribed to.
    pub(super) fn subscriptions(&self) -> Vec<String> {
        lock(&self.subscriptions).uris().cloned().collect()
    }

    pub(crate) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    /// The client what the session holds is counted against (the one that opened it).
    #[cfg(feature = "http-server")]
    pub(crate) fn client(&self) -> Option<Client> {
        lock(&self.subscriptions).client().cloned()
    }

    /// Sends a server→client request on `out` and waits for the client's answer. When `cancel`
    /// fires first (the request that asked was cancelled), the client is told with
    /// `notifications/cancelled`, so that it stops asking its user a question nobody waits for.
    pub(crate) async fn request<R: DeserializeOwned>(
        &self,
        out: &Notifier,
        method: &'static str,
        params: &impl Serialize,
        cancel: &CancellationToken,
        client_error: impl FnOnce(&'static str, ErrorObject) -> ErrorObject,
    ) -> Result<R, ErrorObject> {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let bytes = encode_request(&id, method, params)
            .map_err(|e| ErrorObject::internal(format!("{method} params not encodable: {e}")))?;
        let (answer, answered) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), answer);
        // Whatever happens next, the pending entry must not outlive this call.
        let _cleanup = PendingGuard {
            session: self,
            id: &id,
        };
        if out.send(bytes).await.is_err() {
            return Err(ErrorObject::internal(format!(
                "cannot send {method}: the client went away"
            )));
        }
        let raw = tokio::select! {
            answer = answered => answer
                .map_err(|_| ErrorObject::internal(format!("{method}: the client went away")))?
                .map_err(|error| client_error(method, error))?,
            () = cancel.cancelled() => {
                let notice = CancelledNotificationParams::new(
                    id.clone(),
                    Some("the request that asked was cancelled".to_owned()),
                );
                if let Ok(bytes) = encode_notification(Cancelled::NAME, Some(&notice)) {
                    // A closed stream (an HTTP client that went away) needs no notice.
                    let _ = out.send(bytes).await;
                }
                return Err(ErrorObject::internal("the request was cancelled"));
            }
        };
        serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::internal(format!("the client's answer to {method} is malformed: {e}"))
        })
    }

    /// Routes a response from the client to the request waiting for it. Returns false for an id
    /// no request is waiting on.
    pub(crate) fn answer(
        &self,
        id: &RequestId,
        payload: Result<Box<RawValue>, ErrorObject>,
    ) -> bool {
        match lock(&self.pending).remove(id) {
            Some(waiter) => {
                let _ = waiter.send(payload);
                true
            }
            None => false,
        }
    }
}

struct PendingGuard<'a> {
    session: &'a HandshakeSession,
    id: &'a RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.session.pending).remove(self.id);
    }
}

/// The error for a request that mixes eras on one stdio connection.
pub(crate) fn era_mismatch_handshake() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INVALID_REQUEST,
        "this connection serves the handshake protocol era; requests carrying the 2026-07-28 \
         envelope are not accepted on it",
    )
}

/// The error for `initialize` on a connection (or endpoint) serving 2026-07-28.
pub(crate) fn initialize_on_modern(requested: &str, supported: &[ProtocolVersion]) -> ErrorObject {
    let mut error = ErrorObject::unsupported_protocol_version(supported, requested);
    error.message =
        "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted"
            .to_owned();
    error
}

/// Whether a request carries the 2026-07-28 envelope (`params._meta.protocolVersion`), which is
/// how the first request of a stdio connection picks its era.
pub(crate) fn has_modern_envelope(params: Option<&str>) -> bool {
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Envelope>,
    }
    params
        .and_then(|p| serde_json::from_str::<Params>(p).ok())
        .and_then(|p| p.meta)
        .is_some_and(|m| m.version.is_some())
}
