//! Subscriptions: [`Client::listen`] opens a stream of change notifications (tool, prompt and
//! resource list changes, updates of chosen resources) in either era.
//!
//! * **2026-07-28** sends `subscriptions/listen` with the filter, waits for
//!   `notifications/subscriptions/acknowledged` (the honoured subset is
//!   [`Subscription::acknowledged`]), and routes the notifications tagged with
//!   `_meta["io.modelcontextprotocol/subscriptionId"]` equal to the listen request's id to this
//!   subscription only. The stream ends with the server's closing result (or an error).
//!   Dropping the [`Subscription`] abandons the request: HTTP closes the response stream, stdio
//!   sends `notifications/cancelled` with the listen id.
//! * **2025-11-25** (the handshake era) has no listen request: the server sends list changes
//!   unsolicited and resource updates after `resources/subscribe`. The same call subscribes to
//!   each requested URI (reference-counted across subscriptions), delivers the unsolicited
//!   notifications that match the filter, and unsubscribes on close (best effort on drop).
//!
//! A notification a subscription takes does not reach [`ClientBuilder::on_notification`];
//! everything else still does.
//!
//! Each subscription queues at most [`QUEUE_MESSAGES`] notifications and [`QUEUE_BYTES`] of
//! their params (`listen_queue`): a consumer that falls further behind loses the excess and is
//! resynced (see [`Subscription`]).
//!
//! [`Client::listen`]: super::Client::listen
//! [`ClientBuilder::on_notification`]: super::ClientBuilder::on_notification

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use modelctx_types::jsonrpc::Notification;
use modelctx_types::methods::{
    PromptListChanged, ResourceListChanged, ResourceUpdated, Subscribe, SubscriptionsAcknowledged,
    SubscriptionsListen, ToolListChanged, Unsubscribe,
};
use modelctx_types::{
    Era, NotificationMethod, RequestId, ResourceUpdatedNotificationParams, SubscribeRequestParams,
    SubscriptionFilter, SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams,
};
use serde::Deserialize;
use serde_json::Value;

use super::error::ClientError;
use super::listen_queue::{self, Inbox, Outbox, Received};
use super::session::{RequestOptions, RoundOutcome, Session};
use super::shared::Route;
use crate::sync::lock;

/// One notification delivered to a [`Subscription`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenEvent {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`: the contents of `uri` changed.
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// Another notification on the stream (an extension's, e.g. `notifications/tasks`).
    Other {
        /// The method.
        method: String,
        /// The params, when there were any. Params that cannot be parsed into a [`Value`]
        /// (nested deeper than `serde_json`'s limit of 128 levels) are kept as their raw JSON
        /// text in a [`Value::String`]: JSON-RPC params are an object or an array, so a string
        /// here is always that text. It is the server's, unchecked: escape it before printing.
        params: Option<Value>,
    },
}

/// What the router hands a subscription.
enum Msg {
    Ack(SubscriptionsAcknowledgedParams),
    Event(ListenEvent),
    /// The listen request ended: with its closing result (`None`) or an error.
    End(Option<ClientError>),
}

impl ListenEvent {
    fn of(notification: &Notification) -> Self {
        match notification.method.as_str() {
            ToolListChanged::NAME => Self::ToolsListChanged,
            PromptListChanged::NAME => Self::PromptsListChanged,
            ResourceListChanged::NAME => Self::ResourcesListChanged,
            ResourceUpdated::NAME => {
                match notification.params_as::<ResourceUpdatedNotificationParams>() {
                    Ok(params) => Self::ResourceUpdated { uri: params.uri },
                    Err(_) => Self::other(notification),
                }
            }
            _ => Self::other(notification),
        }
    }

    fn other(notification: &Notification) -> Self {
        Self::Other {
            method: notification.method.clone(),
            // Dropped, unparsable params left the method alone to show, and hid what the server
            // sent: the raw text says it.
            params: notification.params.as_deref().map(|raw| {
                serde_json::from_str(raw.get())
                    .unwrap_or_else(|_| Value::String(raw.get().to_owned()))
            }),
        }
    }

