//! The per-request context handed to every handler.

use std::any::Any;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use modelctx_seal::Principal;
use modelctx_types::jsonrpc::encode_notification;
use modelctx_types::methods::is_custom_notification;
use modelctx_types::methods::{
    CreateMessage, Elicit, ElicitationComplete, ListRoots, LoggingMessage, Progress,
};
use modelctx_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ElicitationCompleteParams, Era,
    ErrorCode, ErrorObject, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParams, Method, NotificationMethod, ProgressNotificationParams,
    ProgressToken, ProtocolVersion, RequestId, RequestMeta, RootsListParams,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::handshake::HandshakeSession;
use crate::schema_check::SchemaCheck;
use crate::sync::lock;

use super::notifier::Notifier;

/// Everything a handler knows about the request it serves: the protocol version and client
/// capabilities of *this* request (2026-07-28 derives nothing from earlier requests), progress,
/// logging and cancellation.
///
/// Cloning is cheap; a clone kept after the handler returns can no longer send notifications
/// (the spec forbids messages about a finished request).
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner<dyn Any + Send + Sync>>,
}

/// The context's state. The server it serves is held by value, last, with its type erased
/// here: the context sits below the server handle (the handle holds handlers that take a
/// context), so this module cannot name `Server`; the handle's module reads it back
/// (`RequestContext::server`, in `handle.rs`). No allocation of its own: `Arc<Inner<Server>>`
/// is unsized in place.
struct Inner<S: ?Sized> {
    id: RequestId,
    method: Box<str>,
    meta: Box<RequestMeta>,
    protocol_version: ProtocolVersion,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
    last_progress: Mutex<Option<f64>>,
    done: AtomicBool,
    principal: Option<Principal>,
    handshake: Option<Box<HandshakeRequest>>,
    #[cfg(feature = "http-server")]
    http: Option<Arc<http::request::Parts>>,
    server: S,
}

/// What a handshake-era request holds besides its session.
struct HandshakeRequest {
    session: Arc<HandshakeSession>,
    /// The URL-mode elicitations the client accepted during the request, announced complete
    /// (`notifications/elicitation/complete`) when the request completes.
    accepted_urls: Mutex<Vec<String>>,
}

static NO_CAPABILITIES: std::sync::OnceLock<ClientCapabilities> = std::sync::OnceLock::new();

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.inner.id)
            .field("method", &self.inner.method)
            .field("protocol_version", &self.inner.protocol_version)
            .finish_non_exhaustive()
    }
}

/// The parts of a request context that the transport supplies; `S` is the server (a `Server`:
/// see [`Inner`]).
pub(crate) struct ContextParts<S> {
    pub(crate) server: S,
    pub(crate) id: RequestId,
    pub(crate) method: Box<str>,
    pub(crate) meta: Box<RequestMeta>,
    pub(crate) protocol_version: ProtocolVersion,
    pub(crate) notifier: Option<Notifier>,
    pub(crate) cancel: CancellationToken,
    pub(crate) principal: Option<Principal>,
    pub(crate) handshake: Option<Arc<HandshakeSession>>,
    #[cfg(feature = "http-server")]
    pub(crate) http: Option<Arc<http::request::Parts>>,
}

impl RequestContext {
    pub(crate) fn new<S: Any + Send + Sync>(parts: ContextParts<S>) -> Self {
        let inner: Arc<Inner<S>> = Arc::new(Inner {
            id: parts.id,
            method: parts.method,
            meta: parts.meta,
            protocol_version: parts.protocol_version,
            notifier: parts.notifier,
            cancel: parts.cancel,
            last_progress: Mutex::new(None),
            done: AtomicBool::new(false),
            principal: parts.principal,
            handshake: parts.handshake.map(|session| {
                Box::new(HandshakeRequest {
                    session,
                    accepted_urls: Mutex::new(Vec::new()),
                })
            }),
            #[cfg(feature = "http-server")]
            http: parts.http,
            server: parts.server,
        });
        Self { inner }
    }

    /// The server this request is served by, as the handle's module reads it back.
    pub(crate) fn server_any(&self) -> &(dyn Any + Send + Sync) {
        &self.inner.server
    }

    /// Marks the request finished: later notifications are dropped.
    pub(crate) fn finish(&self) {
        self.inner.done.store(true, Ordering::Release);
    }

    /// The JSON-RPC id of the request.
    pub fn id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The method.
    pub fn method(&self) -> &str {
        &self.inner.method
    }

    /// The protocol revision of this request.
    pub fn protocol_version(&self) -> &ProtocolVersion {
        &self.inner.protocol_version
    }

