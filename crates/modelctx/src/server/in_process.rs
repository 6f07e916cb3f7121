//! Calls into a server from the same process, with no transport: for tests, for a server
//! that composes others, and for a handler that reads its own server's resources
//! (`Context::read_resource`).
//!
//! A call goes the whole way a transport's would — the 2026-07-28 envelope, the middleware
//! chain, params validation, sealed request state, the output-schema check — and only the
//! bytes' journey is skipped. Calling the handler directly would be cheaper and wrong: a test
//! would pass that a real client fails (an argument the schema refuses, a state that does not
//! unseal), and a composed server would skip its parts' middleware. The price is one encode
//! of the params and one decode of the result per call.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use modelctx::server::Server;
//! use modelctx::types::{CallToolRequestParams, CallToolResult, Tool};
//! use serde_json::json;
//!
//! let server = Server::builder("calc", "1.0.0")
//!     .tool(Tool::new("zero", Tool::empty_input_schema()), |_ctx, _p: CallToolRequestParams| async {
//!         CallToolResult::text("0")
//!     })
//!     .build()?;
//! let calls = server.in_process();
//! let tools = calls.list_tools().await?;
//! assert_eq!(tools[0].name, "zero");
//! let result = calls.call_tool("zero", json!({})).await?.complete().expect("no input needed");
//! assert_eq!(result.content, CallToolResult::text("0").content);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::sync::atomic::{AtomicI64, Ordering};

use modelctx_seal::Principal;
use modelctx_types::jsonrpc::{Message, ResponsePayload};
use modelctx_types::methods::{
    CallTool, GetPrompt, ListPrompts, ListResourceTemplates, ListResources, ListTools, ReadResource,
};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ErrorObject, Extra,
    GetPromptRequestParams, GetPromptResult, Implementation, Method, Outcome,
    PaginatedRequestParams, Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult,
    RequestId, RequestMeta, RequestParams, Resource, ResourceTemplate, ResultTypes, Tool,
    decode_result,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::context::RequestContext;
use super::message::{Incoming, Reply};
use super::pipeline;

/// The most pages a `list_*` follows (the client's bound too): a server whose cursors never
/// end (a bug, or a composed server that is hostile) costs a bounded number of requests.
pub use crate::paging::MAX_LIST_PAGES;

/// A client of a [`Server`] in the same process (see the [module docs](self)); made by
/// [`Server::in_process`]. Calls are 2026-07-28 requests; a call that needs input returns its
/// [`Outcome::InputRequired`], to answer and retry as a remote client would.
#[derive(Debug, Clone)]
pub struct InProcess {
    server: Server,
    capabilities: ClientCapabilities,
    client_info: Option<Implementation>,
    principal: Option<Principal>,
}

/// How deep in-process calls may nest (a handler calling its server calling a handler …):
/// a resource that reads itself, or two composed servers that call each other, end with an
/// error instead of growing without bound.
pub const MAX_NESTING: usize = 16;

/// Request ids of in-process calls: unique within the process, so that logs tell them apart.
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

tokio::task_local! {
    /// The in-process calls the current task is inside of (a nested call runs in its caller's
    /// task: the pipeline is awaited in place).
    static NESTING: usize;
}

impl Server {
    /// A client of this server in the same process: no transport, the same checks (see
    /// [`InProcess`]). It declares no client capabilities until told
    /// ([`InProcess::client_capabilities`]).
    pub fn in_process(&self) -> InProcess {
        InProcess {
            server: self.clone(),
            capabilities: ClientCapabilities::default(),
            client_info: None,
            principal: None,
        }
    }
}

