//! Client extensions (SEP-2133): what a client advertises under
//! `clientCapabilities.extensions`, and the behaviour an extension brings.
//!
//! [`ClientBuilder::extension`](super::ClientBuilder::extension) advertises an identifier with
//! its settings — in the `_meta` client capabilities of every 2026-07-28 request and at
//! `initialize` in the handshake era. A [`ClientExtension`]
//! ([`ClientBuilder::client_extension`](super::ClientBuilder::client_extension)) advertises the
//! same way and may also
//!
//! * **claim a `resultType` on `tools/call`** ([`ResultClaim`]): a result of that type, which
//!   the client otherwise refuses (`ResultDecodeError::UnknownResultType`), goes to the claim's
//!   resolver, which finishes it — with follow-up requests on the [`Session`] if it needs them —
//!   and returns the call's [`CallToolResult`]. [`Client::call_tool`](super::Client::call_tool)
//!   returns that result; a call that does not resolve claims (a session-level call,
//!   [`Client::start_tool`](super::Client::start_tool)) gets [`ClientError::ClaimedResult`].
//! * **observe server notifications by method** ([`NotificationBinding`]): each binding gets
//!   the params of the notifications of its method that no feature of the client took (a
//!   followed task's, a listen stream's), one at a time in arrival order, through a queue of
//!   [`NotificationBinding::QUEUE`]; when the handler falls that far behind, newer notifications
//!   are dropped (and logged), so a chatty server cannot make the client hold more. Observation
//!   only: the connection's notification callback still sees them.
//!
//! Identifiers are unique per client and checked ([`ExtensionId`]); settings are at most
//! [`MAX_SETTINGS_BYTES`] of JSON, since they travel on every request. A problem is reported
//! when connecting, as [`ClientError::InvalidArgument`].
//!
//! The tasks extension ([`ClientBuilder::tasks`](super::ClientBuilder::tasks)) is not a claim:
//! following a task is the client's own loop — it answers the task's questions with the
//! client's callbacks within the call's budget (shared with the call's input-required rounds),
//! reports to the call's [`RequestOptions`](super::RequestOptions) and cancels the task when
//! the call is dropped — so it sits above the session, beside the input-required loop, where a
//! resolver that sees the session cannot reach.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use modelctx_types::jsonrpc::Notification;
use modelctx_types::{
    CallToolResult, ClientCapabilities, ExtensionId, ExtensionResult, Extra, ResultType,
    ResultTypes,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::error::ClientError;
use super::session::Session;

/// The most bytes an extension's settings may take as JSON: they are sent on every request.
pub const MAX_SETTINGS_BYTES: usize = 16 * 1024;

/// An opt-in bundle of client behaviour (see the [module docs](self)). Every method but
/// [`id`](Self::id) has a default, so an extension overrides only what it needs. Read once,
/// when the client connects.
pub trait ClientExtension: Send + Sync + 'static {
    /// The identifier advertised under `clientCapabilities.extensions`.
    fn id(&self) -> ExtensionId;

    /// The settings advertised at `clientCapabilities.extensions[id]` (default: `{}`).
    fn settings(&self) -> Extra {
        Extra::new()
    }

    /// The `resultType`s this extension resolves on `tools/call` (default: none).
    fn claims(&self) -> Vec<ResultClaim> {
        Vec::new()
    }

    /// The server notifications this extension observes (default: none).
    fn notifications(&self) -> Vec<NotificationBinding> {
        Vec::new()
    }
}

/// What a claim's resolver is given besides the claimed result.
#[derive(Debug, Clone)]
pub struct ClaimContext {
    session: Session,
    tool: String,
}

