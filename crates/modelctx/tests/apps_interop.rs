//! Interop of MCP Apps' server metadata with the TypeScript package
//! `@modelcontextprotocol/ext-apps` 2.0.4 (what the MCP Inspector and the TypeScript hosts
//! bundle), installed by `scripts/ext-apps.sh`:
//!
//! * every tool's `_meta.ui`, every UI resource's `_meta.ui` (list entry and content item) and
//!   the host's advertisement validate against the package's generated JSON Schema
//!   (`McpUiToolMeta` — which allows no member it does not name —, `McpUiResourceMeta`,
//!   `McpUiClientCapabilities`);
//! * its server helpers agree: `registerAppTool` given the same `_meta.ui` produces the same
//!   `_meta` as ours (the flat key included), its constants are ours, and `getUiCapability`
//!   reads our client capabilities (Node runs `apps_interop/ts_helpers.mjs`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use modelctx::client::Client;
use modelctx::server::apps::{
    APP_MIME_TYPE, AppResource, Apps, UiResourceCsp, UiResourceMeta, UiResourcePermissions,
    UiToolMeta, UiVisibility,
};
use modelctx::server::{McpServer, RequestContext};
use modelctx::tool;
use modelctx::types::apps::{APPS_EXTENSION, LEGACY_RESOURCE_URI_KEY, UiClientCapabilities};
use modelctx::types::{CallToolRequestParams, CallToolResult, ResourceContents, Tool};
use modelctx_test_support::client::connect_in_memory;
use serde_json::{Value, json};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The installed package's folder, installed once per test process (the tests run at once).
fn ext_apps() -> PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let output = Command::new("bash")
                .arg(repo_root().join("scripts/ext-apps.sh"))
                .stderr(Stdio::inherit())
                .output()
                .expect("run scripts/ext-apps.sh");
            assert!(output.status.success(), "scripts/ext-apps.sh failed");
            PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
        })
        .clone()
}

/// A validator of the package schema's definition `name`.
fn validator(schema: &Value, name: &str) -> jsonschema::Validator {
    let document = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": schema["$defs"],
        "$ref": format!("#/$defs/{name}"),
    });
    jsonschema::validator_for(&document).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn assert_valid(validator: &jsonschema::Validator, name: &str, value: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{name} refuses {value}: {errors:?}");
}

/// Shows the dashboard.
#[tool(ui = "ui://board/app.html")]
async fn board() -> String {
    "board".to_owned()
}

/// Refreshes the dashboard (its button).
#[tool(ui = "ui://board/app.html", visibility = "app")]
async fn refresh() -> String {
    "refreshed".to_owned()
}

/// Every member of a resource's `_meta.ui` set.
fn full_resource_ui() -> UiResourceMeta {
    let csp = UiResourceCsp::default()
        .with_connect_domains(["https://api.example.com".to_owned()])
        .with_resource_domains(["https://cdn.example.com".to_owned()])
        .with_frame_domains(["https://www.youtube.com".to_owned()])
        .with_base_uri_domains(["https://cdn.example.com".to_owned()]);
    let permissions = UiResourcePermissions::default()
        .with_camera(serde_json::Map::new())
        .with_microphone(serde_json::Map::new())
        .with_geolocation(serde_json::Map::new())
        .with_clipboard_write(serde_json::Map::new());
    UiResourceMeta::default()
        .with_csp(csp)
        .with_permissions(permissions)
        .with_domain("board.example.com")
        .with_prefers_border(false)
}

