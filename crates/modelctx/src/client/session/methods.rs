//! The session's typed methods, one round each: `server/discover`, the lists (one page each),
//! `tools/call`, `prompts/get`, `resources/read`; and the bound on how many pages a listing
//! follows.

use modelctx_types::methods::{
    CallTool, Discover, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ListTools,
    ReadResource,
};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, DiscoverResult, EmptyParams, Era, ErrorCode,
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, Method, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, ResultDecodeError, ResultType,
};

use super::{RequestOptions, RoundOutcome, Session};
use crate::client::error::ClientError;
use crate::client::transport::TransportKind;

impl Session {
    /// `server/discover` (2026-07-28).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn discover(&self) -> Result<DiscoverResult, ClientError> {
        complete(
            self.request::<Discover>(EmptyParams::default(), &RequestOptions::new())
                .await?,
        )
    }

    /// One page of `tools/list`. On 2026-07-28, tools whose `x-mcp-header` annotations are
    /// invalid are dropped (with a warning), and the annotations of the others are remembered
    /// so that calls mirror them into `Mcp-Param-*` headers.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        self.list_tools_page(cursor, &RequestOptions::new()).await
    }

    /// [`Session::list_tools`] with options.
    pub(crate) async fn list_tools_page(
        &self,
        cursor: Option<String>,
        options: &RequestOptions,
    ) -> Result<ListToolsResult, ClientError> {
        let first_page = cursor.is_none();
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        let mut result = complete(self.request::<ListTools>(params, options).await?)?;
        let complete_listing = first_page && result.next_cursor.is_none();
        if self.era() == Some(Era::Modern) {
            self.inner.tools.absorb(&mut result.tools, complete_listing);
        } else {
            // 2025-11-25: which tools run as tasks (client/tasks_2025.rs).
            self.inner
                .tools
                .absorb_task_support(&result.tools, complete_listing);
        }
        Ok(result)
    }

    /// One page of a listing other than `tools/list`, with options.
    pub(crate) async fn list_page<M>(
        &self,
        cursor: Option<String>,
        options: &RequestOptions,
    ) -> Result<M::Result, ClientError>
    where
        M: Method<Params = PaginatedRequestParams>,
    {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(self.request::<M>(params, options).await?)
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(
            self.request::<ListPrompts>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(
            self.request::<ListResources>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        complete(
            self.request::<ListResourceTemplates>(params, &RequestOptions::new())
                .await?,
        )
    }

    /// One round of `tools/call`. With `allow_input_required` an `InputRequiredResult` is
    /// returned for the caller to answer (persist `params` and the result to resume
    /// elsewhere); without it, it is [`ClientError::InputRequired`].
    ///
    /// On 2026-07-28 the arguments annotated with `x-mcp-header` (for tools seen in
    /// `tools/list`) travel as `Mcp-Param-*` headers too; a `-32020` refreshes `tools/list` and
    /// re-sends once. A successful result of a tool listed with an `outputSchema` is checked
    /// against it ([`ClientError::InvalidStructuredContent`] keeps the result); with
    /// [`ClientBuilder::list_unseen_tools`](crate::client::ClientBuilder::list_unseen_tools) the first
    /// successful result of a tool not listed yet makes the client read `tools/list` first.
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn call_tool(
        &self,
        params: CallToolRequestParams,
        allow_input_required: bool,
    ) -> Result<RoundOutcome<CallToolResult>, ClientError> {
        let outcome = self
            .call_tool_round(params, &RequestOptions::new(), &mut false)
            .await?;
        gate(outcome, allow_input_required)
    }

    /// One round of `tools/call` for the loop; `refreshed` records that the one `tools/list`
    /// refresh a `-32020` earns was spent.
    pub(crate) async fn call_tool_round(
        &self,
        mut params: CallToolRequestParams,
        options: &RequestOptions,
        refreshed: &mut bool,
    ) -> Result<RoundOutcome<CallToolResult>, ClientError> {
        let headers = self.param_headers(&params);
        let outcome = match self
            .request_with_headers::<CallTool>(&mut params, options, headers)
            .await
        {
            Err(ClientError::Rpc(error))
                if error.code == ErrorCode::HEADER_MISMATCH
                    && !*refreshed
                    && self.era() == Some(Era::Modern) =>
            {
                *refreshed = true;
                tracing::info!(tool = %params.name, "header mismatch; refreshing tools/list and re-sending");
                Box::pin(self.refresh_tools()).await?;
                let headers = self.param_headers(&params);
                self.request_with_headers::<CallTool>(&mut params, options, headers)
                    .await
            }
            other => other,
        }?;
        match outcome {
            RoundOutcome::Complete(result) => {
                if self.inner.config.list_unseen_tools
                    && result.is_error != Some(true)
                    && self.inner.tools.first_look(&params.name)
                {
                    // The call itself succeeded: a listing that fails only leaves the result
                    // unchecked.
                    if let Err(error) = Box::pin(self.refresh_tools()).await {
                        tracing::debug!(tool = %params.name, %error, "tools/list for the outputSchema failed; result not checked");
                    }
                }
                match self.inner.tools.check_result(&params.name, &result) {
                    Ok(()) => Ok(RoundOutcome::Complete(result)),
                    Err(reason) => Err(ClientError::InvalidStructuredContent {
                        tool: params.name,
                        reason,
                        result: Box::new(result),
                    }),
                }
            }
            input @ RoundOutcome::InputRequired(_) => Ok(input),
        }
    }

    /// The `Mcp-Param-*` mirrors of a call (HTTP only).
    fn param_headers(&self, params: &CallToolRequestParams) -> Vec<(String, String)> {
        if self.inner.transport.kind() != TransportKind::Http {
            return Vec::new();
        }
        self.inner
            .tools
            .headers_for(&params.name, params.arguments.as_ref())
    }

    /// Re-reads every page of `tools/list` (refreshing the header index).
    pub(crate) async fn refresh_tools(&self) -> Result<Vec<modelctx_types::Tool>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self.list_tools_page(cursor, &RequestOptions::new()).await?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(too_many_pages())
    }

    /// One round of `prompts/get`; see [`Session::call_tool`].
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        allow_input_required: bool,
    ) -> Result<RoundOutcome<GetPromptResult>, ClientError> {
        let outcome = self
            .request::<GetPrompt>(params, &RequestOptions::new())
            .await?;
        gate(outcome, allow_input_required)
    }

    /// One round of `resources/read`; see [`Session::call_tool`]. The session caches nothing
    /// (the response cache is the [`Client`](crate::client::Client)'s).
    ///
    /// # Errors
    /// See [`ClientError`].
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        allow_input_required: bool,
    ) -> Result<RoundOutcome<ReadResourceResult>, ClientError> {
        let outcome = self
            .request::<ReadResource>(params, &RequestOptions::new())
            .await?;
        gate(outcome, allow_input_required)
    }
}

