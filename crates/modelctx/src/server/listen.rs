//! `subscriptions/listen`: a long-lived request whose response stream carries the change
//! notifications the client opted into, each tagged with the subscription id.

use futures::StreamExt as _;
use futures::stream::BoxStream;
use modelctx_types::methods::{
    PromptListChanged, ResourceListChanged, ResourceUpdated, SubscriptionsAcknowledged,
    ToolListChanged,
};
use modelctx_types::tasks::{DetailedTask, TaskStatusNotification};
use modelctx_types::{
    ErrorObject, Meta, NotificationParams, ResourceUpdatedNotificationParams, SubscriptionFilter,
    SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams, SubscriptionsListenResult,
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
        ctx.notify::<SubscriptionsAcknowledged>(
            &SubscriptionsAcknowledgedParams::new(honored.clone()).with_meta(tag.clone()),
        )
        .await;
        let list_changed = NotificationParams::new().with_meta(tag.clone());
        loop {
            tokio::select! {
                () = ctx.cancelled() => return None,
                () = self.inner.shutdown.cancelled() => return Some(SubscriptionsListenResult::default()),
                Some(mut task) = tasks.next() => {
                    task.meta = Some(tag.clone());
                    ctx.notify::<TaskStatusNotification>(&task).await;
                }
                change = changes.recv() => match change {
                    Ok(Change::ToolsListChanged) if honored.tools_list_changed == Some(true) => {
                        ctx.notify::<ToolListChanged>(&list_changed).await;
                    }
                    Ok(Change::PromptsListChanged) if honored.prompts_list_changed == Some(true) => {
                        ctx.notify::<PromptListChanged>(&list_changed).await;
                    }
                    Ok(Change::ResourcesListChanged) if honored.resources_list_changed == Some(true) => {
                        ctx.notify::<ResourceListChanged>(&list_changed).await;
                    }
                    Ok(Change::ResourceUpdated(uri))
                        if honored.resource_subscriptions.iter().flatten().any(|u| *u == uri) =>
                    {
                        ctx.notify::<ResourceUpdated>(
                            &ResourceUpdatedNotificationParams::new(uri).with_meta(tag.clone()),
                        )
                        .await;
                    }
                    Ok(Change::Resync) => {
                        self.resync(ctx, &honored, &tag, &list_changed).await;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(missed)) => {
                        // Changes were dropped for this stream: its client refetches everything
                        // it follows, as after a bus outage.
                        tracing::warn!(missed, "listen stream fell behind; changes were dropped, resyncing");
                        self.resync(ctx, &honored, &tag, &list_changed).await;
                    }
                    Err(RecvError::Closed) => return Some(SubscriptionsListenResult::default()),
                },
            }
        }
    }

    /// What a stream following `honored` is sent on [`Change::Resync`]: everything it follows.
    async fn resync(
        &self,
        ctx: &RequestContext,
        honored: &SubscriptionFilter,
        tag: &Meta,
        list_changed: &NotificationParams,
    ) {
        if honored.tools_list_changed == Some(true) {
            ctx.notify::<ToolListChanged>(list_changed).await;
        }
        if honored.prompts_list_changed == Some(true) {
            ctx.notify::<PromptListChanged>(list_changed).await;
        }
        if honored.resources_list_changed == Some(true) {
            ctx.notify::<ResourceListChanged>(list_changed).await;
        }
        for uri in honored.resource_subscriptions.iter().flatten() {
            ctx.notify::<ResourceUpdated>(
                &ResourceUpdatedNotificationParams::new(uri.clone()).with_meta(tag.clone()),
            )
            .await;
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
    ) -> BoxStream<'static, DetailedTask> {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.inner.tasks {
            return tasks.listen(ctx, filter, honored).await;
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
