//! MCP Apps on the server (`io.modelcontextprotocol/ui`, stable 2026-01-26), on the
//! [extension seam](super::extension): a tool names a `ui://` resource in `_meta.ui`, the
//! resource is an HTML document (`text/html;profile=mcp-app`) a host renders in a sandboxed
//! iframe, and the app talks to the server through the host.
//!
//! [`Apps`] is the extension: it advertises `capabilities.extensions["io.modelcontextprotocol/ui"]`,
//! registers app resources ([`AppResource`]: the MIME type and `_meta.ui` set for you) and tools
//! with UI ([`Apps::tool`]), and checks at `build` every tool of the server with `_meta.ui`,
//! however it was registered (`#[tool(ui = "ui://…")]`, [`Apps::tool`], or `_meta` set by hand):
//!
//! * the URI is a `ui://` one, and names a resource registered on the server, served as
//!   `text/html;profile=mcp-app`;
//! * `_meta.ui` is a `McpUiToolMeta` (`resourceUri`, `visibility` of `"model"` and `"app"`, not
//!   empty), with no `csp` or `permissions` (those belong on the resource);
//! * the flat key older hosts read, `_meta["ui/resourceUri"]`, is not set alone nor to another
//!   URI. It is written beside `_meta.ui.resourceUri` unless [`Apps::legacy_key`] turns it off.
//!
//! An app is an extension, so a tool must still answer clients that show no UI:
//! [`client_supports_apps`] says whether this request's client renders apps.
//!
//! ```
//! use modelctx::server::apps::{AppResource, Apps, UiToolMeta, UiVisibility, client_supports_apps};
//! use modelctx::server::{RequestContext, Server};
//! use modelctx::types::{CallToolRequestParams, CallToolResult, Tool};
//!
//! let clock = Tool::new("clock", Tool::empty_input_schema());
//! let apps = Apps::new()
//!     .resource(AppResource::html("ui://clock/app.html", "Clock", "<!doctype html><p>12:00</p>"))
//!     .tool(clock, UiToolMeta::new("ui://clock/app.html"), |ctx: RequestContext, _: CallToolRequestParams| async move {
//!         let text = if client_supports_apps(&ctx) { "12:00 (see the clock)" } else { "12:00" };
//!         CallToolResult::text(text)
//!     });
//! let server = Server::builder("clock", "1.0.0").extension(apps).build()?;
//! assert!(server.capabilities().extensions.unwrap_or_default().contains_key("io.modelcontextprotocol/ui"));
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use modelctx_types::apps::{
    APPS_EXTENSION, LEGACY_RESOURCE_URI_KEY, UI_SCHEME, UiClientCapabilities,
};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ErrorObject, ExtensionId, Meta, Outcome,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, Tool,
};
use serde_json::Value;

pub use modelctx_types::apps::{
    APP_MIME_TYPE, UI_META_KEY, UiResourceCsp, UiResourceMeta, UiResourcePermissions, UiToolMeta,
    UiVisibility,
};

use super::context::RequestContext;
use super::extension::{Contributions, Extension, Registered};
use super::handler::{BoxFuture, ToolHandler};
use super::registry::RegistrationError;

/// Whether the client of this request renders MCP Apps: it advertised
/// `io.modelcontextprotocol/ui` with `text/html;profile=mcp-app` among its `mimeTypes` — on this
/// request's `_meta` (2026-07-28) or at `initialize` (2025-11-25). A tool with UI answers the
/// others with text that stands alone.
pub fn client_supports_apps(ctx: &RequestContext) -> bool {
    ctx.client_capabilities()
        .extensions
        .as_ref()
        .and_then(|extensions| extensions.get(APPS_EXTENSION))
        .and_then(|settings| serde_json::from_value::<UiClientCapabilities>(settings.clone()).ok())
        .is_some_and(|settings| settings.renders_apps())
}

/// Whether `meta` (a tool's) says anything of MCP Apps: `_meta.ui` or the flat key.
#[cfg(feature = "macros")]
pub(crate) fn names_ui(meta: &Meta) -> bool {
    meta.get(UI_META_KEY).is_some() || meta.get(LEGACY_RESOURCE_URI_KEY).is_some()
}

/// An app's HTML document as a `ui://` resource: served as `text/html;profile=mcp-app`, with
/// its `_meta.ui` (the domains it reaches, the permissions it asks for) on the `resources/list`
/// entry and on the content item of `resources/read`.
#[derive(Debug, Clone)]
pub struct AppResource {
    resource: Resource,
    html: Arc<str>,
    ui: Option<UiResourceMeta>,
}

