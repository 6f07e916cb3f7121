//! Prompts: `prompts/list` and `prompts/get`.

use std::collections::BTreeMap;

use crate::{
    CacheScope, ContentBlock, Cursor, Icon, InputResponses, Meta, RequestMeta, ResultType, Role,
    mrtr::impl_input_response_params, requests::impl_request_params, result::impl_wire_result,
};

wire_struct! {
    /// An argument a prompt accepts.
    #[derive(Default)]
    pub struct PromptArgument {
        /// Name.
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// Description.
        opt "description" => description: String,
        /// Whether it must be given.
        opt "required" => required: bool,
    }
}

wire_struct! {
    /// A prompt template.
    #[derive(Default)]
    pub struct Prompt {
        /// Name.
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// Description.
        opt "description" => description: String,
        /// Its arguments.
        opt "arguments" => arguments: Vec<PromptArgument>,
        /// Icons.
        opt "icons" => icons: Vec<Icon>,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// One message of a prompt.
    pub struct PromptMessage {
        /// Who says it.
        req "role" => role: Role,
        /// The content.
        req "content" => content: ContentBlock,
    }
}

wire_struct! {
    /// The result of `prompts/list`.
    #[derive(Default)]
    pub struct ListPromptsResult {
        /// The prompts.
        req "prompts" => prompts: Vec<Prompt>,
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
    /// Parameters of `prompts/get`.
    #[derive(Default)]
    pub struct GetPromptRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The prompt name.
        req "name" => name: String,
        /// The arguments.
        opt "arguments" => arguments: BTreeMap<String, String>,
        /// Answers to the previous round's input requests.
        opt "inputResponses" => input_responses: InputResponses,
        /// The previous round's state, echoed byte for byte.
        opt "requestState" => request_state: String,
    }
}

wire_struct! {
    /// The result of `prompts/get`.
    #[derive(Default)]
    pub struct GetPromptResult {
        /// A description of the rendered prompt.
        opt "description" => description: String,
        /// The messages.
        req "messages" => messages: Vec<PromptMessage>,
        /// `"complete"` on 2026-07-28.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl_request_params!(GetPromptRequestParams);
impl_input_response_params!(GetPromptRequestParams);
impl_wire_result!(ListPromptsResult, GetPromptResult);
