//! MCP Apps on the server (`modelctx::server::apps`): what a client sees of a tool with UI and
//! its `ui://` resource in both eras, the extension advertised, the flat legacy key, the
//! refusals of `build`, `client_supports_apps`, and `#[tool(ui = …)]` on the high-level server.

use modelctx::client::{Client, Mode};
use modelctx::server::apps::{
    AppResource, Apps, UiResourceCsp, UiResourceMeta, UiToolMeta, UiVisibility,
    client_supports_apps,
};
use modelctx::server::{BuildError, McpServer, RegistrationError, RequestContext, Server};
use modelctx::tool;
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ExtensionId, Extra, Meta, Resource, ResourceContents,
    Tool,
};
use modelctx_test_support::client::connect_in_memory;
use serde_json::{Value, json};

const APP: &str = "ui://clock/app.html";
const HTML: &str = "<!doctype html><p id=time>12:00</p>";

fn clock_tool() -> Tool {
    Tool::new("clock", Tool::empty_input_schema())
}

/// Answers "apps" to a client that renders apps and "text" to the others.
async fn clock(ctx: RequestContext, _: CallToolRequestParams) -> CallToolResult {
    CallToolResult::text(if client_supports_apps(&ctx) {
        "apps"
    } else {
        "text"
    })
}

fn app_resource() -> AppResource {
    let csp = UiResourceCsp::default().with_connect_domains(["https://api.example.com".to_owned()]);
    let ui = UiResourceMeta::default()
        .with_csp(csp)
        .with_prefers_border(true);
    AppResource::html(APP, "Clock", HTML).ui(ui)
}

fn clock_apps() -> Apps {
    Apps::new().resource(app_resource()).tool(
        clock_tool(),
        UiToolMeta::new(APP).with_visibility(vec![UiVisibility::MODEL, UiVisibility::APP]),
        clock,
    )
}

fn json_of(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

fn apps_client(mode: Mode) -> modelctx::client::ClientBuilder {
    let settings: Extra = json!({"mimeTypes": ["text/html;profile=mcp-app"]})
        .as_object()
        .cloned()
        .unwrap();
    Client::builder().mode(mode).extension(
        ExtensionId::new("io.modelcontextprotocol/ui").unwrap(),
        settings,
    )
}

#[tokio::test]
async fn a_client_sees_the_tool_its_resource_and_the_extension_in_both_eras() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let server = Server::builder("clock", "1.0.0")
            .extension(clock_apps())
            .build()
            .unwrap();
        let advertised = server.capabilities().extensions.unwrap();
        assert_eq!(advertised["io.modelcontextprotocol/ui"], json!({}));
        let client = connect_in_memory(server, apps_client(mode.clone())).await;

        let tools = client.list_tools().await.unwrap();
        assert_eq!(
            json_of(&tools[0])["_meta"],
            json!({
                "ui": {"resourceUri": APP, "visibility": ["model", "app"]},
                "ui/resourceUri": APP
            }),
            "{mode:?}"
        );
        let resources = client.list_resources().await.unwrap();
        let listed = json_of(&resources[0]);
        assert_eq!(listed["mimeType"], "text/html;profile=mcp-app");
        let resource_ui = json!({
            "csp": {"connectDomains": ["https://api.example.com"]},
            "prefersBorder": true
        });
        assert_eq!(listed["_meta"]["ui"], resource_ui);

        let read = client.read_resource(APP).await.unwrap();
        let ResourceContents::Text(contents) = &read.contents[0] else {
            panic!("text contents: {read:?}");
        };
        assert_eq!(contents.text, HTML);
        assert_eq!(
            contents.mime_type.as_deref(),
            Some("text/html;profile=mcp-app")
        );
        assert_eq!(json_of(&contents.meta)["ui"], resource_ui);
    }
}