    /// Whether a handshake-era subscription with `filter` takes this event.
    fn wanted_by(&self, filter: &SubscriptionFilter) -> bool {
        match self {
            Self::ToolsListChanged => filter.wants_tools_list_changed(),
            Self::PromptsListChanged => filter.wants_prompts_list_changed(),
            Self::ResourcesListChanged => filter.wants_resources_list_changed(),
            Self::ResourceUpdated { uri } => filter.wants_resource(uri),
            Self::Other { .. } => false,
        }
    }
}

tokio::task_local! {
    /// Set while a `Client::listen` request is being sent: the ids its transport draws
    /// (`Shared::next_id`) are registered to this subscription before anything goes out.
    static LISTEN: Arc<Slot>;
}

/// How many notifications a subscription's queue holds for its consumer; past it they are
/// dropped and the subscription resyncs. The server's change feed holds as many per stream.
pub(crate) const QUEUE_MESSAGES: usize = 256;
/// How many bytes of params (as the server wrote them) a subscription's queue holds; past it
/// notifications are dropped as past [`QUEUE_MESSAGES`] (one larger notification passes when
/// nothing else waits).
pub(crate) const QUEUE_BYTES: usize = 4 << 20;

/// The routing entry of one 2026-07-28 subscription.
struct Slot {
    tx: Outbox<Msg>,
    /// Every id the listen request was sent with (a re-sent request gets a new one).
    ids: Mutex<Vec<RequestId>>,
}

/// The pause before listening again after a graceful close
/// (`ClientBuilder::relisten_after_close`), doubled while streams close within
/// [`RELISTEN_MAX`] of opening, up to it.
const RELISTEN_MIN: std::time::Duration = std::time::Duration::from_millis(100);
const RELISTEN_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// A handshake-era subscription: the filter its unsolicited notifications are matched against.
struct HandshakeListener {
    filter: SubscriptionFilter,
    tx: Outbox<Msg>,
}

/// The subscriptions of one connection: a route of the core, registered by the first
/// subscription.
#[derive(Default)]
pub(crate) struct Listens {
    /// Whether a subscription was ever opened: until then routing is skipped entirely.
    used: AtomicBool,
    modern: Mutex<HashMap<RequestId, Outbox<Msg>>>,
    /// The ids of the latest ended subscriptions: what the server still sends for them (the
    /// cancellation races its notifications) is dropped, not handed to `on_notification`.
    retired: Mutex<VecDeque<RequestId>>,
    handshake: Mutex<HashMap<u64, HandshakeListener>>,
    next_handshake: AtomicU64,
    /// Handshake era: how many subscriptions want each URI `resources/subscribe`d. Held across
    /// the subscribe / unsubscribe requests so that they reach the server in count order.
    subscribed: tokio::sync::Mutex<HashMap<String, usize>>,
}

/// How many ended subscriptions' ids are remembered.
const RETIRED: usize = 64;

#[derive(Deserialize)]
struct MetaProbe {
    #[serde(default, rename = "io.modelcontextprotocol/subscriptionId")]
    subscription_id: Option<RequestId>,
}

#[derive(Deserialize)]
struct ParamsProbe {
    #[serde(default, rename = "_meta")]
    meta: Option<MetaProbe>,
}

impl Route for Listens {
    /// Right after the response cache (which only looks): a subscription takes its own
    /// notifications before any other route.
    fn order(&self) -> u8 {
        1
    }

    /// Registers `id` to the listen request being sent on this task, if any.
    fn claim(&self, id: &RequestId) {
        let _ = LISTEN.try_with(|slot| {
            lock(&self.modern).insert(id.clone(), slot.tx.clone());
            lock(&slot.ids).push(id.clone());
        });
    }