impl InProcess {
    /// The capabilities the calls declare (what a tool may ask of them: elicitation, sampling,
    /// roots).
    #[must_use]
    pub fn client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The `clientInfo` the calls carry.
    #[must_use]
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// The principal the calls are made as (what sealed state binds to, what
    /// `RequestContext::principal` returns), as an authenticating transport would set it.
    #[must_use]
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// Any request of the specification, typed by its [`Method`].
    ///
    /// # Errors
    /// The server's error answer, as a remote client would get it.
    pub async fn request<M>(&self, mut params: M::Params) -> Result<Outcome<M::Result>, ErrorObject>
    where
        M: Method,
        M::Params: RequestParams,
    {
        self.server
            .start()
            .await
            .map_err(|error| ErrorObject::internal(error.to_string()))?;
        let meta = params.meta_mut().get_or_insert_with(Box::default);
        let envelope = RequestMeta::modern(
            ProtocolVersion::LATEST,
            self.capabilities.clone(),
            self.client_info.clone(),
        );
        meta.protocol_version = envelope.protocol_version;
        meta.client_capabilities = envelope.client_capabilities;
        meta.client_info = envelope.client_info;
        let id = RequestId::Number(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let params = serde_json::to_string(&params)
            .map_err(|error| ErrorObject::internal(format!("{}: {error}", M::NAME)))?;
        let incoming = Incoming {
            id,
            method: M::NAME,
            params: Some(&params),
            typed: None,
            headers: None,
            principal: self.principal.clone(),
            principal_bound: false,
            handshake: None,
            closing: None,
            #[cfg(feature = "http-server")]
            http: None,
            span: tracing::Span::none(),
        };
        let depth = NESTING.try_with(|depth| *depth).unwrap_or(0);
        if depth >= MAX_NESTING {
            return Err(ErrorObject::internal(format!(
                "{}: in-process calls nested more than {MAX_NESTING} deep",
                M::NAME
            )));
        }
        let reply = NESTING
            .scope(
                depth + 1,
                pipeline::dispatch_in_task(&self.server, incoming, None, CancellationToken::new()),
            )
            .await;
        let Reply::Message { body, .. } = reply else {
            return Err(ErrorObject::internal(format!("{}: no answer", M::NAME)));
        };
        let payload = match Message::decode_slice(&body) {
            Ok(Message::Response(response)) => response.payload,
            _ => {
                return Err(ErrorObject::internal(format!(
                    "{}: the answer is not a response",
                    M::NAME
                )));
            }
        };
        match payload {
            ResponsePayload::Error(error) => Err(error),
            ResponsePayload::Result(raw) => decode_result::<M>(&raw, &ResultTypes::core())
                .map_err(|error| ErrorObject::internal(error.to_string())),
        }
    }

    /// `tools/call`.
    ///
    /// # Errors
    /// The server's error answer (an unknown tool, arguments the schema refuses, …).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let params = CallToolRequestParams::new(name, Some(object(arguments)?));
        self.request::<CallTool>(params).await
    }

    /// `prompts/get`.
    ///
    /// # Errors
    /// The server's error answer.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        self.request::<GetPrompt>(params).await
    }

    /// `resources/read`.
    ///
    /// # Errors
    /// The server's error answer (`-32602` for an unknown resource, …).
    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        self.request::<ReadResource>(ReadResourceRequestParams::new(uri))
            .await
    }

    /// `tools/list`, every page.
    ///
    /// # Errors
    /// The server's error answer, or more than [`MAX_LIST_PAGES`] pages.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ErrorObject> {
        self.all_pages::<ListTools, _>(|page| (page.tools, page.next_cursor))
            .await
    }

    /// `prompts/list`, every page.
    ///
    /// # Errors
    /// See [`list_tools`](Self::list_tools).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ErrorObject> {
        self.all_pages::<ListPrompts, _>(|page| (page.prompts, page.next_cursor))
            .await
    }

    /// `resources/list`, every page.
    ///
    /// # Errors
    /// See [`list_tools`](Self::list_tools).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ErrorObject> {
        self.all_pages::<ListResources, _>(|page| (page.resources, page.next_cursor))
            .await
    }

    /// `resources/templates/list`, every page.
    ///
    /// # Errors
    /// See [`list_tools`](Self::list_tools).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ErrorObject> {
        self.all_pages::<ListResourceTemplates, _>(|page| {
            (page.resource_templates, page.next_cursor)
        })
        .await
    }

    /// Follows a list's cursors, at most [`MAX_LIST_PAGES`] pages.
    async fn all_pages<M, T>(
        &self,
        split: impl Fn(M::Result) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, ErrorObject>
    where
        M: Method<Params = PaginatedRequestParams>,
    {
        let mut items = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut params = PaginatedRequestParams::default();
            params.cursor = cursor;
            let Outcome::Complete(page) = self.request::<M>(params).await? else {
                return Err(ErrorObject::internal(format!(
                    "{}: the server answered with a result that is not a page",
                    M::NAME
                )));
            };
            let (page_items, next) = split(page);
            items.extend(page_items);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        Err(ErrorObject::internal(format!(
            "{}: more than {MAX_LIST_PAGES} pages",
            M::NAME
        )))
    }
}

/// Tool arguments must be an object (`null` reads as none).
fn object(arguments: Value) -> Result<Extra, ErrorObject> {
    match arguments {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Extra::new()),
        _ => Err(ErrorObject::invalid_params(
            "tool arguments must be a JSON object",
        )),
    }
}

impl RequestContext {
    /// Reads a resource of the server serving this request, as this request's client would
    /// (its principal, its capabilities), in the same process (see [`InProcess`]).
    ///
    /// # Errors
    /// The server's error answer (`-32602` for an unknown resource); `-32603` when the
    /// resource asks for input, which only the client can give, or when reads nest more than
    /// [`MAX_NESTING`] deep.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ErrorObject> {
        let mut calls = self
            .server()
            .in_process()
            .client_capabilities(self.client_capabilities().clone());
        if let Some(info) = self.client_info() {
            calls = calls.client_info(info.clone());
        }
        if let Some(principal) = self.principal() {
            calls = calls.principal(principal.clone());
        }
        match calls.read_resource(uri).await? {
            Outcome::Complete(result) => Ok(result),
            _ => Err(ErrorObject::internal(format!(
                "{uri}: the resource asks for input, which a handler cannot give for its client"
            ))),
        }
    }
}
