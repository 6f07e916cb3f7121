//! The upstream's changes, relayed to the host.
//!
//! A 2026-07-28 upstream announces changes on a listen stream (`subscriptions/listen`) only;
//! a 2025-11-25 one sends notifications on its session. Either way each change reaches the
//! host as the notification of its era: the mirrored list is read again (`mirror`), which
//! makes the bridge's server send `notifications/*/list_changed`; a resource update is passed
//! on as `notifications/resources/updated` to a host that follows it.

use std::time::Duration;

use modelctx::client::{Client, ListenEvent};
use modelctx::server::{Change, Server};
use modelctx::types::SubscriptionFilter;
use modelctx::types::jsonrpc::Notification;
use tokio::sync::mpsc;

use super::forward::Relay;
use super::mirror::{self, Lists, Mirrored};

/// How many upstream changes may wait to be applied. Changes of one kind coalesce (a list is
/// read in full anyway), so a full queue loses nothing a later change does not redo.
pub(crate) const CHANGE_BACKLOG: usize = 64;

/// The wait before listening again after the upstream closed its stream, doubled up to
/// [`RELISTEN_MAX`] while it keeps failing.
const RELISTEN_MIN: Duration = Duration::from_millis(100);
const RELISTEN_MAX: Duration = Duration::from_secs(5);

/// One change upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UpstreamChange {
    Tools,
    Prompts,
    Resources,
    ResourceUpdated(String),
}

impl UpstreamChange {
    /// The change a 2025-11-25 session notification announces, if it is one.
    pub(crate) fn of_notification(notification: &Notification) -> Option<Self> {
        match notification.method.as_str() {
            "notifications/tools/list_changed" => Some(Self::Tools),
            "notifications/prompts/list_changed" => Some(Self::Prompts),
            "notifications/resources/list_changed" => Some(Self::Resources),
            "notifications/resources/updated" => notification
                .params_as::<modelctx::types::ResourceUpdatedNotificationParams>()
                .ok()
                .map(|p| Self::ResourceUpdated(p.uri)),
            _ => None,
        }
    }

    fn of_event(event: ListenEvent) -> Option<Self> {
        match event {
            ListenEvent::ToolsListChanged => Some(Self::Tools),
            ListenEvent::PromptsListChanged => Some(Self::Prompts),
            ListenEvent::ResourcesListChanged => Some(Self::Resources),
            ListenEvent::ResourceUpdated { uri } => Some(Self::ResourceUpdated(uri)),
            _ => None,
        }
    }
}

/// Listens to a 2026-07-28 upstream's list changes for as long as the bridge runs, listening
/// again when the upstream closes the stream.
pub(crate) async fn listen_upstream(
    client: Client,
    lists: Lists,
    changes: mpsc::Sender<UpstreamChange>,
) {
    let mut filter = SubscriptionFilter::new();
    if lists.tools {
        filter = filter.with_tools_list_changed();
    }
    if lists.prompts {
        filter = filter.with_prompts_list_changed();
    }
    if lists.resources {
        filter = filter.with_resources_list_changed();
    }
    let mut pause = RELISTEN_MIN;
    loop {
        match client.listen(filter.clone()).await {
            Ok(mut subscription) => {
                while let Some(event) = subscription.next().await {
                    pause = RELISTEN_MIN;
                    if subscription.missed() > 0 {
                        // Fell behind: everything may have changed.
                        for change in [
                            UpstreamChange::Tools,
                            UpstreamChange::Prompts,
                            UpstreamChange::Resources,
                        ] {
                            let _ = changes.try_send(change);
                        }
                    }
                    if let Some(change) = UpstreamChange::of_event(event) {
                        let _ = changes.try_send(change);
                    }
                }
            }
            // stderr is the host's log of its server.
            Err(error) => eprintln!(
                "mcp bridge: cannot listen to the upstream's changes: {}",
                crate::safe_text::line(&error.to_string())
            ),
        }
        if changes.is_closed() {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RELISTEN_MAX);
    }
}

/// Applies the upstream's changes to the mirror until the senders are gone.
pub(crate) async fn apply(
    relay: Relay,
    server: Server,
    lists: Lists,
    mut mirrored: Mirrored,
    mut changes: mpsc::Receiver<UpstreamChange>,
) {
    while let Some(change) = changes.recv().await {
        let outcome = match change {
            UpstreamChange::Tools if lists.tools => {
                mirror::sync_tools(&relay, &server, &mut mirrored).await
            }
            UpstreamChange::Prompts if lists.prompts => {
                mirror::sync_prompts(&relay, &server, &mut mirrored).await
            }
            UpstreamChange::Resources if lists.resources => {
                mirror::sync_resources(&relay, &server, &mut mirrored).await
            }
            UpstreamChange::ResourceUpdated(uri) => {
                server.notify(Change::ResourceUpdated(uri));
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(error) = outcome {
            // The mirror keeps what it had; the next change tries again.
            eprintln!(
                "mcp bridge: following a change upstream failed: {}",
                crate::safe_text::line(&error.to_string())
            );
        }
    }
}
