//! The MCP server: a registry of tools, prompts and resources answered statelessly on
//! 2026-07-28, over stdio, streamable HTTP or an in-memory pipe.
//!
//! This is the low-level tier: you describe each tool (its JSON Schema) and write a handler that
//! receives the raw `tools/call` params. The SDK does everything around it: the per-request
//! validation ladder (`_meta`, headers, version, capabilities), `server/discover`,
//! `resultType` and the server stamp on every result, caching hints, progress and logging,
//! cancellation, `subscriptions/listen`, and — once enabled with one line — sealing of
//! `requestState`.
//!
//! The same handlers serve 2025-11-25 clients (the `initialize` handshake). A handler that asks
//! by returning an `InputRequiredResult` is bridged for them: the SDK sends its questions as
//! server→client requests (`elicitation/create`, `sampling/createMessage`, `roots/list`, only
//! those the session declared), then calls the handler again with the answers as
//! `inputResponses` and its state — sealed and opened as on 2026-07-28 — until it returns a
//! result (at most 16 rounds). Handlers may also ask mid-call there with
//! [`RequestContext::elicit`] and its siblings.
//!
//! ```no_run
//! use modelctx::server::Server;
//! use modelctx::types::{CallToolResult, Tool};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let echo = Tool::new("echo", json!({"type": "object",
//!     "properties": {"text": {"type": "string"}}, "required": ["text"]})
//!     .as_object().unwrap().clone());
//! let server = Server::builder("echo-server", "1.0.0")
//!     .tool(echo, |_ctx, params: modelctx::types::CallToolRequestParams| async move {
//!         let text = params.arguments.as_ref().and_then(|a| a.get("text"))
//!             .and_then(|t| t.as_str()).unwrap_or_default().to_owned();
//!         CallToolResult::text(text)
//!     })
//!     .build()?;
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

#[cfg(feature = "auth")]
pub mod auth;
mod bridge;
pub mod bus;
// What a server announces: below the bus, the listen streams and the handshake era.
mod change;
mod context;
mod deadline;
mod dispatch;
mod handler;
mod handshake;
mod headers;
#[cfg(feature = "http-server")]
pub mod http;
mod in_flight;
mod ladder;
// The `-32603` of the task and subscription limits.
mod limit_error;
mod listen;
// The plain messages of the core: a request as handed over, its reply, the errors.
mod message;
// The high-level server; its items are re-exported below, the macro support only through
// `crate::__private`.
#[cfg(feature = "macros")]
pub(crate) mod mcp_server;
pub mod middleware;
mod mrtr;
mod mrtr_methods;
// The channel a request's notifications travel on.
mod notifier;
// Where a request comes from: the peer's address in an HTTP request head.
#[cfg(feature = "http-server")]
mod origin;
#[cfg(feature = "http-server")]
mod peer_rate;
mod pipeline;
mod registry;
// Stopping cleanly: the signal helper and the grace period of the transports.
mod shutdown;
pub mod single_use;
mod stdio;
// The era of a stream connection, fixed by its first request.
mod stdio_era;
// What listen streams and handshake-era subscriptions hold together, and per client.
mod subscription_budget;
// What listen streams and handshake-era subscriptions may hold.
mod subscription_limits;
// The `tracing` span of each request (OpenTelemetry's MCP conventions).
mod trace;
mod typed_params;
// The tasks extension (`io.modelcontextprotocol/tasks`).
#[cfg(test)]
mod layers;
#[cfg(feature = "tasks")]
pub mod tasks;
pub(crate) mod uri_template;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use modelctx_seal::RequestStateSecurity;
use modelctx_types::{
    CacheScope, Implementation, Prompt, PromptsCapability, ProtocolVersion, Resource,
    ResourceTemplate, ResourcesCapability, ServerCapabilities, Tool, ToolsCapability,
};
use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use crate::http::headers::InvalidParamHeaders;
pub use change::Change;
pub use context::RequestContext;
pub use handler::{
    BoxFuture, CompletionHandler, IntoOutcome, IntoResult, MethodHandler, PromptHandler,
    ResourceHandler, ResourceTemplateHandler, ToolHandler,
};
pub use middleware::{Middleware, Next};
pub use registry::RegistrationError;
pub use shutdown::{DEFAULT_SHUTDOWN_GRACE, shutdown_signal};
pub use stdio::StdioConfig;
pub use subscription_limits::SubscriptionLimits;
pub use uri_template::{InvalidTemplate, UriVariables};

