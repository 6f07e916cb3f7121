//! [`Client`]: the high-level client. Calls that may ask for input run the whole loop and
//! return the final result.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use modelctx_types::Method as _;
use modelctx_types::methods::{
    CallTool, Complete as CompleteMethod, Discover, GetPrompt, ListPrompts, ListResourceTemplates,
    ListResources, ListTools, Ping, ReadResource, RootsListChanged, SetLevel,
};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, EmptyParams, Era,
    GetPromptRequestParams, GetPromptResult, Implementation, InputRequests, InputRequiredResult,
    InputResponseParams, InputResponses, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, NotificationParams, Prompt,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
    ServerCapabilities, SetLevelRequestParams, Tool,
};
use modelctx_types::{CreateTaskResult, DetailedTask, SubscriptionFilter};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::back_channel::BackChannelGate;
use super::cache::{CacheMode, Fetched, Hints, ResponseCache, Served};
use super::callbacks::Callbacks;
use super::error::ClientError;
use super::extension::Claims;
use super::input_loop::{CallBudget, LoopLimits, answer_all, drive};
use super::listen::Subscription;
use super::session::{MAX_LIST_PAGES, RequestOptions, RoundOutcome, Session, too_many_pages};
use super::tasks::{Follower, TaskSettings, ToolStart};
use super::tasks_2025::Tasks2025Settings;
use super::trace;
use crate::span_fields::target_of;

/// A request that stopped at an `InputRequiredResult`: everything needed to resume it later,
/// possibly in another process (it serializes to JSON).
///
/// `params` is the request as first sent (without answers); `input_required` is the server's
/// last answer. Resume with [`Client::resume_call_tool`] (or the prompt / resource twins).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRequest<P> {
    /// The request params.
    pub params: P,
    /// The server's input-required result.
    pub input_required: InputRequiredResult,
}

/// An MCP client connected to one server. Cheap to clone; clones share the connection and may
/// be used concurrently.
///
/// ```no_run
/// # async fn demo() -> Result<(), modelctx::client::ClientError> {
/// use modelctx::client::Client;
/// use modelctx::types::ElicitResult;
/// use serde_json::json;
///
/// let client = Client::builder()
///     .on_elicitation(|context, params| async move {
///         println!("{:?} asks: {}", context.key(), params.message());
///         let mut content = serde_json::Map::new();
///         content.insert("region".into(), json!("eu-west-1"));
///         Ok(ElicitResult::accept(content))
///     })
///     .connect_http("http://127.0.0.1:8000/mcp")
///     .await?;
/// println!("speaking {:?}", client.protocol_version());
/// let result = client.call_tool("provision", json!({"name": "orders"})).await?;
/// println!("{:?}", result.first_text());
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    session: Session,
    /// The features above the session: they are configured here, not in the core.
    callbacks: Callbacks,
    limits: LoopLimits,
    loop_timeout: Option<Duration>,
    back_channel: Arc<BackChannelGate>,
    tasks: TaskSettings,
    tasks_2025: Tasks2025Settings,
    /// The extensions' result claims on `tools/call` (`None`: no claim).
    claims: Option<Arc<Claims>>,
    /// The response cache (`None`: off).
    cache: Option<Arc<ResponseCache>>,
}

/// What the builder hands a [`Client`] besides its session.
pub(crate) struct ClientParts {
    pub(crate) callbacks: Callbacks,
    pub(crate) limits: LoopLimits,
    pub(crate) loop_timeout: Option<Duration>,
    pub(crate) back_channel: Arc<BackChannelGate>,
    pub(crate) tasks: TaskSettings,
    pub(crate) tasks_2025: Tasks2025Settings,
    pub(crate) claims: Option<Arc<Claims>>,
    pub(crate) cache: Option<Arc<ResponseCache>>,
}

impl Client {
    pub(crate) fn new(session: Session, parts: ClientParts) -> Self {
        let ClientParts {
            callbacks,
            limits,
            loop_timeout,
            back_channel,
            tasks,
            tasks_2025,
            claims,
            cache,
        } = parts;
        Self {
            session,
            callbacks,
            limits,
            loop_timeout,
            back_channel,
            tasks,
            tasks_2025,
            claims,
            cache,
        }
    }

