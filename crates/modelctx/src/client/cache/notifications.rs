//! Which cached results a server notification makes stale: a plain mapping, below the cache
//! that acts on it.

use modelctx_types::jsonrpc::Notification;
use modelctx_types::methods::{
    ListPrompts, ListResourceTemplates, ListResources, ListTools, PromptListChanged, ReadResource,
    ResourceListChanged, ResourceUpdated, SubscriptionsAcknowledged, ToolListChanged,
};
use modelctx_types::{
    Method as _, NotificationMethod as _, ResourceUpdatedNotificationParams,
    SubscriptionsAcknowledgedParams,
};

/// A cached result's identity within one server and principal: the method and the params that
/// shape it (the URI of `resources/read`, `""` for a listing).
pub(crate) type Target = (&'static str, String);

/// How many resources one acknowledgement may make stale: its filter is the server's word.
const MAX_ACKNOWLEDGED_RESOURCES: usize = 256;

/// The results `notification` makes stale (none for most notifications).
pub(crate) fn stale_targets(notification: &Notification) -> Vec<Target> {
    let list = |method: &'static str| (method, String::new());
    match notification.method.as_str() {
        ToolListChanged::NAME => vec![list(ListTools::NAME)],
        PromptListChanged::NAME => vec![list(ListPrompts::NAME)],
        // Templates enumerate the same changed resource space.
        ResourceListChanged::NAME => {
            vec![list(ListResources::NAME), list(ListResourceTemplates::NAME)]
        }
        ResourceUpdated::NAME => notification
            .params_as::<ResourceUpdatedNotificationParams>()
            .map(|params| vec![(ReadResource::NAME, params.uri)])
            .unwrap_or_default(),
        // A listen stream acknowledged (a new one, or one re-sent after a broken stream or a
        // graceful close): what changed before it was established was told to nobody, so what
        // it follows is refetched, as the subscription itself resyncs.
        SubscriptionsAcknowledged::NAME => notification
            .params_as::<SubscriptionsAcknowledgedParams>()
            .map(|params| {
                let followed = &params.notifications;
                let mut targets = Vec::new();
                if followed.wants_tools_list_changed() {
                    targets.push(list(ListTools::NAME));
                }
                if followed.wants_prompts_list_changed() {
                    targets.push(list(ListPrompts::NAME));
                }
                if followed.wants_resources_list_changed() {
                    targets.push(list(ListResources::NAME));
                    targets.push(list(ListResourceTemplates::NAME));
                }
                targets.extend(
                    followed
                        .resources()
                        .iter()
                        .take(MAX_ACKNOWLEDGED_RESOURCES)
                        .map(|uri| (ReadResource::NAME, uri.clone())),
                );
                targets
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn notification(method: &str, params: &serde_json::Value) -> Notification {
        Notification {
            method: method.to_owned(),
            params: Some(serde_json::value::to_raw_value(params).unwrap()),
        }
    }

    #[test]
    fn each_change_names_what_it_makes_stale() {
        let targets =
            |method, params: serde_json::Value| stale_targets(&notification(method, &params));
        assert_eq!(
            targets("notifications/tools/list_changed", json!({})),
            [("tools/list", String::new())]
        );
        assert_eq!(
            targets("notifications/resources/list_changed", json!({})),
            [
                ("resources/list", String::new()),
                ("resources/templates/list", String::new())
            ]
        );
        assert_eq!(
            targets(
                "notifications/resources/updated",
                json!({"uri": "file:///a"})
            ),
            [("resources/read", "file:///a".to_owned())]
        );
        assert_eq!(
            targets(
                "notifications/subscriptions/acknowledged",
                json!({"notifications": {"promptsListChanged": true, "resourceSubscriptions": ["file:///b"]}})
            ),
            [
                ("prompts/list", String::new()),
                ("resources/read", "file:///b".to_owned())
            ]
        );
        assert!(targets("notifications/message", json!({"level": "info", "data": 1})).is_empty());
        assert!(targets("notifications/resources/updated", json!({})).is_empty());
    }
}