#[cfg(feature = "macros")]
pub use mcp_server::{
    ArgumentUse, Ask, BackChannel, BuildError, Context, Elicit, ElicitUrl, Elicitation,
    ElicitationForm, FromElicitation, HandlerFuture, Interrupt, IntoPromptResult,
    IntoResourceResult, IntoToolResult, Json, ListRoots, McpServer, McpServerBuilder,
    PromptDefinition, Question, Ready, Resolution, Resolver, ResolverInfo, ResolverOutput,
    ResourceDefinition, Sample, ToolDefinition, input_schema, output_schema,
};

use registry::Registry;

use crate::sync::{read, write};

/// Caching hints (`ttlMs`, `cacheScope`) for one kind of result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachePolicy {
    /// How long the result may be reused, in milliseconds (0: revalidate every time).
    pub ttl_ms: u64,
    /// Who may cache it.
    pub scope: CacheScope,
}

impl CachePolicy {
    /// A policy.
    pub fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        Self { ttl_ms, scope }
    }
}

impl Default for CachePolicy {
    /// `ttlMs: 0`, `cacheScope: "private"`: always correct, whatever the server does per user;
    /// raise it when your lists are static and the same for everyone.
    fn default() -> Self {
        Self {
            ttl_ms: 0,
            scope: CacheScope::PRIVATE,
        }
    }
}

/// Caching hints per kind of cacheable result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caching {
    /// `server/discover`.
    pub discover: CachePolicy,
    /// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`.
    pub lists: CachePolicy,
    /// `resources/read`, unless the handler set its own.
    pub reads: CachePolicy,
}

/// An MCP server. Cheap to clone: clones share the registry, so adding a tool through any
/// clone is seen by all (and announced to `subscriptions/listen` streams).
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.name)
            .finish_non_exhaustive()
    }
}

struct Inner {
    info: Implementation,
    info_raw: Arc<RawValue>,
    instructions: Option<String>,
    registry: RwLock<Arc<Registry>>,
    completion: Option<Arc<dyn CompletionHandler>>,
    methods: HashMap<String, Arc<dyn MethodHandler>>,
    caching: Caching,
    sealing: Option<RequestStateSecurity>,
    /// Single-use rounds (`ServerBuilder::single_use`).
    single_use: Option<single_use::ReplayProtection>,
    declare: Declared,
    logging: bool,
    page_size: Option<usize>,
    supported_versions: Vec<ProtocolVersion>,
    changes: broadcast::Sender<Change>,
    /// The change bus to other instances (`ServerBuilder::bus`); `None`: this process only.
    bus: Option<Arc<bus::Bus>>,
    shutdown: CancellationToken,
    /// What listen streams and handshake-era subscriptions hold (`ServerBuilder::subscription_limits`).
    subscriptions: Arc<subscription_budget::SubscriptionBudget>,
    principal: Option<PrincipalHook>,
    /// The middleware chain, outermost first (`ServerBuilder::middleware`).
    middleware: Vec<Arc<dyn Middleware>>,
    /// The tasks extension's runtime (`ServerBuilder::tasks`).
    #[cfg(feature = "tasks")]
    tasks: Option<tasks::Tasks>,
}

/// Finds the principal a request is made by, on any transport (see
/// [`ServerBuilder::bind_principal`]).
pub type PrincipalHook =
    Arc<dyn Fn(&RequestContext) -> Option<modelctx_seal::Principal> + Send + Sync>;

/// Capabilities declared even when nothing of that kind is registered yet.
#[derive(Debug, Clone, Copy, Default)]
struct Declared {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Server {
    /// Starts building a server with the name and version it reports as `serverInfo`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(Implementation::new(name, version))
    }

    /// The server's name and version.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The protocol revisions this server speaks on the stateless path.
    pub fn supported_versions(&self) -> &[ProtocolVersion] {
        &self.inner.supported_versions
    }

    /// The request-state policy, when sealing is on.
    pub fn request_state_security(&self) -> Option<&RequestStateSecurity> {
        self.inner.sealing.as_ref()
    }

    /// The principal the HTTP layer authenticated (the auth layer's, or what other middleware
    /// put in the request extensions); [`ServerBuilder::bind_principal`] may replace it.
    #[cfg(feature = "http-server")]
    pub(crate) fn principal_of(
        &self,
        parts: &::http::request::Parts,
    ) -> Option<modelctx_seal::Principal> {
        parts.extensions.get::<modelctx_seal::Principal>().cloned()
    }

