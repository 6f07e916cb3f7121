//! `subscriptions/listen`: the stream of change notifications a client opts into.

use crate::{
    Meta, RequestMeta, ResultType, requests::impl_request_params, result::impl_wire_result,
};

wire_struct! {
    /// Which notifications a listen stream carries; every member is opt-in.
    #[derive(Default)]
    pub struct SubscriptionFilter {
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

wire_struct! {
    /// Parameters of `subscriptions/listen`.
    #[derive(Default)]
    pub struct SubscriptionsListenRequestParams {
        /// The request envelope.
        opt "_meta" => meta: RequestMeta,
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
