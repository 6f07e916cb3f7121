//! Server extensions (SEP-2133): the one seam through which an opt-in bundle of behaviour —
//! the SDK's tasks extension, MCP Apps, a user's own — joins a server.
//!
//! An [`Extension`] names itself ([`ExtensionId`], checked against the grammar), says what it
//! advertises at `capabilities.extensions[id]` in `server/discover` and `initialize`, and
//! [contributes](Extension::contribute) a closed set of things: tools, resources and resource
//! templates, new request methods ([`MethodBinding`]: never a spec method, so an extension can
//! only add), and an optional `tools/call` interceptor. The server never hands itself to an
//! extension; the extension declares, and [`ServerBuilder::extension`](super::ServerBuilder::extension) applies it once, at
//! build time. So the handle holds nothing per extension but the advertised settings, and a
//! request that is no extension's costs nothing more: contributed tools and methods are
//! registry entries like any other, and an interceptor exists only when one is contributed.
//!
//! The tasks extension also needs the core where a task can be involved (a listen filter's
//! `taskIds`, the bus, the background sweep); those hooks (`task_hook::TaskHook`) are a
//! crate-private contribution, since their shapes are the tasks extension's own.
//!
//! ```
//! use modelctx::server::{RequestContext, Server};
//! use modelctx::server::extension::{Contributions, Extension, MethodBinding};
//! use modelctx::types::ExtensionId;
//! use serde_json::json;
//!
//! struct Clock;
//!
//! impl Extension for Clock {
//!     fn id(&self) -> ExtensionId {
//!         "com.example/clock".parse().expect("a valid id")
//!     }
//!     fn settings(&self) -> modelctx::types::Extra {
//!         json!({"resolutionMs": 1}).as_object().cloned().unwrap_or_default()
//!     }
//!     fn contribute(&self, contributions: &mut Contributions) {
//!         let now = MethodBinding::new("clock/now", |_ctx: RequestContext, _params: serde_json::Value| async {
//!             Ok::<_, modelctx::types::ErrorObject>(json!({"now": "12:00"}))
//!         });
//!         contributions.method(now.expect("not a spec method"));
//!     }
//! }
//!
//! let server = Server::builder("clock", "1.0.0").extension(Clock).build()?;
//! let advertised = server.capabilities().extensions.unwrap_or_default();
//! assert_eq!(advertised["com.example/clock"], json!({"resolutionMs": 1}));
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_types::methods::{MODERN_CLIENT_METHODS, REMOVED_IN_2026};
use modelctx_types::{
    ErrorObject, ExtensionId, Extra, Meta, ProtocolVersion, Resource, ResourceTemplate, Tool,
};
use serde_json::Value;

use super::context::RequestContext;
use super::handler::{MethodHandler, ResourceHandler, ResourceTemplateHandler, ToolHandler};
use super::middleware::{Middleware, Next, Reply, Request};
use super::registry::{RegistrationError, Registry};
use super::task_hook::TaskHook;

/// The most bytes an extension's settings may take as JSON. Settings are advertised on every
/// `server/discover` and `initialize`: a server that advertises megabytes makes every client
/// read them.
pub const MAX_SETTINGS_BYTES: usize = 16 * 1024;

/// An opt-in bundle of server behaviour (see the [module docs](self)). Every method but
/// [`id`](Self::id) has a default, so an extension overrides only what it needs.
pub trait Extension: Send + Sync + 'static {
    /// The identifier advertised under `capabilities.extensions`.
    fn id(&self) -> ExtensionId;

    /// The settings advertised at `capabilities.extensions[id]` (default: none, `{}`). Read once,
    /// when the extension is given to the builder; at most [`MAX_SETTINGS_BYTES`] as JSON.
    fn settings(&self) -> Extra {
        Extra::new()
    }

    /// Adds the extension's tools, resources, methods and interceptor (default: nothing, a
    /// purely advertised extension). Called once, when the extension is given to the builder.
    fn contribute(&self, contributions: &mut Contributions) {
        let _ = contributions;
    }
}

/// What an extension adds to a server, collected by [`Extension::contribute`] and applied by
/// [`ServerBuilder::extension`](super::ServerBuilder::extension).
#[derive(Default)]
pub struct Contributions {
    pub(super) tools: Vec<(Tool, Arc<dyn ToolHandler>)>,
    pub(super) resources: Vec<(Resource, Arc<dyn ResourceHandler>)>,
    pub(super) templates: Vec<(ResourceTemplate, Arc<dyn ResourceTemplateHandler>)>,
    pub(super) methods: Vec<MethodBinding>,
    pub(super) interceptors: Vec<Arc<dyn Middleware>>,
    pub(super) task_hook: Option<Arc<dyn TaskHook>>,
    pub(super) errors: Vec<RegistrationError>,
    pub(super) checks: Vec<BuildCheck>,
}

