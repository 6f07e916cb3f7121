//! Multi-round-trip requests: `InputRequiredResult`, input requests and input responses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::methods::{self, Method as _};
use crate::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestParams, ElicitResult, Extra, ListRootsResult, Meta, ResultType, RootsListParams,
    result::impl_wire_result,
};

wire_struct! {
    /// An `elicitation/create` input request: ask the user (a form, or consent to open a URL).
    pub struct ElicitRequest {
        @tag "method" = "elicitation/create";
        /// What to ask.
        req "params" => params: ElicitRequestParams,
    }
}

wire_struct! {
    /// A `sampling/createMessage` input request: ask the client's LLM (deprecated).
    pub struct CreateMessageRequest {
        @tag "method" = "sampling/createMessage";
        /// What to sample.
        req "params" => params: CreateMessageRequestParams,
    }
}

wire_struct! {
    /// A `roots/list` input request: ask for the client's roots (deprecated).
    #[derive(Default)]
    pub struct ListRootsRequest {
        @tag "method" = "roots/list";
        /// Optional parameters.
        opt "params" => params: RootsListParams,
    }
}

tagged_union! {
    /// One question inside `InputRequiredResult.inputRequests`: `{"method": …, "params": …}`,
    /// with no `jsonrpc` and no `id`. An unknown `method` is an error.
    #[non_exhaustive]
    pub enum InputRequest by "method" {
        /// `elicitation/create`.
        "elicitation/create" => Elicit(ElicitRequest),
        /// `sampling/createMessage`.
        "sampling/createMessage" => CreateMessage(CreateMessageRequest),
        /// `roots/list`.
        "roots/list" => ListRoots(ListRootsRequest),
    }
}

impl InputRequest {
    /// An elicitation.
    pub fn elicit(params: impl Into<ElicitRequestParams>) -> Self {
        Self::Elicit(ElicitRequest {
            params: params.into(),
            extra: Extra::new(),
        })
    }

    /// A sampling request.
    pub fn create_message(params: CreateMessageRequestParams) -> Self {
        Self::CreateMessage(CreateMessageRequest {
            params,
            extra: Extra::new(),
        })
    }

    /// A roots request.
    pub fn list_roots() -> Self {
        Self::ListRoots(ListRootsRequest::default())
    }

    /// The method name.
    pub fn method(&self) -> &str {
        self.tag()
    }

    /// The client capabilities a client must declare before it may be sent this request: the
    /// elicitation mode, sampling (with `tools` when the request offers tools or a tool choice),
    /// or roots.
    pub fn required_capabilities(&self) -> ClientCapabilities {
        match self {
            Self::Elicit(elicit) => elicit.params.required_capabilities(),
            Self::CreateMessage(sample) => sample.params.required_capabilities(),
            Self::ListRoots(_) => ClientCapabilities::new().with_roots(),
        }
    }
}

/// `inputRequests`: questions keyed by server-chosen keys, unique within the request.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// One answer inside `inputResponses`. Answers carry no discriminator: the receiver reads each
/// one against the request it asked under the same key ([`InputResponse::read_for`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputResponse(pub Value);

/// The kind of an answer, by its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputResponseKind {
    /// Has `action`: an [`ElicitResult`].
    Elicit,
    /// Has `model` / `role` / `content`: a [`CreateMessageResult`].
    CreateMessage,
    /// Has `roots`: a [`ListRootsResult`].
    ListRoots,
}

/// An answer decoded against the question it answers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputAnswer {
    /// The user's response to an elicitation.
    Elicit(ElicitResult),
    /// The LLM's response to a sampling request.
    CreateMessage(Box<CreateMessageResult>),
    /// The client's roots.
    ListRoots(ListRootsResult),
}

/// An answer that does not fit the question asked under its key.
#[derive(Debug, thiserror::Error)]
#[error("the input response does not answer a {method} request: {reason}")]
#[non_exhaustive]
pub struct InputResponseError {
    /// The method of the question.
    pub method: &'static str,
    /// Why it does not fit.
    pub reason: String,
}

