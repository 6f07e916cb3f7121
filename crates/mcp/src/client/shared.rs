//! State shared by a session and its transport: request ids, the negotiated era, the callbacks,
//! and the routing of progress notifications to the request that asked for them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use mcp_types::jsonrpc::{Notification, Request, encode_error};
use mcp_types::methods::Progress;
use mcp_types::{
    Era, ErrorObject, Implementation, NotificationMethod, ProgressNotificationParams,
    ProtocolVersion, RequestId, ServerCapabilities,
};

use super::back_channel::BackChannelGate;
use super::callbacks::{Callbacks, ProgressCallback};
use super::input_loop::LoopLimits;
use crate::sync::{lock, read, write};

/// What negotiation settled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Negotiated {
    /// The protocol version requests are sent with.
    pub(crate) version: Option<ProtocolVersion>,
    /// The era, once known.
    pub(crate) era: Option<Era>,
    /// What the server declared (`server/discover` or `initialize`).
    pub(crate) server_capabilities: Option<ServerCapabilities>,
    /// The server's name and version, when it sent them.
    pub(crate) server_info: Option<Implementation>,
    /// The server's instructions.
    pub(crate) instructions: Option<String>,
}

/// See the module docs.
pub(crate) struct Shared {
    pub(crate) callbacks: Callbacks,
    next_id: AtomicI64,
    next_progress: AtomicI64,
    negotiated: RwLock<Negotiated>,
    progress: Mutex<HashMap<RequestId, ProgressCallback>>,
    /// The tasks extension: where `notifications/tasks` for followed tasks go.
    pub(crate) task_watchers: super::tasks::TaskWatchers,
    /// `Client::listen` subscriptions: where their notifications go (client/listen.rs).
    pub(crate) listens: super::listen::Listens,
    /// The limits on the handshake era's server→client requests (client/back_channel.rs).
    pub(crate) back_channel: BackChannelGate,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("callbacks", &self.callbacks)
            .field("negotiated", &self.negotiated)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(callbacks: Callbacks, limits: &LoopLimits) -> Arc<Self> {
        Arc::new(Self {
            callbacks,
            next_id: AtomicI64::new(1),
            next_progress: AtomicI64::new(1),
            negotiated: RwLock::new(Negotiated::default()),
            progress: Mutex::new(HashMap::new()),
            task_watchers: Mutex::new(HashMap::new()),
            listens: super::listen::Listens::default(),
            back_channel: BackChannelGate::new(limits),
        })
    }

    /// A fresh request id; ids are never reused within a connection (retries included).
    pub(crate) fn next_id(&self) -> RequestId {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        // A `subscriptions/listen` sent by `Client::listen` routes its stream by this id.
        self.listens.claim(&id);
        id
    }

    pub(crate) fn negotiated(&self) -> Negotiated {
        read(&self.negotiated).clone()
    }

    pub(crate) fn update(&self, f: impl FnOnce(&mut Negotiated)) {
        f(&mut write(&self.negotiated));
    }

    pub(crate) fn era(&self) -> Option<Era> {
        read(&self.negotiated).era
    }

    /// The era and version, without copying the rest of the negotiated state (the hot path).
    pub(crate) fn era_and_version(&self) -> (Option<Era>, Option<ProtocolVersion>) {
        let negotiated = read(&self.negotiated);
        (negotiated.era, negotiated.version.clone())
    }

    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        read(&self.negotiated).version.clone()
    }

    /// Registers a progress callback under a fresh token; the registration ends when the
    /// returned guard drops.
    pub(crate) fn register_progress(self: &Arc<Self>, callback: ProgressCallback) -> ProgressRoute {
        let token = RequestId::Number(self.next_progress.fetch_add(1, Ordering::Relaxed));
        lock(&self.progress).insert(token.clone(), callback);
        ProgressRoute {
            token,
            shared: Arc::clone(self),
        }
    }

    /// Sends the `notifications/tasks` of `task_id` to the returned receiver until the guard
    /// drops (the tasks extension's listen mode).
    pub(crate) fn watch_task(
        self: &Arc<Self>,
        task_id: &str,
    ) -> (
        super::tasks::TaskWatch,
        tokio::sync::mpsc::UnboundedReceiver<mcp_types::DetailedTask>,
    ) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        lock(&self.task_watchers).insert(task_id.to_owned(), tx);
        let guard = super::tasks::TaskWatch {
            shared: Arc::clone(self),
            task_id: task_id.to_owned(),
        };
        (guard, rx)
    }

    /// Routes a notification: a `Client::listen` subscription's to it, progress to the request
    /// that registered its token, a followed task's `notifications/tasks` to its follower,
    /// everything else to the notification callback.
    pub(crate) fn route_notification(&self, notification: &Notification) {
        if self.listens.route(notification) {
            return;
        }
        if notification.method == mcp_types::tasks::TaskStatusNotification::NAME
            && let Ok(task) = notification.params_as::<mcp_types::DetailedTask>()
        {
            let watcher = lock(&self.task_watchers).get(&task.task_id).cloned();
            if let Some(watcher) = watcher {
                let _ = watcher.send(task);
                return;
            }
        }
        if notification.method == Progress::NAME
            && let Ok(params) = notification.params_as::<ProgressNotificationParams>()
        {
            let callback = lock(&self.progress).get(&params.progress_token).cloned();
            if let Some(callback) = callback {
                callback(params);
                return;
            }
        }
        self.callbacks.notify(notification);
    }

    /// Answers a request the server sent. Only the handshake era has server→client requests;
    /// on a 2026-07-28 connection they are a protocol violation and get an error. The
    /// back-channel's limits apply (client/back_channel.rs); `ping` is answered regardless.
    pub(crate) async fn answer_server_request(&self, request: Request) -> Vec<u8> {
        if self.era() == Some(Era::Modern) {
            let error =
                ErrorObject::method_not_found(&request.method).with_data(serde_json::Value::from(
                    "2026-07-28 has no server-to-client requests; ask with InputRequiredResult",
                ));
            return encode_error(Some(&request.id), &error);
        }
        let version = self.version();
        if request.method == "ping" {
            return self.callbacks.answer_server_request(request, version).await;
        }
        let gate = &self.back_channel;
        let admitted = match gate.admit() {
            Ok(permit) => permit,
            Err(error) => return encode_error(Some(&request.id), &error),
        };
        if request.method == "sampling/createMessage"
            && self.callbacks.sampling.is_some()
            && let Err(error) = gate.charge_sampling()
        {
            return encode_error(Some(&request.id), &error);
        }
        let _running = gate.run().await;
        let response = self.callbacks.answer_server_request(request, version).await;
        drop(admitted);
        response
    }
}

/// A registered progress callback; unregisters on drop.
#[derive(Debug)]
pub(crate) struct ProgressRoute {
    pub(crate) token: RequestId,
    shared: Arc<Shared>,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        lock(&self.shared.progress).remove(&self.token);
    }
}