async fn listed_metadata() -> (Vec<Tool>, Vec<Value>) {
    let low_level = Tool::new("board_model_only", Tool::empty_input_schema());
    let apps = Apps::new()
        .resource(
            AppResource::html("ui://board/app.html", "board", "<!doctype html>")
                .ui(full_resource_ui()),
        )
        .tool(
            low_level,
            UiToolMeta::new("ui://board/app.html").with_visibility([UiVisibility::MODEL]),
            |_: RequestContext, _: CallToolRequestParams| async { CallToolResult::text("x") },
        );
    let server = McpServer::builder("board", "1.0.0")
        .tool::<board>()
        .tool::<refresh>()
        .apps(apps)
        .build()
        .unwrap()
        .into_server();
    let client = connect_in_memory(server, Client::builder()).await;
    let tools = client.list_tools().await.unwrap();
    let mut resource_metas = Vec::new();
    for resource in client.list_resources().await.unwrap() {
        assert_eq!(resource.mime_type.as_deref(), Some(APP_MIME_TYPE));
        resource_metas.push(serde_json::to_value(&resource.meta).unwrap()["ui"].clone());
        let read = client.read_resource(&resource.uri).await.unwrap();
        let ResourceContents::Text(contents) = &read.contents[0] else {
            panic!("{read:?}");
        };
        assert_eq!(contents.mime_type.as_deref(), Some(APP_MIME_TYPE));
        resource_metas.push(serde_json::to_value(&contents.meta).unwrap()["ui"].clone());
    }
    (tools, resource_metas)
}

#[tokio::test]
async fn our_metadata_validates_against_the_ext_apps_schema() {
    let folder = ext_apps();
    let schema: Value = serde_json::from_slice(
        &std::fs::read(folder.join("dist/src/generated/schema.json")).unwrap(),
    )
    .unwrap();
    let tool_meta = validator(&schema, "McpUiToolMeta");
    let resource_meta = validator(&schema, "McpUiResourceMeta");
    let client_caps = validator(&schema, "McpUiClientCapabilities");

    let (tools, resource_metas) = listed_metadata().await;
    assert_eq!(tools.len(), 3);
    for tool in &tools {
        let meta = serde_json::to_value(&tool.meta).unwrap();
        assert_valid(&tool_meta, "McpUiToolMeta", &meta["ui"]);
        assert_eq!(meta[LEGACY_RESOURCE_URI_KEY], meta["ui"]["resourceUri"]);
    }
    assert_eq!(resource_metas.len(), 2);
    for meta in &resource_metas {
        assert_eq!(meta, &serde_json::to_value(full_resource_ui()).unwrap());
        assert_valid(&resource_meta, "McpUiResourceMeta", meta);
    }
    let advertised = serde_json::to_value(UiClientCapabilities::html_apps()).unwrap();
    assert_valid(&client_caps, "McpUiClientCapabilities", &advertised);

    // The schema is strict where it should be: a tool's csp is refused (as our build does).
    assert!(!tool_meta.is_valid(&json!({"resourceUri": "ui://x", "csp": {}})));
    assert!(!tool_meta.is_valid(&json!({"resourceUri": "ui://x", "visibility": ["user"]})));
}

#[tokio::test]
async fn the_ext_apps_server_helpers_agree_with_ours() {
    let folder = ext_apps();
    let (tools, _) = listed_metadata().await;
    let declared: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let meta = serde_json::to_value(&tool.meta).unwrap();
            json!({"name": tool.name, "ui": meta["ui"]})
        })
        .collect();
    let input = json!({
        "tools": declared,
        "clientCapabilities": {"extensions": {APPS_EXTENSION: UiClientCapabilities::html_apps()}},
    });
    let mut node = Command::new("node")
        .arg(repo_root().join("crates/modelctx/tests/apps_interop/ts_helpers.mjs"))
        .arg(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run node (the system's, 20 or later)");
    node.stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = node.wait_with_output().unwrap();
    assert!(output.status.success(), "ts_helpers.mjs failed");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(seen["extensionId"], APPS_EXTENSION);
    assert_eq!(seen["mimeType"], APP_MIME_TYPE);
    assert_eq!(seen["legacyKey"], LEGACY_RESOURCE_URI_KEY);
    for tool in &tools {
        let ours = serde_json::to_value(&tool.meta).unwrap();
        assert_eq!(
            seen["registered"][&tool.name], ours,
            "registerAppTool's _meta for {}",
            tool.name
        );
    }
    assert_eq!(
        seen["uiCapability"],
        json!({"mimeTypes": ["text/html;profile=mcp-app"]})
    );
}