#[tokio::test]
async fn a_tool_degrades_to_text_for_a_client_without_apps_in_both_eras() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let build = || {
            Server::builder("clock", "1.0.0")
                .extension(clock_apps())
                .build()
                .unwrap()
        };
        let with_apps = connect_in_memory(build(), apps_client(mode.clone())).await;
        let answer = with_apps.call_tool("clock", json!({})).await.unwrap();
        assert_eq!(json_of(&answer)["content"][0]["text"], "apps", "{mode:?}");

        let plain = connect_in_memory(build(), Client::builder().mode(mode.clone())).await;
        let answer = plain.call_tool("clock", json!({})).await.unwrap();
        assert_eq!(json_of(&answer)["content"][0]["text"], "text", "{mode:?}");

        // The extension advertised without the app's MIME type is not enough.
        let other = Client::builder().mode(mode.clone()).extension(
            ExtensionId::new("io.modelcontextprotocol/ui").unwrap(),
            json!({"mimeTypes": ["text/uri-list"]})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let other = connect_in_memory(build(), other).await;
        let answer = other.call_tool("clock", json!({})).await.unwrap();
        assert_eq!(json_of(&answer)["content"][0]["text"], "text", "{mode:?}");
    }
}

#[tokio::test]
async fn the_legacy_key_can_be_turned_off() {
    let server = Server::builder("clock", "1.0.0")
        .extension(clock_apps().legacy_key(false))
        .build()
        .unwrap();
    let client = connect_in_memory(server, Client::builder()).await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(
        json_of(&tools[0])["_meta"],
        json!({"ui": {"resourceUri": APP, "visibility": ["model", "app"]}})
    );
}

/// A tool whose `_meta` is set by hand: `(its _meta, the refusal)`.
fn hand_set_cases() -> Vec<(Value, String)> {
    let apps = "extension \"io.modelcontextprotocol/ui\": tool \"hand\"";
    vec![
        (
            json!({"ui": {"resourceUri": "https://evil.example/app.html"}}),
            format!(
                "{apps}: _meta.ui.resourceUri \"https://evil.example/app.html\" is not a ui:// URI"
            ),
        ),
        (
            json!({"ui": {"resourceUri": "ui://nowhere/app.html"}}),
            format!(
                "{apps}: _meta.ui.resourceUri \"ui://nowhere/app.html\" names no registered \
                 resource (register it with Apps::resource, or as a static resource served as \
                 text/html;profile=mcp-app)"
            ),
        ),
        (
            json!({"ui": {"resourceUri": "ui://plain/page.html"}}),
            format!(
                "{apps}: its UI resource \"ui://plain/page.html\" is served as text/html, not \
                 text/html;profile=mcp-app (hosts render no other)"
            ),
        ),
        (
            json!({"ui": {"resourceUri": APP}, "ui/resourceUri": "ui://other/app.html"}),
            format!(
                "{apps}: _meta[\"ui/resourceUri\"] is \"ui://other/app.html\" but \
                 _meta.ui.resourceUri is \"{APP}\"; set only _meta.ui (the flat key is written \
                 beside it)"
            ),
        ),
        (
            json!({"ui/resourceUri": APP}),
            format!(
                "{apps}: _meta[\"ui/resourceUri\"] is set without _meta.ui; name the resource in \
                 _meta.ui.resourceUri (the flat key is written beside it)"
            ),
        ),
        (
            json!({"ui": {"resourceUri": APP, "csp": {"connectDomains": []}}}),
            format!(
                "{apps}: _meta.ui.csp belongs on the UI resource's _meta.ui, not the tool's \
                 (hosts ignore it there)"
            ),
        ),
        (
            json!({"ui": {"resourceUri": APP, "visibility": []}}),
            format!(
                "{apps}: _meta.ui.visibility is empty, so neither the model nor the app could \
                 call it (omit it for [\"model\", \"app\"])"
            ),
        ),
        (
            json!({"ui": {"resourceUri": APP, "visibility": ["user"]}}),
            format!("{apps}: _meta.ui.visibility has \"user\"; it may hold \"model\" and \"app\""),
        ),
        (
            json!({"ui": "ui://clock/app.html"}),
            format!(
                "{apps}: _meta.ui is not MCP Apps tool metadata: invalid type: string \
                 \"ui://clock/app.html\", expected an object (UiToolMeta)"
            ),
        ),
    ]
}