impl AppResource {
    /// The document `html` at `uri` (a `ui://` URI; `build` refuses another), listed as `name`.
    pub fn html(
        uri: impl Into<String>,
        name: impl Into<String>,
        html: impl Into<Arc<str>>,
    ) -> Self {
        let mut resource = Resource::new(uri, name);
        resource.mime_type = Some(APP_MIME_TYPE.to_owned());
        Self {
            resource,
            html: html.into(),
            ui: None,
        }
    }

    /// A human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// What the app is for.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// Its `_meta.ui`: the sandbox's domains (`csp`), `permissions`, `domain`, `prefersBorder`.
    #[must_use]
    pub fn ui(mut self, ui: UiResourceMeta) -> Self {
        self.ui = Some(ui);
        self
    }

    /// The `resources/list` entry.
    pub fn resource(&self) -> Resource {
        let mut resource = self.resource.clone();
        resource.meta = self.meta();
        resource
    }

    fn meta(&self) -> Option<Meta> {
        let ui = serde_json::to_value(self.ui.as_ref()?).ok()?;
        let mut meta = Meta::new();
        meta.insert(UI_META_KEY, ui);
        Some(meta)
    }

    /// What `resources/read` returns.
    fn contents(&self) -> ReadResourceResult {
        let contents = ResourceContents::text(
            self.resource.uri.clone(),
            Some(APP_MIME_TYPE.to_owned()),
            &*self.html,
        );
        let contents = match contents {
            ResourceContents::Text(mut text) => {
                text.meta = self.meta();
                ResourceContents::Text(text)
            }
            other => other,
        };
        ReadResourceResult::new(vec![contents])
    }
}

/// The MCP Apps extension (see the [module docs](self)).
#[derive(Clone)]
pub struct Apps {
    legacy_key: bool,
    resources: Vec<AppResource>,
    tools: Vec<(Tool, UiToolMeta, Arc<dyn ToolHandler>)>,
}

impl std::fmt::Debug for Apps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Apps")
            .field("legacy_key", &self.legacy_key)
            .field("resources", &self.resources)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl Default for Apps {
    fn default() -> Self {
        Self::new()
    }
}