/// Turns an input-required outcome into an error unless the caller handles them.
fn gate<T>(outcome: RoundOutcome<T>, allow: bool) -> Result<RoundOutcome<T>, ClientError> {
    match outcome {
        RoundOutcome::InputRequired(result) if !allow => {
            Err(ClientError::InputRequired(Box::new(result)))
        }
        other => Ok(other),
    }
}

/// The result of a method that cannot ask for input.
fn complete<T>(outcome: RoundOutcome<T>) -> Result<T, ClientError> {
    match outcome {
        RoundOutcome::Complete(result) => Ok(result),
        // decode_result refuses input_required for these methods; this arm stays for safety.
        RoundOutcome::InputRequired(_) => Err(ClientError::InvalidResult(
            ResultDecodeError::UnknownResultType(ResultType::INPUT_REQUIRED.to_string()),
        )),
    }
}

/// The newest 2026-era version this SDK speaks that `supported` lists.
pub(crate) fn mutual_modern(supported: &[ProtocolVersion]) -> Option<ProtocolVersion> {
    ProtocolVersion::MODERN
        .iter()
        .find(|v| supported.contains(v))
        .cloned()
}

/// The most pages a listing follows (the server's in-process calls follow the same bound).
pub use crate::paging::MAX_LIST_PAGES;

/// The error of a listing longer than [`MAX_LIST_PAGES`].
pub(crate) fn too_many_pages() -> ClientError {
    ClientError::Protocol(format!(
        "the server's listing goes on past {MAX_LIST_PAGES} pages"
    ))
}