    /// The era of the request: 2026-07-28 (ask by returning an `InputRequiredResult`) or the
    /// handshake era (ask through [`RequestContext::elicit`] and its siblings).
    pub fn era(&self) -> Era {
        if self.inner.handshake.is_some() {
            Era::Handshake
        } else {
            Era::Modern
        }
    }

    /// The client capabilities declared on this request (`{}` when none).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.inner
            .meta
            .client_capabilities
            .as_ref()
            .unwrap_or_else(|| NO_CAPABILITIES.get_or_init(ClientCapabilities::default))
    }

    /// The client's self-reported name and version, if it sent them.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.meta.client_info.as_ref()
    }

    /// The whole `params._meta` of the request (trace context and other keys included).
    pub fn meta(&self) -> &RequestMeta {
        &self.inner.meta
    }

    /// The log level this request opted in to; without one the server sends no log messages.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.inner.meta.log_level
    }

    /// The progress token of this request, if the client asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.inner.meta.progress_token.as_ref()
    }

    /// The principal the request is made by: the one the transport authenticated, or what
    /// [`super::ServerBuilder::bind_principal`] made of it. Sealed state and tasks are bound
    /// to it.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }

    /// Replaces the principal of a context that was just made (before any handler sees it);
    /// `server` gives the server again should the context have to be made anew.
    pub(crate) fn set_principal<S: Any + Send + Sync>(
        &mut self,
        principal: Option<Principal>,
        server: impl FnOnce() -> S,
    ) {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.principal = principal;
            return;
        }
        // The hook kept a clone of the context: give this request a context of its own.
        let inner = &self.inner;
        *self = Self::new(ContextParts {
            server: server(),
            id: inner.id.clone(),
            method: inner.method.clone(),
            meta: inner.meta.clone(),
            protocol_version: inner.protocol_version.clone(),
            notifier: inner.notifier.clone(),
            cancel: inner.cancel.clone(),
            principal,
            handshake: inner
                .handshake
                .as_ref()
                .map(|handshake| Arc::clone(&handshake.session)),
            #[cfg(feature = "http-server")]
            http: inner.http.clone(),
        });
    }

    /// The HTTP request head (headers, extensions set by middleware), on streamable HTTP.
    #[cfg(feature = "http-server")]
    pub fn http_parts(&self) -> Option<&http::request::Parts> {
        self.inner.http.as_deref()
    }

    /// The address of the peer that sent the request, on streamable HTTP served by
    /// [`Server::serve_http_on`](super::Server::serve_http_on) (or a router served with
    /// `into_make_service_with_connect_info::<SocketAddr>()`). Behind a reverse proxy it is the
    /// proxy's. A [`bind_principal`](super::ServerBuilder::bind_principal) hook can use it to
    /// give anonymous peers an identity of their own (task limits and sealed state are per
    /// principal).
    #[cfg(feature = "http-server")]
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        super::origin::peer_addr(self.http_parts()?)
    }

    /// Closes the request's response stream now and lets the request go on: the client
    /// reconnects with `Last-Event-ID` after the stream's `retry` delay and receives what the
    /// request sent meanwhile, then its result (polling a long call, SEP-1699; the Python SDK's
    /// `close_sse_stream`). Only a handshake-era (2025-11-25) request over streamable HTTP
    /// with an event store configured ([`super::http::HttpConfig::event_store`]) has such a
    /// stream; false (and nothing happens) otherwise.
    #[cfg(feature = "http-server")]
    pub fn close_sse_stream(&self) -> bool {
        match self
            .http_parts()
            .and_then(|parts| parts.extensions.get::<super::stream_closer::StreamCloser>())
        {
            Some(closer) => {
                closer.close();
                true
            }
            None => false,
        }
    }

    /// Always `None` without the `http-server` feature: no other transport knows its peer.
    #[cfg(not(feature = "http-server"))]
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }

    /// The access token the auth layer validated ([`super::http::HttpConfig::auth`]), on
    /// streamable HTTP.
    #[cfg(feature = "auth")]
    pub fn access_token(&self) -> Option<&super::auth::AccessToken> {
        self.http_parts()?.extensions.get()
    }

    /// Whether the client cancelled the request (stdio `notifications/cancelled`, or the HTTP
    /// response stream closed).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.inner.cancel.cancelled()
    }

    /// The cancellation token, to hand to work spawned for this request.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Returns `Err(-32021)` with `data.requiredCapabilities = required` unless this request's
    /// client declared every capability in `required`: the one-call way for a handler that
    /// cannot proceed without, say, sampling.
    ///
    /// # Errors
    /// The `-32021` error to return from the handler.
    pub fn require_capabilities(&self, required: &ClientCapabilities) -> Result<(), ErrorObject> {
        if self.client_capabilities().satisfies(required) {
            return Ok(());
        }
        let names = describe(required);
        Err(ErrorObject::missing_required_client_capability(
            format!("Client did not declare the {names} capability required by this request"),
            required,
        ))
    }

    /// Reports progress, if the client asked for it. Progress must increase; a value not above
    /// the previous one is dropped, as are reports after the request finished.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = self.progress_token() else {
            return;
        };
        {
            let mut last = lock(&self.inner.last_progress);
            if last.is_some_and(|last| progress <= last) {
                tracing::debug!(progress, "progress did not increase; not sent");
                return;
            }
            *last = Some(progress);
        }
        let params = ProgressNotificationParams::new(
            token.clone(),
            progress,
            total,
            message.map(str::to_owned),
        );
        self.notify::<Progress>(&params).await;
    }

    /// Sends a log message if this request opted in at `level` or below (deprecated logging).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let Some(threshold) = self.log_level() else {
            return;
        };
        if level < threshold {
            return;
        }
        let params = LoggingMessageNotificationParams::new(level, logger.map(str::to_owned), data);
        self.notify::<LoggingMessage>(&params).await;
    }

    /// Sends a notification of a method of your own (an extension's, a `com.example/…`
    /// method) on this request's response stream, in either era; what it says is up to the
    /// method's definition. A method of the specification is refused: those have helpers that
    /// keep their rules ([`progress`](Self::progress), [`log`](Self::log); list changes go
    /// through the server's change bus). Nothing is sent once the request is over.
    ///
    /// # Errors
    /// `-32602` for a specification method or a name that is empty or holds control
    /// characters; `-32603` when `params` does not serialize.
    pub async fn send_notification(
        &self,
        method: &str,
        params: Option<&Value>,
    ) -> Result<(), ErrorObject> {
        if !is_custom_notification(method) {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "{method:?} cannot be sent with send_notification: it is a method of the \
                     specification or not a usable name"
                ),
            ));
        }
        if self.inner.done.load(Ordering::Acquire) || self.inner.cancel.is_cancelled() {
            return Ok(());
        }
        let Some(notifier) = &self.inner.notifier else {
            return Ok(());
        };
        let bytes = encode_notification(method, params)
            .map_err(|error| ErrorObject::internal(format!("{method}: {error}")))?;
        // A closed stream means the client went away; the request is being cancelled.
        let _ = notifier.send(bytes).await;
        Ok(())
    }

    /// Asks the user through the client, mid-call (handshake era only: a server→client
    /// `elicitation/create` request answered by the client's elicitation callback).
    ///
    /// An accepted form answer is checked against `requestedSchema` before it is returned. A
    /// URL-mode request gets an `elicitationId` when it has none (2025-11-25 requires one); when
    /// the client accepts it, the SDK sends `notifications/elicitation/complete` for it once the
    /// `tools/call`, `prompts/get` or templated `resources/read` completes with a result.
    ///
    /// # Errors
    /// On 2026-07-28 (return an `InputRequiredResult` instead), when the client did not declare
    /// the elicitation mode (`-32021`, with `data.requiredCapabilities`), when it answers
    /// with an error (`-32603` "The client could not answer elicitation/create: …", the
    /// client's error in `data.clientError`: its code was about the client's request, not
    /// yours), when it goes away, or when an accepted form answer does not match the requested
    /// schema (`-32603`).
    pub async fn elicit(
        &self,
        params: impl Into<ElicitRequestParams>,
    ) -> Result<ElicitResult, ErrorObject> {
        let mut params = params.into();
        let answer = self.send_elicitation(&mut params).await?;
        if let (ElicitRequestParams::Form(form), ElicitAction::Accept) = (&params, &answer.action) {
            check_form_answer(form, &answer)?;
        }
        Ok(answer)
    }

    /// [`RequestContext::elicit`] without the schema check, for callers that check the answer
    /// themselves (the high-level server's questions, with the Python SDK's wording).
    pub(crate) async fn elicit_unchecked(
        &self,
        mut params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorObject> {
        self.send_elicitation(&mut params).await
    }

    async fn send_elicitation(
        &self,
        params: &mut ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorObject> {
        let required = params.required_capabilities();
        let url_id = match params {
            ElicitRequestParams::Url(url) if self.inner.handshake.is_some() => {
                let id = match &url.elicitation_id {
                    Some(id) => id.clone(),
                    None => url.elicitation_id.insert(elicitation_id()?).clone(),
                };
                Some(id)
            }
            _ => None,
        };
        let answer = self.back_channel::<Elicit, _>(&required, &*params).await?;
        if let (Some(id), Some(handshake), ElicitAction::Accept) =
            (url_id, &self.inner.handshake, &answer.action)
        {
            lock(&handshake.accepted_urls).push(id);
        }
        Ok(answer)
    }

    /// Announces the URL-mode elicitations the client accepted during this handshake-era
    /// request as complete: the request is about to answer with a result, so the out-of-band
    /// step each one asked for is over as far as this server is concerned.
    pub(crate) async fn announce_elicitations_complete(&self) {
        let Some(handshake) = &self.inner.handshake else {
            return;
        };
        let accepted = std::mem::take(&mut *lock(&handshake.accepted_urls));
        for elicitation_id in accepted {
            let params = ElicitationCompleteParams::new(elicitation_id);
            self.notify::<ElicitationComplete>(&params).await;
        }
    }

    /// Asks the client's model (handshake era only: `sampling/createMessage`).
    ///
    /// # Errors
    /// As [`RequestContext::elicit`].
    pub async fn create_message(
        &self,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.back_channel::<CreateMessage, _>(&params.required_capabilities(), params)
            .await
    }

    /// Asks for the client's roots (handshake era only: `roots/list`).
    ///
    /// # Errors
    /// As [`RequestContext::elicit`].
    pub async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        let required = ClientCapabilities::new().with_roots();
        self.back_channel::<ListRoots, _>(&required, &RootsListParams::default())
            .await
    }

    /// Sends a server→client request, if the client declared `required` — the capabilities of
    /// the same derivation (`required_capabilities` + `satisfies`) that checks an
    /// `InputRequiredResult`, so the two can never disagree.
    async fn back_channel<M: Method, P: Serialize>(
        &self,
        required: &ClientCapabilities,
        params: &P,
    ) -> Result<M::Result, ErrorObject> {
        if self.inner.handshake.is_some() {
            // `-32021`, as an `InputRequiredResult` asking the same is refused (and as the
            // resolvers and the bridge refuse it): one code for one missing capability, whichever
            // path asks (a task tool run synchronously used to answer `-32600` here).
            self.require_capabilities(required)?;
        }
        self.send_to_client(M::NAME, params, client_refused).await
    }

    /// Sends any server→client request (handshake era only) and returns the client's result as
    /// raw JSON — for requests without a typed helper, such as the 2025-11-25 experimental
    /// tasks: a task-augmented `elicitation/create`, then `tasks/get` and `tasks/result` on
    /// the client. Checking that the client declared what the request needs is the caller's
    /// job (see [`RequestContext::client_capabilities`]).
    ///
    /// # Errors
    /// On 2026-07-28, when the client answers with an error or goes away, or when this request
    /// is over.
    pub async fn request_client(
        &self,
        method: &'static str,
        params: &Value,
    ) -> Result<Value, ErrorObject> {
        // The client's error as it is: a raw request's caller reads its code.
        self.send_to_client(method, params, |_, error| error).await
    }

    /// Sends a server→client request; an error the client answers with goes through
    /// `client_error`.
    async fn send_to_client<R: serde::de::DeserializeOwned, P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
        client_error: impl FnOnce(&'static str, ErrorObject) -> ErrorObject,
    ) -> Result<R, ErrorObject> {
        let (Some(handshake), Some(out)) = (&self.inner.handshake, &self.inner.notifier) else {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Cannot send '{method}': a 2026-07-28 request has no back-channel for \
                     server-initiated requests; return an InputRequiredResult instead"
                ),
            ));
        };
        if self.inner.done.load(Ordering::Acquire) || self.inner.cancel.is_cancelled() {
            return Err(ErrorObject::internal(format!(
                "Cannot send '{method}': the request is over"
            )));
        }
        handshake
            .session
            .request::<R>(out, method, params, &self.inner.cancel, client_error)
            .await
    }

    /// Sends a notification about this request on its response stream.
    pub(crate) async fn notify<N: NotificationMethod>(&self, params: &impl Serialize) {
        if self.inner.done.load(Ordering::Acquire) || self.inner.cancel.is_cancelled() {
            return;
        }
        let Some(notifier) = &self.inner.notifier else {
            return;
        };
        match encode_notification(N::NAME, Some(params)) {
            Ok(bytes) => {
                // A closed stream means the client went away; the request is being cancelled.
                let _ = notifier.send(bytes).await;
            }
            Err(error) => tracing::warn!(%error, method = N::NAME, "notification not encodable"),
        }
    }

    /// Sends a notification encoded by the caller (a listen stream encodes its notifications
    /// once). Unlike [`RequestContext::notify`] it does not look at the cancellation token: its
    /// caller, a listen loop, already waits on it, and the check takes the token's lock.
    pub(crate) async fn notify_encoded(&self, bytes: Vec<u8>) {
        if self.inner.done.load(Ordering::Acquire) {
            return;
        }
        if let Some(notifier) = &self.inner.notifier {
            // A closed stream means the client went away; the request is being cancelled. Only
            // a full queue waits, in a boxed future: awaited inline, `send` would size the
            // future of every listen stream holding this call (RELIABILITY.md, "Change bus").
            if let Err(mpsc::error::TrySendError::Full(bytes)) = notifier.try_send(bytes) {
                let _ = Box::pin(notifier.send(bytes)).await;
            }
        }
    }
}