    /// The response cache, unless it is off (see [`cache`](super::cache)): its counters, and
    /// invalidation by hand.
    pub fn cache(&self) -> Option<&ResponseCache> {
        self.cache.as_deref()
    }

    /// The session: one round at a time, for the manual loop and raw requests.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The negotiated protocol version (`2026-07-28`, or the handshake version the server
    /// chose).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.session
            .protocol_version()
            .unwrap_or(ProtocolVersion::LATEST)
    }

    /// The negotiated era.
    pub fn era(&self) -> Era {
        self.session.era().unwrap_or(Era::Modern)
    }

    /// The server's name and version, when it sent them.
    pub fn server_info(&self) -> Option<Implementation> {
        self.session.server_info()
    }

    /// What the server declared.
    pub fn server_capabilities(&self) -> Option<ServerCapabilities> {
        self.session.server_capabilities()
    }

    /// The settings the server advertises for extension `id`
    /// (`capabilities.extensions[id]`), when it advertises it. The server's word: check what
    /// you read.
    pub fn server_extension(&self, id: &str) -> Option<Value> {
        self.session.server_capabilities()?.extensions?.remove(id)
    }

    /// The server's instructions.
    pub fn instructions(&self) -> Option<String> {
        self.session.instructions()
    }

    /// Every tool, across pages (on 2026-07-28 without those whose `x-mcp-header` annotations
    /// are invalid); from the response cache while the server's `ttlMs` allows.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.list_tools_with(RequestOptions::new()).await
    }

    /// [`Client::list_tools`] with options (the cache mode, a timeout).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools_with(&self, options: RequestOptions) -> Result<Vec<Tool>, ClientError> {
        let (session, options) = (&self.session, &options);
        let served = self
            .listing(ListTools::NAME, options, |cursor| {
                session.list_tools_page(cursor, options)
            })
            .await?;
        let mut tools = served.value;
        if served.foreign {
            // Another client's listing (a shared store): what this session derives from a
            // listing (header mirrors, output schemas, task support) is derived now.
            if self.era() == Era::Modern {
                session.inner.tools.absorb(&mut tools, true);
            } else {
                session.inner.tools.absorb_task_support(&tools, true);
            }
        }
        Ok(tools)
    }

    /// Every prompt, across pages; from the response cache while the server's `ttlMs` allows.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_prompts_with(RequestOptions::new()).await
    }

    /// [`Client::list_prompts`] with options.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_prompts_with(
        &self,
        options: RequestOptions,
    ) -> Result<Vec<Prompt>, ClientError> {
        let (session, options) = (&self.session, &options);
        self.listing(ListPrompts::NAME, options, |cursor| {
            session.list_page::<ListPrompts>(cursor, options)
        })
        .await
        .map(|served| served.value)
    }

    /// Every resource, across pages; from the response cache while the server's `ttlMs`
    /// allows.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_resources_with(RequestOptions::new()).await
    }

    /// [`Client::list_resources`] with options.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resources_with(
        &self,
        options: RequestOptions,
    ) -> Result<Vec<Resource>, ClientError> {
        let (session, options) = (&self.session, &options);
        self.listing(ListResources::NAME, options, |cursor| {
            session.list_page::<ListResources>(cursor, options)
        })
        .await
        .map(|served| served.value)
    }

    /// Every resource template, across pages; from the response cache while the server's
    /// `ttlMs` allows.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_resource_templates_with(RequestOptions::new())
            .await
    }

    /// [`Client::list_resource_templates`] with options.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resource_templates_with(
        &self,
        options: RequestOptions,
    ) -> Result<Vec<ResourceTemplate>, ClientError> {
        let (session, options) = (&self.session, &options);
        self.listing(ListResourceTemplates::NAME, options, |cursor| {
            session.list_page::<ListResourceTemplates>(cursor, options)
        })
        .await
        .map(|served| served.value)
    }

    /// A whole listing through the response cache (when it is on).
    async fn listing<R, F, Fut>(
        &self,
        method: &'static str,
        options: &RequestOptions,
        page: F,
    ) -> Result<Served<Vec<R::Item>>, ClientError>
    where
        R: Page,
        R::Item: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<R, ClientError>>,
    {
        match &self.cache {
            None => walk(page).await.map(|fetched| Served {
                value: fetched.value,
                foreign: false,
            }),
            Some(cache) => {
                cache
                    .fetch(
                        (method, ""),
                        self.session.inner.shared.era_and_version(),
                        options.cache_mode(),
                        || walk(page),
                    )
                    .await
            }
        }
    }

    /// Calls a tool and runs the input-required loop to the final result. `arguments` must be
    /// a JSON object, or `null` for none. Once the tool has been seen in
    /// [`Client::list_tools`], a successful result is checked against its `outputSchema`.
    ///
    /// # Errors
    /// See [`ClientError`]; a failing tool is a result with `is_error: Some(true)`, not an
    /// error; a result that breaks the tool's `outputSchema` is
    /// [`ClientError::InvalidStructuredContent`].
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = tool_arguments(arguments)?;
        self.call_tool_with(
            CallToolRequestParams::new(name, arguments),
            RequestOptions::new(),
        )
        .await
    }

    /// [`Client::call_tool`] with full params (answers and state to start from, `_meta`
    /// entries) and options.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        self.run_tool(params, None, options).await
    }

    /// Resumes a tool call that stopped at an `InputRequiredResult` (possibly in another
    /// process): answers its input requests with this client's callbacks, then continues the
    /// loop.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn resume_call_tool(
        &self,
        pending: PendingRequest<CallToolRequestParams>,
    ) -> Result<CallToolResult, ClientError> {
        self.run_tool(
            pending.params,
            Some(pending.input_required),
            RequestOptions::new(),
        )
        .await
    }

    async fn run_tool(
        &self,
        params: CallToolRequestParams,
        first: Option<InputRequiredResult>,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        // One span for the whole call: its rounds, and the task it may become.
        let span = trace::call_span(CallTool::NAME, || Some(params.name.clone()));
        if span.is_disabled() {
            return self.run_tool_call(params, first, options).await;
        }
        // Boxed, so that the traced call's state does not grow the plain call's future.
        let call = self.run_tool_call(params, first, options);
        Box::pin(trace::in_call_span(span, call, |result| {
            result.is_error == Some(true)
        }))
        .await
    }

    /// A tool call: its input-required loop and the task it may become.
    async fn run_tool_call(
        &self,
        params: CallToolRequestParams,
        first: Option<InputRequiredResult>,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        // 2025-11-25: a tool that runs as a task goes as one (client/tasks_2025.rs).
        if first.is_none()
            && self.session.era() == Some(Era::Handshake)
            && self
                .session
                .wants_task_2025(&params.name, options.task_2025)
                .await
        {
            let call = self
                .session
                .call_tool_as_task_2025(params, &self.tasks_2025, &options);
            return Box::pin(self.bounded(call)).await;
        }
        // One budget for the whole call: its input-required rounds and the task it may become.
        let mut budget = CallBudget::default();
        // The tool's name, for a claim's resolver (only when an extension claims anything).
        let claimed_tool = self.claims.as_ref().map(|_| params.name.clone());
        match self
            .run_tool_loop(params, first, &options, &mut budget)
            .await
        {
            // The tasks extension: the server runs the call as a task; follow it to its end
            // (client/tasks.rs).
            Err(ClientError::TaskCreated(task)) => {
                Box::pin(self.follow_task(&task, &options, &mut budget)).await
            }
            // An extension's claimed result: its resolver finishes the call
            // (client/extension.rs).
            Err(ClientError::ClaimedResult(claimed)) => match (&self.claims, claimed_tool) {
                (Some(claims), Some(tool)) => claims.resolve(*claimed, &self.session, tool).await,
                _ => Err(ClientError::ClaimedResult(claimed)),
            },
            other => other,
        }
    }

    /// The input-required loop of `tools/call`; a task handle ends it as
    /// [`ClientError::TaskCreated`].
    pub(crate) async fn run_tool_loop(
        &self,
        params: CallToolRequestParams,
        first: Option<InputRequiredResult>,
        options: &RequestOptions,
        budget: &mut CallBudget,
    ) -> Result<CallToolResult, ClientError> {
        let session = &self.session;
        // A -32020 earns one tools/list refresh per call, not per round.
        let refreshed = AtomicBool::new(false);
        let lp = drive(
            &self.callbacks,
            session.protocol_version(),
            self.limits,
            budget,
            params,
            first,
            |params| {
                let refreshed = &refreshed;
                async move {
                    let mut spent = refreshed.load(Ordering::Relaxed);
                    let outcome = session.call_tool_round(params, options, &mut spent).await;
                    refreshed.store(spent, Ordering::Relaxed);
                    outcome
                }
            },
        );
        let outcome = self.bounded(lp).await;
        if refreshed.load(Ordering::Relaxed)
            && let Some(cache) = &self.cache
        {
            // The server's tools changed under the call (`-32020`): the cached listing is
            // stale, and serving it would undo the refreshed header index.
            cache.invalidate((ListTools::NAME, String::new()));
        }
        outcome
    }

    /// Gets a prompt and runs the input-required loop to the final result.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        self.get_prompt_with(params, RequestOptions::new()).await
    }

    /// [`Client::get_prompt`] with full params and options.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_prompt_with(
        &self,
        params: GetPromptRequestParams,
        options: RequestOptions,
    ) -> Result<GetPromptResult, ClientError> {
        self.run::<GetPrompt>(params, None, options, None).await
    }

    /// Resumes a `prompts/get` that stopped at an `InputRequiredResult`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn resume_get_prompt(
        &self,
        pending: PendingRequest<GetPromptRequestParams>,
    ) -> Result<GetPromptResult, ClientError> {
        self.run::<GetPrompt>(
            pending.params,
            Some(pending.input_required),
            RequestOptions::new(),
            None,
        )
        .await
    }

    /// Reads a resource and runs the input-required loop to the final result; from the
    /// response cache while the server's `ttlMs` allows (a result reached through input
    /// requests is never cached).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn read_resource(
        &self,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams::new(uri);
        self.read_resource_with(params, RequestOptions::new()).await
    }

    /// [`Client::read_resource`] with full params and options.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn read_resource_with(
        &self,
        params: ReadResourceRequestParams,
        options: RequestOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        // A resumed exchange (answers or state given) is never served from, nor stored in, the
        // cache: its result answers those inputs, not the URI alone.
        let seeded = params.input_responses.is_some() || params.request_state.is_some();
        let Some(cache) = self.cache.as_ref().filter(|_| !seeded) else {
            return self.run::<ReadResource>(params, None, options, None).await;
        };
        let mut mode = options.cache_mode();
        if mode == CacheMode::Use && params.meta.is_some() {
            // `_meta` of the caller's own expects a request on the wire.
            mode = CacheMode::Refresh;
        }
        let uri = params.uri.clone();
        let rounds = AtomicU32::new(0);
        let rounds = &rounds;
        let served = cache
            .fetch(
                (ReadResource::NAME, &uri),
                self.session.inner.shared.era_and_version(),
                mode,
                || async move {
                    let value = self
                        .run::<ReadResource>(params, None, options, Some(rounds))
                        .await?;
                    Ok(Fetched {
                        hints: Hints::of(value.ttl_ms, value.cache_scope.as_ref()),
                        value,
                        storable: rounds.load(Ordering::Relaxed) == 1,
                    })
                },
            )
            .await?;
        Ok(served.value)
    }

    /// Resumes a `resources/read` that stopped at an `InputRequiredResult`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn resume_read_resource(
        &self,
        pending: PendingRequest<ReadResourceRequestParams>,
    ) -> Result<ReadResourceResult, ClientError> {
        self.run::<ReadResource>(
            pending.params,
            Some(pending.input_required),
            RequestOptions::new(),
            None,
        )
        .await
    }

    /// The input-required loop of `M` in its call span; `rounds`, when given, counts the
    /// requests sent.
    async fn run<M>(
        &self,
        params: M::Params,
        first: Option<InputRequiredResult>,
        options: RequestOptions,
        rounds: Option<&AtomicU32>,
    ) -> Result<M::Result, ClientError>
    where
        M: modelctx_types::Method,
        M::Params: modelctx_types::RequestParams + InputResponseParams + Clone,
    {
        // One span for the whole call and its rounds; its target probed only when traced.
        let span = trace::call_span(M::NAME, || {
            let params = serde_json::to_string(&params).ok()?;
            target_of(M::NAME, Some(&params)).map(Cow::into_owned)
        });
        if span.is_disabled() {
            return self.run_loop::<M>(params, first, options, rounds).await;
        }
        // Boxed, so that the traced call's state does not grow the plain call's future.
        let call = self.run_loop::<M>(params, first, options, rounds);
        Box::pin(trace::in_call_span(span, call, |_| false)).await
    }

    /// The input-required loop of `M` under the loop's bounds.
    async fn run_loop<M>(
        &self,
        params: M::Params,
        first: Option<InputRequiredResult>,
        options: RequestOptions,
        rounds: Option<&AtomicU32>,
    ) -> Result<M::Result, ClientError>
    where
        M: modelctx_types::Method,
        M::Params: modelctx_types::RequestParams + InputResponseParams + Clone,
    {
        let session = &self.session;
        let mut budget = CallBudget::default();
        let lp = drive(
            &self.callbacks,
            session.protocol_version(),
            self.limits,
            &mut budget,
            params,
            first,
            |params| {
                let options = &options;
                if let Some(rounds) = rounds {
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
                async move { session.request::<M>(params, options).await }
            },
        );
        self.bounded(lp).await
    }

    /// Runs a loop under the loop timeout and, in the handshake era, with a sampling budget
    /// for the back-channel requests that arrive meanwhile (client/back_channel.rs).
    async fn bounded<T>(
        &self,
        lp: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        let shared = &self.session.inner.shared;
        let lp = async {
            if shared.era() != Some(Era::Handshake) {
                return lp.await;
            }
            let guard = BackChannelGate::grant(&self.back_channel);
            tokio::select! {
                biased;
                outcome = lp => outcome,
                () = guard.grant.exceeded() => Err(ClientError::SamplingBudgetExceeded {
                    max: self.limits.max_sampling,
                }),
            }
        };
        match self.loop_timeout {
            None => lp.await,
            Some(after) => {
                tokio::time::timeout(after, lp)
                    .await
                    .map_err(|_| ClientError::Timeout {
                        operation: "input-required loop",
                        after,
                    })?
            }
        }
    }

    /// Answers a round of input requests with this client's callbacks (concurrently, within
    /// the builder's limits), for callers that drive the loop themselves. Each call is one round
    /// with a budget of its own: the caller bounds how many rounds it answers.
    ///
    /// # Errors
    /// A missing or refusing callback; a round that asks too much
    /// ([`ClientError::TooManyInputRequests`], [`ClientError::SamplingBudgetExceeded`]).
    pub async fn answer_input_requests(
        &self,
        requests: InputRequests,
    ) -> Result<InputResponses, ClientError> {
        answer_all(
            &self.callbacks,
            requests,
            self.session.protocol_version(),
            &self.limits,
            &mut CallBudget::default(),
        )
        .await
    }

    /// The limits the builder set (the flows runner checks a saved round against them).
    #[cfg(feature = "flows")]
    pub(crate) fn limits(&self) -> &LoopLimits {
        &self.limits
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ClientError> {
        match self
            .session
            .request::<CompleteMethod>(params, &RequestOptions::new())
            .await?
        {
            RoundOutcome::Complete(result) => Ok(result),
            RoundOutcome::InputRequired(_) => Err(ClientError::Protocol(
                "completion/complete answered input_required".to_owned(),
            )),
        }
    }

    /// Checks that the server answers. In the handshake era a `ping`; 2026-07-28 removed
    /// `ping`, so there it is a `server/discover`, the one request every 2026 server answers
    /// at no cost.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn ping(&self) -> Result<(), ClientError> {
        let options = RequestOptions::new();
        if self.era() == Era::Handshake {
            self.session
                .request::<Ping>(EmptyParams::default(), &options)
                .await?;
        } else {
            self.session
                .request::<Discover>(EmptyParams::default(), &options)
                .await?;
        }
        Ok(())
    }

    /// Sets the lowest level of log messages the server sends (they reach
    /// [`ClientBuilder::on_notification`](super::ClientBuilder::on_notification)). In the
    /// handshake era a `logging/setLevel` request; on 2026-07-28, which has no such request,
    /// the level every later request carries in `_meta` (as
    /// [`ClientBuilder::log_level`](super::ClientBuilder::log_level) sets it from the start).
    ///
    /// # Errors
    /// Handshake era: the server's refusal (e.g. it has no `logging` capability) or a
    /// transport failure.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        self.session.set_log_level(level);
        if self.era() == Era::Handshake {
            self.session
                .request::<SetLevel>(SetLevelRequestParams::new(level), &RequestOptions::new())
                .await?;
        }
        Ok(())
    }

    /// Tells a handshake-era server that the client's roots changed
    /// (`notifications/roots/list_changed`; the client must have declared roots). On
    /// 2026-07-28 it sends nothing: a server there asks for the roots in each request that
    /// needs them, so it always sees the current ones.
    ///
    /// # Errors
    /// Transport failures.
    pub async fn notify_roots_changed(&self) -> Result<(), ClientError> {
        if self.era() == Era::Handshake {
            self.session
                .notify::<RootsListChanged>(Some(&NotificationParams::default()))
                .await?;
        }
        Ok(())
    }

    /// Sends a notification of a method of your own (see [`Session::send_notification`]).
    ///
    /// # Errors
    /// See [`Session::send_notification`].
    pub async fn send_notification(
        &self,
        method: &str,
        params: Option<&Value>,
    ) -> Result<(), ClientError> {
        self.session.send_notification(method, params).await
    }

    /// Closes the connection (see [`Session::close`]).
    ///
    /// # Errors
    /// Transport failures while shutting down.
    pub async fn close(self) -> Result<(), ClientError> {
        self.session.close().await
    }
}