impl ClaimContext {
    /// The session the call was made on: follow-up requests go through it.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The tool that was called.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

/// Turns a claimed result into the call's result.
type Resolver = dyn Fn(ExtensionResult, ClaimContext) -> BoxFuture<'static, Result<CallToolResult, ClientError>>
    + Send
    + Sync;

/// One extra `resultType` on `tools/call`, with the resolver that finishes it.
#[derive(Clone)]
pub struct ResultClaim {
    result_type: ResultType,
    resolve: Arc<Resolver>,
}

impl std::fmt::Debug for ResultClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultClaim")
            .field("result_type", &self.result_type)
            .finish_non_exhaustive()
    }
}

impl ResultClaim {
    /// Claims `result_type`: a `tools/call` result of that type goes to `resolve`, with the
    /// raw result (its `result_type` and JSON: decode it into the extension's own type).
    ///
    /// # Errors
    /// `result_type` is core vocabulary (`complete`, `input_required`) or empty.
    pub fn new<F, Fut>(result_type: impl Into<String>, resolve: F) -> Result<Self, ClientError>
    where
        F: Fn(ExtensionResult, ClaimContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ClientError>> + Send + 'static,
    {
        let result_type = ResultType::new(result_type.into());
        if result_type.as_str().is_empty() || result_type.is_known() {
            return Err(ClientError::InvalidArgument(format!(
                "resultType {:?} cannot be claimed: it is core protocol vocabulary",
                result_type.as_str()
            )));
        }
        Ok(Self {
            result_type,
            resolve: Arc::new(move |result, context| Box::pin(resolve(result, context))),
        })
    }

    /// The claimed `resultType`.
    pub fn result_type(&self) -> &ResultType {
        &self.result_type
    }
}

/// The handler of a [`NotificationBinding`]: the notification's params (`None` when absent).
type Observer = dyn Fn(Option<Value>) -> BoxFuture<'static, ()> + Send + Sync;

/// Server notifications of one method, delivered to a handler (see the [module docs](self)).
#[derive(Clone)]
pub struct NotificationBinding {
    method: String,
    handler: Arc<Observer>,
}

impl std::fmt::Debug for NotificationBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationBinding")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl NotificationBinding {
    /// How many notifications may wait for one binding's handler; more are dropped.
    pub const QUEUE: usize = 64;

    /// Delivers the notifications named `method` to `handler`.
    pub fn new<F, Fut>(method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self {
            method: method.into(),
            handler: Arc::new(move |params| Box::pin(handler(params))),
        }
    }

    /// The method observed.
    pub fn method(&self) -> &str {
        &self.method
    }
}

/// What the client's extensions amount to, checked: the capabilities to advertise, the result
/// types to accept, the claims and the bindings.
#[derive(Default)]
pub(crate) struct Extensions {
    /// Identifier → settings, for `clientCapabilities.extensions`.
    advertised: Extra,
    claims: HashMap<ResultType, ResultClaim>,
    bindings: Vec<NotificationBinding>,
}

impl Extensions {
    /// Adds an advertised identifier with its settings.
    pub(crate) fn advertise(
        &mut self,
        id: ExtensionId,
        settings: Extra,
    ) -> Result<(), ClientError> {
        if self.advertised.contains_key(id.as_str()) {
            return Err(ClientError::InvalidArgument(format!(
                "extension {id} is given twice"
            )));
        }
        let bytes = serde_json::to_vec(&settings).map_or(usize::MAX, |json| json.len());
        if bytes > MAX_SETTINGS_BYTES {
            return Err(ClientError::InvalidArgument(format!(
                "extension {id}: its settings are {bytes} bytes of JSON, more than the \
                 {MAX_SETTINGS_BYTES} allowed (they are sent on every request)"
            )));
        }
        self.advertised
            .insert(String::from(id), Value::Object(settings));
        Ok(())
    }

    /// Adds an extension: its advertisement, claims and bindings.
    pub(crate) fn add(&mut self, extension: &dyn ClientExtension) -> Result<(), ClientError> {
        let id = extension.id();
        self.advertise(id.clone(), extension.settings())?;
        for claim in extension.claims() {
            if self.claims.contains_key(&claim.result_type) {
                return Err(ClientError::InvalidArgument(format!(
                    "extension {id}: resultType {:?} is claimed twice",
                    claim.result_type.as_str()
                )));
            }
            self.claims.insert(claim.result_type.clone(), claim);
        }
        self.bindings.extend(extension.notifications());
        Ok(())
    }

