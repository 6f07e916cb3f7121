//! Tools: `tools/list` and `tools/call`.

use serde_json::Value;

use crate::{
    CacheScope, ContentBlock, Cursor, Extra, Icon, InputResponses, Meta, RequestMeta, ResultType,
    mrtr::impl_input_response_params, requests::impl_request_params, result::impl_wire_result,
};

wire_struct! {
    /// Hints about a tool's behaviour. Untrusted unless the server is.
    #[derive(Default)]
    pub struct ToolAnnotations {
        /// A human-readable title.
        opt "title" => title: String,
        /// The tool does not modify its environment.
        opt "readOnlyHint" => read_only_hint: bool,
        /// The tool may perform destructive updates.
        opt "destructiveHint" => destructive_hint: bool,
        /// Repeated calls with the same arguments have no additional effect.
        opt "idempotentHint" => idempotent_hint: bool,
        /// The tool interacts with an open world of external entities.
        opt "openWorldHint" => open_world_hint: bool,
    }
}

wire_struct! {
    /// A tool the client can call.
    #[derive(Default)]
    pub struct Tool {
        @own new;
        /// Unique name (1–128 of `[A-Za-z0-9_.-]` recommended).
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// What it does, for the model.
        opt "description" => description: String,
        /// Icons.
        opt "icons" => icons: Vec<Icon>,
        /// JSON Schema (2020-12 by default) of the arguments; `type` must be `"object"`.
        /// Kept verbatim.
        req "inputSchema" => input_schema: Extra,
        /// JSON Schema of `structuredContent`, when the tool returns structured output.
        opt "outputSchema" => output_schema: Extra,
        /// Behaviour hints.
        opt "annotations" => annotations: ToolAnnotations,
        /// 2025-11-25: whether a call may run as a task
        /// ([`crate::tasks_2025::ToolExecution`]).
        opt "execution" => execution: crate::tasks_2025::ToolExecution,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl Tool {
    /// A tool with a name and an input schema. The schema is an [`Extra`], not `impl Into`, so
    /// that `serde_json::from_value(schema)?` infers its type here.
    pub fn new(name: impl Into<String>, input_schema: Extra) -> Self {
        Self {
            name: name.into(),
            input_schema,
            ..Self::default()
        }
    }

    /// The schema `{"type":"object"}`: a tool without parameters.
    pub fn empty_input_schema() -> Extra {
        let mut schema = Extra::new();
        schema.insert("type".to_owned(), Value::from("object"));
        schema
    }
}

wire_struct! {
    /// The result of `tools/list`.
    #[derive(Default)]
    pub struct ListToolsResult {
        /// The tools, in a deterministic order.
        req "tools" => tools: Vec<Tool>,
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
    /// Parameters of `tools/call`.
    #[derive(Default)]
    pub struct CallToolRequestParams {
        @own new;
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// The tool name.
        req "name" => name: String,
        /// The arguments (absent means `{}`).
        opt "arguments" => arguments: Extra,
        /// Answers to the previous round's input requests.
        opt "inputResponses" => input_responses: InputResponses,
        /// The previous round's state, echoed byte for byte.
        opt "requestState" => request_state: String,
    }
}

impl CallToolRequestParams {
    /// A call with arguments.
    pub fn new(name: impl Into<String>, arguments: Option<Extra>) -> Self {
        Self {
            name: name.into(),
            arguments,
            ..Self::default()
        }
    }
}

wire_struct! {
    /// The result of `tools/call`. Tool failures are results with `isError: true`.
    #[derive(Default)]
    pub struct CallToolResult {
        @own new;
        /// Unstructured result.
        req "content" => content: Vec<ContentBlock>,
        /// Structured result (any JSON value; conforms to `outputSchema` when one is set).
        opt "structuredContent" => structured_content: Value,
        /// Whether the call failed.
        opt "isError" => is_error: bool,
        /// `"complete"` on 2026-07-28.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl CallToolResult {
    /// A successful result with content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            is_error: Some(false),
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A failed call (`isError: true`) with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            is_error: Some(true),
            ..Self::default()
        }
    }

    /// The text of the first text block.
    pub fn first_text(&self) -> Option<&str> {
        self.content.iter().find_map(ContentBlock::as_text)
    }
}

impl_request_params!(CallToolRequestParams);
impl_input_response_params!(CallToolRequestParams);
impl_wire_result!(ListToolsResult, CallToolResult);
