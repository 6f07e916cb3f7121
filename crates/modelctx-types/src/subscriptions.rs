//! `subscriptions/listen`: the stream of change notifications a client opts into.

use crate::{
    Meta, RequestMeta, ResultType, requests::impl_request_params, result::impl_wire_result,
};

wire_struct! {
    /// Which notifications a listen stream carries; every member is opt-in.
    #[derive(Default)]
    pub struct SubscriptionFilter {
        @own setters;
        /// `notifications/tools/list_changed`.
        opt "toolsListChanged" => tools_list_changed: bool,
        /// `notifications/prompts/list_changed`.
        opt "promptsListChanged" => prompts_list_changed: bool,
        /// `notifications/resources/list_changed`.
        opt "resourcesListChanged" => resources_list_changed: bool,
        /// `notifications/resources/updated` for these URIs.
        opt "resourceSubscriptions" => resource_subscriptions: Vec<String>,
    }
}

impl SubscriptionFilter {
    /// Opts into `notifications/tools/list_changed`.
    #[must_use]
    pub fn with_tools_list_changed(mut self) -> Self {
        self.tools_list_changed = Some(true);
        self
    }

    /// Opts into `notifications/prompts/list_changed`.
    #[must_use]
    pub fn with_prompts_list_changed(mut self) -> Self {
        self.prompts_list_changed = Some(true);
        self
    }

    /// Opts into `notifications/resources/list_changed`.
    #[must_use]
    pub fn with_resources_list_changed(mut self) -> Self {
        self.resources_list_changed = Some(true);
        self
    }

    /// Opts into `notifications/resources/updated` for `uri` (added once).
    #[must_use]
    pub fn with_resource(mut self, uri: impl Into<String>) -> Self {
        let uri = uri.into();
        let uris = self.resource_subscriptions.get_or_insert_with(Vec::new);
        if !uris.contains(&uri) {
            uris.push(uri);
        }
        self
    }

    /// Whether `notifications/tools/list_changed` is opted into.
    pub fn wants_tools_list_changed(&self) -> bool {
        self.tools_list_changed == Some(true)
    }

    /// Whether `notifications/prompts/list_changed` is opted into.
    pub fn wants_prompts_list_changed(&self) -> bool {
        self.prompts_list_changed == Some(true)
    }

    /// Whether `notifications/resources/list_changed` is opted into.
    pub fn wants_resources_list_changed(&self) -> bool {
        self.resources_list_changed == Some(true)
    }

    /// The resource URIs whose updates are opted into.
    pub fn resources(&self) -> &[String] {
        self.resource_subscriptions.as_deref().unwrap_or_default()
    }

    /// Whether updates of `uri` are opted into.
    pub fn wants_resource(&self, uri: &str) -> bool {
        self.resources().iter().any(|u| u == uri)
    }
}

wire_struct! {
    /// Parameters of `subscriptions/listen`.
    #[derive(Default)]
    pub struct SubscriptionsListenRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// What to listen for.
        req "notifications" => notifications: SubscriptionFilter,
    }
}

wire_struct! {
    /// The result that closes a listen stream gracefully; `_meta` carries the subscription id.
    #[derive(Default)]
    pub struct SubscriptionsListenResult {
        /// `"complete"`.
        opt "resultType" => result_type: ResultType,
        /// Metadata with `io.modelcontextprotocol/subscriptionId`.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// Parameters of `notifications/subscriptions/acknowledged`: the first message of a stream.
    #[derive(Default)]
    pub struct SubscriptionsAcknowledgedParams {
        /// The subset of the filter the server honours.
        req "notifications" => notifications: SubscriptionFilter,
        /// Metadata with `io.modelcontextprotocol/subscriptionId`.
        opt "_meta" => meta: Meta,
    }
}

impl_request_params!(SubscriptionsListenRequestParams);
impl_wire_result!(SubscriptionsListenResult);

#[cfg(test)]
mod tests {
    use super::SubscriptionFilter;

    #[test]
    fn builder_writes_the_spec_members() {
        let filter = SubscriptionFilter::new()
            .with_tools_list_changed()
            .with_resources_list_changed()
            .with_resource("file:///a")
            .with_resource("file:///a");
        assert_eq!(
            serde_json::to_value(&filter).unwrap(),
            serde_json::json!({"toolsListChanged": true, "resourcesListChanged": true,
                "resourceSubscriptions": ["file:///a"]})
        );
        assert!(filter.wants_resource("file:///a") && !filter.wants_resource("file:///b"));
        assert!(!filter.wants_prompts_list_changed());
        assert!(SubscriptionFilter::new().resources().is_empty());
    }
}