    /// Refuses a claim of `result_type` (one the client handles itself, e.g. the tasks one).
    pub(crate) fn reserve(&self, result_type: &ResultType) -> Result<(), ClientError> {
        if self.claims.contains_key(result_type) {
            return Err(ClientError::InvalidArgument(format!(
                "resultType {:?} is the client's own (ClientBuilder::tasks) and cannot be claimed",
                result_type.as_str()
            )));
        }
        Ok(())
    }

    /// Advertises the extensions in `capabilities`.
    pub(crate) fn declare(&self, capabilities: &mut ClientCapabilities) {
        for (id, settings) in &self.advertised {
            capabilities
                .extensions
                .get_or_insert_with(Extra::new)
                .insert(id.clone(), settings.clone());
        }
    }

    /// Accepts the claimed result types.
    pub(crate) fn accept(&self, mut result_types: ResultTypes) -> ResultTypes {
        for result_type in self.claims.keys() {
            result_types = result_types.with(result_type.clone());
        }
        result_types
    }

    /// The claims, for the client's `tools/call` (`None` when there are none).
    pub(crate) fn claims(&mut self) -> Option<Arc<Claims>> {
        (!self.claims.is_empty()).then(|| {
            Arc::new(Claims {
                claims: std::mem::take(&mut self.claims),
            })
        })
    }

    /// The bindings' queues and workers (`None` when there are none). Spawns a task per binding
    /// (on the current Tokio runtime), which ends when the client is dropped.
    pub(crate) fn observers(&mut self) -> Option<Arc<Observers>> {
        if self.bindings.is_empty() {
            return None;
        }
        let mut by_method: HashMap<String, Vec<mpsc::Sender<Option<Value>>>> = HashMap::new();
        for binding in std::mem::take(&mut self.bindings) {
            let (sender, mut queue) = mpsc::channel(NotificationBinding::QUEUE);
            let handler = binding.handler;
            tokio::spawn(async move {
                while let Some(params) = queue.recv().await {
                    handler(params).await;
                }
            });
            by_method.entry(binding.method).or_default().push(sender);
        }
        Some(Arc::new(Observers {
            by_method,
            dropped: AtomicU64::new(0),
        }))
    }
}

/// The claims of a client's extensions, by `resultType`.
pub(crate) struct Claims {
    claims: HashMap<ResultType, ResultClaim>,
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.claims.keys()).finish()
    }
}

impl Claims {
    /// Resolves `claimed` with its claim's resolver; a result no claim names stays the error
    /// it was (it cannot be one: only claimed types are accepted).
    pub(crate) async fn resolve(
        &self,
        claimed: ExtensionResult,
        session: &Session,
        tool: String,
    ) -> Result<CallToolResult, ClientError> {
        let Some(claim) = self.claims.get(&claimed.result_type) else {
            return Err(ClientError::ClaimedResult(Box::new(claimed)));
        };
        let context = ClaimContext {
            session: session.clone(),
            tool,
        };
        (claim.resolve)(claimed, context).await
    }
}

/// The queues of the notification bindings, by method.
pub(crate) struct Observers {
    by_method: HashMap<String, Vec<mpsc::Sender<Option<Value>>>>,
    dropped: AtomicU64,
}