    /// Hands `notification` to the subscription it belongs to; `false` when none takes it.
    fn route(&self, notification: &Notification) -> bool {
        if !self.used.load(Ordering::Acquire) {
            return false;
        }
        let tag = notification
            .params_as::<ParamsProbe>()
            .ok()
            .and_then(|p| p.meta)
            .and_then(|m| m.subscription_id);
        // What a queued notification costs: its params as the server wrote them.
        let bytes = notification
            .params
            .as_deref()
            .map_or(0, |raw| raw.get().len());
        if let Some(id) = tag {
            // 2026-07-28: correlated by subscription id; others' ids (the tasks extension's
            // own listen streams) fall through.
            let Some(tx) = lock(&self.modern).get(&id).cloned() else {
                return lock(&self.retired).contains(&id);
            };
            if notification.method == SubscriptionsAcknowledged::NAME {
                let ack = match notification.params_as::<SubscriptionsAcknowledgedParams>() {
                    Ok(params) => params,
                    Err(error) => {
                        tracing::warn!(%error, "malformed subscription acknowledgement");
                        SubscriptionsAcknowledgedParams::default()
                    }
                };
                // Never lost to a full queue: it says what the stream carries.
                return tx.offer_kept(Msg::Ack(ack), bytes);
            }
            return tx.offer(Msg::Event(ListenEvent::of(notification)), bytes);
        }
        // The handshake era: unsolicited notifications, matched against each filter.
        let listeners = lock(&self.handshake);
        if listeners.is_empty() {
            return false;
        }
        let event = ListenEvent::of(notification);
        let mut taken = false;
        for listener in listeners.values() {
            if event.wanted_by(&listener.filter) {
                taken |= listener.tx.offer(Msg::Event(event.clone()), bytes);
            }
        }
        taken
    }
}

impl Listens {
    fn forget_modern(&self, slot: &Slot) {
        let ids = std::mem::take(&mut *lock(&slot.ids));
        let mut modern = lock(&self.modern);
        let mut retired = lock(&self.retired);
        for id in ids {
            modern.remove(&id);
            if retired.len() == RETIRED {
                retired.pop_front();
            }
            retired.push_back(id);
        }
    }
}

/// A live subscription from [`Client::listen`](super::Client::listen): a stream of [`ListenEvent`]s.
///
/// [`Subscription::next`] returns `None` once the stream has ended — the server closed it
/// gracefully ([`Subscription::error`] is `None`) or it failed (`Some`). Dropping the
/// subscription ends it: on 2026-07-28 the listen request is abandoned (HTTP closes the
/// response stream, stdio sends `notifications/cancelled`); in the handshake era its
/// resources are unsubscribed in the background. [`Subscription::close`] does the same and
/// waits for it. It also implements [`futures::Stream`].
///
/// # A consumer that falls behind
///
/// Notifications wait for the consumer in a bounded queue: at most 256, holding at most 4 MiB
/// of params (one larger notification passes when nothing else waits). What arrives beyond
/// that is dropped — the connection's reader never waits for one slow subscription, and a fast
/// server cannot fill memory — and the consumer is resynced where the loss was, as after a
/// re-sent request: after the events queued before the (latest) drop, a list-changed event for
/// each list it follows and an update for each resource it follows, so that it refetches them.
/// No event after the resync was sent before what was dropped, so a consumer that refetches
/// there and applies the later events in order ends on the server's latest state.
/// [`Subscription::missed`] counts what was dropped and grows at the resync
/// (not when the drop happens); a consumer of other notifications (the tasks extension's
/// `notifications/tasks`) re-reads what they tell (`tasks/get`) when it grows.
pub struct Subscription {
    rx: Inbox<Msg>,
    listens: Arc<Listens>,
    acknowledged: SubscriptionFilter,
    /// Whether a stream was acknowledged already (a later acknowledgement is a new stream).
    was_acknowledged: bool,
    id: Option<RequestId>,
    buffered: VecDeque<ListenEvent>,
    ended: bool,
    error: Option<ClientError>,
    kind: Kind,
}

