//! The client's core: the plain state of one connection that every layer above shares —
//! request ids, what negotiation settled, the progress tokens of requests in flight — and the
//! routing of what the server sends unasked.
//!
//! The core knows no feature. A feature that wants some of the server's notifications (a
//! `Client::listen` subscription, a task followed in listen mode) registers a [`Route`] of its
//! own type on first use ([`Shared::route`]) and keeps its routing table in it; the routes see
//! each notification in their [`Route::order`], before the progress tokens. What no route takes,
//! and every request the server sends, goes to the connection's [`Inbound`] handler, given at
//! construction (the callbacks behind the back-channel's limits, client/back_channel.rs).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use modelctx_types::jsonrpc::{Notification, Request};
use modelctx_types::methods::Progress;
use modelctx_types::{
    Era, Implementation, NotificationMethod, ProgressNotificationParams, ProtocolVersion,
    RequestId, ServerCapabilities,
};

use super::callbacks::ProgressCallback;
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

/// A feature's share of the server's notifications (see the module docs).
pub(crate) trait Route: Send + Sync + 'static {
    /// Where the route runs among the others (lower first); fixed per route type.
    fn order(&self) -> u8;

    /// A request id was drawn, on the task that is about to send the request.
    fn claim(&self, _id: &RequestId) {}

    /// Takes `notification` when it is this route's; `false` passes it on.
    fn route(&self, notification: &Notification) -> bool;
}

/// Where the messages no route takes go: the connection's notification callback, and the
/// answers to the server's requests (encoded JSON-RPC responses).
pub(crate) trait Inbound: Send + Sync {
    /// A notification no route took.
    fn notification(&self, notification: &Notification);

    /// Answers a request the server sent; `core` is this connection's.
    fn request<'a>(&'a self, core: &'a Shared, request: Request) -> BoxFuture<'a, Vec<u8>>;
}

/// One registered route: typed (for [`Shared::route`]) and as the router calls it.
struct Registered {
    type_id: TypeId,
    typed: Arc<dyn Any + Send + Sync>,
    route: Arc<dyn Route>,
}

/// See the module docs.
pub(crate) struct Shared {
    next_id: AtomicI64,
    next_progress: AtomicI64,
    negotiated: RwLock<Negotiated>,
    progress: Mutex<HashMap<RequestId, ProgressCallback>>,
    /// Whether any route is registered: until then requests and notifications skip the table.
    routed: AtomicBool,
    routes: RwLock<Vec<Registered>>,
    inbound: Arc<dyn Inbound>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("negotiated", &self.negotiated)
            .field("routes", &read(&self.routes).len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(inbound: Arc<dyn Inbound>) -> Arc<Self> {
        Arc::new(Self {
            next_id: AtomicI64::new(1),
            next_progress: AtomicI64::new(1),
            negotiated: RwLock::new(Negotiated::default()),
            progress: Mutex::new(HashMap::new()),
            routed: AtomicBool::new(false),
            routes: RwLock::new(Vec::new()),
            inbound,
        })
    }

    /// A fresh request id; ids are never reused within a connection (retries included). The
    /// routes may claim it (a `subscriptions/listen` routes its stream by its id).
    pub(crate) fn next_id(&self) -> RequestId {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        if self.routed.load(Ordering::Acquire) {
            for registered in read(&self.routes).iter() {
                registered.route.claim(&id);
            }
        }
        id
    }

    /// The route of type `R`, registered now if it was not yet.
    pub(crate) fn route<R: Route + Default>(&self) -> Arc<R> {
        let type_id = TypeId::of::<R>();
        let found = |routes: &[Registered]| {
            routes
                .iter()
                .find(|registered| registered.type_id == type_id)
                .and_then(|registered| Arc::clone(&registered.typed).downcast::<R>().ok())
        };
        if let Some(route) = found(&read(&self.routes)) {
            return route;
        }
        let mut routes = write(&self.routes);
        if let Some(route) = found(&routes) {
            return route;
        }
        let route = Arc::new(R::default());
        let at = routes.partition_point(|registered| registered.route.order() <= route.order());
        routes.insert(
            at,
            Registered {
                type_id,
                typed: Arc::clone(&route) as Arc<dyn Any + Send + Sync>,
                route: Arc::clone(&route) as Arc<dyn Route>,
            },
        );
        self.routed.store(true, Ordering::Release);
        route
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

    /// Routes a notification: to the first route that takes it, progress to the request that
    /// registered its token, everything else to the inbound handler.
    pub(crate) fn route_notification(&self, notification: &Notification) {
        if self.routed.load(Ordering::Acquire)
            && read(&self.routes)
                .iter()
                .any(|registered| registered.route.route(notification))
        {
            return;
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
        self.inbound.notification(notification);
    }

    /// Answers a request the server sent (the inbound handler's encoded response).
    pub(crate) async fn answer_server_request(&self, request: Request) -> Vec<u8> {
        self.inbound.request(self, request).await
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
