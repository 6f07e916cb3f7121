//! Resources: `resources/list`, `resources/templates/list`, `resources/read`.

use crate::{
    Annotations, CacheScope, Cursor, Icon, InputResponses, Meta, RequestMeta, ResourceContents,
    ResultType, mrtr::impl_input_response_params, requests::impl_request_params,
    result::impl_wire_result,
};

wire_struct! {
    /// A resource the server can read.
    #[derive(Default)]
    pub struct Resource {
        /// The URI.
        req "uri" => uri: String,
        /// Programmatic name.
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// Description.
        opt "description" => description: String,
        /// MIME type.
        opt "mimeType" => mime_type: String,
        /// Size in bytes.
        opt "size" => size: u64,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Icons.
        opt "icons" => icons: Vec<Icon>,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// A family of resources described by an RFC 6570 URI template.
    #[derive(Default)]
    pub struct ResourceTemplate {
        /// The URI template, e.g. `file:///{path}`.
        req "uriTemplate" => uri_template: String,
        /// Programmatic name.
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// Description.
        opt "description" => description: String,
        /// MIME type of matching resources.
        opt "mimeType" => mime_type: String,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Icons.
        opt "icons" => icons: Vec<Icon>,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// The result of `resources/list`.
    #[derive(Default)]
    pub struct ListResourcesResult {
        /// The resources.
        req "resources" => resources: Vec<Resource>,
        /// The cursor of the next page, if any.
        opt "nextCursor" => next_cursor: Cursor,
        /// How long the result may be cached, in milliseconds.
        opt "ttlMs" => ttl_ms: u64,
        /// Who may cache it.
        opt "cacheScope" => cache_scope: CacheScope,
        /// `"complete"` on 2026-07-28.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// The result of `resources/templates/list`.
    #[derive(Default)]
    pub struct ListResourceTemplatesResult {
        /// The templates.
        req "resourceTemplates" => resource_templates: Vec<ResourceTemplate>,
        /// The cursor of the next page, if any.
        opt "nextCursor" => next_cursor: Cursor,
        /// How long the result may be cached, in milliseconds.
        opt "ttlMs" => ttl_ms: u64,
        /// Who may cache it.
        opt "cacheScope" => cache_scope: CacheScope,
        /// `"complete"` on 2026-07-28.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// Parameters of `resources/read`.
    #[derive(Default)]
    pub struct ReadResourceRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The URI.
        req "uri" => uri: String,
        /// Answers to the previous round's input requests.
        opt "inputResponses" => input_responses: InputResponses,
        /// The previous round's state, echoed byte for byte.
        opt "requestState" => request_state: String,
    }
}

wire_struct! {
    /// The result of `resources/read`. An unknown URI is an error (`-32602`), never an empty
    /// `contents`.
    #[derive(Default)]
    pub struct ReadResourceResult {
        /// The contents (a template may yield several).
        req "contents" => contents: Vec<ResourceContents>,
        /// How long the result may be cached, in milliseconds.
        opt "ttlMs" => ttl_ms: u64,
        /// Who may cache it.
        opt "cacheScope" => cache_scope: CacheScope,
        /// `"complete"` on 2026-07-28.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// Parameters of `notifications/resources/updated`.
    #[derive(Default)]
    pub struct ResourceUpdatedNotificationParams {
        /// The URI that changed.
        req "uri" => uri: String,
        /// Metadata (on a listen stream: the subscription id).
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// Parameters of `resources/subscribe` and `resources/unsubscribe` (handshake era).
    #[derive(Default)]
    pub struct SubscribeRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The URI.
        req "uri" => uri: String,
    }
}

impl_request_params!(ReadResourceRequestParams, SubscribeRequestParams);
impl_input_response_params!(ReadResourceRequestParams);
impl_wire_result!(
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult
);
