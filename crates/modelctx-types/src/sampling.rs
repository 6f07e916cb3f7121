//! Sampling: asking the client's LLM for a completion (deprecated in 2026-07-28).

use serde_json::Number;

use crate::{Extra, Meta, OneOrMany, Role, SamplingContent, Tool};

open_str! {
    /// Which servers' context to include (values other than `none` are deprecated).
    pub struct IncludeContext {
        /// No context.
        const NONE = "none";
        /// Context from this server (deprecated).
        const THIS_SERVER = "thisServer";
        /// Context from all servers (deprecated).
        const ALL_SERVERS = "allServers";
    }
}

open_str! {
    /// How the model may use tools.
    pub struct ToolChoiceMode {
        /// The model decides.
        const AUTO = "auto";
        /// The model must call a tool.
        const REQUIRED = "required";
        /// The model must not call tools.
        const NONE = "none";
    }
}

open_str! {
    /// Why sampling stopped. Open: providers add their own reasons.
    pub struct StopReason {
        /// The model finished its turn.
        const END_TURN = "endTurn";
        /// A stop sequence was produced.
        const STOP_SEQUENCE = "stopSequence";
        /// `maxTokens` was reached.
        const MAX_TOKENS = "maxTokens";
        /// The model asked for a tool call.
        const TOOL_USE = "toolUse";
    }
}

wire_struct! {
    /// A model name hint.
    #[derive(Default)]
    pub struct ModelHint {
        /// A (partial) model name.
        opt "name" => name: String,
    }
}

wire_struct! {
    /// The server's model preferences.
    #[derive(Default)]
    pub struct ModelPreferences {
        /// Hints, in order of preference.
        opt "hints" => hints: Vec<ModelHint>,
        /// How much cost matters (0–1).
        opt "costPriority" => cost_priority: Number,
        /// How much speed matters (0–1).
        opt "speedPriority" => speed_priority: Number,
        /// How much capability matters (0–1).
        opt "intelligencePriority" => intelligence_priority: Number,
    }
}

wire_struct! {
    /// Tool-choice constraints.
    #[derive(Default)]
    pub struct ToolChoice {
        /// The mode.
        opt "mode" => mode: ToolChoiceMode,
    }
}

wire_struct! {
    /// One message of a sampling conversation.
    pub struct SamplingMessage {
        /// Who says it.
        req "role" => role: Role,
        /// One block or several.
        req "content" => content: OneOrMany<SamplingContent>,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl SamplingMessage {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::USER,
            content: OneOrMany::One(SamplingContent::text(text)),
            meta: None,
            extra: Extra::new(),
        }
    }
}

wire_struct! {
    /// Parameters of `sampling/createMessage`.
    pub struct CreateMessageRequestParams {
        @own new;
        /// The conversation.
        req "messages" => messages: Vec<SamplingMessage>,
        /// The maximum number of tokens to sample.
        req "maxTokens" => max_tokens: u64,
        /// Model preferences.
        opt "modelPreferences" => model_preferences: ModelPreferences,
        /// A system prompt.
        opt "systemPrompt" => system_prompt: String,
        /// Context inclusion (deprecated beyond `none`).
        opt "includeContext" => include_context: IncludeContext,
        /// Sampling temperature.
        opt "temperature" => temperature: Number,
        /// Stop sequences.
        opt "stopSequences" => stop_sequences: Vec<String>,
        /// Provider-specific metadata.
        opt "metadata" => metadata: Extra,
        /// Tools the model may call (only with the `sampling.tools` capability).
        opt "tools" => tools: Vec<Tool>,
        /// Tool-choice constraints.
        opt "toolChoice" => tool_choice: ToolChoice,
        /// Metadata (handshake era only).
        opt "_meta" => meta: Meta,
    }
}

impl CreateMessageRequestParams {
    /// A request with messages and a token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        Self {
            messages,
            max_tokens,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// The client capabilities a client must declare before it may be sent this request:
    /// sampling, with `tools` when the request offers tools or a tool choice.
    pub fn required_capabilities(&self) -> crate::ClientCapabilities {
        if self.tools.is_some() || self.tool_choice.is_some() {
            crate::ClientCapabilities::new().with_sampling_tools()
        } else {
            crate::ClientCapabilities::new().with_sampling()
        }
    }
}

wire_struct! {
    /// The LLM's answer to `sampling/createMessage`.
    pub struct CreateMessageResult {
        /// Normally `assistant`.
        req "role" => role: Role,
        /// One block, or several (tool use).
        req "content" => content: OneOrMany<SamplingContent>,
        /// The model that produced it.
        req "model" => model: String,
        /// Why sampling stopped.
        opt "stopReason" => stop_reason: StopReason,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl CreateMessageResult {
    /// An assistant text answer.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::ASSISTANT,
            content: OneOrMany::One(SamplingContent::text(text)),
            model: model.into(),
            stop_reason: Some(StopReason::END_TURN),
            meta: None,
            extra: Extra::new(),
        }
    }
}
