//! The high-level server ([`McpServer`]) and the macro support behind it. Its public items are
//! re-exported from `crate::server`; the helpers only the generated code calls, from
//! `crate::__private`.

mod asker;
mod context;
mod error;
mod graph;
mod outcome;
mod output;
mod questions;
mod resolve;
mod resolver_output;
mod schema;
mod serve;
mod state;
mod state_map;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use modelctx_seal::RequestStateSecurity;
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ErrorObject, Extra, GetPromptRequestParams,
    GetPromptResult, Outcome, Prompt, PromptArgument, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{BoxFuture, RequestContext, Server, ServerBuilder};
use crate::uri_template::{UriTemplate, UriVariables};

pub use asker::BackChannel;
pub use context::Context;
pub use error::BuildError;
pub use outcome::{Elicitation, FromElicitation, Interrupt};
pub use output::{IntoPromptResult, IntoResourceResult, IntoToolResult, Json};
pub use questions::{Ask, Elicit, ElicitUrl, ListRoots, Question, Sample};
pub use resolve::{ArgumentUse, Resolution, Resolver, ResolverInfo};
pub use resolver_output::{Ready, ResolverOutput};
pub use schema::{ElicitationForm, input_schema, output_schema};
pub use state::{FromRef, State, UsesState, state};
pub use state_map::States;

// Macro support (as are `decode_arguments`, `body_outcome` and `pending` below): public only
// through `crate::__private`, which the generated code names.
pub use graph::check_resolvers;
pub use resolve::{gather, gathered};

/// A handler's future, as definitions return it.
pub type HandlerFuture<T> = BoxFuture<'static, Result<Outcome<T>, Interrupt>>;

/// A tool, as `#[tool]` generates it.
pub trait ToolDefinition: Send + Sync + 'static {
    /// The resolvers its parameters use.
    const RESOLVERS: &'static [&'static ResolverInfo];
    /// Whether its return type can carry an `InputRequiredResult`.
    const ASKS: bool;
    /// Its description for `tools/list`.
    fn tool() -> Tool;
    /// Runs one round of a call.
    fn call(ctx: Context, arguments: Extra) -> HandlerFuture<CallToolResult>;
}

/// A prompt, as `#[prompt]` generates it.
pub trait PromptDefinition: Send + Sync + 'static {
    /// The resolvers its parameters use.
    const RESOLVERS: &'static [&'static ResolverInfo];
    /// Whether its return type can carry an `InputRequiredResult`.
    const ASKS: bool;
    /// Its description for `prompts/list`.
    fn prompt() -> Prompt;
    /// Renders one round; `arguments` are the prompt arguments as JSON strings.
    fn get(ctx: Context, arguments: Extra) -> HandlerFuture<GetPromptResult>;
}

/// A resource or resource template, as `#[resource]` generates it.
pub trait ResourceDefinition: Send + Sync + 'static {
    /// The resolvers its parameters use.
    const RESOLVERS: &'static [&'static ResolverInfo];
    /// Whether its return type can carry an `InputRequiredResult`.
    const ASKS: bool;
    /// Its description: `uri_template` is the URI, or an RFC 6570 template when it has
    /// `{variables}`.
    fn describe() -> ResourceTemplate;
    /// Reads one round; `variables` are the template variables as JSON strings (empty for a
    /// static resource).
    fn read(ctx: Context, uri: String, variables: Extra) -> HandlerFuture<ReadResourceResult>;
}

type ToolFn = Arc<dyn Fn(Context, Extra) -> HandlerFuture<CallToolResult> + Send + Sync>;
type PromptFn = Arc<dyn Fn(Context, Extra) -> HandlerFuture<GetPromptResult> + Send + Sync>;
type ResourceFn =
    Arc<dyn Fn(Context, String, Extra) -> HandlerFuture<ReadResourceResult> + Send + Sync>;