/// The tasks extension (client/tasks.rs).
impl Client {
    /// `tasks/get`: the task as it is now.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_task(&self, task_id: &str) -> Result<DetailedTask, ClientError> {
        self.session().get_task(task_id).await
    }

    /// `tasks/update`: answers (some of) a task's input requests yourself.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: InputResponses,
    ) -> Result<(), ClientError> {
        self.session().update_task(task_id, responses).await
    }

    /// `tasks/cancel`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), ClientError> {
        self.session().cancel_task(task_id).await
    }

    /// Calls a tool (running the input-required loop) but does not wait for a task: returns its
    /// handle, to follow now or later — possibly from another process — with
    /// [`Client::wait_task`].
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn start_tool(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Result<ToolStart, ClientError> {
        let arguments = tool_arguments(arguments)?;
        match self
            .run_tool_loop(
                CallToolRequestParams::new(name, arguments),
                None,
                &RequestOptions::new(),
                &mut CallBudget::default(),
            )
            .await
        {
            Ok(result) => Ok(ToolStart::Complete(result)),
            Err(ClientError::TaskCreated(task)) => Ok(ToolStart::Task(*task)),
            Err(error) => Err(error),
        }
    }

    /// Follows task `task_id` to its end, answering its input requests with this client's
    /// callbacks: its `completed` result, `failed` as [`ClientError::Rpc`] with the task's
    /// error, `cancelled` as [`ClientError::TaskCancelled`].
    ///
    /// # Errors
    /// As above, and see [`ClientError`].
    pub async fn wait_task(
        &self,
        task_id: &str,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        self.follower()
            .follow(task_id, None, options, &mut CallBudget::default())
            .await
    }

    /// Follows a task created by a `tools/call` (the hook of [`Client::call_tool`]); its
    /// creation is the first status reported. The call's budget (rounds, sampling) goes on.
    pub(crate) async fn follow_task(
        &self,
        created: &CreateTaskResult,
        options: &RequestOptions,
        budget: &mut CallBudget,
    ) -> Result<CallToolResult, ClientError> {
        let initial = DetailedTask::from_task(created.task());
        self.follower()
            .follow(&created.task_id, Some(initial), options, budget)
            .await
    }

    /// The tasks layer's view of this client.
    fn follower(&self) -> Follower<'_> {
        Follower {
            session: &self.session,
            callbacks: &self.callbacks,
            limits: &self.limits,
            settings: &self.tasks,
        }
    }
}