/// A check an extension runs when the server is built (see [`Contributions::check_at_build`]).
pub(super) type BuildCheck =
    Box<dyn FnOnce(&mut Registered<'_>) -> Result<(), RegistrationError> + Send>;

impl std::fmt::Debug for Contributions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contributions")
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("methods", &self.methods)
            .field("interceptors", &self.interceptors.len())
            .field("checks", &self.checks.len())
            .finish_non_exhaustive()
    }
}

impl Contributions {
    /// A tool (listed after the tools registered before the extension was given).
    pub fn tool(&mut self, tool: Tool, handler: impl ToolHandler) -> &mut Self {
        self.tools.push((tool, Arc::new(handler)));
        self
    }

    /// A static resource.
    pub fn resource(&mut self, resource: Resource, handler: impl ResourceHandler) -> &mut Self {
        self.resources.push((resource, Arc::new(handler)));
        self
    }

    /// A resource template (RFC 6570).
    pub fn resource_template(
        &mut self,
        template: ResourceTemplate,
        handler: impl ResourceTemplateHandler,
    ) -> &mut Self {
        self.templates.push((template, Arc::new(handler)));
        self
    }

    /// A new request method. A method already bound (by another extension, or by
    /// [`ServerBuilder::method`](super::ServerBuilder::method) before) makes `build` fail.
    pub fn method(&mut self, binding: MethodBinding) -> &mut Self {
        self.methods.push(binding);
        self
    }

    /// Wraps every `tools/call` in `interceptor` (other requests pass it by untouched): it sees
    /// the call and may answer it itself or pass it on through [`Next::run`]. Interceptors run
    /// in the server's middleware chain, after the middlewares added before the extension;
    /// a server with one pays for the chain on every request, as with any middleware.
    pub fn intercept_tool_calls(&mut self, interceptor: impl Middleware) -> &mut Self {
        self.interceptors.push(Arc::new(ToolCallsOnly(interceptor)));
        self
    }

    /// The core hooks of the tasks extension (crate-private: their shapes are its own).
    #[allow(
        dead_code,
        reason = "called by the tasks extension alone, a feature the core does not name"
    )]
    pub(crate) fn task_hook(&mut self, hook: Arc<dyn TaskHook>) -> &mut Self {
        self.task_hook = Some(hook);
        self
    }

    /// Makes `build` fail with `error` (an extension that cannot run).
    pub fn refuse(&mut self, error: RegistrationError) -> &mut Self {
        self.errors.push(error);
        self
    }

    /// Runs `check` when the server is built, over everything registered by then — by the
    /// builder and every extension, whatever the order they were given in — so that an
    /// extension can refuse what spans registrations (a tool naming a resource nobody
    /// registered) and complete its tools' `_meta` (see [`Registered::edit_tools`]). Its error
    /// fails `build`. Checks run in the order the extensions were given.
    pub fn check_at_build(
        &mut self,
        check: impl FnOnce(&mut Registered<'_>) -> Result<(), RegistrationError> + Send + 'static,
    ) -> &mut Self {
        self.checks.push(Box::new(check));
        self
    }
}

/// Everything registered on a server being built, as a [build check](Contributions::check_at_build)
/// sees it.
pub struct Registered<'a> {
    pub(super) registry: &'a mut Registry,
}

impl std::fmt::Debug for Registered<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("tools", &self.registry.tools.len())
            .field("resources", &self.registry.resources.len())
            .field("templates", &self.registry.templates.len())
            .finish()
    }
}

impl Registered<'_> {
    /// The tools, in listing order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.registry.tools.iter().map(|entry| &entry.tool)
    }

    /// The static resources.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.registry.resources.iter().map(|entry| &entry.resource)
    }

    /// The resource templates.
    pub fn resource_templates(&self) -> impl Iterator<Item = &ResourceTemplate> {
        self.registry.templates.iter().map(|entry| &entry.template)
    }

    /// Lets `edit` change each tool's `_meta` (nothing else: the name, schemas and headers are
    /// already checked and compiled). What `edit` returns as an error fails `build`.
    ///
    /// # Errors
    /// The first error `edit` returns.
    pub fn edit_tools(
        &mut self,
        mut edit: impl FnMut(&str, &mut Option<Meta>) -> Result<(), RegistrationError>,
    ) -> Result<(), RegistrationError> {
        for entry in &mut self.registry.tools {
            // The registry is the builder's own until `build` returns: nothing shares an entry.
            let Some(entry) = Arc::get_mut(entry) else {
                return Err(RegistrationError::Extension {
                    id: String::new(),
                    reason: format!("tool {:?} is shared while building", entry.tool.name),
                });
            };
            edit(&entry.tool.name, &mut entry.tool.meta)?;
        }
        Ok(())
    }
}