/// Configures and builds an [`McpServer`].
pub struct McpServerBuilder<S = ()> {
    name: String,
    version: String,
    security: Option<RequestStateSecurity>,
    low_level: Vec<Box<dyn FnOnce(ServerBuilder) -> ServerBuilder>>,
    tools: Vec<(Tool, ToolFn)>,
    prompts: Vec<(Prompt, PromptFn)>,
    resources: Vec<(ResourceTemplate, bool, ResourceFn)>,
    errors: Vec<BuildError>,
    /// The application's state (`McpServerBuilder::state`), and the parts of it the handlers
    /// registered so far take.
    state: S,
    states: States,
    apps: Option<crate::server::apps::Apps>,
}

impl<S> std::fmt::Debug for McpServerBuilder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The high-level server: typed tools, prompts and resources on async functions, and resolvers
/// that ask the client for input.
///
/// It is built on the low-level [`Server`]: each registration becomes a low-level handler that
/// decodes typed arguments, runs the resolvers, calls your function and encodes what it returns.
/// It serves like the low-level server ([`McpServer::serve_stdio`], [`McpServer::serve_http`], …)
/// and shares its run-time changes ([`McpServer::notify`], …); anything else of the low-level
/// server is one [`McpServer::server`] away. Request state is sealed by default (an ephemeral
/// key, the server name as audience); handlers and resolvers only ever see plaintext.
///
/// # Attribute macros
///
/// * `#[tool]` on an async fn: its parameters are the tool arguments (a generated struct
///   deriving `Deserialize` and `JsonSchema` gives the `inputSchema`; parameter doc comments
///   describe them), except a [`Context`] (by value or `&`) and `#[resolve(resolver)]`
///   parameters. The fn's doc comment is the description; the return type is any
///   [`IntoToolResult`] ([`Json<T>`] for structured output with an `outputSchema`).
/// * `#[prompt]`: parameters are prompt arguments (`String`, or `Option<String>` when optional).
/// * `#[resource("scheme://uri")]` / `#[resource("scheme://{var}")]`: a static resource, or a
///   template whose `{var}`s are the parameters.
/// * `#[resolver]` on an async fn: a type of the same name implementing [`Resolver`]. Its
///   parameters are `&Context`, `#[resolve(other)]` dependencies, or arguments of the consumer by
///   name. It returns a value, or a question: [`Elicit<T>`] (a form derived from `T`),
///   [`ElicitUrl`] (a URL for the user to open: sign-in, payment, secrets), [`Sample`],
///   [`ListRoots`], or [`Ask`] (either).
///
/// Each macro leaves the function as it is and adds a type of the same name (in the type
/// namespace), which registers it: `.tool::<order_book>()`.
///
/// ```
/// use modelctx::server::{Context, Elicit, McpServer};
/// use modelctx::{prompt, resolver, resource, tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, Clone)]
/// struct Backorder {
///     /// Place a backorder?
///     confirm: bool,
/// }
///
/// /// Asks whether to place a backorder for the title.
/// #[resolver]
/// async fn confirm_backorder(title: String) -> Elicit<Backorder> {
///     Elicit::new(format!("'{title}' is out of stock. Place a backorder?"))
/// }
///
/// /// Order a book that is out of stock.
/// #[tool]
/// async fn order_book(
///     /// The book's title.
///     title: String,
///     #[resolve(confirm_backorder)] backorder: Backorder,
/// ) -> String {
///     let placed = if backorder.confirm { "placed" } else { "not placed" };
///     format!("Backorder for '{title}': {placed}.")
/// }
///
/// /// Greets someone.
/// #[prompt]
/// async fn greet(who: String) -> String {
///     format!("Say hello to {who}.")
/// }
///
/// /// A quarterly report.
/// #[resource("report://{quarter}", mime_type = "text/plain")]
/// async fn report(quarter: String, ctx: Context) -> String {
///     format!("Report {quarter} (protocol {})", ctx.protocol_version())
/// }
///
/// let server = McpServer::builder("bookshop", "1.0.0")
///     .tool::<order_book>()
///     .prompt::<greet>()
///     .resource::<report>()
///     .build()?;
/// assert_eq!(server.info().name, "bookshop");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Multi-round-trip requests
///
/// On 2026-07-28 every independent unanswered question of a call is batched into one
/// `InputRequiredResult`, after checking *this request's* client capabilities (`-32021` with
/// `data.requiredCapabilities` otherwise). Answers are carried across rounds in the sealed
/// state, each bound to a digest of the question as rendered: a question whose message or
/// schema changed is asked again instead of consuming a stale answer. Accepted content is
/// decoded into the form type; a decline or cancel fails the call (`isError`) unless the
/// parameter is declared as [`Elicitation<T>`], which receives the whole outcome.
///
/// Accepted form content is checked against the schema the client was shown (ranges, lengths,
/// formats, enums) before it is decoded; content that does not fit fails the call (`isError`,
/// "… does not match the requested schema") and never reaches your function.
///
/// On a handshake-era (2025-11-25) session the same resolvers ask mid-call instead, through
/// server→client requests answered by the same client callbacks (see [`BackChannel`]).
///
/// A tool, prompt or template may instead return an `InputRequiredResult` itself
/// ([`modelctx_types::Outcome`]) and read [`Context::input_responses`] / [`Context::request_state`]
/// — but not both: a call has one input channel, so combining resolvers with such a return type
/// is a compile error. Such a function works for 2025-11-25 clients too: the server bridges its
/// questions over the back-channel and calls it again with the answers and its state. Check the
/// state before trusting an answer — a client may send `inputResponses` nobody asked for (the
/// resolvers do this for you). Static resources cannot ask at all.
///
/// A URL to open is a question like the others:
///
/// ```
/// use modelctx::server::{ElicitUrl, Elicitation};
/// use modelctx::{resolver, tool};
///
/// /// Asks the user to sign in at the provider.
/// #[resolver]
/// async fn sign_in(service: String) -> ElicitUrl {
///     ElicitUrl::new(
///         format!("Sign in to {service} to connect your account."),
///         format!("https://accounts.example.com/connect?service={service}"),
///     )
/// }
///
/// /// Connect an account.
/// #[tool]
/// async fn connect(service: String, #[resolve(sign_in)] consent: Elicitation<()>) -> String {
///     match consent {
///         // Consent only: whether the sign-in finished is for the server to find out.
///         Elicitation::Accept(()) => format!("Connecting {service}…"),
///         _ => "Not connected.".to_owned(),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct McpServer {
    server: Server,
}