#[test]
fn build_refuses_tools_whose_ui_metadata_is_wrong() {
    for (meta, expected) in hand_set_cases() {
        let mut tool = Tool::new("hand", Tool::empty_input_schema());
        let mut entries = Meta::new();
        for (key, value) in meta.as_object().unwrap() {
            entries.insert(key.clone(), value.clone());
        }
        tool.meta = Some(entries);
        let mut plain = Resource::new("ui://plain/page.html", "plain");
        plain.mime_type = Some("text/html".to_owned());
        // The tool is registered before the extension is given: the check sees it anyway.
        let error = Server::builder("hand", "1.0.0")
            .tool(tool, clock)
            .resource(plain, |_: RequestContext, _| async {
                Ok::<_, modelctx::types::ErrorObject>(modelctx::types::ReadResourceResult::new(
                    vec![],
                ))
            })
            .extension(Apps::new().resource(app_resource()))
            .build()
            .unwrap_err();
        assert_eq!(error.to_string(), expected, "{meta}");
    }
}

#[test]
fn build_refuses_a_non_ui_resource_and_ui_given_twice() {
    let error = Server::builder("x", "1.0.0")
        .extension(Apps::new().resource(AppResource::html("https://x.example/a", "a", HTML)))
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "extension \"io.modelcontextprotocol/ui\": app resource \"https://x.example/a\" is not a \
         ui:// URI"
    );

    let mut tool = clock_tool();
    let mut meta = Meta::new();
    meta.insert("ui", json!({"resourceUri": APP}));
    tool.meta = Some(meta);
    let error = Server::builder("x", "1.0.0")
        .extension(
            Apps::new()
                .resource(app_resource())
                .tool(tool, UiToolMeta::new(APP), clock),
        )
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "extension \"io.modelcontextprotocol/ui\": tool \"clock\": _meta[\"ui\"] is set by hand \
         and by Apps::tool; give the UI once"
    );
}

/// Shows the time in the clock app.
#[tool(ui = "ui://clock/app.html", visibility = "model, app")]
async fn show_clock() -> String {
    "12:00".to_owned()
}

/// Moves the clock's hands (the app's button).
#[tool(visibility = "app")]
async fn set_clock(time: String) -> String {
    time
}

#[tokio::test]
async fn the_tool_macro_sets_ui_and_the_server_serves_apps() {
    let server = McpServer::builder("clock", "1.0.0")
        .tool::<show_clock>()
        .tool::<set_clock>()
        .apps(Apps::new().resource(app_resource()))
        .build()
        .unwrap()
        .into_server();
    assert!(
        server
            .capabilities()
            .extensions
            .unwrap()
            .contains_key("io.modelcontextprotocol/ui")
    );
    let client = connect_in_memory(server, Client::builder()).await;
    let tools = client.list_tools().await.unwrap();
    let meta: Vec<Value> = tools.iter().map(|t| json_of(t)["_meta"].clone()).collect();
    assert_eq!(
        meta,
        [
            json!({"ui": {"resourceUri": APP, "visibility": ["model", "app"]}, "ui/resourceUri": APP}),
            json!({"ui": {"visibility": ["app"]}}),
        ]
    );
}

#[test]
fn a_macro_tool_naming_a_missing_resource_fails_the_build_without_apps_given() {
    let error = McpServer::builder("clock", "1.0.0")
        .tool::<show_clock>()
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::Registration(RegistrationError::Extension { id, .. }) if id == "io.modelcontextprotocol/ui"),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "extension \"io.modelcontextprotocol/ui\": tool \"show_clock\": _meta.ui.resourceUri \
         \"ui://clock/app.html\" names no registered resource (register it with \
         Apps::resource, or as a static resource served as text/html;profile=mcp-app)"
    );
}