enum Kind {
    Modern {
        slot: Arc<Slot>,
        task: Option<tokio::task::JoinHandle<()>>,
    },
    Handshake {
        key: u64,
        session: Session,
        /// The URIs this subscription `resources/subscribe`d; emptied once released.
        uris: Vec<String>,
    },
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    fn new(rx: Inbox<Msg>, listens: Arc<Listens>, kind: Kind) -> Self {
        Self {
            rx,
            listens,
            acknowledged: SubscriptionFilter::default(),
            was_acknowledged: false,
            id: None,
            buffered: VecDeque::new(),
            ended: false,
            error: None,
            kind,
        }
    }

    /// The next event; `None` once the stream has ended.
    pub async fn next(&mut self) -> Option<ListenEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The part of the filter the server honours: its acknowledgement on 2026-07-28; in the
    /// handshake era the list changes its capabilities declare (`listChanged`) and the URIs
    /// `resources/subscribe` accepted.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The subscription id (the `subscriptions/listen` request id) on 2026-07-28; `None` in the
    /// handshake era.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// Why the stream ended, once [`Subscription::next`] returned `None`: `None` for the
    /// server's graceful close.
    pub fn error(&self) -> Option<&ClientError> {
        self.error.as_ref()
    }

    /// How many notifications were dropped because the consumer fell behind (see "A consumer
    /// that falls behind" above), as of the last resync read: it grows where the events of a
    /// resync start, after the events queued before the loss.
    pub fn missed(&self) -> u64 {
        self.rx.dropped()
    }