/// A middleware that sees `tools/call` only.
struct ToolCallsOnly<M>(M);

impl<M: Middleware> Middleware for ToolCallsOnly<M> {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        if request.method() == "tools/call" {
            self.0.handle(request, next)
        } else {
            next.run(request)
        }
    }
}

/// A request method an extension serves, e.g. `tasks/get` (SEP-2133's method contribution).
///
/// Additive only: [`MethodBinding::new`] refuses a method of the specification (`tools/list`,
/// `initialize`, …), which belongs to the server — to wrap one, use
/// [`Contributions::intercept_tool_calls`] or a middleware.
#[derive(Clone)]
pub struct MethodBinding {
    pub(super) name: String,
    pub(super) handler: Arc<dyn MethodHandler>,
}

impl std::fmt::Debug for MethodBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodBinding")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a [`MethodBinding`] cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidMethodBinding {
    /// The method is the specification's (any era): an extension may only add methods.
    #[error(
        "{0:?} is a method of the specification: an extension may only add methods (wrap \
         tools/call with an interceptor, anything else with a middleware)"
    )]
    SpecMethod(String),
    /// An empty name, or one with control characters.
    #[error("{0:?} is not a usable method name")]
    BadName(String),
    /// An empty set of protocol versions: the method could never be served.
    #[error("{0:?} is bound to no protocol version, so it could never be served")]
    NoVersions(String),
}

/// Whether `method` is one a client may send under the specification, in either era.
fn is_spec_method(method: &str) -> bool {
    MODERN_CLIENT_METHODS.contains(&method) || REMOVED_IN_2026.contains(&method)
}

impl MethodBinding {
    /// Serves `name` with `handler`, at every protocol version.
    ///
    /// # Errors
    /// `name` is a spec method, empty, or holds control characters.
    pub fn new(
        name: impl Into<String>,
        handler: impl MethodHandler,
    ) -> Result<Self, InvalidMethodBinding> {
        let name = name.into();
        if is_spec_method(&name) {
            return Err(InvalidMethodBinding::SpecMethod(name));
        }
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(InvalidMethodBinding::BadName(name));
        }
        Ok(Self {
            name,
            handler: Arc::new(handler),
        })
    }

    /// Serves the method only to requests of these protocol versions; others get `-32601`
    /// (method not found), as for a method the server does not have.
    ///
    /// # Errors
    /// `versions` is empty.
    pub fn versions(
        self,
        versions: impl IntoIterator<Item = ProtocolVersion>,
    ) -> Result<Self, InvalidMethodBinding> {
        let versions: HashSet<ProtocolVersion> = versions.into_iter().collect();
        if versions.is_empty() {
            return Err(InvalidMethodBinding::NoVersions(self.name));
        }
        let handler = VersionGated {
            name: self.name.clone(),
            versions,
            inner: self.handler,
        };
        Ok(Self {
            name: self.name,
            handler: Arc::new(handler),
        })
    }

    /// The method's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A method served at some protocol versions only.
struct VersionGated {
    name: String,
    versions: HashSet<ProtocolVersion>,
    inner: Arc<dyn MethodHandler>,
}

impl MethodHandler for VersionGated {
    fn handle(
        &self,
        ctx: RequestContext,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        if self.versions.contains(ctx.protocol_version()) {
            self.inner.handle(ctx, params)
        } else {
            let refused = ErrorObject::method_not_found(&self.name);
            Box::pin(async move { Err(refused) })
        }
    }
}

/// An extension's settings checked for size, or the error that refuses them.
pub(super) fn checked_settings(
    id: &ExtensionId,
    settings: Extra,
) -> Result<Extra, RegistrationError> {
    let bytes = serde_json::to_vec(&settings).map_or(usize::MAX, |json| json.len());
    if bytes > MAX_SETTINGS_BYTES {
        return Err(RegistrationError::Extension {
            id: id.to_string(),
            reason: format!(
                "its settings are {bytes} bytes of JSON, more than the {MAX_SETTINGS_BYTES} allowed"
            ),
        });
    }
    Ok(settings)
}
