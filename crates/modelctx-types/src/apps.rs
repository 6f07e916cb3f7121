//! MCP Apps (`io.modelcontextprotocol/ui`, stable 2026-01-26): the metadata a server puts on a
//! tool (`_meta.ui`: which `ui://` resource shows it, who may call it) and on a UI resource
//! (`_meta.ui`: the domains its sandbox may reach, the permissions it asks for). The names
//! follow the extension's `spec.types.ts` (`McpUiToolMeta`, `McpUiResourceMeta`,
//! `McpUiResourceCsp`, `McpUiResourcePermissions`, `McpUiClientCapabilities`).

use crate::Extra;

/// The extension's identifier, advertised under `capabilities.extensions` by both sides.
pub const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an app's HTML document (`text/html;profile=mcp-app`); hosts render a
/// `ui://` resource under no other.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The scheme of a UI resource's URI.
pub const UI_SCHEME: &str = "ui://";

/// The `_meta` key of a tool's or resource's UI metadata.
pub const UI_META_KEY: &str = "ui";

/// The flat key older hosts (VS Code, Goose) read a tool's UI resource from,
/// `_meta["ui/resourceUri"]`, beside `_meta.ui.resourceUri`.
pub const LEGACY_RESOURCE_URI_KEY: &str = "ui/resourceUri";

open_str! {
    /// Who may call a tool with UI (`McpUiToolVisibility`). An open set: unknown values are
    /// kept (a server refuses them at build; see `modelctx::server::apps`).
    pub struct UiVisibility {
        /// The model sees the tool in `tools/list` and may call it.
        const MODEL = "model";
        /// The app may call the tool through its host (`tools/call` over `postMessage`).
        const APP = "app";
    }
}

wire_struct! {
    /// A tool's `_meta.ui` (`McpUiToolMeta`).
    #[derive(Default)]
    pub struct UiToolMeta {
        @own new;
        /// The `ui://` resource that shows the tool's result.
        opt "resourceUri" => resource_uri: String,
        /// Who may call the tool; absent means `["model", "app"]`.
        opt "visibility" => visibility: Vec<UiVisibility>,
    }
}

impl UiToolMeta {
    /// Metadata naming `resource_uri`, visibility left to the default (`["model", "app"]`).
    pub fn new(resource_uri: impl Into<String>) -> Self {
        Self {
            resource_uri: Some(resource_uri.into()),
            ..Self::default()
        }
    }

    /// Whether `who` may call the tool (the default visibility includes both).
    pub fn visible_to(&self, who: &UiVisibility) -> bool {
        self.visibility.as_ref().is_none_or(|v| v.contains(who))
    }
}

wire_struct! {
    /// The domains an app's sandbox may reach (`McpUiResourceCsp`); each list absent or empty
    /// means none. A host builds its Content-Security-Policy from these and nothing else.
    #[derive(Default)]
    pub struct UiResourceCsp {
        /// Origins for `fetch`, XHR and WebSockets (`connect-src`).
        opt "connectDomains" => connect_domains: Vec<String>,
        /// Origins for scripts, styles, images, fonts and media.
        opt "resourceDomains" => resource_domains: Vec<String>,
        /// Origins for nested frames (`frame-src`).
        opt "frameDomains" => frame_domains: Vec<String>,
        /// Allowed base URIs (`base-uri`; absent: the document's own).
        opt "baseUriDomains" => base_uri_domains: Vec<String>,
    }
}

wire_struct! {
    /// Browser permissions an app asks for (`McpUiResourcePermissions`); a host may grant them
    /// (the iframe's `allow`), and an app must not assume it did.
    #[derive(Default)]
    pub struct UiResourcePermissions {
        /// The camera.
        opt "camera" => camera: Extra,
        /// The microphone.
        opt "microphone" => microphone: Extra,
        /// Geolocation.
        opt "geolocation" => geolocation: Extra,
        /// Writing to the clipboard.
        opt "clipboardWrite" => clipboard_write: Extra,
    }
}

wire_struct! {
    /// A UI resource's `_meta.ui` (`McpUiResourceMeta`), on its `resources/list` entry and on the
    /// content item `resources/read` returns (hosts read the latter first).
    #[derive(Default)]
    pub struct UiResourceMeta {
        /// The domains its sandbox may reach.
        opt "csp" => csp: UiResourceCsp,
        /// The permissions it asks for.
        opt "permissions" => permissions: UiResourcePermissions,
        /// A dedicated origin for the sandbox, in a host's own format.
        opt "domain" => domain: String,
        /// Whether the app wants the host to draw a border and background.
        opt "prefersBorder" => prefers_border: bool,
    }
}

wire_struct! {
    /// What a client (a host) advertises at `capabilities.extensions["io.modelcontextprotocol/ui"]`
    /// (`McpUiClientCapabilities`).
    #[derive(Default)]
    pub struct UiClientCapabilities {
        /// The UI MIME types it renders; must include [`APP_MIME_TYPE`] for apps.
        opt "mimeTypes" => mime_types: Vec<String>,
    }
}

impl UiClientCapabilities {
    /// What a host that renders MCP Apps advertises: `{"mimeTypes": ["text/html;profile=mcp-app"]}`.
    pub fn html_apps() -> Self {
        Self {
            mime_types: Some(vec![APP_MIME_TYPE.to_owned()]),
            ..Self::default()
        }
    }

    /// Whether the client renders MCP Apps' HTML.
    pub fn renders_apps(&self) -> bool {
        self.mime_types
            .as_ref()
            .is_some_and(|types| types.iter().any(|t| t == APP_MIME_TYPE))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_meta_reads_and_writes_the_spec_names() {
        let meta: UiToolMeta = serde_json::from_value(json!({
            "resourceUri": "ui://clock/app.html",
            "visibility": ["app"],
            "futureMember": 1
        }))
        .unwrap();
        assert_eq!(meta.resource_uri.as_deref(), Some("ui://clock/app.html"));
        assert!(meta.visible_to(&UiVisibility::APP));
        assert!(!meta.visible_to(&UiVisibility::MODEL));
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"resourceUri": "ui://clock/app.html", "visibility": ["app"], "futureMember": 1})
        );
        assert!(UiToolMeta::new("ui://x").visible_to(&UiVisibility::MODEL));
    }

    #[test]
    fn resource_meta_reads_and_writes_the_spec_names() {
        let wire = json!({
            "csp": {
                "connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://cdn.example.com"],
                "frameDomains": ["https://www.youtube.com"],
                "baseUriDomains": ["https://cdn.example.com"]
            },
            "permissions": {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}},
            "domain": "a904794854a047f6.claudemcpcontent.com",
            "prefersBorder": true
        });
        let meta: UiResourceMeta = serde_json::from_value(wire.clone()).unwrap();
        let csp = meta.csp.as_ref().unwrap();
        assert_eq!(
            csp.connect_domains.as_ref().unwrap()[0],
            "https://api.example.com"
        );
        assert!(meta.permissions.as_ref().unwrap().clipboard_write.is_some());
        assert_eq!(meta.prefers_border, Some(true));
        assert_eq!(serde_json::to_value(&meta).unwrap(), wire);
    }

    #[test]
    fn a_client_renders_apps_when_it_lists_the_mime_type() {
        assert!(UiClientCapabilities::html_apps().renders_apps());
        let other: UiClientCapabilities =
            serde_json::from_value(json!({"mimeTypes": ["text/html"]})).unwrap();
        assert!(!other.renders_apps());
        assert!(!UiClientCapabilities::default().renders_apps());
    }
}