impl InputResponse {
    /// Wraps an elicitation answer.
    pub fn elicit(result: &ElicitResult) -> Self {
        Self(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// Wraps a sampling answer.
    pub fn create_message(result: &CreateMessageResult) -> Self {
        Self(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// Wraps a roots answer.
    pub fn list_roots(result: &ListRootsResult) -> Self {
        Self(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// The kind of answer this looks like, judged by its members; `None` for anything that is
    /// not an object of one of the three shapes.
    pub fn kind(&self) -> Option<InputResponseKind> {
        let object = self.0.as_object()?;
        if object.contains_key("action") {
            Some(InputResponseKind::Elicit)
        } else if object.contains_key("roots") {
            Some(InputResponseKind::ListRoots)
        } else if object.contains_key("model") || object.contains_key("role") {
            Some(InputResponseKind::CreateMessage)
        } else {
            None
        }
    }

    /// Decodes the answer as the response to `request`.
    ///
    /// # Errors
    /// When the answer is not a well-formed response of the request's kind.
    pub fn read_for(&self, request: &InputRequest) -> Result<InputAnswer, InputResponseError> {
        fn read<T: for<'de> Deserialize<'de>>(
            value: &Value,
            method: &'static str,
        ) -> Result<T, InputResponseError> {
            T::deserialize(value).map_err(|e| InputResponseError {
                method,
                reason: e.to_string(),
            })
        }
        match request {
            InputRequest::Elicit(_) => {
                read(&self.0, methods::Elicit::NAME).map(InputAnswer::Elicit)
            }
            InputRequest::CreateMessage(_) => read(&self.0, methods::CreateMessage::NAME)
                .map(|r| InputAnswer::CreateMessage(Box::new(r))),
            InputRequest::ListRoots(_) => {
                read(&self.0, methods::ListRoots::NAME).map(InputAnswer::ListRoots)
            }
        }
    }

    /// Decodes the answer as an elicitation result.
    ///
    /// # Errors
    /// When it is not one.
    pub fn as_elicit(&self) -> Result<ElicitResult, InputResponseError> {
        ElicitResult::deserialize(&self.0).map_err(|e| InputResponseError {
            method: methods::Elicit::NAME,
            reason: e.to_string(),
        })
    }

    /// The content of an accepted elicitation (empty when accepted without content); `None`
    /// when the user declined or cancelled, or when this is not an elicitation answer.
    pub fn accepted(&self) -> Option<Extra> {
        let answer = self.as_elicit().ok()?;
        (answer.action == ElicitAction::Accept).then(|| answer.content.unwrap_or_default())
    }
}

/// `inputResponses`: answers keyed like the `inputRequests` they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

wire_struct! {
    /// The result that asks the client for input: fulfil `inputRequests`, then retry the same
    /// request with a new id, `inputResponses` under the same keys and `requestState` echoed
    /// byte for byte. At least one of the two members is present.
    pub struct InputRequiredResult {
        @own new;
        /// Questions for the client, keyed by server-chosen keys.
        opt "inputRequests" => input_requests: InputRequests,
        /// Opaque state to echo on the retry.
        opt "requestState" => request_state: String,
        /// Always `"input_required"` on the wire.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl_wire_result!(InputRequiredResult);

impl Default for InputRequiredResult {
    fn default() -> Self {
        Self::new()
    }
}

impl InputRequiredResult {
    /// An empty result with `resultType: "input_required"`; add at least one request or state.
    pub fn new() -> Self {
        Self {
            input_requests: None,
            request_state: None,
            result_type: Some(ResultType::INPUT_REQUIRED),
            meta: None,
            extra: Extra::new(),
        }
    }

    /// Adds a question under `key`.
    #[must_use]
    pub fn with_request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.input_requests
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), request);
        self
    }

    /// Sets the state to echo.
    #[must_use]
    pub fn with_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }

    /// Whether the result carries at least one of `inputRequests` / `requestState`, as the spec
    /// requires.
    pub fn is_valid(&self) -> bool {
        self.input_requests.is_some() || self.request_state.is_some()
    }
}

/// Params of the three methods that take part in multi-round-trip requests (`tools/call`,
/// `prompts/get`, `resources/read`).
pub trait InputResponseParams {
    /// The answers of a retry.
    fn input_responses(&self) -> Option<&InputResponses>;
    /// The echoed state of a retry.
    fn request_state(&self) -> Option<&str>;
    /// Sets the answers (the client loop does this for each retry).
    fn set_input_responses(&mut self, responses: Option<InputResponses>);
    /// Sets the echoed state.
    fn set_request_state(&mut self, state: Option<String>);
}

macro_rules! impl_input_response_params {
    ($($ty:ty),*) => {$(
        impl $crate::InputResponseParams for $ty {
            fn input_responses(&self) -> Option<&$crate::InputResponses> {
                self.input_responses.as_ref()
            }
            fn request_state(&self) -> Option<&str> {
                self.request_state.as_deref()
            }
            fn set_input_responses(&mut self, responses: Option<$crate::InputResponses>) {
                self.input_responses = responses;
            }
            fn set_request_state(&mut self, state: Option<String>) {
                self.request_state = state;
            }
        }
    )*};
}
pub(crate) use impl_input_response_params;