impl McpServer {
    /// Starts building a server with the name and version it reports as `serverInfo`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> McpServerBuilder {
        McpServerBuilder {
            name: name.into(),
            version: version.into(),
            security: None,
            low_level: Vec::new(),
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            errors: Vec::new(),
            state: (),
            states: States::default(),
            apps: None,
        }
    }

    /// The low-level server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// A client of this server in the same process (see
    /// [`InProcess`](crate::server::in_process::InProcess)).
    pub fn in_process(&self) -> crate::server::in_process::InProcess {
        self.server().in_process()
    }

    /// The low-level server, owned.
    pub fn into_server(self) -> Server {
        self.server
    }
}

impl<S: Send + Sync + 'static> McpServerBuilder<S> {
    /// Gives the server its application state: a `#[tool]`, `#[prompt]` or `#[resource]`
    /// function registered after this takes it, or a part of it, as a [`State<T>`] parameter
    /// (checked at compile time; see [`State`]), and any handler reads it with
    /// [`Context::state`]. Give it before registering the handlers that take it.
    #[must_use]
    pub fn state<T: Clone + Send + Sync + 'static>(self, state: T) -> McpServerBuilder<T> {
        let mut states = self.states;
        states.insert(state.clone());
        McpServerBuilder {
            name: self.name,
            version: self.version,
            security: self.security,
            low_level: self.low_level,
            tools: self.tools,
            prompts: self.prompts,
            resources: self.resources,
            errors: self.errors,
            state,
            states,
            apps: self.apps,
        }
    }

    /// Seals `requestState` with `policy` instead of the default ephemeral key (e.g. shared keys
    /// for several instances behind a load balancer). The audience defaults to the server name.
    #[must_use]
    pub fn request_state_security(mut self, policy: RequestStateSecurity) -> Self {
        self.security = Some(policy);
        self
    }

    /// Makes sealed rounds single use (by default those of `#[tool(destructive)]` tools); see
    /// [`ServerBuilder::single_use`].
    #[must_use]
    pub fn single_use(
        self,
        guard: Arc<dyn crate::server::single_use::ReplayGuard>,
        scope: crate::server::single_use::SingleUse,
    ) -> Self {
        self.low_level(move |b| b.single_use(guard, scope))
    }

    /// Adds a middleware around every request and notification; see
    /// [`ServerBuilder::middleware`].
    #[must_use]
    pub fn middleware(self, middleware: impl crate::server::middleware::Middleware) -> Self {
        self.low_level(move |b| b.middleware(middleware))
    }

    /// Adjusts the underlying low-level builder (instructions, caching, page size, principal
    /// binding, extension methods…).
    #[must_use]
    pub fn low_level(
        mut self,
        configure: impl FnOnce(ServerBuilder) -> ServerBuilder + 'static,
    ) -> Self {
        self.low_level.push(Box::new(configure));
        self
    }

    /// Runs `hook` once before the server serves its first request; see
    /// [`ServerBuilder::on_startup`].
    #[must_use]
    pub fn on_startup<F, Fut, E>(self, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display + 'static,
    {
        self.low_level(move |b| b.on_startup(hook))
    }

    /// Runs `hook` once when the server stops; see [`ServerBuilder::on_shutdown`].
    #[must_use]
    pub fn on_shutdown<F, Fut>(self, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.low_level(move |b| b.on_shutdown(hook))
    }

    /// A description of the server for `serverInfo`.
    #[must_use]
    pub fn description(self, description: impl Into<String>) -> Self {
        let description = description.into();
        self.low_level(move |b| b.description(description))
    }

    /// The server's website for `serverInfo` (`websiteUrl`).
    #[must_use]
    pub fn website_url(self, url: impl Into<String>) -> Self {
        let url = url.into();
        self.low_level(move |b| b.website_url(url))
    }

    /// Icons for `serverInfo`.
    #[must_use]
    pub fn icons(self, icons: impl IntoIterator<Item = modelctx_types::Icon>) -> Self {
        let icons: Vec<_> = icons.into_iter().collect();
        self.low_level(move |b| b.icons(icons))
    }

    /// Instructions for the model, sent in `server/discover`.
    #[must_use]
    pub fn instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.low_level(move |b| b.instructions(instructions))
    }

    /// Serves MCP Apps with `apps` (its resources, tools and settings). Without it, a server
    /// with a `#[tool(ui = …)]` tool gets [`Apps::new`](crate::server::apps::Apps::new): the
    /// extension advertised, its checks run at `build`, the flat key written.
    #[must_use]
    pub fn apps(mut self, apps: crate::server::apps::Apps) -> Self {
        self.apps = Some(apps);
        self
    }

    /// Registers a tool generated by `#[tool]`.
    #[must_use]
    pub fn tool<T: ToolDefinition + UsesState<S>>(mut self) -> Self {
        T::provide(&self.state, &mut self.states);
        let tool = T::tool();
        let names = property_names(&tool.input_schema);
        self.errors.extend(graph::problem(
            "tool",
            &tool.name,
            T::RESOLVERS,
            Some(&names),
        ));
        self.tools.push((tool, Arc::new(T::call)));
        self
    }

    /// Registers a tool from a closure taking the context and typed arguments (`A`'s schema is
    /// the `inputSchema`).
    #[must_use]
    pub fn tool_fn<A, F, Fut, R>(mut self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult + 'static,
    {
        let mut tool = Tool::new(name, input_schema::<A>());
        tool.description = Some(description.to_owned());
        tool.output_schema = R::output_schema();
        let handler = Arc::new(handler);
        let call: ToolFn = Arc::new(move |ctx, arguments| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let arguments: A = decode_arguments(&arguments)?;
                handler(ctx, arguments).await.into_tool_outcome()
            })
        });
        self.tools.push((tool, call));
        self
    }

    /// Registers a prompt generated by `#[prompt]`.
    #[must_use]
    pub fn prompt<P: PromptDefinition + UsesState<S>>(mut self) -> Self {
        P::provide(&self.state, &mut self.states);
        let prompt = P::prompt();
        let names = prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| a.name.clone())
            .collect();
        self.errors.extend(graph::problem(
            "prompt",
            &prompt.name,
            P::RESOLVERS,
            Some(&names),
        ));
        self.prompts.push((prompt, Arc::new(P::get)));
        self
    }

    /// Registers a prompt from a closure taking the context and typed arguments: `A`'s fields
    /// are the prompt arguments (strings; `Option` ones are optional).
    #[must_use]
    pub fn prompt_fn<A, F, Fut, R>(mut self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoPromptResult + 'static,
    {
        let schema = input_schema::<A>();
        let required: BTreeSet<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        let arguments = property_names(&schema)
            .into_iter()
            .map(|name| {
                let mut argument =
                    PromptArgument::new(name.clone()).with_required(required.contains(&name));
                argument.description = schema["properties"][&name]["description"]
                    .as_str()
                    .map(str::to_owned);
                argument
            })
            .collect::<Vec<_>>();
        let mut prompt = Prompt::new(name).with_description(description);
        prompt.arguments = (!arguments.is_empty()).then_some(arguments);
        let handler = Arc::new(handler);
        let get: PromptFn = Arc::new(move |ctx, arguments| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let arguments: A = decode_arguments(&arguments)?;
                handler(ctx, arguments).await.into_prompt_outcome()
            })
        });
        self.prompts.push((prompt, get));
        self
    }

    /// Registers a resource or resource template generated by `#[resource]`.
    #[must_use]
    pub fn resource<D: ResourceDefinition + UsesState<S>>(mut self) -> Self {
        D::provide(&self.state, &mut self.states);
        let describe = D::describe();
        let is_template = UriTemplate::is_template(&describe.uri_template);
        if !is_template && (D::ASKS || !D::RESOLVERS.is_empty()) {
            self.errors.push(BuildError::StaticResourceAsks {
                uri: describe.uri_template.clone(),
            });
        }
        // A template that does not parse is reported by the registry at build.
        let names: Option<BTreeSet<String>> = UriTemplate::parse(&describe.uri_template)
            .ok()
            .map(|t| t.variable_names().map(str::to_owned).collect());
        self.errors.extend(graph::problem(
            "resource template",
            &describe.uri_template,
            D::RESOLVERS,
            names.as_ref(),
        ));
        self.resources
            .push((describe, is_template, Arc::new(D::read)));
        self
    }

    /// Registers a static resource from a closure. It cannot ask for input: a return type that
    /// can carry an `InputRequiredResult` fails [`McpServerBuilder::build`].
    #[must_use]
    pub fn resource_fn<F, Fut, R>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoResourceResult + 'static,
    {
        if R::ASKS {
            self.errors.push(BuildError::StaticResourceAsks {
                uri: resource.uri.clone(),
            });
        }
        let mut describe = ResourceTemplate::new(resource.uri, resource.name);
        describe.title = resource.title;
        describe.description = resource.description;
        describe.mime_type = resource.mime_type;
        describe.annotations = resource.annotations;
        describe.icons = resource.icons;
        describe.meta = resource.meta;
        let mime_type = describe.mime_type.clone();
        let handler = Arc::new(handler);
        let read: ResourceFn = Arc::new(move |ctx, uri, _variables| {
            let handler = Arc::clone(&handler);
            let mime_type = mime_type.clone();
            Box::pin(async move {
                handler(ctx)
                    .await
                    .into_resource_outcome(&uri, mime_type.as_deref())
            })
        });
        self.resources.push((describe, false, read));
        self
    }

    /// Registers a resource template from a closure receiving the matched variables; it may ask.
    #[must_use]
    pub fn resource_template_fn<F, Fut, R>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(Context, UriVariables) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoResourceResult + 'static,
    {
        let mime_type = template.mime_type.clone();
        let handler = Arc::new(handler);
        let read: ResourceFn = Arc::new(move |ctx, uri, variables| {
            let handler = Arc::clone(&handler);
            let mime_type = mime_type.clone();
            Box::pin(async move {
                let variables = variables
                    .into_iter()
                    .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_owned()))
                    .collect();
                handler(ctx, variables)
                    .await
                    .into_resource_outcome(&uri, mime_type.as_deref())
            })
        });
        self.resources.push((template, true, read));
        self
    }

    /// Builds the server.
    ///
    /// # Errors
    /// The first registration error: a static resource that can ask, a resolver argument the
    /// consumer lacks, or what the low-level server refuses (duplicates, invalid templates…).
    pub fn build(self) -> Result<McpServer, BuildError> {
        if let Some(error) = self.errors.into_iter().next() {
            return Err(error);
        }
        let security = self
            .security
            .unwrap_or_else(RequestStateSecurity::ephemeral);
        let has_ui = self.tools.iter().any(|(tool, _)| {
            tool.meta
                .as_ref()
                .is_some_and(crate::server::apps::names_ui)
        });
        let mut builder = Server::builder(self.name, self.version).seal_request_state(security);
        let shared_states = Arc::new(self.states);
        for configure in self.low_level {
            builder = configure(builder);
        }
        for (tool, call) in self.tools {
            let states = Arc::clone(&shared_states);
            let name: Arc<str> = Arc::from(tool.name.as_str());
            builder = builder.tool(
                tool,
                move |rctx: RequestContext, params: CallToolRequestParams| {
                    let ctx = Context::new(rctx, params.input_responses, params.request_state)
                        .with_states(Arc::clone(&states));
                    let future = call(ctx, params.arguments.unwrap_or_default());
                    let name = Arc::clone(&name);
                    async move { finish_tool(&name, future.await) }
                },
            );
        }
        for (prompt, get) in self.prompts {
            let states = Arc::clone(&shared_states);
            let name: Arc<str> = Arc::from(prompt.name.as_str());
            builder = builder.prompt(
                prompt,
                move |rctx: RequestContext, params: GetPromptRequestParams| {
                    let ctx = Context::new(rctx, params.input_responses, params.request_state)
                        .with_states(Arc::clone(&states));
                    let arguments = params
                        .arguments
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect();
                    let future = get(ctx, arguments);
                    let name = Arc::clone(&name);
                    async move { finish(future.await, || format!("Error rendering prompt {name}")) }
                },
            );
        }
        for (describe, is_template, read) in self.resources {
            let states = Arc::clone(&shared_states);
            if is_template {
                builder =
                    builder.resource_template(
                        describe,
                        move |rctx: RequestContext,
                              params: ReadResourceRequestParams,
                              vars: UriVariables| {
                            let ctx =
                                Context::new(rctx, params.input_responses, params.request_state)
                                    .with_states(Arc::clone(&states));
                            let variables = vars
                                .into_iter()
                                .map(|(k, v)| (k, Value::String(v)))
                                .collect();
                            let uri = params.uri;
                            let future = read(ctx, uri.clone(), variables);
                            async move {
                                finish(future.await, || format!("Error reading resource {uri}"))
                            }
                        },
                    );
            } else {
                let mut resource = Resource::new(describe.uri_template, describe.name);
                resource.title = describe.title;
                resource.description = describe.description;
                resource.mime_type = describe.mime_type;
                resource.annotations = describe.annotations;
                resource.icons = describe.icons;
                resource.meta = describe.meta;
                builder = builder.resource(
                    resource,
                    move |rctx: RequestContext, params: ReadResourceRequestParams| {
                        let ctx = Context::new(rctx, None, None).with_states(Arc::clone(&states));
                        let uri = params.uri;
                        let future = read(ctx, uri.clone(), Extra::new());
                        async move {
                            match finish(future.await, || format!("Error reading resource {uri}"))?
                            {
                                Outcome::Complete(result) => Ok(result),
                                // Registration refuses static resources that can ask.
                                _ => {
                                    Err(ErrorObject::internal("Handler returned an invalid result"))
                                }
                            }
                        }
                    },
                );
            }
        }
        // After the tools: the extension's checks see every tool either way, but its own
        // tools are listed after the server's.
        if let Some(apps) = self
            .apps
            .or_else(|| has_ui.then(crate::server::apps::Apps::new))
        {
            builder = builder.extension(apps);
        }
        Ok(McpServer {
            server: builder.build()?,
        })
    }
}

