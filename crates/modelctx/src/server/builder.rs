//! [`ServerBuilder`]: what a server is made of — its entries, handlers, settings, middleware,
//! bus and features — collected, checked once, and frozen into the shared state of a
//! [`Server`] handle (`handle.rs`). Extensions join through it ([`ServerBuilder::extension`]
//! applies what one contributes; the tasks extension's `ServerBuilder::tasks` is a call onto
//! it), so the handle never changes after `build`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use modelctx_seal::RequestStateSecurity;
use modelctx_types::{
    Extra, Icon, Implementation, Prompt, ProtocolVersion, Resource, ResourceTemplate, Tool,
};
use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::caching::Caching;
use super::context::RequestContext;
use super::extension::{BuildCheck, Extension, Registered, checked_settings};
use super::handle::{Declared, Inner, PrincipalHook, Server};
use super::handler::{
    CompletionHandler, MethodHandler, PromptHandler, ResourceHandler, ResourceTemplateHandler,
    ToolHandler,
};
use super::lifespan::{Lifespan, ShutdownHook, StartupHook};
use super::middleware::Middleware;
use super::notification_handler::{NotificationHandler, NotificationHandlers};
use super::registry::{RegistrationError, Registry};
use super::subscription_limits::SubscriptionLimits;
use super::task_hook::TaskHook;
use super::{bus, single_use, subscription_budget};

