//! The server handle: [`Server`], cheap to clone, and the state its clones share (`Inner`: the
//! registry, the settings the builder fixed, the change channel, the middleware chain).
//!
//! Every stage of the pipeline is a free function over `&Server` that reads this state; the
//! handle's own methods are those a user calls on a running server (its identity, its
//! capabilities, tools and other entries added or removed at run time, change announcements).
//! It is built by [`ServerBuilder`](super::ServerBuilder) (`builder.rs`), the only place an
//! `Inner` is made.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use modelctx_seal::RequestStateSecurity;
use modelctx_types::{
    Implementation, Prompt, PromptsCapability, ProtocolVersion, Resource, ResourceTemplate,
    ResourcesCapability, ServerCapabilities, Tool, ToolsCapability,
};
use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::caching::Caching;
use super::change::Change;
use super::context::RequestContext;
use super::handler::{
    CompletionHandler, MethodHandler, PromptHandler, ResourceHandler, ResourceTemplateHandler,
    ToolHandler,
};
use super::lifespan::{Lifespan, StartupError};
use super::middleware::Middleware;
use super::notification_handler::NotificationHandlers;
use super::registry::{RegistrationError, Registry};
use super::task_hook::TaskHook;
use super::{bus, single_use, subscription_budget};
use crate::state_scope::StateScope;
use crate::sync::{read, write};

/// An MCP server. Cheap to clone: clones share the registry, so adding a tool through any
/// clone is seen by all (and announced to `subscriptions/listen` streams).
#[derive(Clone)]
pub struct Server {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.name)
            .finish_non_exhaustive()
    }
}

pub(super) struct Inner {
    pub(super) info: Implementation,
    pub(super) info_raw: Arc<RawValue>,
    pub(super) instructions: Option<String>,
    pub(super) registry: RwLock<Arc<Registry>>,
    pub(super) completion: Option<Arc<dyn CompletionHandler>>,
    pub(super) methods: HashMap<String, Arc<dyn MethodHandler>>,
    pub(super) caching: Caching,
    pub(super) sealing: Option<RequestStateSecurity>,
    /// Single-use rounds (`ServerBuilder::single_use`).
    pub(super) single_use: Option<single_use::ReplayProtection>,
    pub(super) declare: Declared,
    pub(super) logging: bool,
    pub(super) page_size: Option<usize>,
    /// The one era served (`ServerBuilder::only_era`); `None`: both.
    pub(super) only_era: Option<modelctx_types::Era>,
    pub(super) supported_versions: Vec<ProtocolVersion>,
    pub(super) changes: broadcast::Sender<Change>,
    /// The change bus to other instances (`ServerBuilder::bus`); `None`: this process only.
    pub(super) bus: Option<Arc<bus::Bus>>,
    pub(super) shutdown: CancellationToken,
    /// What listen streams and handshake-era subscriptions hold (`ServerBuilder::subscription_limits`).
    pub(super) subscriptions: Arc<subscription_budget::SubscriptionBudget>,
    pub(super) principal: Option<PrincipalHook>,
    /// The middleware chain, outermost first (`ServerBuilder::middleware`).
    pub(super) middleware: Vec<Arc<dyn Middleware>>,
    /// What the extensions advertise (`capabilities.extensions`; `None`: no extension).
    pub(super) extensions: Option<modelctx_types::Extra>,
    /// The core hooks of the tasks extension, when it is served (`ServerBuilder::tasks`, an
    /// extension contributing them): asked where a task can be involved.
    pub(super) tasks: Option<Arc<dyn TaskHook>>,
    /// What the application does with client notifications (`ServerBuilder::on_notification`).
    pub(super) notification_handlers: Option<NotificationHandlers>,
    /// The start-up and shutdown hooks (`ServerBuilder::on_startup`, `on_shutdown`).
    pub(super) lifespan: Lifespan,
}

/// Finds the principal a request is made by, on any transport (see
/// [`ServerBuilder::bind_principal`](super::ServerBuilder::bind_principal)).
pub type PrincipalHook =
    Arc<dyn Fn(&RequestContext) -> Option<modelctx_seal::Principal> + Send + Sync>;

