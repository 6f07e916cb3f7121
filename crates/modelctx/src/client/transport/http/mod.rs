//! Streamable HTTP: one POST per message.
//!
//! Every POST accepts `application/json` and `text/event-stream`. On 2026-07-28 the request
//! carries `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` mirrors of
//! `x-mcp-header` arguments; the response is either one JSON-RPC message or a stream of events
//! ending with the response (comments ignored, notifications routed on the way). A stream that
//! breaks before the response re-issues the request with a new id.
//!
//! The handshake era adds a session (`Mcp-Session-Id`, minted by `initialize`), server requests
//! on response streams (answered with a POST of the callback's response), an optional GET
//! stream and resumption with `Last-Event-ID` (`handshake.rs`).
//!
//! This file is the sending side: [`HttpTransport`] sends a request (re-issued with a new id
//! when its stream breaks), a notification, and closes the connection. `connection.rs` is the
//! connection they all share (configuration, the POST, reading replies and streams), and
//! `handshake.rs` what the handshake era adds on top of it; the sending side calls both, the
//! handshake era calls the connection, and the connection calls neither.

mod connection;
mod handshake;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx_types::jsonrpc::encode_notification;
use modelctx_types::{Era, Method as _, RequestId};
use serde_json::value::RawValue;

pub(crate) use connection::HttpConfig;
// The authorization layer plugs in through these (client/auth, `auth-client` only).
#[cfg(feature = "auth-client")]
pub(crate) use connection::{BuildRequest, RequestAuth};
use connection::{HttpInner, Received, Waiting, body_snippet};

use crate::client::error::{ClientError, TransportError};
use crate::client::shared::Shared;
use crate::client::transport::{HttpHeaders, Outgoing, Reply};
use crate::sync::lock;

/// How long closing waits for the `notifications/cancelled` of abandoned requests to be sent
/// before it ends the session.
const CANCELS_WAIT: Duration = Duration::from_secs(2);

/// The HTTP transport.
#[derive(Debug)]
pub(crate) struct HttpTransport {
    inner: Arc<HttpInner>,
    get_stream: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl HttpTransport {
    pub(crate) fn new(config: HttpConfig, shared: Arc<Shared>) -> Self {
        Self {
            inner: Arc::new(HttpInner::new(config, shared)),
            get_stream: Mutex::new(None),
        }
    }

    /// The authorization layer's clock, when one is configured.
    #[cfg(feature = "auth-client")]
    pub(crate) fn pause_clock(&self) -> Option<&crate::client::pause::PauseClock> {
        self.inner
            .config
            .auth
            .as_deref()
            .map(RequestAuth::pause_clock)
    }

    pub(crate) async fn request(&self, outgoing: &Outgoing) -> Result<Reply, ClientError> {
        let inner = &self.inner;
        let mut broken = 0u32;
        loop {
            // A re-issued request is a new request: it gets a new id.
            let id = inner.shared.next_id();
            outgoing
                .span
                .record("jsonrpc.request.id", tracing::field::display(&id));
            let mut waiting = Waiting::register(inner, &id, outgoing.cancellable);
            let attempt = self.attempt(outgoing, &id, &mut waiting).await;
            // Finished one way or another: nothing to cancel any more.
            waiting.settled = true;
            if let Some(reply) = attempt? {
                return Ok(reply);
            }
            broken += 1;
            if broken > inner.config.max_reissues {
                return Err(TransportError::StreamBroken { attempts: broken }.into());
            }
            tracing::debug!(method = outgoing.method, %id, "response stream broke; re-issuing");
        }
    }

    /// One POST of the request as `id`; `Ok(None)` when its stream broke (and, in the
    /// handshake era, resuming it did not bring the reply either).
    async fn attempt(
        &self,
        outgoing: &Outgoing,
        id: &RequestId,
        waiting: &mut Waiting,
    ) -> Result<Option<Reply>, ClientError> {
        let inner = &self.inner;
        let body = crate::client::transport::encode_request(id, outgoing.method, &outgoing.params);
        let response = inner
            .post(body, Some(outgoing.method), &outgoing.headers)
            .await?;
        if outgoing.method == modelctx_types::methods::Initialize::NAME {
            handshake::capture_session_id(inner, &response);
        }
        let (last_event_id, retry_ms) = match inner
            .read_reply(response, id, &mut waiting.receiver)
            .await?
        {
            Received::Reply(reply) => return Ok(Some(reply)),
            Received::Broken {
                last_event_id,
                retry_ms,
            } => (last_event_id, retry_ms),
        };
        if inner.shared.era() == Some(Era::Handshake)
            && let Some(last) = last_event_id
        {
            return handshake::resume(
                inner,
                id,
                &mut waiting.receiver,
                last,
                retry_ms,
                &outgoing.headers,
            )
            .await;
        }
        Ok(None)
    }

    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), ClientError> {
        // 2026-07-28 defines no client notifications over HTTP: cancellation is closing the
        // response stream.
        if self.inner.shared.era() == Some(Era::Modern) {
            return Ok(());
        }
        let body = encode_notification(method, params)
            .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        let version = self.inner.shared.version().map(|v| v.to_string());
        let headers = HttpHeaders {
            protocol_version: version,
            ..HttpHeaders::default()
        };
        let response = self.inner.post(body, None, &headers).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(ClientError::HttpStatus {
                status: status.as_u16(),
                body: body_snippet(response).await,
            });
        }
        Ok(())
    }

    /// Opens the handshake-era GET stream, waiting until the server accepted (or refused) it
    /// so that server requests sent right after connecting are not lost.
    pub(crate) async fn on_negotiated(&self) {
        if self.inner.shared.era() == Some(Era::Handshake) && self.inner.config.handshake_get_stream
        {
            let Some(response) = handshake::open_get_stream(&self.inner).await else {
                return;
            };
            let task = tokio::spawn(handshake::read_get_stream(
                Arc::clone(&self.inner),
                response,
            ));
            if let Some(old) = lock(&self.get_stream).replace(task) {
                old.abort();
            }
        }
    }

    pub(crate) async fn close(&self) -> Result<(), ClientError> {
        if let Some(task) = lock(&self.get_stream).take() {
            task.abort();
        }
        // The cancellations first: after `DELETE` the session they name is gone.
        let cancels = &self.inner.cancels;
        cancels.close();
        if tokio::time::timeout(CANCELS_WAIT, cancels.wait())
            .await
            .is_err()
        {
            tracing::debug!("notifications/cancelled not sent within {CANCELS_WAIT:?}");
        }
        cancels.reopen();
        handshake::end_session(&self.inner).await;
        Ok(())
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.get_stream).take() {
            task.abort();
        }
    }
}