fn property_names(schema: &Extra) -> BTreeSet<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Decodes typed arguments; a mismatch is the caller's mistake, reported as a failed call.
///
/// # Errors
/// The decoding error, as [`Interrupt::InvalidArguments`].
pub fn decode_arguments<A: DeserializeOwned>(arguments: &Extra) -> Result<A, Interrupt> {
    A::deserialize(Value::Object(arguments.clone()))
        .map_err(|e| Interrupt::InvalidArguments(format!("invalid arguments: {e}")))
}

/// A tool round's outcome on the wire: failures become `isError` results (the model reads
/// them), JSON-RPC errors stay errors.
fn finish_tool(
    name: &str,
    outcome: Result<Outcome<CallToolResult>, Interrupt>,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    match outcome {
        Ok(outcome) => Ok(outcome),
        Err(Interrupt::Protocol(error)) => Err(error),
        Err(Interrupt::Failed(message) | Interrupt::InvalidArguments(message)) => {
            tracing::info!(tool = name, %message, "tool failed");
            Ok(Outcome::Complete(CallToolResult::error(format!(
                "Error executing tool {name}: {message}"
            ))))
        }
        // The details are in the server log.
        Err(Interrupt::Crashed | Interrupt::Pending) => Ok(Outcome::Complete(
            CallToolResult::error(format!("Error executing tool {name}")),
        )),
    }
}