/// The 2025-11-25 experimental tasks (client/tasks_2025.rs).
impl Client {
    /// `tasks/cancel` of a 2025-11-25 task: the task as the server left it.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn cancel_task_2025(
        &self,
        task_id: &str,
    ) -> Result<modelctx_types::tasks_2025::Task, ClientError> {
        self.session.cancel_task_2025(task_id).await
    }
}

/// Subscriptions (client/listen.rs).
impl Client {
    /// Subscribes to change notifications: the list changes and resource updates `filter`
    /// opts into, as a [`Subscription`] stream. Several subscriptions may be open at once; each
    /// sees only its own notifications, and those it takes no longer reach
    /// [`ClientBuilder::on_notification`].
    ///
    /// [`ClientBuilder::on_notification`]: super::ClientBuilder::on_notification
    ///
    /// On 2026-07-28 this is `subscriptions/listen`: it returns once the server acknowledged
    /// the stream, and [`Subscription::acknowledged`] is the subset the server honours. In the
    /// handshake era (2025-11-25), where list changes arrive unsolicited, it matches them
    /// against `filter` and `resources/subscribe`s each URI (unsubscribing when the last
    /// subscription that wants it ends).
    ///
    /// ```no_run
    /// use modelctx::client::{Client, ListenEvent};
    /// use modelctx::types::SubscriptionFilter;
    ///
    /// # async fn demo(client: Client) -> Result<(), modelctx::client::ClientError> {
    /// let filter = SubscriptionFilter::new()
    ///     .with_tools_list_changed()
    ///     .with_resource("file:///project/config.json");
    /// let mut subscription = client.listen(filter).await?;
    /// println!("the server honours {:?}", subscription.acknowledged());
    /// while let Some(event) = subscription.next().await {
    ///     match event {
    ///         ListenEvent::ToolsListChanged => println!("tools: {:?}", client.list_tools().await?),
    ///         ListenEvent::ResourceUpdated { uri } => println!("{uri} changed"),
    ///         _ => {}
    ///     }
    /// }
    /// // Dropping `subscription` (or `subscription.close().await`) ends it.
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// On 2026-07-28, the server's refusal of `subscriptions/listen` (`-32601` from a server
    /// without subscriptions) as [`ClientError::Rpc`], a stream that ends before its
    /// acknowledgement, or no acknowledgement within the client's request timeout. In the
    /// handshake era only a failed `resources/subscribe` — and that leaves the URI out of
    /// [`Subscription::acknowledged`] instead of failing.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        self.session().listen(filter).await
    }
}