    /// Ends the subscription and waits until that is done: on 2026-07-28 the listen request
    /// is abandoned (the cancellation is on its way when this returns); in the handshake era
    /// its resources are unsubscribed (failures are logged, not returned).
    pub async fn close(mut self) {
        match &mut self.kind {
            Kind::Modern { task, .. } => {
                if let Some(task) = task.take() {
                    task.abort();
                    let _ = task.await;
                }
            }
            Kind::Handshake { session, uris, .. } => {
                release(session, std::mem::take(uris)).await;
            }
        }
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<ListenEvent>> {
        loop {
            if let Some(event) = self.buffered.pop_front() {
                return Poll::Ready(Some(event));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            match ready!(self.rx.poll_recv(cx)) {
                Some(Received::Message(Msg::Event(event))) => return Poll::Ready(Some(event)),
                // A re-issued request (HTTP, after a broken stream) is acknowledged again.
                Some(Received::Message(Msg::Ack(ack))) => {
                    if self.adopt(ack) {
                        self.resync();
                    }
                }
                Some(Received::Lagged { kept }) => {
                    if let Some(Msg::Ack(ack)) = kept {
                        self.adopt(ack);
                    }
                    self.resync();
                }
                Some(Received::Message(Msg::End(error))) => self.end(error),
                None => self.end(None),
            }
        }
    }

    fn end(&mut self, error: Option<ClientError>) {
        self.ended = true;
        self.error = error;
        if let Kind::Modern { slot, .. } = &self.kind {
            self.listens.forget_modern(slot);
        }
    }

    /// Takes `ack` as what the stream carries; `true` when it is a later acknowledgement, a new
    /// stream (re-sent after a broken stream, or after a graceful close) that may have missed
    /// changes.
    fn adopt(&mut self, ack: SubscriptionsAcknowledgedParams) -> bool {
        if let Some(id) = ack
            .meta
            .as_ref()
            .and_then(modelctx_types::Meta::subscription_id)
        {
            self.id = Some(id);
        }
        self.acknowledged = ack.notifications;
        std::mem::replace(&mut self.was_acknowledged, true)
    }

    /// After changes may have been missed (a new stream, dropped notifications): everything
    /// followed is announced as changed, and the caller refetches.
    fn resync(&mut self) {
        let followed = &self.acknowledged;
        let lists = [
            (
                followed.wants_tools_list_changed(),
                ListenEvent::ToolsListChanged,
            ),
            (
                followed.wants_prompts_list_changed(),
                ListenEvent::PromptsListChanged,
            ),
            (
                followed.wants_resources_list_changed(),
                ListenEvent::ResourcesListChanged,
            ),
        ];
        let updates = followed
            .resources()
            .iter()
            .map(|uri| ListenEvent::ResourceUpdated { uri: uri.clone() });
        self.buffered.extend(
            lists
                .into_iter()
                .filter_map(|(wanted, event)| wanted.then_some(event))
                .chain(updates),
        );
    }

    /// Waits for the acknowledgement (2026-07-28), keeping what comes before it (as much as
    /// the queue holds).
    async fn acknowledgement(&mut self) -> Result<(), ClientError> {
        let mut lagged = false;
        loop {
            match self.rx.recv().await {
                Some(Received::Message(Msg::Ack(ack))) => {
                    self.adopt(ack);
                    if lagged {
                        self.resync();
                    }
                    return Ok(());
                }
                Some(Received::Lagged {
                    kept: Some(Msg::Ack(ack)),
                }) => {
                    self.adopt(ack);
                    self.resync();
                    return Ok(());
                }
                Some(Received::Lagged { .. }) => lagged = true,
                Some(Received::Message(Msg::Event(event))) => {
                    if self.buffered.len() < QUEUE_MESSAGES {
                        self.buffered.push_back(event);
                    } else {
                        lagged = true;
                    }
                }
                Some(Received::Message(Msg::End(Some(error)))) => return Err(error),
                Some(Received::Message(Msg::End(None))) | None => {
                    return Err(ClientError::Protocol(
                        "the listen stream ended before its acknowledgement".to_owned(),
                    ));
                }
            }
        }
    }
}

impl futures::Stream for Subscription {
    type Item = ListenEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ListenEvent>> {
        self.get_mut().poll_event(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        match &mut self.kind {
            Kind::Modern { slot, task } => {
                if let Some(task) = task.take() {
                    // Dropping the request future abandons it (see the type docs).
                    task.abort();
                }
                self.listens.forget_modern(slot);
            }
            Kind::Handshake { key, session, uris } => {
                lock(&self.listens.handshake).remove(key);
                let uris = std::mem::take(uris);
                if !uris.is_empty()
                    && let Ok(handle) = tokio::runtime::Handle::try_current()
                {
                    let session = session.clone();
                    handle.spawn(async move { release(&session, uris).await });
                }
            }
        }
    }
}

/// `resources/unsubscribe` for the URIs no other subscription still wants.
async fn release(session: &Session, uris: Vec<String>) {
    let listens = session.inner.shared.route::<Listens>();
    let mut counts = listens.subscribed.lock().await;
    for uri in uris {
        let last = match counts.get_mut(&uri) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                counts.remove(&uri);
                true
            }
            None => false,
        };
        if last {
            let params = SubscribeRequestParams::new(uri.clone());
            if let Err(error) = session
                .request::<Unsubscribe>(params, &RequestOptions::new())
                .await
            {
                tracing::debug!(%uri, %error, "resources/unsubscribe failed");
            }
        }
    }
}

impl Session {
    /// Opens a subscription to the notifications `filter` opts into; see [`Client::listen`].
    ///
    /// # Errors
    /// See [`Client::listen`].
    ///
    /// [`Client::listen`]: super::Client::listen
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        if self.era() == Some(Era::Handshake) {
            self.listen_handshake(filter).await
        } else {
            self.listen_modern(filter).await
        }
    }