/// A fresh `elicitationId`: 128 random bits, hex, so that it is unique within the server (as
/// 2025-11-25 requires) across instances too.
fn elicitation_id() -> Result<String, ErrorObject> {
    crate::ids::random_hex().map_err(|error| {
        tracing::error!(%error, "no system randomness for an elicitationId");
        ErrorObject::internal("Internal error")
    })
}

/// Checks an accepted form answer against the form's `requestedSchema` (compiled per call: the
/// low-level server knows nothing of the form before it is asked).
fn check_form_answer(
    form: &ElicitRequestFormParams,
    answer: &ElicitResult,
) -> Result<(), ErrorObject> {
    let schema = serde_json::to_value(&form.requested_schema)
        .map_err(|e| ErrorObject::internal(format!("requestedSchema not encodable: {e}")))?;
    let check = SchemaCheck::compile_form(&schema).map_err(|e| {
        tracing::error!(error = %e, "the requestedSchema of an elicitation does not compile");
        ErrorObject::internal("Internal error")
    })?;
    let content = Value::Object(answer.content.clone().unwrap_or_default());
    check.check(&content).map_err(|problem| {
        ErrorObject::internal(format!(
            "the client's answer to elicitation/create does not match the requested schema: \
             {problem}"
        ))
    })
}