/// A tool's arguments: an object, or nothing (`null`).
fn tool_arguments(arguments: Value) -> Result<Option<serde_json::Map<String, Value>>, ClientError> {
    match arguments {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(ClientError::InvalidArgument(format!(
            "tool arguments must be an object, not {other}"
        ))),
    }
}

/// One page of a listing: its items, the next cursor, its caching hints.
trait Page {
    type Item;
    fn split(self) -> (Vec<Self::Item>, Option<String>, Hints);
}

macro_rules! page {
    ($result:ty, $item:ty, $items:ident) => {
        impl Page for $result {
            type Item = $item;
            fn split(self) -> (Vec<$item>, Option<String>, Hints) {
                let hints = Hints::of(self.ttl_ms, self.cache_scope.as_ref());
                (self.$items, self.next_cursor, hints)
            }
        }
    };
}

page!(ListToolsResult, Tool, tools);
page!(ListPromptsResult, Prompt, prompts);
page!(ListResourcesResult, Resource, resources);
page!(
    ListResourceTemplatesResult,
    ResourceTemplate,
    resource_templates
);

/// Every page of a listing, with the hints of them all.
async fn walk<R, F, Fut>(page: F) -> Result<Fetched<Vec<R::Item>>, ClientError>
where
    R: Page,
    F: Fn(Option<String>) -> Fut,
    Fut: Future<Output = Result<R, ClientError>>,
{
    let mut all = Vec::new();
    let mut cursor = None;
    let mut hints: Option<Hints> = None;
    for _ in 0..MAX_LIST_PAGES {
        let (items, next, page_hints) = page(cursor).await?.split();
        all.extend(items);
        let merged = match hints.take() {
            Some(so_far) => so_far.and(page_hints),
            None => page_hints,
        };
        match next {
            Some(next) => {
                hints = Some(merged);
                cursor = Some(next);
            }
            None => {
                return Ok(Fetched {
                    value: all,
                    hints: merged,
                    storable: true,
                });
            }
        }
    }
    Err(too_many_pages())
}