    /// The principal of a request whose context was just made: the hook's answer, or the
    /// transport's when there is no hook.
    pub(crate) fn bind_principal(&self, ctx: &mut RequestContext) {
        if let Some(hook) = &self.inner.principal {
            let principal = hook(ctx);
            ctx.set_principal(principal);
        }
    }

    fn registry(&self) -> Arc<Registry> {
        Arc::clone(&read(&self.inner.registry))
    }

    fn update(
        &self,
        change: Change,
        edit: impl FnOnce(&mut Registry) -> Result<bool, RegistrationError>,
    ) -> Result<bool, RegistrationError> {
        let changed = {
            let mut guard = write(&self.inner.registry);
            let mut next = Registry::clone(&guard);
            let changed = edit(&mut next)?;
            if changed {
                *guard = Arc::new(next);
            }
            changed
        };
        if changed {
            self.notify(change);
        }
        Ok(changed)
    }

    /// The capabilities, derived from what is registered (and what was declared up front).
    pub fn capabilities(&self) -> ServerCapabilities {
        let registry = self.registry();
        let declared = self.inner.declare;
        let mut capabilities = ServerCapabilities::default();
        if declared.tools || !registry.tools.is_empty() {
            capabilities.tools = Some(ToolsCapability::new().with_list_changed(true));
        }
        if declared.prompts || !registry.prompts.is_empty() {
            capabilities.prompts = Some(PromptsCapability::new().with_list_changed(true));
        }
        if declared.resources || !registry.resources.is_empty() || !registry.templates.is_empty() {
            capabilities.resources = Some(
                ResourcesCapability::new()
                    .with_subscribe(true)
                    .with_list_changed(true),
            );
        }
        if self.inner.completion.is_some() {
            capabilities.completions = Some(modelctx_types::Extra::new());
        }
        if self.inner.logging {
            capabilities.logging = Some(modelctx_types::Extra::new());
        }
        // The tasks extension: `extensions["io.modelcontextprotocol/tasks"] = {}`.
        #[cfg(feature = "tasks")]
        if self.inner.tasks.is_some() {
            capabilities
                .extensions
                .get_or_insert_with(modelctx_types::Extra::new)
                .insert(
                    modelctx_types::TASKS_EXTENSION.to_owned(),
                    serde_json::Value::Object(modelctx_types::Extra::new()),
                );
        }
        capabilities
    }

    /// Adds a tool at run time and announces `notifications/tools/list_changed`.
    ///
    /// # Errors
    /// As [`ServerBuilder::tool`] would at build time.
    pub fn add_tool(&self, tool: Tool, handler: impl ToolHandler) -> Result<(), RegistrationError> {
        let handler: Arc<dyn ToolHandler> = Arc::new(handler);
        self.update(Change::ToolsListChanged, |r| {
            r.add_tool(tool, handler).map(|()| true)
        })
        .map(|_| ())
    }

