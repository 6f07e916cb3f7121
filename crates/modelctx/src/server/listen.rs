//! `subscriptions/listen`: a long-lived request whose response stream carries the change
//! notifications the client opted into, each tagged with the subscription id.

use futures::StreamExt as _;
use futures::stream::BoxStream;
use modelctx_types::jsonrpc::encode_notification;
use modelctx_types::methods::{
    PromptListChanged, ResourceListChanged, ResourceUpdated, SubscriptionsAcknowledged,
    ToolListChanged,
};
use modelctx_types::tasks::{DetailedTask, TaskStatusNotification};
use modelctx_types::{
    ErrorObject, Meta, NotificationMethod as _, NotificationParams,
    ResourceUpdatedNotificationParams, SubscriptionFilter, SubscriptionsAcknowledgedParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::change::Change;
use super::registry::Registry;
use super::subscription_budget::Client;
use super::{RequestContext, Server, SubscriptionLimits};

/// Serves one listen stream until the client cancels it (`None`: send nothing more) or
/// `closing` is cancelled (`Some`: the graceful closing result): the server closed
/// subscriptions, or the stream's connection is ending. `request_bytes` is the size of the
/// request's params text, which the transport keeps for the stream's life.
///
/// # Errors
/// Before the acknowledgement: a request or filter past the [`super::SubscriptionLimits`]
/// (`-32602`), `taskIds` without the tasks extension (`-32021`) or naming more tasks than the
/// client may have (`-32602`), a client or server that holds its limit of streams
/// (`-32603`).
pub(crate) async fn listen(
    server: &Server,
    ctx: &RequestContext,
    params: SubscriptionsListenRequestParams,
    request_bytes: usize,
    registry: &Registry,
    closing: &CancellationToken,
) -> Result<Option<SubscriptionsListenResult>, ErrorObject> {
    // Only the filter is kept, and of it only what the stream follows: the envelope and any
    // member the server does not know go now, not with the stream.
    let mut filter = params.notifications;
    let budget = &server.inner.subscriptions;
    let uris = budget
        .limits()
        .stream_resources(filter.resource_subscriptions.take().unwrap_or_default())?;
    let task_ids = listen_task_ids(server, ctx, &mut filter)?;
    let followed = uris.iter().chain(task_ids.iter().flatten());
    let (entries, bytes) = followed.fold((0usize, 0usize), |(n, b), s| (n + 1, b + s.len()));
    let charge = SubscriptionLimits::stream_charge(request_bytes, entries, bytes);
    // Given back when the stream ends, however it ends.
    let _hold = budget.admit(Client::of(ctx.principal(), peer_ip(ctx)), charge)?;
    // Subscribe before acknowledging, so no change between the two is lost.
    let mut changes = server.inner.changes.subscribe();
    let mut honored = honored(server, &filter, uris, registry);
    drop(filter);
    // The tasks extension: `notifications/tasks` for the honoured `taskIds`.
    let mut tasks = task_notifications(server, ctx, task_ids, &mut honored).await;
    let tag = Meta::for_subscription(ctx.id());
    // The acknowledgement takes the honoured filter and gives its URIs back: the stream
    // keeps one set of them, never a copy. Boxed, as everything awaited once or rarely
    // here: the stream's future keeps the size of its largest await for its whole life
    // (RELIABILITY.md, "Change bus").
    let mut ack = SubscriptionsAcknowledgedParams::new(honored).with_meta(tag.clone());
    Box::pin(ctx.notify::<SubscriptionsAcknowledged>(&ack)).await;
    let Some(encoded) = Encoded::new(&tag, &ack.notifications) else {
        return Ok(Some(SubscriptionsListenResult::default()));
    };
    // Sorted and distinct (`SubscriptionLimits::stream_resources`): found by binary search.
    let resources: Box<[String]> = ack
        .notifications
        .resource_subscriptions
        .take()
        .unwrap_or_default()
        .into_boxed_slice();
    // Not kept for the stream's life (a map: ~600 bytes a stream); a task notification,
    // rare beside the changes, builds it again.
    drop((ack, tag));
    // Created once: a fresh `cancelled()` future per change would lock the token and register
    // a waiter again for every stream (10,000 streams, one change: 20,000 registrations).
    let cancelled = ctx.cancelled();
    let shutdown = closing.cancelled();
    tokio::pin!(cancelled, shutdown);
    loop {
        tokio::select! {
            () = &mut cancelled => return Ok(None),
            () = &mut shutdown => return Ok(Some(SubscriptionsListenResult::default())),
            Some(mut task) = tasks.next() => {
                task.meta = Some(Meta::for_subscription(ctx.id()));
                // Boxed, as the task is: held inline, both would size every stream's
                // future (and the whole request future around it) for this rare case.
                Box::pin(ctx.notify::<TaskStatusNotification>(&*task)).await;
            }
            change = changes.recv() => match change {
                Ok(Change::ToolsListChanged) => encoded.send(ctx, &encoded.tools).await,
                Ok(Change::PromptsListChanged) => encoded.send(ctx, &encoded.prompts).await,
                Ok(Change::ResourcesListChanged) => {
                    encoded.send(ctx, &encoded.resources).await;
                }
                Ok(Change::ResourceUpdated(uri))
                    if resources.binary_search(&uri).is_ok() =>
                {
                    ctx.notify_encoded(encoded.updated(&uri)).await;
                }
                Ok(Change::Resync) => Box::pin(resync(ctx, &resources, &encoded)).await,
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    // Changes were dropped for this stream: its client refetches everything
                    // it follows, as after a bus outage.
                    tracing::warn!(missed, "listen stream fell behind; changes were dropped, resyncing");
                    Box::pin(resync(ctx, &resources, &encoded)).await;
                }
                Err(RecvError::Closed) => {
                    return Ok(Some(SubscriptionsListenResult::default()));
                }
            },
        }
    }
}

