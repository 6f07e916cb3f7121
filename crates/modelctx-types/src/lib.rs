//! The wire model of the Model Context Protocol: revision 2026-07-28 and the handshake era
//! (2025-11-25 and earlier).
//!
//! This crate has no runtime: it is serde types and the JSON-RPC envelope, usable by servers,
//! clients, proxies and tools alike.
//!
//! # Building values
//!
//! Every wire struct is `#[non_exhaustive]`, so that a member a later revision adds is not a
//! breaking change. Build them with `new` (the required members, in declaration order) and the
//! chainable `with_<member>` setters; fields stay public for reading and assigning.
//!
//! ```
//! use modelctx_types::{CallToolResult, Tool, ToolAnnotations};
//!
//! let tool = Tool::new("echo", Tool::empty_input_schema())
//!     .with_description("Echoes its input")
//!     .with_annotations(ToolAnnotations::new().with_read_only_hint(true));
//! assert_eq!(tool.description.as_deref(), Some("Echoes its input"));
//! let result = CallToolResult::text("hi");
//! assert_eq!(result.first_text(), Some("hi"));
//! ```
//!
//! A struct literal does not compile outside this crate:
//!
//! ```compile_fail,E0639
//! let tool = modelctx_types::Tool {
//!     name: "echo".into(),
//!     ..modelctx_types::Tool::default()
//! };
//! ```
//!
//! # Two-phase decoding
//!
//! A message is decoded in two phases. First the envelope: [`MessageRef::decode`] classifies
//! the message as a request, notification or response and keeps `params` / `result` as raw
//! JSON. Then, once the method is known, the typed params ([`RequestRef::params_as`]) or result
//! ([`decode_result`]). Results are told apart by `resultType`, never by which struct happens
//! to fit: an absent `resultType` means complete, `"input_required"` means
//! [`InputRequiredResult`], and any other value is an error unless an extension registered it.
//!
//! ```
//! use modelctx_types::{MessageRef, methods::CallTool, CallToolRequestParams, Method};
//!
//! let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",
//!     "arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! let MessageRef::Request(request) = MessageRef::decode(line)? else { unreachable!() };
//! assert_eq!(request.method, CallTool::NAME);
//! let params: CallToolRequestParams = request.params_as()?;
//! assert_eq!(params.name, "echo");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ```
//! use modelctx_types::{decode_result, methods::CallTool, Outcome, ResultTypes};
//! use serde_json::value::RawValue;
//!
//! let raw: Box<RawValue> = serde_json::from_str(r#"{"resultType":"input_required",
//!     "inputRequests":{"region":{"method":"roots/list"}},"requestState":"s1"}"#)?;
//! match decode_result::<CallTool>(&raw, &ResultTypes::core())? {
//!     Outcome::InputRequired(irr) => assert_eq!(irr.request_state.as_deref(), Some("s1")),
//!     other => panic!("unexpected {other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Unknown members
//!
//! Every object keeps the members this version does not model in an `extra` map, so they
//! survive a round trip; open string sets ([`ResultType`], [`Role`], [`StopReason`],
//! [`ProtocolVersion`], …) keep unknown values instead of failing the message.

// On docs.rs (nightly, `--cfg docsrs`), each item behind a `cfg` says which feature or
// platform it needs; a stable `cargo doc` never sets the cfg.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[macro_use]
#[doc(hidden)]
pub mod macros;

pub mod apps;
mod capabilities;
mod common;
mod completion;
mod content;
mod discover;
mod elicitation;
mod extension;
mod handshake;
pub mod jsonrpc;
pub mod meta;
pub mod methods;
mod mrtr;
mod notifications;
mod prompts;
mod requests;
mod resources;
mod result;
mod roots;
mod sampling;
mod subscriptions;
pub mod tasks;
pub mod tasks_2025;
mod tools;
mod version;

pub use capabilities::{
    ClientCapabilities, ElicitationCapability, PromptsCapability, ResourcesCapability,
    RootsCapability, SamplingCapability, ServerCapabilities, ToolsCapability,
};
pub use common::{
    Annotations, Icon, IconTheme, Implementation, LoggingLevel, NotificationParams, Role,
    compare_numbers, number,
};
pub use completion::{
    CompleteRequestParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionReference, PromptReference, ResourceTemplateReference,
};
pub use content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent, OneOrMany,
    ResourceContents, ResourceLink, SamplingContent, TextContent, TextResourceContents,
    ToolResultContent, ToolUseContent,
};
pub use discover::DiscoverResult;
pub use elicitation::{
    BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestUrlParams, ElicitResult, ElicitationMode, ElicitationSchema, EnumOption,
    LegacyTitledEnumSchema, NumberSchema, NumberType, PrimitiveSchema, StringFormat, StringSchema,
    TitledEnumItems, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
pub use extension::{ExtensionId, InvalidExtensionId};
pub use handshake::{
    ElicitationCompleteParams, EmptyResult, InitializeRequestParams, InitializeResult,
    SetLevelRequestParams,
};
pub use jsonrpc::{
    DecodeError, DecodeErrorKind, ErrorCode, ErrorObject, Message, MessageRef, RequestId,
    RequestRef,
};
pub use meta::{Meta, ProgressToken, RequestMeta};
pub use methods::{Method, NotificationMethod};
pub use mrtr::{
    CreateMessageRequest, ElicitRequest, InputAnswer, InputRequest, InputRequests,
    InputRequiredResult, InputResponse, InputResponseError, InputResponseKind, InputResponseParams,
    InputResponses, ListRootsRequest,
};
pub use notifications::{
    CancelledNotificationParams, LoggingMessageNotificationParams, ProgressNotificationParams,
};
pub use prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
pub use requests::{EmptyParams, PaginatedRequestParams, RequestParams};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, ResourceUpdatedNotificationParams,
    SubscribeRequestParams,
};
pub use result::{
    CacheScope, ExtensionResult, Outcome, ResultDecodeError, ResultType, ResultTypes, WireResult,
    decode_result,
};
pub use roots::{ListRootsResult, Root, RootsListParams};
pub use sampling::{
    CreateMessageRequestParams, CreateMessageResult, IncludeContext, ModelHint, ModelPreferences,
    SamplingMessage, StopReason, ToolChoice, ToolChoiceMode,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
pub use tasks::{CreateTaskResult, DetailedTask, GetTaskResult, TASKS_EXTENSION, Task, TaskStatus};
pub use tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations};
pub use version::{Era, ProtocolVersion};

/// A JSON object: the `extra` members of every wire struct, and unmodelled objects.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// An opaque pagination cursor.
pub type Cursor = String;