    /// Removes a tool; announces the change when there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.update(Change::ToolsListChanged, |r| Ok(r.remove_tool(name)))
            .unwrap_or(false)
    }

    /// Adds a prompt at run time and announces `notifications/prompts/list_changed`.
    ///
    /// # Errors
    /// A duplicate name.
    pub fn add_prompt(
        &self,
        prompt: Prompt,
        handler: impl PromptHandler,
    ) -> Result<(), RegistrationError> {
        let handler: Arc<dyn PromptHandler> = Arc::new(handler);
        self.update(Change::PromptsListChanged, |r| {
            r.add_prompt(prompt, handler).map(|()| true)
        })
        .map(|_| ())
    }

    /// Removes a prompt; announces the change when there was one.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.update(Change::PromptsListChanged, |r| Ok(r.remove_prompt(name)))
            .unwrap_or(false)
    }

    /// Adds a static resource at run time and announces `notifications/resources/list_changed`.
    ///
    /// # Errors
    /// A duplicate URI.
    pub fn add_resource(
        &self,
        resource: Resource,
        handler: impl ResourceHandler,
    ) -> Result<(), RegistrationError> {
        let handler: Arc<dyn ResourceHandler> = Arc::new(handler);
        self.update(Change::ResourcesListChanged, |r| {
            r.add_resource(resource, handler).map(|()| true)
        })
        .map(|_| ())
    }

    /// Removes a static resource; announces the change when there was one.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.update(Change::ResourcesListChanged, |r| Ok(r.remove_resource(uri)))
            .unwrap_or(false)
    }

    /// Adds a resource template at run time and announces the change.
    ///
    /// # Errors
    /// A duplicate or unparsable template.
    pub fn add_resource_template(
        &self,
        template: ResourceTemplate,
        handler: impl ResourceTemplateHandler,
    ) -> Result<(), RegistrationError> {
        let handler: Arc<dyn ResourceTemplateHandler> = Arc::new(handler);
        self.update(Change::ResourcesListChanged, |r| {
            r.add_template(template, handler).map(|()| true)
        })
        .map(|_| ())
    }

    /// Removes a resource template; announces the change when there was one.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.update(Change::ResourcesListChanged, |r| {
            Ok(r.remove_template(uri_template))
        })
        .unwrap_or(false)
    }

    /// Announces a change to every `subscriptions/listen` stream that asked for it
    /// (`notifications/resources/updated` for [`Change::ResourceUpdated`]).
    ///
    /// With a [change bus](ServerBuilder::bus), the change also reaches the listen streams of
    /// every other instance.
    pub fn notify(&self, change: Change) {
        if let Some(bus) = &self.inner.bus {
            bus.publish(&bus::Event::Change(change.clone()));
        }
        // No receivers simply means no one is listening.
        let _ = self.inner.changes.send(change);
    }

    /// Ends every `subscriptions/listen` stream gracefully (with its closing result), on every
    /// connection, and the `GET` streams of 2025-11-25 HTTP sessions. Requests in flight are not
    /// affected. For good: listen streams opened afterwards end at once.
    /// [`Server::serve_http_on`] calls it when its shutdown future completes. A stream
    /// connection's shutdown ([`Server::serve_io_until`]) or end of input ends that
    /// connection's streams only, so that one connection closing leaves the others listening.
    pub fn shutdown_subscriptions(&self) {
        self.inner.shutdown.cancel();
    }
}

