//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use crate::{
    Meta, RequestMeta, ResultType, requests::impl_request_params, result::impl_wire_result,
};

wire_struct! {
    /// A reference to a prompt.
    #[derive(Default)]
    pub struct PromptReference {
        @tag "type" = "ref/prompt";
        /// The prompt name.
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
    }
}

wire_struct! {
    /// A reference to a resource template.
    #[derive(Default)]
    pub struct ResourceTemplateReference {
        @tag "type" = "ref/resource";
        /// The URI template.
        req "uri" => uri: String,
    }
}

tagged_union! {
    /// What is being completed.
    #[non_exhaustive]
    pub enum CompletionReference by "type" {
        /// A prompt argument.
        "ref/prompt" => Prompt(PromptReference),
        /// A resource template variable.
        "ref/resource" => Resource(ResourceTemplateReference),
    }
}

wire_struct! {
    /// The argument being completed.
    #[derive(Default)]
    pub struct CompletionArgument {
        /// Its name.
        req "name" => name: String,
        /// The partial value.
        req "value" => value: String,
    }
}

wire_struct! {
    /// Values already chosen for other arguments.
    #[derive(Default)]
    pub struct CompletionContext {
        /// Previously resolved arguments.
        opt "arguments" => arguments: BTreeMap<String, String>,
    }
}

wire_struct! {
    /// Parameters of `completion/complete`.
    pub struct CompleteRequestParams {
        /// The request envelope.
        opt "_meta" => meta: Box<RequestMeta>,
        /// What is being completed.
        req "ref" => reference: CompletionReference,
        /// The argument.
        req "argument" => argument: CompletionArgument,
        /// Other arguments' values.
        opt "context" => context: CompletionContext,
    }
}

wire_struct! {
    /// Completion values.
    #[derive(Default)]
    pub struct Completion {
        /// At most 100 values.
        req "values" => values: Vec<String>,
        /// The total number of values available.
        opt "total" => total: u64,
        /// Whether more values exist beyond those returned.
        opt "hasMore" => has_more: bool,
    }
}

wire_struct! {
    /// The result of `completion/complete`.
    #[derive(Default)]
    pub struct CompleteResult {
        /// The values.
        req "completion" => completion: Completion,
        /// `"complete"` on 2026-07-28.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl_request_params!(CompleteRequestParams);
impl_wire_result!(CompleteResult);
