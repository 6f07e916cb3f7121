//! Method and notification markers: each links a method name to its params and result types.
//!
//! ```
//! use modelctx_types::{Method, methods::CallTool};
//! assert_eq!(CallTool::NAME, "tools/call");
//! assert!(CallTool::INPUT_REQUIRED);
//! ```

use serde::{Serialize, de::DeserializeOwned};

use crate::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParams, CompleteRequestParams,
    CompleteResult, CreateMessageRequestParams, CreateMessageResult, DiscoverResult,
    ElicitRequestParams, ElicitResult, ElicitationCompleteParams, EmptyParams, EmptyResult,
    GetPromptRequestParams, GetPromptResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListRootsResult,
    ListToolsResult, LoggingMessageNotificationParams, NotificationParams, PaginatedRequestParams,
    ProgressNotificationParams, ReadResourceRequestParams, ReadResourceResult,
    ResourceUpdatedNotificationParams, RootsListParams, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};

/// A request method: its name, params type and (complete) result type.
pub trait Method: 'static {
    /// The method name on the wire.
    const NAME: &'static str;
    /// Whether the method may answer with an `InputRequiredResult` (only `tools/call`,
    /// `prompts/get` and `resources/read`).
    const INPUT_REQUIRED: bool = false;
    /// The params.
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The complete result.
    type Result: Serialize + DeserializeOwned + Send + Sync + 'static;
}

/// A notification method: its name and params type.
pub trait NotificationMethod: 'static {
    /// The method name on the wire.
    const NAME: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
}

macro_rules! methods {
    ($( $(#[$meta:meta])* $name:ident = $wire:literal, $params:ty => $result:ty $(, $ir:ident)?; )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl Method for $name {
            const NAME: &'static str = $wire;
            $(const INPUT_REQUIRED: bool = { let $ir = true; $ir };)?
            type Params = $params;
            type Result = $result;
        }
    )*};
}

macro_rules! notifications {
    ($( $(#[$meta:meta])* $name:ident = $wire:literal, $params:ty; )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl NotificationMethod for $name {
            const NAME: &'static str = $wire;
            type Params = $params;
        }
    )*};
}

methods! {
    /// `server/discover` (2026-07-28).
    Discover = "server/discover", EmptyParams => DiscoverResult;
    /// `tools/list`.
    ListTools = "tools/list", PaginatedRequestParams => ListToolsResult;
    /// `tools/call`; may return `InputRequiredResult`.
    CallTool = "tools/call", CallToolRequestParams => CallToolResult, input_required;
    /// `prompts/list`.
    ListPrompts = "prompts/list", PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get`; may return `InputRequiredResult`.
    GetPrompt = "prompts/get", GetPromptRequestParams => GetPromptResult, input_required;
    /// `resources/list`.
    ListResources = "resources/list", PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates = "resources/templates/list", PaginatedRequestParams => ListResourceTemplatesResult;
    /// `resources/read`; may return `InputRequiredResult`.
    ReadResource = "resources/read", ReadResourceRequestParams => ReadResourceResult, input_required;
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen = "subscriptions/listen", SubscriptionsListenRequestParams => SubscriptionsListenResult;
    /// `completion/complete`.
    Complete = "completion/complete", CompleteRequestParams => CompleteResult;
    /// `initialize` (handshake era).
    Initialize = "initialize", InitializeRequestParams => InitializeResult;
    /// `ping` (handshake era, both directions).
    Ping = "ping", EmptyParams => EmptyResult;
    /// `logging/setLevel` (handshake era).
    SetLevel = "logging/setLevel", SetLevelRequestParams => EmptyResult;
    /// `resources/subscribe` (handshake era).
    Subscribe = "resources/subscribe", SubscribeRequestParams => EmptyResult;
    /// `resources/unsubscribe` (handshake era).
    Unsubscribe = "resources/unsubscribe", SubscribeRequestParams => EmptyResult;
    /// `elicitation/create`: a server→client request in the handshake era (an input request
    /// on 2026-07-28).
    Elicit = "elicitation/create", ElicitRequestParams => ElicitResult;
    /// `sampling/createMessage`: a server→client request in the handshake era.
    CreateMessage = "sampling/createMessage", CreateMessageRequestParams => CreateMessageResult;
    /// `roots/list`: a server→client request in the handshake era.
    ListRoots = "roots/list", RootsListParams => ListRootsResult;
}

notifications! {
    /// `notifications/cancelled`.
    Cancelled = "notifications/cancelled", CancelledNotificationParams;
    /// `notifications/progress`.
    Progress = "notifications/progress", ProgressNotificationParams;
    /// `notifications/message` (deprecated logging).
    LoggingMessage = "notifications/message", LoggingMessageNotificationParams;
    /// `notifications/resources/updated`.
    ResourceUpdated = "notifications/resources/updated", ResourceUpdatedNotificationParams;
    /// `notifications/resources/list_changed`.
    ResourceListChanged = "notifications/resources/list_changed", NotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChanged = "notifications/tools/list_changed", NotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChanged = "notifications/prompts/list_changed", NotificationParams;
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged", SubscriptionsAcknowledgedParams;
    /// `notifications/initialized` (handshake era).
    Initialized = "notifications/initialized", NotificationParams;
    /// `notifications/roots/list_changed` (handshake era).
    RootsListChanged = "notifications/roots/list_changed", NotificationParams;
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete = "notifications/elicitation/complete", ElicitationCompleteParams;
}

/// The methods a 2026-07-28 client may send.
pub const MODERN_CLIENT_METHODS: &[&str] = &[
    Discover::NAME,
    ListTools::NAME,
    CallTool::NAME,
    ListPrompts::NAME,
    GetPrompt::NAME,
    ListResources::NAME,
    ListResourceTemplates::NAME,
    ReadResource::NAME,
    SubscriptionsListen::NAME,
    Complete::NAME,
];

/// Methods that 2026-07-28 removed; a modern server answers them with `-32601`.
pub const REMOVED_IN_2026: &[&str] = &[
    Initialize::NAME,
    Ping::NAME,
    SetLevel::NAME,
    Subscribe::NAME,
    Unsubscribe::NAME,
];

/// Every notification the specification defines, in either era and either direction.
pub const SPEC_NOTIFICATIONS: &[&str] = &[
    Cancelled::NAME,
    Progress::NAME,
    LoggingMessage::NAME,
    ResourceUpdated::NAME,
    ResourceListChanged::NAME,
    ToolListChanged::NAME,
    PromptListChanged::NAME,
    SubscriptionsAcknowledged::NAME,
    Initialized::NAME,
    RootsListChanged::NAME,
    ElicitationComplete::NAME,
];

/// Whether `method` names a notification of one's own (an extension's, `com.example/…`): not
/// empty, no control characters, and not one of [`SPEC_NOTIFICATIONS`], which have their own
/// rules and senders.
pub fn is_custom_notification(method: &str) -> bool {
    !method.is_empty()
        && !method.chars().any(char::is_control)
        && !SPEC_NOTIFICATIONS.contains(&method)
}