    async fn listen_modern(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        let listens = self.inner.shared.route::<Listens>();
        let (tx, rx) = listen_queue::channel(QUEUE_MESSAGES, QUEUE_BYTES);
        let slot = Arc::new(Slot {
            tx: tx.clone(),
            ids: Mutex::new(Vec::new()),
        });
        listens.used.store(true, Ordering::Release);
        let params = SubscriptionsListenRequestParams::new(filter);
        let session = self.clone();
        let relisten = self.inner.config.relisten;
        let request = LISTEN.scope(Arc::clone(&slot), async move {
            let mut pause = RELISTEN_MIN;
            loop {
                let started = tokio::time::Instant::now();
                let end = match session
                    .request::<SubscriptionsListen>(params.clone(), &RequestOptions::new())
                    .await
                {
                    Ok(RoundOutcome::Complete(_)) => None,
                    Ok(RoundOutcome::InputRequired(_)) => Some(ClientError::Protocol(
                        "subscriptions/listen answered input_required".to_owned(),
                    )),
                    Err(error) => Some(error),
                };
                if end.is_some() || !relisten {
                    // The one message that waits for room: the stream's end is never dropped.
                    tx.send(Msg::End(end)).await;
                    return;
                }
                // A graceful close: listen again (its acknowledgement makes the subscription
                // resync). Streams that close at once back off, so that a server closing every
                // stream is not asked in a tight loop.
                if started.elapsed() >= RELISTEN_MAX {
                    pause = RELISTEN_MIN;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RELISTEN_MAX);
            }
        });
        let mut subscription = Subscription::new(
            rx,
            listens,
            Kind::Modern {
                slot,
                task: Some(tokio::spawn(request)),
            },
        );
        match self.inner.config.request_timeout {
            None => subscription.acknowledgement().await?,
            Some(after) => tokio::time::timeout(after, subscription.acknowledgement())
                .await
                .map_err(|_| ClientError::Timeout {
                    operation: "subscriptions/listen acknowledgement",
                    after,
                })??,
        }
        if subscription.id.is_none()
            && let Kind::Modern { slot, .. } = &subscription.kind
        {
            subscription.id = lock(&slot.ids).last().cloned();
        }
        Ok(subscription)
    }

    async fn listen_handshake(
        &self,
        filter: SubscriptionFilter,
    ) -> Result<Subscription, ClientError> {
        let listens = self.inner.shared.route::<Listens>();
        let capabilities = self.server_capabilities().unwrap_or_default();
        let declared = |wanted: bool, list_changed: Option<bool>| {
            (wanted && list_changed == Some(true)).then_some(true)
        };
        let mut honored = SubscriptionFilter::new();
        honored.tools_list_changed = declared(
            filter.wants_tools_list_changed(),
            capabilities.tools.as_ref().and_then(|c| c.list_changed),
        );
        honored.prompts_list_changed = declared(
            filter.wants_prompts_list_changed(),
            capabilities.prompts.as_ref().and_then(|c| c.list_changed),
        );
        honored.resources_list_changed = declared(
            filter.wants_resources_list_changed(),
            capabilities.resources.as_ref().and_then(|c| c.list_changed),
        );
        // Listening before subscribing: an update right after the subscription is kept.
        honored.resource_subscriptions = filter.resource_subscriptions.clone();
        let (tx, rx) = listen_queue::channel(QUEUE_MESSAGES, QUEUE_BYTES);
        let key = listens.next_handshake.fetch_add(1, Ordering::Relaxed);
        lock(&listens.handshake).insert(
            key,
            HandshakeListener {
                filter: honored.clone(),
                tx,
            },
        );
        listens.used.store(true, Ordering::Release);
        let mut subscription = Subscription::new(
            rx,
            Arc::clone(&listens),
            Kind::Handshake {
                key,
                session: self.clone(),
                uris: Vec::new(),
            },
        );
        let mut accepted = Vec::new();
        {
            let mut counts = listens.subscribed.lock().await;
            for uri in filter.resources() {
                if let Some(count) = counts.get_mut(uri) {
                    *count += 1;
                    accepted.push(uri.clone());
                    continue;
                }
                let params = SubscribeRequestParams::new(uri.clone());
                match self
                    .request::<Subscribe>(params, &RequestOptions::new())
                    .await
                {
                    Ok(_) => {
                        counts.insert(uri.clone(), 1);
                        accepted.push(uri.clone());
                    }
                    Err(error) => tracing::debug!(%uri, %error, "resources/subscribe failed"),
                }
            }
        }
        if let Kind::Handshake { uris, .. } = &mut subscription.kind {
            uris.clone_from(&accepted);
        }
        honored.resource_subscriptions = filter.resource_subscriptions.as_ref().map(|_| accepted);
        if let Some(listener) = lock(&listens.handshake).get_mut(&key) {
            listener.filter = honored.clone();
        }
        subscription.acknowledged = honored;
        Ok(subscription)
    }
}