impl Apps {
    /// The extension with no resources or tools of its own (it still checks the server's), the
    /// legacy key on.
    pub fn new() -> Self {
        Self {
            legacy_key: true,
            resources: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Whether to write the flat key `_meta["ui/resourceUri"]` beside `_meta.ui.resourceUri` on
    /// every tool with UI (default: on). Hosts of the spec read `_meta.ui`; VS Code and Goose
    /// read the flat key first. Off, a key set by hand is still checked, never removed.
    #[must_use]
    pub fn legacy_key(mut self, on: bool) -> Self {
        self.legacy_key = on;
        self
    }

    /// Registers an app's document.
    #[must_use]
    pub fn resource(mut self, resource: AppResource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Registers `tool` with `ui` as its `_meta.ui` (`build` refuses a tool whose `_meta`
    /// already has `ui` or the flat key: the two would disagree).
    #[must_use]
    pub fn tool(mut self, tool: Tool, ui: UiToolMeta, handler: impl ToolHandler) -> Self {
        self.tools.push((tool, ui, Arc::new(handler)));
        self
    }
}

impl Extension for Apps {
    fn id(&self) -> ExtensionId {
        ExtensionId::new(APPS_EXTENSION).unwrap_or_else(|_| unreachable!("the spec's identifier"))
    }

    fn contribute(&self, contributions: &mut Contributions) {
        for app in &self.resources {
            let resource = app.resource();
            if !resource.uri.starts_with(UI_SCHEME) {
                contributions.refuse(refusal(format!(
                    "app resource {:?} is not a ui:// URI",
                    resource.uri
                )));
                continue;
            }
            let app = app.clone();
            contributions.resource(
                resource,
                move |_: RequestContext, _: ReadResourceRequestParams| {
                    let contents = app.contents();
                    async move { Ok::<_, ErrorObject>(contents) }
                },
            );
        }
        for (tool, ui, handler) in &self.tools {
            let mut tool = tool.clone();
            let meta = tool.meta.get_or_insert_with(Meta::new);
            if let Some(key) = [UI_META_KEY, LEGACY_RESOURCE_URI_KEY]
                .into_iter()
                .find(|key| meta.get(key).is_some())
            {
                contributions.refuse(refusal(format!(
                    "tool {:?}: _meta[{key:?}] is set by hand and by Apps::tool; give the UI once",
                    tool.name
                )));
                continue;
            }
            match serde_json::to_value(ui) {
                Ok(ui) => {
                    meta.insert(UI_META_KEY, ui);
                }
                Err(error) => {
                    contributions.refuse(refusal(format!("tool {:?}: {error}", tool.name)));
                    continue;
                }
            }
            contributions.tool(tool, Shared(Arc::clone(handler)));
        }
        let legacy_key = self.legacy_key;
        contributions.check_at_build(move |registered| check_tools(registered, legacy_key));
    }
}

/// A tool handler held by the extension (which may be contributed to several servers).
struct Shared(Arc<dyn ToolHandler>);

impl ToolHandler for Shared {
    fn call(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<CallToolResult>, ErrorObject>> {
        self.0.call(ctx, params)
    }
}

fn refusal(reason: String) -> RegistrationError {
    RegistrationError::Extension {
        id: APPS_EXTENSION.to_owned(),
        reason,
    }
}

/// Checks every tool's UI metadata against the registered resources and writes the flat key.
fn check_tools(registered: &mut Registered<'_>, legacy_key: bool) -> Result<(), RegistrationError> {
    let resources: HashMap<String, Option<String>> = registered
        .resources()
        .map(|r| (r.uri.clone(), r.mime_type.clone()))
        .collect();
    registered.edit_tools(|name, meta| {
        let Some(meta) = meta else { return Ok(()) };
        let legacy = meta.get(LEGACY_RESOURCE_URI_KEY).cloned();
        let Some(ui) = meta.get(UI_META_KEY) else {
            return match legacy {
                Some(_) => Err(refusal(format!(
                    "tool {name:?}: _meta[\"ui/resourceUri\"] is set without _meta.ui; name the \
                     resource in _meta.ui.resourceUri (the flat key is written beside it)"
                ))),
                None => Ok(()),
            };
        };
        let ui = checked_tool_ui(name, ui)?;
        let Some(uri) = ui.resource_uri else {
            return match legacy {
                Some(_) => Err(refusal(format!(
                    "tool {name:?}: _meta[\"ui/resourceUri\"] is set but _meta.ui has no resourceUri"
                ))),
                None => Ok(()),
            };
        };
        check_resource(name, &uri, &resources)?;
        match legacy {
            Some(Value::String(flat)) if flat == uri => {}
            Some(other) => {
                return Err(refusal(format!(
                    "tool {name:?}: _meta[\"ui/resourceUri\"] is {other} but _meta.ui.resourceUri \
                     is {uri:?}; set only _meta.ui (the flat key is written beside it)"
                )));
            }
            None if legacy_key => {
                meta.insert(LEGACY_RESOURCE_URI_KEY, Value::String(uri));
            }
            None => {}
        }
        Ok(())
    })
}

/// A tool's `_meta.ui` decoded, or the refusal naming what is wrong with it.
fn checked_tool_ui(name: &str, ui: &Value) -> Result<UiToolMeta, RegistrationError> {
    let ui: UiToolMeta = serde_json::from_value(ui.clone()).map_err(|error| {
        refusal(format!(
            "tool {name:?}: _meta.ui is not MCP Apps tool metadata: {error}"
        ))
    })?;
    if let Some(key) = ["csp", "permissions"]
        .into_iter()
        .find(|key| ui.extra.contains_key(*key))
    {
        return Err(refusal(format!(
            "tool {name:?}: _meta.ui.{key} belongs on the UI resource's _meta.ui, not the tool's \
             (hosts ignore it there)"
        )));
    }
    if let Some(visibility) = &ui.visibility {
        if visibility.is_empty() {
            return Err(refusal(format!(
                "tool {name:?}: _meta.ui.visibility is empty, so neither the model nor the app \
                 could call it (omit it for [\"model\", \"app\"])"
            )));
        }
        if let Some(unknown) = visibility.iter().find(|v| !v.is_known()) {
            return Err(refusal(format!(
                "tool {name:?}: _meta.ui.visibility has {:?}; it may hold \"model\" and \"app\"",
                unknown.as_str()
            )));
        }
    }
    Ok(ui)
}

/// Refuses a UI resource URI that is not `ui://`, not registered, or not served as an app.
fn check_resource(
    name: &str,
    uri: &str,
    resources: &HashMap<String, Option<String>>,
) -> Result<(), RegistrationError> {
    if !uri.starts_with(UI_SCHEME) {
        return Err(refusal(format!(
            "tool {name:?}: _meta.ui.resourceUri {uri:?} is not a ui:// URI"
        )));
    }
    match resources.get(uri) {
        None => Err(refusal(format!(
            "tool {name:?}: _meta.ui.resourceUri {uri:?} names no registered resource (register \
             it with Apps::resource, or as a static resource served as {APP_MIME_TYPE})"
        ))),
        Some(Some(mime)) if mime == APP_MIME_TYPE => Ok(()),
        Some(mime) => Err(refusal(format!(
            "tool {name:?}: its UI resource {uri:?} is served as {}, not {APP_MIME_TYPE} (hosts \
             render no other)",
            mime.as_deref().unwrap_or("no MIME type")
        ))),
    }
}
