//! The context a high-level handler (and its resolvers) receives.

use std::ops::Deref;
use std::sync::Arc;

use modelctx_types::{
    ElicitResult, Era, ErrorObject, InputRequest, InputResponse, InputResponses, LoggingLevel,
};
use serde_json::Value;

use super::asker::{Asker, BackChannel};
use crate::server::bridge::{self, FormCheck};
use crate::server::{BoxFuture, RequestContext};

/// Everything about the request being served: the low-level [`RequestContext`] (reached through
/// `Deref`: protocol version, this request's client capabilities, progress, logging,
/// cancellation) plus the multi-round-trip inputs of this round — the answers in
/// [`Context::input_responses`] and the plaintext [`Context::request_state`] (the SDK unseals
/// it before the handler runs and seals what the handler returns).
///
/// Cloning is cheap.
#[derive(Clone)]
pub struct Context {
    request: RequestContext,
    input_responses: Option<Arc<InputResponses>>,
    request_state: Option<Arc<str>>,
    back_channel: Option<Arc<dyn BackChannel>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("request", &self.request)
            .field("request_state", &self.request_state)
            .finish_non_exhaustive()
    }
}

impl Deref for Context {
    type Target = RequestContext;

    fn deref(&self) -> &RequestContext {
        &self.request
    }
}

impl Context {
    /// A context for one round of a request.
    pub fn new(
        request: RequestContext,
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
    ) -> Self {
        let back_channel = handshake_back_channel(&request);
        Self {
            request,
            input_responses: input_responses.map(Arc::new),
            request_state: request_state.map(Arc::from),
            back_channel,
        }
    }

    /// Answers questions through `channel` (server→client requests, mid-call) instead of an
    /// `InputRequiredResult`: the handshake-era path.
    #[must_use]
    pub fn with_back_channel(mut self, channel: Arc<dyn BackChannel>) -> Self {
        self.back_channel = Some(channel);
        self
    }

    /// The low-level request context.
    pub fn request_context(&self) -> &RequestContext {
        &self.request
    }

    /// The answers of this round (`inputResponses`), keyed as the previous round asked.
    pub fn input_responses(&self) -> Option<&InputResponses> {
        self.input_responses.as_deref()
    }

    /// The answer under `key`, if any.
    pub fn input_response(&self, key: &str) -> Option<&InputResponse> {
        self.input_responses()?.get(key)
    }

    /// The answer under `key` read as an elicitation result (`None` when absent or of another
    /// kind).
    pub fn elicit_result(&self, key: &str) -> Option<ElicitResult> {
        self.input_response(key)?.as_elicit().ok()
    }

    /// The plaintext `requestState` of this round: what the handler returned last round
    /// (verified and unsealed by the SDK).
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// Sends an `info` log message, if the request opted in to that level.
    pub async fn info(&self, message: &str) {
        self.request
            .log(LoggingLevel::Info, None, Value::from(message))
            .await;
    }

    /// Sends a `debug` log message, if the request opted in to that level.
    pub async fn debug(&self, message: &str) {
        self.request
            .log(LoggingLevel::Debug, None, Value::from(message))
            .await;
    }

    /// Sends a `warning` log message, if the request opted in to that level.
    pub async fn warning(&self, message: &str) {
        self.request
            .log(LoggingLevel::Warning, None, Value::from(message))
            .await;
    }

    /// Sends an `error` log message, if the request opted in to that level.
    pub async fn error(&self, message: &str) {
        self.request
            .log(LoggingLevel::Error, None, Value::from(message))
            .await;
    }

    /// How resolvers' questions reach the client on this request.
    pub(crate) fn asker(&self) -> Asker {
        match &self.back_channel {
            Some(channel) => Asker::BackChannel(Arc::clone(channel)),
            None => Asker::InputRequired,
        }
    }
}

/// The back-channel of a handshake-era request: its server→client requests
/// ([`RequestContext::elicit`] and its siblings). A 2026-07-28 request has none, and its
/// questions travel in an `InputRequiredResult`.
fn handshake_back_channel(request: &RequestContext) -> Option<Arc<dyn BackChannel>> {
    matches!(request.era(), Era::Handshake)
        .then(|| Arc::new(RequestBackChannel(request.clone())) as Arc<dyn BackChannel>)
}

/// Sends each question as a server→client request of the handshake-era session.
struct RequestBackChannel(RequestContext);

impl BackChannel for RequestBackChannel {
    fn ask(&self, request: InputRequest) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let context = self.0.clone();
        Box::pin(async move {
            // The question checks its own answer (`Question::read_answer`), with the wording
            // of the Python SDK.
            bridge::ask(&context, request, FormCheck::Caller)
                .await
                .map(|InputResponse(answer)| answer)
        })
    }
}