/// What a server keeps beyond one request (`None`: nothing of that kind), and who shares it
/// ([`Server::kept_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeptState {
    /// The keys that open sealed `requestState`: [`StateScope::Process`] when generated at
    /// start-up, [`StateScope::Shared`] when supplied (the environment, a secret store).
    pub sealing_keys: Option<StateScope>,
    /// The tasks extension's store (its own scope: memory, SQLite, Redis).
    pub tasks: Option<StateScope>,
    /// The replay guard of single-use rounds (its own scope).
    pub replay_guard: Option<StateScope>,
    /// Whether a change bus carries changes to other instances' listen streams (a server set up
    /// for long-lived `subscriptions/listen` streams).
    pub change_bus: bool,
}

/// Capabilities declared even when nothing of that kind is registered yet.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Declared {
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
}

impl Server {
    /// Runs the start-up hooks ([`ServerBuilder::on_startup`](super::ServerBuilder::on_startup))
    /// if they have not run: the transports call it before serving; call it yourself before
    /// serving a router of [`http_router`](Self::http_router) that you mount. Runs once; every
    /// caller gets the one result.
    ///
    /// # Errors
    /// The first hook's failure.
    pub async fn start(&self) -> Result<(), StartupError> {
        self.inner.lifespan.start().await
    }

    /// Runs the shutdown hooks ([`ServerBuilder::on_shutdown`](super::ServerBuilder::on_shutdown))
    /// once: `serve_stdio` and `serve_http` call it when they end; a server you serve otherwise
    /// is stopped by you.
    pub async fn stop(&self) {
        self.inner.lifespan.stop().await;
    }

    /// Hands a client notification to the application's handler for its method, if any (the
    /// transports call this after doing their own part).
    pub(crate) fn deliver_notification(
        &self,
        method: &str,
        params: Option<&str>,
        era: modelctx_types::Era,
        principal: Option<modelctx_seal::Principal>,
    ) {
        if let Some(handlers) = &self.inner.notification_handlers {
            handlers.deliver(method, params, era, principal);
        }
    }

    /// The server's name and version.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The protocol revisions this server speaks on the stateless path.
    pub fn supported_versions(&self) -> &[ProtocolVersion] {
        &self.inner.supported_versions
    }

    /// The one era this server serves, when [`ServerBuilder::only_era`](super::ServerBuilder::only_era)
    /// chose one; `None`: both.
    pub fn only_era(&self) -> Option<modelctx_types::Era> {
        self.inner.only_era
    }

    /// The request-state policy, when sealing is on.
    pub fn request_state_security(&self) -> Option<&RequestStateSecurity> {
        self.inner.sealing.as_ref()
    }

    /// What this server keeps beyond one request, and who shares each: what a deployment over
    /// many instances — a fleet behind a round-robin proxy, a serverless function — checks
    /// before it serves, since state kept by one process is lost to the requests that land on
    /// another (the `lambda` feature's function refuses it at start-up).
    pub fn kept_state(&self) -> KeptState {
        let process_or_shared = |local: bool| {
            if local {
                StateScope::Process
            } else {
                StateScope::Shared
            }
        };
        KeptState {
            sealing_keys: self
                .inner
                .sealing
                .as_ref()
                .map(|policy| process_or_shared(policy.is_ephemeral())),
            tasks: self.inner.tasks.as_ref().map(|hook| hook.store_scope()),
            replay_guard: self
                .inner
                .single_use
                .as_ref()
                .map(|protection| protection.guard.scope()),
            change_bus: self.inner.bus.is_some(),
        }
    }

    /// The principal the HTTP layer authenticated (the auth layer's, or what other middleware
    /// put in the request extensions); [`ServerBuilder::bind_principal`](super::ServerBuilder::bind_principal) may replace it.
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
            ctx.set_principal(principal, || self.clone());
        }
    }

    pub(super) fn registry(&self) -> Arc<Registry> {
        Arc::clone(&read(&self.inner.registry))
    }

    pub(super) fn update(
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
        // Every extension given to the builder, with its settings (the tasks extension's: `{}`).
        capabilities.extensions.clone_from(&self.inner.extensions);
        capabilities
    }

    /// Adds a tool at run time and announces `notifications/tools/list_changed`.
    ///
    /// # Errors
    /// As [`ServerBuilder::tool`](super::ServerBuilder::tool) would at build time.
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
    /// With a [change bus](super::ServerBuilder::bus), the change also reaches the listen streams of
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

impl RequestContext {
    /// The server serving this request (to announce list changes from a handler, say).
    pub fn server(&self) -> &Server {
        self.server_any()
            .downcast_ref()
            .expect("a request context is made only for a `Server`")
    }
}
