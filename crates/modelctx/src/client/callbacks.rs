//! Callbacks: how the client answers the server's questions.
//!
//! One set of callbacks serves both eras. On 2026-07-28 the server asks by returning an
//! `InputRequiredResult`, and the client loop calls the callback once per input request (the
//! context carries the server's key). In the handshake era the server sends a JSON-RPC request
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) and the callback's answer, or
//! its error, becomes the JSON-RPC response (the context carries the request id).
//!
//! Any `Fn(CallbackContext, Params) -> impl Future<Output = Result<…, ErrorObject>>` closure is
//! a callback; implement the traits directly for stateful handlers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_types::Method as _;
use modelctx_types::jsonrpc::{Notification, Request, encode_error, encode_result};
use modelctx_types::methods::{CreateMessage, Elicit, ListRoots, Ping};
use modelctx_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, EmptyResult, ErrorCode, ErrorObject, InputRequest,
    InputResponse, ListRootsResult, ProgressNotificationParams, ProtocolVersion, RequestId,
    SamplingCapability,
};
use serde_json::value::RawValue;

use super::error::ClientError;

/// Where a question came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputOrigin {
    /// An entry of `inputRequests` in an `InputRequiredResult` (2026-07-28), under this key.
    InputRequest {
        /// The server's key; the answer goes back under the same key.
        key: String,
    },
    /// A JSON-RPC request from the server (handshake era back-channel), with this id.
    ServerRequest {
        /// The server's request id.
        id: RequestId,
    },
}

/// What a callback knows about the question it answers.
#[derive(Debug, Clone)]
pub struct CallbackContext {
    origin: InputOrigin,
    protocol_version: Option<ProtocolVersion>,
    /// The key of a back-channel question: its kind (see [`CallbackContext::key`]).
    kind_key: Option<&'static str>,
}

impl CallbackContext {
    /// The key of a form elicitation that came over the handshake-era back-channel.
    pub const FORM_KEY: &'static str = "form";
    /// The key of a URL elicitation that came over the handshake-era back-channel.
    pub const URL_KEY: &'static str = "url";
    /// The key of a sampling request that came over the handshake-era back-channel.
    pub const SAMPLING_KEY: &'static str = "sampling";
    /// The key of a roots request that came over the handshake-era back-channel.
    pub const ROOTS_KEY: &'static str = "roots";

    pub(crate) fn new(origin: InputOrigin, protocol_version: Option<ProtocolVersion>) -> Self {
        Self {
            origin,
            protocol_version,
            kind_key: None,
        }
    }

    /// Where the question came from.
    pub fn origin(&self) -> &InputOrigin {
        &self.origin
    }

    /// The key the question is known by. On 2026-07-28, the server's input-request key (the
    /// answer goes back under it). A 2025-11-25 server request carries no key, and its id
    /// changes every time, so a back-channel question is keyed by its kind:
    /// [`FORM_KEY`](Self::FORM_KEY), [`URL_KEY`](Self::URL_KEY),
    /// [`SAMPLING_KEY`](Self::SAMPLING_KEY) or [`ROOTS_KEY`](Self::ROOTS_KEY) — stable,
    /// whoever asks, so a prepared answer (`mcp call --answer url=accept`) can name it. Such a
    /// key is local: nothing is sent under it.
    pub fn key(&self) -> Option<&str> {
        match &self.origin {
            InputOrigin::InputRequest { key } => Some(key),
            InputOrigin::ServerRequest { .. } => self.kind_key,
        }
    }

    /// The server's JSON-RPC request id, if the question came over the handshake-era
    /// back-channel.
    pub fn request_id(&self) -> Option<&RequestId> {
        match &self.origin {
            InputOrigin::ServerRequest { id } => Some(id),
            InputOrigin::InputRequest { .. } => None,
        }
    }

    /// The protocol version of the connection, once negotiated.
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        self.protocol_version.as_ref()
    }
}

/// Answers elicitations (`elicitation/create`): ask the user through a form or a URL.
pub trait ElicitationCallback: Send + Sync + 'static {
    /// Produces the user's answer, or an error (on the handshake-era back-channel the error is
    /// sent to the server; on 2026-07-28 it abandons the call locally — answer
    /// [`ElicitResult::decline`] or [`ElicitResult::cancel`] to tell the server instead).
    fn elicit(
        &self,
        context: CallbackContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>>;
}