/// What a stream following `resources` is sent on [`Change::Resync`]: everything it follows.
async fn resync(ctx: &RequestContext, resources: &[String], encoded: &Encoded) {
    for list in [&encoded.tools, &encoded.prompts, &encoded.resources] {
        encoded.send(ctx, list).await;
    }
    for uri in resources {
        ctx.notify_encoded(encoded.updated(uri)).await;
    }
}

/// The distinct `taskIds` of a filter, taken out of it (`None` when it names none, or the
/// server does not serve the tasks extension: then they are an unknown member, ignored).
fn listen_task_ids(
    server: &Server,
    ctx: &RequestContext,
    filter: &mut SubscriptionFilter,
) -> Result<Option<Vec<String>>, ErrorObject> {
    match &server.inner.tasks {
        Some(tasks) => tasks.listen_ids(ctx, filter),
        None => Ok(None),
    }
}

/// The tasks extension's `notifications/tasks` for `task_ids` (a stream that never ends
/// when there are none); the honoured ids go into the acknowledgement.
async fn task_notifications(
    server: &Server,
    ctx: &RequestContext,
    task_ids: Option<Vec<String>>,
    honored: &mut SubscriptionFilter,
) -> BoxStream<'static, Box<DetailedTask>> {
    match (&server.inner.tasks, task_ids) {
        (Some(tasks), Some(ids)) => tasks.listen(ctx, ids, honored).await.map(Box::new).boxed(),
        _ => futures::stream::pending().boxed(),
    }
}

/// The part of a filter this server can honour, following `uris` (the filter's own, checked).
fn honored(
    server: &Server,
    filter: &SubscriptionFilter,
    uris: Vec<String>,
    registry: &Registry,
) -> SubscriptionFilter {
    let yes = |asked: Option<bool>, offered: bool| (asked == Some(true) && offered).then_some(true);
    let resources = server.inner.declare.resources
        || !registry.resources.is_empty()
        || !registry.templates.is_empty();
    let mut honored = SubscriptionFilter::new();
    honored.tools_list_changed = yes(
        filter.tools_list_changed,
        server.inner.declare.tools || !registry.tools.is_empty(),
    );
    honored.prompts_list_changed = yes(
        filter.prompts_list_changed,
        server.inner.declare.prompts || !registry.prompts.is_empty(),
    );
    honored.resources_list_changed = yes(filter.resources_list_changed, resources);
    honored.resource_subscriptions = Some(uris).filter(|uris| resources && !uris.is_empty());
    honored
}

/// The notifications of one listen stream, encoded when it starts. Each carries the stream's
/// subscription tag, the same on every change, so a change costs a buffer copy per stream
/// instead of a serialisation and a clone of the tag: one change to 10,000 streams is 10,000
/// of these (RELIABILITY.md, "Change bus").
struct Encoded {
    /// The list-changed notifications of the lists the stream follows (`None`: not followed).
    tools: Option<Vec<u8>>,
    prompts: Option<Vec<u8>>,
    resources: Option<Vec<u8>>,
    /// `notifications/resources/updated` without its URI, and where the URI goes.
    updated: (Box<[u8]>, usize),
}

impl Encoded {
    /// Stands for the URI while the `resources/updated` notification is encoded, then is cut
    /// out. The tag is the client's request id, so it may hold these very characters; it is
    /// found as the value of the `uri` member: a key followed by an unescaped quote can only be
    /// the params' own member, since every quote inside the tag's strings is escaped and the
    /// tag's keys are the SDK's.
    const URI_MARK: &'static str = "\u{1}uri\u{1}";