impl Observers {
    /// Queues `notification` for the bindings of its method; drops it for a binding whose
    /// queue is full.
    pub(crate) fn observe(&self, notification: &Notification) {
        let Some(queues) = self.by_method.get(&notification.method) else {
            return;
        };
        let params: Option<Value> = notification
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        for queue in queues {
            if queue.try_send(params.clone()).is_err() {
                let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                // Logged at powers of two: a flood is seen without flooding the log.
                if dropped.is_power_of_two() {
                    tracing::warn!(
                        method = %notification.method.chars().take(64).collect::<String>(),
                        dropped,
                        "an extension's notification binding fell behind; notifications dropped"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// The identifiers of `extensions`.
    fn ids(extensions: &Extensions) -> HashSet<String> {
        extensions.advertised.keys().cloned().collect()
    }

    struct Named(&'static str);

    impl ClientExtension for Named {
        fn id(&self) -> ExtensionId {
            self.0.parse().unwrap()
        }
        fn claims(&self) -> Vec<ResultClaim> {
            vec![
                ResultClaim::new("later", |_r, _c| async { Ok(CallToolResult::text("")) }).unwrap(),
            ]
        }
    }

    #[test]
    fn duplicates_and_core_result_types_are_refused() {
        let mut extensions = Extensions::default();
        extensions.add(&Named("com.example/a")).unwrap();
        let twice = extensions.add(&Named("com.example/a")).unwrap_err();
        assert!(twice.to_string().contains("given twice"), "{twice}");
        let claimed_twice = extensions.add(&Named("com.example/b")).unwrap_err();
        assert!(
            claimed_twice.to_string().contains("claimed twice"),
            "{claimed_twice}"
        );
        assert_eq!(ids(&extensions).len(), 2);
        for core in ["complete", "input_required", ""] {
            let refused = ResultClaim::new(core, |_r, _c| async { Ok(CallToolResult::text("")) })
                .unwrap_err();
            assert!(refused.to_string().contains("core protocol"), "{refused}");
        }
        assert!(extensions.reserve(&ResultType::new("later")).is_err());
        assert!(extensions.reserve(&ResultType::TASK).is_ok());
    }

    /// Observes `watched` with a handler that never finishes, and counts what it started.
    struct Stuck(Arc<AtomicU64>);

    impl ClientExtension for Stuck {
        fn id(&self) -> ExtensionId {
            "com.example/stuck".parse().unwrap()
        }
        fn notifications(&self) -> Vec<NotificationBinding> {
            let started = Arc::clone(&self.0);
            vec![NotificationBinding::new("watched", move |_params| {
                started.fetch_add(1, Ordering::Relaxed);
                std::future::pending::<()>()
            })]
        }
    }

    fn notification(method: &str) -> Notification {
        Notification {
            method: method.to_owned(),
            params: Some(serde_json::value::RawValue::from_string(r#"{"n":1}"#.into()).unwrap()),
        }
    }

    /// A binding whose handler is stuck holds at most its queue: the rest is dropped and
    /// counted, and notifications of other methods are not queued at all.
    #[tokio::test]
    async fn a_stuck_binding_holds_at_most_its_queue() {
        let started = Arc::new(AtomicU64::new(0));
        let mut extensions = Extensions::default();
        extensions.add(&Stuck(Arc::clone(&started))).unwrap();
        let observers = extensions.observers().expect("one binding");
        // The worker has not run yet (this runtime has one thread, and nothing here yields):
        // the queue takes QUEUE notifications and refuses the rest.
        for _ in 0..NotificationBinding::QUEUE + 10 {
            observers.observe(&notification("watched"));
            observers.observe(&notification("other"));
        }
        assert_eq!(observers.dropped.load(Ordering::Relaxed), 10);
        tokio::task::yield_now().await;
        assert_eq!(
            started.load(Ordering::Relaxed),
            1,
            "one handler runs at a time"
        );
    }

    #[test]
    fn oversized_settings_are_refused() {
        let mut extensions = Extensions::default();
        let mut settings = Extra::new();
        settings.insert("pad".into(), Value::String("x".repeat(MAX_SETTINGS_BYTES)));
        let id: ExtensionId = "com.example/big".parse().unwrap();
        let error = extensions.advertise(id, settings).unwrap_err();
        assert!(
            error.to_string().contains("sent on every request"),
            "{error}"
        );
    }
}