impl<F, Fut> ElicitationCallback for F
where
    F: Fn(CallbackContext, ElicitRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
{
    fn elicit(
        &self,
        context: CallbackContext,
        params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>> {
        Box::pin(self(context, params))
    }
}

/// Answers sampling requests (`sampling/createMessage`, deprecated in 2026-07-28).
pub trait SamplingCallback: Send + Sync + 'static {
    /// Produces the model's answer, or an error (see [`ElicitationCallback::elicit`]).
    fn create_message(
        &self,
        context: CallbackContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>;
}

impl<F, Fut> SamplingCallback for F
where
    F: Fn(CallbackContext, CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
{
    fn create_message(
        &self,
        context: CallbackContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>> {
        Box::pin(self(context, params))
    }
}

/// Answers roots requests (`roots/list`, deprecated in 2026-07-28).
pub trait RootsCallback: Send + Sync + 'static {
    /// Produces the client's roots, or an error (see [`ElicitationCallback::elicit`]).
    fn list_roots(
        &self,
        context: CallbackContext,
    ) -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>>;
}

impl<F, Fut> RootsCallback for F
where
    F: Fn(CallbackContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
{
    fn list_roots(
        &self,
        context: CallbackContext,
    ) -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>> {
        Box::pin(self(context))
    }
}

/// Receives server notifications that no request claimed (log messages, list changes, …).
/// Called on the transport's reader task: keep it short and non-blocking.
pub type NotificationCallback = Arc<dyn Fn(&Notification) + Send + Sync>;

/// Receives the progress notifications of one request. Called on the transport's reader task.
pub type ProgressCallback = Arc<dyn Fn(ProgressNotificationParams) + Send + Sync>;

/// Receives every change of a task a call follows (status, `statusMessage`, input requests).
pub type TaskStatusCallback = Arc<dyn Fn(&modelctx_types::DetailedTask) + Send + Sync>;

/// Receives every change of a 2025-11-25 task a call follows (client/tasks_2025.rs).
pub type Task2025StatusCallback = Arc<dyn Fn(&modelctx_types::tasks_2025::Task) + Send + Sync>;

/// The configured callbacks, and everything derived from which ones exist.
#[derive(Clone, Default)]
pub(crate) struct Callbacks {
    pub(crate) elicitation: Option<Arc<dyn ElicitationCallback>>,
    pub(crate) elicitation_capability: Option<ElicitationCapability>,
    pub(crate) sampling: Option<Arc<dyn SamplingCallback>>,
    pub(crate) sampling_capability: Option<SamplingCapability>,
    pub(crate) roots: Option<Arc<dyn RootsCallback>>,
    pub(crate) notification: Option<NotificationCallback>,
}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callbacks")
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .field("notification", &self.notification.is_some())
            .finish()
    }
}

impl Callbacks {
    /// The capabilities to declare: exactly the kinds of question a callback can answer.
    /// Every declared capability is an object (the conformance suite checks that).
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::new();
        if self.elicitation.is_some() {
            caps.elicitation = Some(self.elicitation_capability.clone().unwrap_or_else(|| {
                let both = ClientCapabilities::new()
                    .with_elicitation_form()
                    .with_elicitation_url();
                both.elicitation.unwrap_or_default()
            }));
        }
        if self.sampling.is_some() {
            caps.sampling = Some(self.sampling_capability.clone().unwrap_or_default());
        }
        if self.roots.is_some() {
            caps = caps.with_roots();
        }
        caps
    }

    /// Fails with [`ClientError::MissingCallback`] when no callback can answer `request`.
    pub(crate) fn check_answerable(
        &self,
        key: &str,
        request: &InputRequest,
    ) -> Result<(), ClientError> {
        let present = match request {
            InputRequest::Elicit(_) => self.elicitation.is_some(),
            InputRequest::CreateMessage(_) => self.sampling.is_some(),
            InputRequest::ListRoots(_) => self.roots.is_some(),
            // Unknown kinds never decode (the union rejects them), but stay exhaustive.
            #[allow(unreachable_patterns)]
            _ => false,
        };
        if present {
            Ok(())
        } else {
            Err(ClientError::MissingCallback {
                method: request.method().to_owned(),
                key: key.to_owned(),
            })
        }
    }

    /// Answers one entry of `inputRequests` (2026-07-28).
    pub(crate) async fn answer_input(
        &self,
        key: String,
        request: InputRequest,
        version: Option<ProtocolVersion>,
    ) -> Result<(String, InputResponse), ClientError> {
        self.check_answerable(&key, &request)?;
        let method = request.method().to_owned();
        let context = CallbackContext::new(InputOrigin::InputRequest { key: key.clone() }, version);
        let refused = |error| ClientError::CallbackRefused {
            method: method.clone(),
            key: key.clone(),
            error,
        };
        let response = match (request, &self.elicitation, &self.sampling, &self.roots) {
            (InputRequest::Elicit(r), Some(cb), _, _) => {
                InputResponse::elicit(&cb.elicit(context, r.params).await.map_err(refused)?)
            }
            (InputRequest::CreateMessage(r), _, Some(cb), _) => InputResponse::create_message(
                &cb.create_message(context, r.params)
                    .await
                    .map_err(refused)?,
            ),
            (InputRequest::ListRoots(_), _, _, Some(cb)) => {
                InputResponse::list_roots(&cb.list_roots(context).await.map_err(refused)?)
            }
            (request, ..) => {
                return Err(ClientError::MissingCallback {
                    method: request.method().to_owned(),
                    key,
                });
            }
        };
        Ok((key, response))
    }

    /// Answers a JSON-RPC request the server sent (handshake-era back-channel) and returns the
    /// encoded response. A missing callback or a refusal becomes a JSON-RPC error response, as
    /// the reference SDK does.
    pub(crate) async fn answer_server_request(
        &self,
        request: Request,
        version: Option<ProtocolVersion>,
    ) -> Vec<u8> {
        let id = request.id.clone();
        match self.server_request_result(request, version).await {
            Ok(result) => encode_result(&id, &result)
                .unwrap_or_else(|e| encode_error(Some(&id), &ErrorObject::internal(e.to_string()))),
            Err(error) => encode_error(Some(&id), &error),
        }
    }

    /// The result of a server request, or the error to answer it with (also what a
    /// client-side 2025-11-25 task keeps as its outcome).
    pub(crate) async fn server_request_result(
        &self,
        request: Request,
        version: Option<ProtocolVersion>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let context = |kind_key| CallbackContext {
            origin: InputOrigin::ServerRequest {
                id: request.id.clone(),
            },
            protocol_version: version.clone(),
            kind_key: Some(kind_key),
        };
        match request.method.as_str() {
            Ping::NAME => raw(&EmptyResult::default()),
            Elicit::NAME => match &self.elicitation {
                None => Err(not_supported("Elicitation not supported")),
                Some(cb) => match request.params_as::<ElicitRequestParams>() {
                    Err(e) => Err(ErrorObject::invalid_params(e.to_string())),
                    Ok(params) => {
                        let key = match params {
                            ElicitRequestParams::Url(_) => CallbackContext::URL_KEY,
                            _ => CallbackContext::FORM_KEY,
                        };
                        cb.elicit(context(key), params).await.and_then(|r| raw(&r))
                    }
                },
            },
            CreateMessage::NAME => match &self.sampling {
                None => Err(not_supported("Sampling not supported")),
                Some(cb) => match request.params_as::<CreateMessageRequestParams>() {
                    Err(e) => Err(ErrorObject::invalid_params(e.to_string())),
                    Ok(params) => cb
                        .create_message(context(CallbackContext::SAMPLING_KEY), params)
                        .await
                        .and_then(|r| raw(&r)),
                },
            },
            ListRoots::NAME => match &self.roots {
                None => Err(not_supported("List roots not supported")),
                Some(cb) => cb
                    .list_roots(context(CallbackContext::ROOTS_KEY))
                    .await
                    .and_then(|r| raw(&r)),
            },
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// Hands an unclaimed notification to the notification callback, if any.
    pub(crate) fn notify(&self, notification: &Notification) {
        match &self.notification {
            Some(cb) => cb(notification),
            None => tracing::debug!(method = %notification.method, "server notification"),
        }
    }
}

fn not_supported(message: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_REQUEST, message)
}

fn raw<T: serde::Serialize>(result: &T) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A back-channel question has no input-request key; the callback sees its kind, so a
    /// prepared answer can name it (`mcp call --answer url=accept`).
    #[tokio::test]
    async fn back_channel_questions_are_keyed_by_their_kind() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let elicited = Arc::clone(&seen);
        let sampled = Arc::clone(&seen);
        let listed = Arc::clone(&seen);
        let record = |seen: &Mutex<Vec<Option<String>>>, context: &CallbackContext| {
            seen.lock().unwrap().push(context.key().map(str::to_owned));
        };
        let callbacks = Callbacks {
            elicitation: Some(Arc::new(move |context: CallbackContext, _| {
                record(&elicited, &context);
                async { Ok(ElicitResult::decline()) }
            })),
            sampling: Some(Arc::new(move |context: CallbackContext, _| {
                record(&sampled, &context);
                async { Ok(CreateMessageResult::text("m", "t")) }
            })),
            roots: Some(Arc::new(move |context: CallbackContext| {
                record(&listed, &context);
                async { Ok(ListRootsResult::new(Vec::new())) }
            })),
            ..Callbacks::default()
        };
        let url =
            r#"{"mode":"url","message":"Sign in","url":"https://a.example/","elicitationId":"e1"}"#;
        let form = r#"{"message":"Region?","requestedSchema":{"type":"object","properties":{}}}"#;
        let sampling = r#"{"messages":[],"maxTokens":5}"#;
        for (id, method, params) in [
            (1, Elicit::NAME, Some(url)),
            (2, Elicit::NAME, Some(form)),
            (3, CreateMessage::NAME, Some(sampling)),
            (4, ListRoots::NAME, None),
        ] {
            let request = Request {
                id: RequestId::Number(id),
                method: method.to_owned(),
                params: params.map(|p| RawValue::from_string(p.to_owned()).unwrap()),
            };
            let answer = callbacks.server_request_result(request, None).await;
            assert!(answer.is_ok(), "{method}: {answer:?}");
        }
        let keys: Vec<Option<String>> = seen.lock().unwrap().clone();
        assert_eq!(
            keys,
            ["url", "form", "sampling", "roots"].map(|k| Some(k.to_owned()))
        );
        // On 2026-07-28 the server's key is the key.
        let context = CallbackContext::new(
            InputOrigin::InputRequest {
                key: "consent".to_owned(),
            },
            None,
        );
        assert_eq!(context.key(), Some("consent"));
    }
}
