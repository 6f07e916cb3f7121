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

use super::registry::Registry;
use super::{RequestContext, Server};

/// A change announced to listen streams.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource (or template) list changed.
    ResourcesListChanged,
    /// The contents of this resource changed.
    ResourceUpdated(String),
    /// Anything may have changed (e.g. after a change bus reconnected, when changes may have
    /// been missed): each listen stream gets a list-changed notification for every list it
    /// follows and `notifications/resources/updated` for every resource it follows, so that its
    /// client refetches.
    Resync,
}

impl Server {
    /// Serves one listen stream until the client cancels it (`None`: send nothing more) or the
    /// server closes subscriptions (`Some`: the graceful closing result).
    pub(crate) async fn listen(
        &self,
        ctx: &RequestContext,
        params: &SubscriptionsListenRequestParams,
        registry: &Registry,
    ) -> Option<SubscriptionsListenResult> {
        // Subscribe before acknowledging, so no change between the two is lost.
        let mut changes = self.inner.changes.subscribe();
        let mut honored = self.honored(&params.notifications, registry);
        // The tasks extension: `notifications/tasks` for the honoured `taskIds`.
        let mut tasks = self
            .task_notifications(ctx, &params.notifications, &mut honored)
            .await;
        let tag = Meta::for_subscription(ctx.id());
        // Boxed, as everything awaited once or rarely here: the stream's future keeps the size
        // of its largest await for its whole life (RELIABILITY.md, "Change bus").
        Box::pin(ctx.notify::<SubscriptionsAcknowledged>(
            &SubscriptionsAcknowledgedParams::new(honored.clone()).with_meta(tag.clone()),
        ))
        .await;
        let Some(encoded) = Encoded::new(&tag, &honored) else {
            return Some(SubscriptionsListenResult::default());
        };
        // Not kept for the stream's life (a map: ~600 bytes a stream); a task notification,
        // rare beside the changes, builds it again.
        drop(tag);
        // Created once: a fresh `cancelled()` future per change would lock the token and register
        // a waiter again for every stream (10,000 streams, one change: 20,000 registrations).
        let cancelled = ctx.cancelled();
        let shutdown = self.inner.shutdown.cancelled();
        tokio::pin!(cancelled, shutdown);
        loop {
            tokio::select! {
                () = &mut cancelled => return None,
                () = &mut shutdown => return Some(SubscriptionsListenResult::default()),
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
                        if honored.resource_subscriptions.iter().flatten().any(|u| *u == uri) =>
                    {
                        ctx.notify_encoded(encoded.updated(&uri)).await;
                    }
                    Ok(Change::Resync) => Box::pin(self.resync(ctx, &honored, &encoded)).await,
                    Ok(_) => {}
                    Err(RecvError::Lagged(missed)) => {
                        // Changes were dropped for this stream: its client refetches everything
                        // it follows, as after a bus outage.
                        tracing::warn!(missed, "listen stream fell behind; changes were dropped, resyncing");
                        Box::pin(self.resync(ctx, &honored, &encoded)).await;
                    }
                    Err(RecvError::Closed) => return Some(SubscriptionsListenResult::default()),
                },
            }
        }
    }

    /// What a stream following `honored` is sent on [`Change::Resync`]: everything it follows.
    async fn resync(&self, ctx: &RequestContext, honored: &SubscriptionFilter, encoded: &Encoded) {
        for list in [&encoded.tools, &encoded.prompts, &encoded.resources] {
            encoded.send(ctx, list).await;
        }
        for uri in honored.resource_subscriptions.iter().flatten() {
            ctx.notify_encoded(encoded.updated(uri)).await;
        }
    }

    /// Refuses a filter an extension cannot serve for this request: `taskIds` from a client
    /// that did not declare the tasks extension get `-32021`.
    pub(crate) fn check_listen(
        &self,
        ctx: &RequestContext,
        params: &SubscriptionsListenRequestParams,
    ) -> Result<(), ErrorObject> {
        #[cfg(feature = "tasks")]
        if self.inner.tasks.is_some() {
            super::tasks::Tasks::check_listen(ctx, &params.notifications)?;
        }
        let _ = (ctx, params);
        Ok(())
    }

    /// The tasks extension's `notifications/tasks` for the filter's `taskIds` (a stream that
    /// never ends when there are none); the honoured ids go into the acknowledgement.
    async fn task_notifications(
        &self,
        ctx: &RequestContext,
        filter: &SubscriptionFilter,
        honored: &mut SubscriptionFilter,
    ) -> BoxStream<'static, Box<DetailedTask>> {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.inner.tasks {
            return tasks
                .listen(ctx, filter, honored)
                .await
                .map(Box::new)
                .boxed();
        }
        let _ = (ctx, filter, honored);
        futures::stream::pending().boxed()
    }

    /// The part of a filter this server can honour.
    fn honored(&self, filter: &SubscriptionFilter, registry: &Registry) -> SubscriptionFilter {
        let yes =
            |asked: Option<bool>, offered: bool| (asked == Some(true) && offered).then_some(true);
        let resources = self.inner.declare.resources
            || !registry.resources.is_empty()
            || !registry.templates.is_empty();
        let mut honored = SubscriptionFilter::new();
        honored.tools_list_changed = yes(
            filter.tools_list_changed,
            self.inner.declare.tools || !registry.tools.is_empty(),
        );
        honored.prompts_list_changed = yes(
            filter.prompts_list_changed,
            self.inner.declare.prompts || !registry.prompts.is_empty(),
        );
        honored.resources_list_changed = yes(filter.resources_list_changed, resources);
        honored.resource_subscriptions = filter
            .resource_subscriptions
            .clone()
            .filter(|uris| resources && !uris.is_empty());
        honored
    }
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