/// Names the capabilities of `required` for an error message ("sampling", "form elicitation").
/// The error of a question (`elicitation/create`, `sampling/createMessage`, `roots/list`) the
/// client answered with an error. Passed on as it is, it became the error of the whole call,
/// where its code meant something else: a client without a handler answers `-32601 Method not
/// found`, which read as if `tools/call` did not exist. The call fails with `-32603` naming
/// the question; the client's error stays whole in `data.clientError`.
#[allow(
    clippy::needless_pass_by_value,
    reason = "the shape of the error mapper `HandshakeSession::request` takes"
)]
pub(crate) fn client_refused(question: &str, error: ErrorObject) -> ErrorObject {
    let message = format!(
        "The client could not answer {question}: {} ({})",
        error.message, error.code.0
    );
    let data = serde_json::json!({ "clientError": error });
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, message).with_data(data)
}

/// [`client_refused`]'s error naming the input request it answered: `input request 'region'
/// (elicitation/create)`. Any other error (a missing capability, a cancelled call, a malformed
/// answer: this server's own) is returned as it is.
pub(crate) fn name_input_request(error: ErrorObject, key: &str, method: &str) -> ErrorObject {
    let client = error
        .data
        .as_ref()
        .and_then(|data| data.get("clientError"))
        .filter(|_| error.code == ErrorCode::INTERNAL_ERROR)
        .and_then(|client| serde_json::from_value::<ErrorObject>(client.clone()).ok());
    match client {
        Some(client) => client_refused(&format!("input request '{key}' ({method})"), client),
        None => error,
    }
}

fn describe(required: &ClientCapabilities) -> String {
    let mut names = Vec::new();
    if required
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
    {
        names.push("form elicitation");
    }
    if required.elicitation_url() {
        names.push("URL elicitation");
    }
    if required.sampling_tools() {
        names.push("sampling.tools");
    } else if required.sampling() {
        names.push("sampling");
    }
    if required.roots() {
        names.push("roots");
    }
    if required.extensions.as_ref().is_some_and(|e| !e.is_empty()) {
        names.push("extension");
    }
    if names.is_empty() {
        names.push("required");
    }
    names.join(" and ")
}