/// Configures and builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    pub(super) registry: Registry,
    pub(super) errors: Vec<RegistrationError>,
    completion: Option<Arc<dyn CompletionHandler>>,
    pub(super) methods: HashMap<String, Arc<dyn MethodHandler>>,
    caching: Caching,
    sealing: Option<RequestStateSecurity>,
    single_use: Option<single_use::ReplayProtection>,
    declare: Declared,
    logging: bool,
    page_size: Option<usize>,
    only_era: Option<modelctx_types::Era>,
    principal: Option<PrincipalHook>,
    middleware: Vec<Arc<dyn Middleware>>,
    bus: Option<Arc<dyn bus::ChangeBus>>,
    subscription_limits: SubscriptionLimits,
    /// What the extensions given so far advertise, by identifier.
    extensions: Extra,
    /// The tasks extension's core hooks, contributed by the extension (`ServerBuilder::tasks`).
    tasks: Option<Arc<dyn TaskHook>>,
    notification_handlers: HashMap<String, Arc<dyn NotificationHandler>>,
    startup: Vec<StartupHook>,
    shutdown: Vec<ShutdownHook>,
    /// The extensions' checks, run by `build` over everything registered.
    checks: Vec<BuildCheck>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts building a server with the name and version it reports as `serverInfo`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(Implementation::new(name, version))
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
            only_era: None,
            principal: None,
            middleware: Vec::new(),
            bus: None,
            subscription_limits: SubscriptionLimits::default(),
            extensions: Extra::new(),
            tasks: None,
            notification_handlers: HashMap::new(),
            startup: Vec::new(),
            shutdown: Vec::new(),
            checks: Vec::new(),
        }
    }

    /// A human-readable title for `serverInfo`.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// A description of the server for `serverInfo`, shown by clients beside its name.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.info.description = Some(description.into());
        self
    }

    /// The server's website for `serverInfo` (`websiteUrl`).
    #[must_use]
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.info.website_url = Some(url.into());
        self
    }

    /// Icons for `serverInfo`. Each `src` must be an `https:` or `data:` URL, as the
    /// specification asks (a client fetches it); another makes `build` fail.
    #[must_use]
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        let icons: Vec<Icon> = icons.into_iter().collect();
        for icon in &icons {
            let src = icon.src.to_ascii_lowercase();
            if !(src.starts_with("https://") || src.starts_with("data:")) {
                self.errors.push(RegistrationError::ServerInfo(format!(
                    "icon {:?} is not an https: or data: URL",
                    icon.src
                )));
            }
        }
        self.info.icons = Some(icons);
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

    /// Handles a method with raw JSON (an extension's method that comes with no
    /// [`Extension`]; an extension contributes its own through
    /// [`Contributions::method`](super::extension::Contributions::method)).
    #[must_use]
    pub fn method(mut self, name: impl Into<String>, handler: impl MethodHandler) -> Self {
        self.methods.insert(name.into(), Arc::new(handler));
        self
    }

    /// Runs `hook` once, before the server serves its first request (the first `serve_*` or
    /// in-process call runs it; the others wait for it): open a pool, warm a cache. Hooks run
    /// in the order given; one that fails stops the server from serving, with its error, on
    /// every transport (see [`lifespan`](super::lifespan)).
    #[must_use]
    pub fn on_startup<F, Fut, E>(mut self, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display,
    {
        self.startup.push(Box::new(move || {
            let running = hook();
            Box::pin(async move { running.await.map_err(|error| error.to_string()) })
        }));
        self
    }

    /// Runs `hook` once, when the server stops: when `serve_stdio` or `serve_http` ends, or on
    /// [`Server::stop`]. Hooks run in reverse order (the last opened is closed first).
    #[must_use]
    pub fn on_shutdown<F, Fut>(mut self, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.shutdown.push(Box::new(move || Box::pin(hook())));
        self
    }

    /// Runs `handler` on every `method` notification the client sends, in either era (a
    /// handshake-era client's `notifications/roots/list_changed`, an extension's own method).
    /// What the SDK does with a notification itself (cancelling, completing the handshake)
    /// happens first. Each runs as a task of its own, at most
    /// [`MAX_RUNNING`](super::notification_handler::MAX_RUNNING) at once (more are dropped and
    /// logged). A second handler for one method makes `build` fail.
    #[must_use]
    pub fn on_notification(
        mut self,
        method: impl Into<String>,
        handler: impl NotificationHandler,
    ) -> Self {
        match self.notification_handlers.entry(method.into()) {
            std::collections::hash_map::Entry::Occupied(taken) => {
                self.errors.push(RegistrationError::Duplicate {
                    kind: "notification handler",
                    name: taken.key().clone(),
                });
            }
            std::collections::hash_map::Entry::Vacant(free) => {
                free.insert(Arc::new(handler));
            }
        }
        self
    }

    /// Serves `extension` (see [`extension`](super::extension)): advertises its settings at
    /// `capabilities.extensions[id]` in `server/discover` and `initialize`, and registers what it
    /// contributes — tools and resources (listed after those registered before), methods, a
    /// `tools/call` interceptor (in the middleware chain, after the middlewares added before).
    /// `build` fails on an identifier given twice, settings over
    /// [`MAX_SETTINGS_BYTES`](super::extension::MAX_SETTINGS_BYTES), a method already bound,
    /// or a contributed entry the registry refuses.
    #[must_use]
    #[allow(
        clippy::needless_pass_by_value,
        reason = "taken by value as handlers are: read once here; what it contributes holds what it needs"
    )]
    pub fn extension(mut self, extension: impl Extension) -> Self {
        let id = extension.id();
        if self.extensions.contains_key(id.as_str()) {
            self.errors
                .push(RegistrationError::DuplicateExtension(id.to_string()));
            return self;
        }
        match checked_settings(&id, extension.settings()) {
            Ok(settings) => {
                self.extensions
                    .insert(id.to_string(), serde_json::Value::Object(settings));
            }
            Err(error) => self.errors.push(error),
        }
        let mut contributions = super::extension::Contributions::default();
        extension.contribute(&mut contributions);
        self.errors.append(&mut contributions.errors);
        for (tool, handler) in contributions.tools {
            if let Err(error) = self.registry.add_tool(tool, handler) {
                self.errors.push(error);
            }
        }
        for (resource, handler) in contributions.resources {
            if let Err(error) = self.registry.add_resource(resource, handler) {
                self.errors.push(error);
            }
        }
        for (template, handler) in contributions.templates {
            if let Err(error) = self.registry.add_template(template, handler) {
                self.errors.push(error);
            }
        }
        for binding in contributions.methods {
            if self.methods.contains_key(&binding.name) {
                self.errors.push(RegistrationError::Extension {
                    id: id.to_string(),
                    reason: format!("method {:?} is already bound", binding.name),
                });
                continue;
            }
            self.methods.insert(binding.name, binding.handler);
        }
        self.middleware.append(&mut contributions.interceptors);
        self.checks.append(&mut contributions.checks);
        if let Some(hook) = contributions.task_hook {
            if self.tasks.is_some() {
                self.errors.push(RegistrationError::Extension {
                    id: id.to_string(),
                    reason: "a second tasks runtime (a server serves one)".to_owned(),
                });
            } else {
                self.tasks = Some(hook);
            }
        }
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

    /// Serves one era only (default: both, each connection's era chosen by how its client
    /// opens). For testing translations and for operators who retire an era:
    ///
    /// * [`Era::Modern`](modelctx_types::Era::Modern): 2026-07-28 only. `initialize` is refused
    ///   with `-32022` naming the supported versions (on HTTP with 400, whatever headers came
    ///   with it), so a 2025-11-25 client is told why instead of getting an unknown method.
    /// * [`Era::Handshake`](modelctx_types::Era::Handshake): 2025-11-25 only, as a server that
    ///   never heard of 2026-07-28 behaves: the request envelope is ignored, `server/discover`
    ///   is an unknown method (`-32601`), and on HTTP a request without a session is refused
    ///   as any handshake-era request is. A dual-era client falls back to `initialize`.
    #[must_use]
    pub fn only_era(mut self, era: modelctx_types::Era) -> Self {
        self.only_era = Some(era);
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
    /// eras (see [`middleware`](super::middleware)). Middlewares run in registration order: the first added is the
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
    /// policy without audience on an unnamed server), then what the extensions' build checks
    /// refuse ([`Contributions::check_at_build`](super::extension::Contributions::check_at_build)).
    pub fn build(mut self) -> Result<Server, RegistrationError> {
        if let Some(error) = self.errors.into_iter().next() {
            return Err(error);
        }
        for check in std::mem::take(&mut self.checks) {
            check(&mut Registered {
                registry: &mut self.registry,
            })?;
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
                let task_updates = self.tasks.as_ref().map(|t| t.join_bus(&bus));
                bus.attach(&changes, task_updates.as_ref());
                Some(bus)
            }
            None => None,
        };
        // The task sweep resumes work orphaned by a previous run; it needs a Tokio runtime
        // (otherwise it starts with the first task).
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
                only_era: self.only_era,
                supported_versions: ProtocolVersion::MODERN.to_vec(),
                changes,
                bus,
                shutdown: CancellationToken::new(),
                subscriptions: subscription_budget::SubscriptionBudget::new(
                    self.subscription_limits,
                ),
                principal: self.principal,
                middleware: self.middleware,
                extensions: (!self.extensions.is_empty()).then_some(self.extensions),
                tasks: self.tasks,
                lifespan: Lifespan::new(self.startup, self.shutdown),
                notification_handlers: (!self.notification_handlers.is_empty())
                    .then(|| NotificationHandlers::new(self.notification_handlers)),
            }),
        })
    }
}
