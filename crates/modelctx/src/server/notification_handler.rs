//! Notifications from the client that the application handles itself
//! ([`ServerBuilder::on_notification`](super::ServerBuilder::on_notification)): a handshake-era
//! client's `notifications/roots/list_changed`, an extension's own notifications.
//!
//! The transports deliver every client notification here after doing their own part (a
//! `notifications/cancelled` still cancels, `notifications/initialized` still completes the
//! handshake). A handler runs as a task of its own, so a slow one never holds up the connection's
//! reader; at most [`MAX_RUNNING`] run at once per server, and a notification that arrives when
//! all are busy is dropped and logged — a client that floods notifications costs a bounded
//! number of tasks, not memory.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_seal::Principal;
use modelctx_types::Era;
use serde_json::Value;
use tokio::sync::Semaphore;

/// How many notification handlers may run at once, per server.
pub const MAX_RUNNING: usize = 64;

/// A notification the client sent, as a handler sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientNotification {
    /// The method, e.g. `notifications/roots/list_changed`.
    pub method: String,
    /// The params, if any.
    pub params: Option<Value>,
    /// The era of the connection it came on.
    pub era: Era,
    /// Who sent it, when the transport authenticated the client (HTTP with a bearer token).
    pub principal: Option<Principal>,
}

/// Handles one client notification method; any `Fn(ClientNotification) -> impl Future<Output
/// = ()>` is one.
pub trait NotificationHandler: Send + Sync + 'static {
    /// Handles `notification`.
    fn handle(&self, notification: ClientNotification) -> BoxFuture<'static, ()>;
}

impl<F, Fut> NotificationHandler for F
where
    F: Fn(ClientNotification) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn handle(&self, notification: ClientNotification) -> BoxFuture<'static, ()> {
        Box::pin(self(notification))
    }
}

/// The server's notification handlers by method, and the room they run in.
pub(crate) struct NotificationHandlers {
    by_method: HashMap<String, Arc<dyn NotificationHandler>>,
    running: Arc<Semaphore>,
}

impl std::fmt::Debug for NotificationHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationHandlers")
            .field("methods", &self.by_method.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl NotificationHandlers {
    pub(crate) fn new(by_method: HashMap<String, Arc<dyn NotificationHandler>>) -> Self {
        Self {
            by_method,
            running: Arc::new(Semaphore::new(MAX_RUNNING)),
        }
    }

    /// Starts the handler of `method`, if there is one and room for it.
    pub(crate) fn deliver(
        &self,
        method: &str,
        params: Option<&str>,
        era: Era,
        principal: Option<Principal>,
    ) {
        let Some(handler) = self.by_method.get(method) else {
            return;
        };
        let Ok(permit) = Arc::clone(&self.running).try_acquire_owned() else {
            tracing::warn!(
                method,
                "{MAX_RUNNING} notification handlers are running; notification dropped"
            );
            return;
        };
        // The transport parsed the message, so the params are JSON; an absent or `null` value
        // is no params.
        let params = params
            .and_then(|raw| serde_json::from_str::<Value>(raw).ok())
            .filter(|value| !value.is_null());
        let running = handler.handle(ClientNotification {
            method: method.to_owned(),
            params,
            era,
            principal,
        });
        tokio::spawn(async move {
            running.await;
            drop(permit);
        });
    }
}