/// A prompt or resource round's outcome: failures are JSON-RPC errors (`-32603`), arguments
/// that do not fit are `-32602`.
fn finish<T>(
    outcome: Result<Outcome<T>, Interrupt>,
    context: impl FnOnce() -> String,
) -> Result<Outcome<T>, ErrorObject> {
    match outcome {
        Ok(outcome) => Ok(outcome),
        Err(Interrupt::Protocol(error)) => Err(error),
        Err(Interrupt::InvalidArguments(message)) => Err(ErrorObject::invalid_params(format!(
            "{}: {message}",
            context()
        ))),
        Err(Interrupt::Failed(message)) => {
            let context = context();
            tracing::info!(%message, "{context}");
            Err(ErrorObject::internal(format!("{context}: {message}")))
        }
        Err(Interrupt::Crashed | Interrupt::Pending) => Err(ErrorObject::internal(context())),
    }
}

/// The outcome of the body of a resolver-using function: an `InputRequiredResult` its
/// signature did not declare (a type alias hid it from the macro) fails the call — a call has
/// one input channel, and the resolvers own it.
///
/// # Errors
/// A failed call.
pub fn body_outcome<T>(
    kind: &str,
    name: &str,
    uses_resolvers: bool,
    outcome: Result<Outcome<T>, Interrupt>,
) -> Result<Outcome<T>, Interrupt> {
    match outcome {
        Ok(Outcome::InputRequired(_)) if uses_resolvers => {
            tracing::error!(
                kind,
                name,
                "the body returned an InputRequiredResult but its parameters use resolvers; a \
                 call has one input channel, so the multi-round flow is driven either by \
                 resolvers or by the body, not both"
            );
            Err(Interrupt::Crashed)
        }
        other => other,
    }
}

/// The `InputRequiredResult` of a round whose resolvers are pending.
///
/// # Errors
/// When nothing is pending after all (a resolver reported pending without asking).
pub fn pending<T>(resolution: &Resolution) -> Result<Outcome<T>, Interrupt> {
    resolution
        .input_required()
        .map(Outcome::InputRequired)
        .ok_or(Interrupt::Crashed)
}