/// Configures and builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    errors: Vec<RegistrationError>,
    completion: Option<Arc<dyn CompletionHandler>>,
    methods: HashMap<String, Arc<dyn MethodHandler>>,
    caching: Caching,
    sealing: Option<RequestStateSecurity>,
    single_use: Option<single_use::ReplayProtection>,
    declare: Declared,
    logging: bool,
    page_size: Option<usize>,
    principal: Option<PrincipalHook>,
    middleware: Vec<Arc<dyn Middleware>>,
    bus: Option<Arc<dyn bus::ChangeBus>>,
    subscription_limits: SubscriptionLimits,
    #[cfg(feature = "tasks")]
    tasks: Option<tasks::Tasks>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    fn new(info: Implementation) -> Self {
        Self {
            info,
            instructions: None,
            registry: Registry::default(),
            errors: Vec::new(),
            completion: None,
            methods: HashMap::new(),
            caching: Caching::default(),
            sealing: None,
            single_use: None,
            declare: Declared::default(),
            logging: true,
            page_size: None,
            principal: None,
            middleware: Vec::new(),
            bus: None,
            subscription_limits: SubscriptionLimits::default(),
            #[cfg(feature = "tasks")]
            tasks: None,
        }
    }

    /// A human-readable title for `serverInfo`.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Instructions for the model, sent in `server/discover`.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Registers a tool (listed in registration order).
    #[must_use]
    pub fn tool(mut self, tool: Tool, handler: impl ToolHandler) -> Self {
        if let Err(e) = self.registry.add_tool(tool, Arc::new(handler)) {
            self.errors.push(e);
        }
        self
    }

    /// Registers a prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: Prompt, handler: impl PromptHandler) -> Self {
        if let Err(e) = self.registry.add_prompt(prompt, Arc::new(handler)) {
            self.errors.push(e);
        }
        self
    }

    /// Registers a static resource (it cannot ask for input).
    #[must_use]
    pub fn resource(mut self, resource: Resource, handler: impl ResourceHandler) -> Self {
        if let Err(e) = self.registry.add_resource(resource, Arc::new(handler)) {
            self.errors.push(e);
        }
        self
    }

    /// Registers a resource template (RFC 6570); its handler may ask for input.
    #[must_use]
    pub fn resource_template(
        mut self,
        template: ResourceTemplate,
        handler: impl ResourceTemplateHandler,
    ) -> Self {
        if let Err(e) = self.registry.add_template(template, Arc::new(handler)) {
            self.errors.push(e);
        }
        self
    }

    /// Handles `completion/complete` (declares the `completions` capability).
    #[must_use]
    pub fn completion(mut self, handler: impl CompletionHandler) -> Self {
        self.completion = Some(Arc::new(handler));
        self
    }

    /// Handles an extension method with raw JSON.
    #[must_use]
    pub fn method(mut self, name: impl Into<String>, handler: impl MethodHandler) -> Self {
        self.methods.insert(name.into(), Arc::new(handler));
        self
    }

    /// Declares the tools capability even with no tools registered yet (dynamic servers).
    #[must_use]
    pub fn declare_tools(mut self) -> Self {
        self.declare.tools = true;
        self
    }

    /// Declares the prompts capability even with no prompts registered yet.
    #[must_use]
    pub fn declare_prompts(mut self) -> Self {
        self.declare.prompts = true;
        self
    }

    /// Declares the resources capability even with no resources registered yet.
    #[must_use]
    pub fn declare_resources(mut self) -> Self {
        self.declare.resources = true;
        self
    }

    /// Whether to declare the (deprecated) `logging` capability; on by default, since any
    /// handler may log through its context.
    #[must_use]
    pub fn logging(mut self, enabled: bool) -> Self {
        self.logging = enabled;
        self
    }

    /// Caching hints.
    #[must_use]
    pub fn caching(mut self, caching: Caching) -> Self {
        self.caching = caching;
        self
    }

    /// Splits list results into pages of `size` items (default: one page).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = Some(size.max(1));
        self
    }

    /// Seals `requestState` with `policy` (the one-line opt-in of the low-level tier): every
    /// inbound state on `tools/call`, `prompts/get` and `resources/read` is verified and opened
    /// before handlers see it, and every state they return is sealed. The audience defaults to
    /// the server name.
    #[must_use]
    pub fn seal_request_state(mut self, policy: RequestStateSecurity) -> Self {
        self.sealing = Some(policy);
        self
    }

    /// How to find the principal a request is made by, on every transport. Sealed
    /// `requestState` is bound to it, so a flow started by one user cannot be finished by
    /// another, and tasks are visible to it alone.
    ///
    /// The hook gets the request's context: its `_meta` ([`RequestContext::meta`],
    /// [`RequestContext::client_info`]), on HTTP the request head
    /// ([`RequestContext::http_parts`]) and the peer's address (`RequestContext::peer_addr`)
    /// and, with the `auth` feature, the validated access token
    /// (`RequestContext::access_token`). While the hook runs, [`RequestContext::principal`] is
    /// the principal the transport authenticated (the auth layer's, or one that middleware put
    /// in the request extensions); the hook's answer replaces it for the rest of the request.
    ///
    /// Without a hook, an HTTP request's principal is the transport's, and a stdio or in-memory
    /// request has none. A stdio server launched for one user binds that user, e.g.
    /// `.bind_principal(move |_| Some(user.clone()))`, so that state sealed under the same keys
    /// for another user's server is refused. Everything in `_meta` is the client's word: bind it
    /// only when the client is trusted to speak for its users.
    ///
    /// A server open to anonymous clients can give each peer address an identity, so that the
    /// per-principal caps (tasks) apply to each peer apart — behind a reverse proxy, from a
    /// header the proxy sets instead, since every peer is the proxy:
    ///
    /// ```
    /// # use modelctx::seal::Principal;
    /// let builder = modelctx::server::Server::builder("open", "1.0.0").bind_principal(|ctx| {
    ///     ctx.principal().cloned().or_else(|| {
    ///         let peer = ctx.peer_addr()?;
    ///         Some(Principal::new(format!("peer:{}", peer.ip())))
    ///     })
    /// });
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn bind_principal(
        mut self,
        hook: impl Fn(&RequestContext) -> Option<modelctx_seal::Principal> + Send + Sync + 'static,
    ) -> Self {
        self.principal = Some(Arc::new(hook));
        self
    }

    /// Makes sealed rounds single use: each token is recorded in `guard` before the handler runs
    /// and refused when presented again (the same `-32602` as any invalid state). `scope` picks
    /// the rounds — by default those of tools annotated `destructiveHint: true`. Without this, a
    /// sealed state can be redeemed until it expires. Needs sealing ([`Self::seal_request_state`]);
    /// see [`single_use`] for the guards and what happens when one cannot answer.
    #[must_use]
    pub fn single_use(
        mut self,
        guard: Arc<dyn single_use::ReplayGuard>,
        scope: single_use::SingleUse,
    ) -> Self {
        self.single_use = Some(single_use::ReplayProtection { guard, scope });
        self
    }

    /// Adds a middleware around every request and notification, on every transport and in both
    /// eras (see [`middleware`]). Middlewares run in registration order: the first added is the
    /// outermost, the first to see a request and the last to see its reply.
    #[must_use]
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Joins a change bus shared by the instances of a fleet (see [`bus`]): changes announced
    /// here — [`Server::notify`], tools, prompts and resources added or removed at run time,
    /// task status changes — reach the listen streams and 2025-11-25 sessions of every
    /// instance, and theirs reach ours. Without a bus, changes stay in this process.
    #[must_use]
    pub fn bus(mut self, bus: impl bus::ChangeBus) -> Self {
        self.bus = Some(Arc::new(bus));
        self
    }

    /// Bounds what listen streams and 2025-11-25 sessions' subscriptions may make the server
    /// hold (see [`SubscriptionLimits`] for each limit and its default).
    #[must_use]
    pub fn subscription_limits(mut self, limits: SubscriptionLimits) -> Self {
        self.subscription_limits = limits;
        self
    }

    /// Seals `requestState` under a process-local random key (single process, e.g. stdio).
    #[must_use]
    pub fn seal_request_state_ephemeral(self) -> Self {
        self.seal_request_state(RequestStateSecurity::ephemeral())
    }

    /// Builds the server.
    ///
    /// # Errors
    /// The first registration error (duplicate names, invalid schemas or templates, a sealing
    /// policy without audience on an unnamed server).
    pub fn build(self) -> Result<Server, RegistrationError> {
        if let Some(error) = self.errors.into_iter().next() {
            return Err(error);
        }
        let name = (!self.info.name.is_empty()).then_some(self.info.name.as_str());
        let sealing = match self.sealing {
            // A process-local key cannot be shared, so an unnamed server needs no audience.
            Some(policy) if policy.is_ephemeral() && name.is_none() => Some(policy),
            Some(policy) => Some(
                RequestStateSecurity::for_server(Some(policy), name)
                    .map_err(RegistrationError::Sealing)?,
            ),
            None => None,
        };
        if self.single_use.is_some() && sealing.is_none() {
            return Err(RegistrationError::SingleUseNeedsSealing);
        }
        let info_raw: Arc<RawValue> = serde_json::value::to_raw_value(&self.info)
            .map_err(|e| RegistrationError::ServerInfo(e.to_string()))?
            .into();
        let (changes, _) = broadcast::channel(256);
        let bus = match self.bus {
            Some(transport) => {
                let instance = crate::ids::random_hex().map_err(|e| {
                    RegistrationError::Bus(format!("no instance id (system randomness: {e})"))
                })?;
                let bus = Arc::new(bus::Bus::new(transport, instance));
                #[cfg(feature = "tasks")]
                let task_updates = self.tasks.as_ref().map(|t| t.join_bus(&bus));
                #[cfg(not(feature = "tasks"))]
                let task_updates = None;
                bus.attach(&changes, task_updates.as_ref());
                Some(bus)
            }
            None => None,
        };
        // The task sweep resumes work orphaned by a previous run; it needs a Tokio runtime
        // (otherwise it starts with the first task).
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.tasks {
            tasks.start();
        }
        Ok(Server {
            inner: Arc::new(Inner {
                info: self.info,
                info_raw,
                instructions: self.instructions,
                registry: RwLock::new(Arc::new(self.registry)),
                completion: self.completion,
                methods: self.methods,
                caching: self.caching,
                sealing,
                single_use: self.single_use,
                declare: self.declare,
                logging: self.logging,
                page_size: self.page_size,
                supported_versions: ProtocolVersion::MODERN.to_vec(),
                changes,
                bus,
                shutdown: CancellationToken::new(),
                subscriptions: subscription_budget::SubscriptionBudget::new(
                    self.subscription_limits,
                ),
                principal: self.principal,
                middleware: self.middleware,
                #[cfg(feature = "tasks")]
                tasks: self.tasks,
            }),
        })
    }
}
