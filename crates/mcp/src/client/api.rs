//! [`Client`]: the high-level client. Calls that may ask for input run the whole loop and
//! return the final result.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_types::methods::{Complete as CompleteMethod, GetPrompt, ReadResource};
use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, Era,
    GetPromptRequestParams, GetPromptResult, Implementation, InputRequests, InputRequiredResult,
    InputResponseParams, InputResponses, Prompt, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, ServerCapabilities, Tool,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::back_channel::BackChannelGate;
use super::builder::ClientBuilder;
use super::error::ClientError;
use super::input_loop::{CallBudget, LoopLimits, answer_all, drive};
use super::session::{RequestOptions, RoundOutcome, Session};

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
/// # async fn demo() -> Result<(), mcp::client::ClientError> {
/// use mcp::client::Client;
/// use mcp::types::ElicitResult;
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
    limits: LoopLimits,
    loop_timeout: Option<Duration>,
}

impl Client {
    pub(crate) fn new(
        session: Session,
        limits: LoopLimits,
        loop_timeout: Option<Duration>,
    ) -> Self {
        Self {
            session,
            limits,
            loop_timeout,
        }
    }

    /// A builder with the defaults.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// Connects with the defaults over newline-delimited JSON on `reader` / `writer`.
    ///
    /// # Errors
    /// The negotiation failed.
    pub async fn connect_io<R, W>(reader: R, writer: W) -> Result<Self, ClientError>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        ClientBuilder::new().connect_io(reader, writer).await
    }

    /// Spawns `command` as the server, with the defaults.
    ///
    /// # Errors
    /// The spawn or the negotiation failed.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(command: tokio::process::Command) -> Result<Self, ClientError> {
        ClientBuilder::new().connect_stdio(command).await
    }

    /// Connects to a streamable HTTP endpoint, with the defaults.
    ///
    /// # Errors
    /// An invalid URL, or the negotiation failed.
    #[cfg(feature = "http-client")]
    pub async fn connect_http(url: &str) -> Result<Self, ClientError> {
        ClientBuilder::new().connect_http(url).await
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

    /// The server's instructions.
    pub fn instructions(&self) -> Option<String> {
        self.session.instructions()
    }

    /// Every tool, across pages (on 2026-07-28 without those whose `x-mcp-header` annotations
    /// are invalid).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.session.refresh_tools().await
    }

    /// Every prompt, across pages.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.session.list_prompts(cursor).await?;
            all.extend(page.prompts);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Every resource, across pages.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.session.list_resources(cursor).await?;
            all.extend(page.resources);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Every resource template, across pages.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.session.list_resource_templates(cursor).await?;
            all.extend(page.resource_templates);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
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
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ClientError::InvalidArgument(format!(
                    "tool arguments must be an object, not {other}"
                )));
            }
        };
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
        // One budget for the whole call: its input-required rounds and the task it may become.
        let mut budget = CallBudget::default();
        match self
            .run_tool_loop(params, first, &options, &mut budget)
            .await
        {
            // The tasks extension: the server runs the call as a task; follow it to its end
            // (client/tasks.rs).
            Err(ClientError::TaskCreated(task)) => {
                Box::pin(self.follow_task(&task, &options, &mut budget)).await
            }
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
            &session.inner.shared.callbacks,
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
        self.bounded(lp).await
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
        self.run::<GetPrompt>(params, None, options).await
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
        )
        .await
    }

    /// Reads a resource and runs the input-required loop to the final result. Nothing is
    /// cached.
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
        self.run::<ReadResource>(params, None, options).await
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
        )
        .await
    }

    async fn run<M>(
        &self,
        params: M::Params,
        first: Option<InputRequiredResult>,
        options: RequestOptions,
    ) -> Result<M::Result, ClientError>
    where
        M: mcp_types::Method,
        M::Params: mcp_types::RequestParams + InputResponseParams + Clone,
    {
        let session = &self.session;
        let mut budget = CallBudget::default();
        let lp = drive(
            &session.inner.shared.callbacks,
            session.protocol_version(),
            self.limits,
            &mut budget,
            params,
            first,
            |params| {
                let options = &options;
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
            let guard = BackChannelGate::grant(shared);
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
            &self.session.inner.shared.callbacks,
            requests,
            self.session.protocol_version(),
            &self.limits,
            &mut CallBudget::default(),
        )
        .await
    }

    /// The limits the builder set (the flows runner checks a saved round against them).
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

    /// Closes the connection (see [`Session::close`]).
    ///
    /// # Errors
    /// Transport failures while shutting down.
    pub async fn close(self) -> Result<(), ClientError> {
        self.session.close().await
    }
}