    fn new(tag: &Meta, follows: &SubscriptionFilter) -> Option<Self> {
        let list_changed = NotificationParams::new().with_meta(tag.clone());
        let encode = |followed: Option<bool>, method| -> Result<Option<Vec<u8>>, ()> {
            if followed != Some(true) {
                return Ok(None);
            }
            encode_notification(method, Some(&list_changed))
                .map(Some)
                .map_err(|error| tracing::warn!(%error, "listen stream not encodable"))
        };
        let updated = encode_notification(
            ResourceUpdated::NAME,
            Some(&ResourceUpdatedNotificationParams::new(Self::URI_MARK).with_meta(tag.clone())),
        )
        .inspect_err(|error| tracing::warn!(%error, "listen stream not encodable"))
        .ok()?;
        let mark = serde_json::to_vec(Self::URI_MARK).ok()?;
        let member = [&b"\"uri\":"[..], &mark].concat();
        let at =
            updated.windows(member.len()).position(|w| w == member)? + member.len() - mark.len();
        Some(Self {
            tools: encode(follows.tools_list_changed, ToolListChanged::NAME).ok()?,
            prompts: encode(follows.prompts_list_changed, PromptListChanged::NAME).ok()?,
            resources: encode(follows.resources_list_changed, ResourceListChanged::NAME).ok()?,
            updated: (
                [&updated[..at], &updated[at + mark.len()..]]
                    .concat()
                    .into(),
                at,
            ),
        })
    }
    /// Sends a list-changed notification, if the stream follows that list.
    async fn send(&self, ctx: &RequestContext, list: &Option<Vec<u8>>) {
        if let Some(bytes) = list {
            ctx.notify_encoded(bytes.clone()).await;
        }
    }

    /// `notifications/resources/updated` for `uri`: the same bytes as encoding it afresh.
    fn updated(&self, uri: &str) -> Vec<u8> {
        let (bytes, at) = &self.updated;
        let (head, tail) = bytes.split_at(*at);
        let mut out = Vec::with_capacity(head.len() + uri.len() + 2 + tail.len());
        out.extend_from_slice(head);
        // Writing a `&str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut out, uri);
        out.extend_from_slice(tail);
        out
    }
}

/// The address of the peer that sent `ctx`'s request (on HTTP), which a stream is counted
/// against when the request has no principal.
fn peer_ip(ctx: &RequestContext) -> Option<std::net::IpAddr> {
    #[cfg(feature = "http-server")]
    return ctx.peer_addr().map(|peer| peer.ip());
    #[cfg(not(feature = "http-server"))]
    {
        let _ = ctx;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelctx_types::RequestId;

    /// The encoded-once notifications are byte for byte what encoding each afresh gives,
    /// whatever the URI holds (quotes, backslashes, control characters, non-ASCII).
    #[test]
    fn encoded_notifications_match_fresh_encoding() {
        // The last id is the placeholder itself, the way a hostile client could pick it.
        for id in [
            RequestId::from(7),
            RequestId::from("sub-\"quoted\""),
            RequestId::from(Encoded::URI_MARK),
            RequestId::from("\"uri\":\"\u{1}uri\u{1}\""),
        ] {
            let tag = Meta::for_subscription(&id);
            let all = SubscriptionFilter::new()
                .with_tools_list_changed()
                .with_prompts_list_changed()
                .with_resources_list_changed();
            let encoded = Encoded::new(&tag, &all).expect("encodable");
            let none = Encoded::new(&tag, &SubscriptionFilter::new()).expect("encodable");
            assert_eq!(
                (none.tools, none.prompts, none.resources),
                (None, None, None)
            );
            let list_changed = NotificationParams::new().with_meta(tag.clone());
            for (bytes, method) in [
                (&encoded.tools, ToolListChanged::NAME),
                (&encoded.prompts, PromptListChanged::NAME),
                (&encoded.resources, ResourceListChanged::NAME),
            ] {
                assert_eq!(
                    *bytes,
                    Some(encode_notification(method, Some(&list_changed)).unwrap())
                );
            }
            for uri in [
                "report://q1",
                "file:///a \"b\"\\c\n\u{1}d",
                "ressource://é/✓",
                "",
            ] {
                let fresh = encode_notification(
                    ResourceUpdated::NAME,
                    Some(&ResourceUpdatedNotificationParams::new(uri).with_meta(tag.clone())),
                )
                .unwrap();
                assert_eq!(
                    String::from_utf8(encoded.updated(uri)).unwrap(),
                    String::from_utf8(fresh).unwrap(),
                    "{uri:?}"
                );
            }
        }
    }
}
