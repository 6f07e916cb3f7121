//! The demo server's MCP App: a region picker. `pick_region` shows the regions; a host that
//! renders MCP Apps (`mcp app`, Claude, VS Code…) shows them as buttons in
//! `ui://demo/region-picker.html`, and a button calls `choose_region` — a tool only the app may
//! call (`visibility = "app"`) — back through the host. Other clients get the same regions as
//! text.

use modelctx::server::Context;
use modelctx::server::apps::{AppResource, Apps, UiResourceMeta, client_supports_apps};
use modelctx::tool;
use modelctx::types::CallToolResult;
use serde_json::json;

/// The regions the demo knows (its `provision` tool asks for one; the picker shows them).
pub const REGIONS: [&str; 4] = ["eu-west-1", "eu-central-1", "us-east-1", "ap-southeast-2"];

/// The picker's document.
pub const REGION_PICKER: &str = "ui://demo/region-picker.html";

/// The picker: one HTML page, its script and style inline (the host's CSP allows inline code
/// and nothing from elsewhere, and the picker needs nothing else).
const PAGE: &str = include_str!("demo_app.html");

/// Shows the regions a database can live in (as a picker in hosts that render MCP Apps).
#[tool(ui = "ui://demo/region-picker.html", read_only, idempotent)]
pub async fn pick_region(ctx: Context) -> CallToolResult {
    let list = REGIONS.join(", ");
    let text = if client_supports_apps(ctx.request_context()) {
        format!("The regions: {list}. Pick one in the region picker.")
    } else {
        format!("The regions: {list}. Name one when provision asks where the database lives.")
    };
    let mut result = CallToolResult::text(text);
    result.structured_content = Some(json!({ "regions": REGIONS }));
    result
}

/// Chooses a region (the region picker's buttons; the app alone calls it).
#[tool(visibility = "app", idempotent)]
pub async fn choose_region(
    /// One of the regions `pick_region` lists.
    region: String,
) -> Result<CallToolResult, String> {
    if !REGIONS.contains(&region.as_str()) {
        return Err(format!(
            "{region:?} is not a region; choose one of {}",
            REGIONS.join(", ")
        ));
    }
    let mut result = CallToolResult::text(format!("Chose {region}."));
    result.structured_content = Some(json!({ "region": region }));
    Ok(result)
}

/// The MCP Apps extension with the picker's document.
pub fn apps() -> Apps {
    let picker = AppResource::html(REGION_PICKER, "region-picker", PAGE)
        .title("Region picker")
        .description("Buttons for the regions pick_region lists; a click calls choose_region.")
        .ui(UiResourceMeta::default().with_prefers_border(true));
    Apps::new().resource(picker)
}

#[cfg(test)]
mod tests {
    use modelctx::client::{Client, Mode};
    use modelctx::types::{ExtensionId, ResourceContents};
    use serde_json::json;

    use super::*;

    async fn connect(mode: Mode, apps: bool) -> Client {
        let server = crate::demo::server(None).unwrap().into_server();
        let pipe = modelctx::memory::pipe();
        tokio::spawn(async move {
            server
                .serve_io(pipe.server.reader, pipe.server.writer)
                .await
        });
        let mut builder = Client::builder().mode(mode);
        if apps {
            let settings = json!({"mimeTypes": ["text/html;profile=mcp-app"]});
            builder = builder.extension(
                ExtensionId::new("io.modelcontextprotocol/ui").unwrap(),
                settings.as_object().cloned().unwrap(),
            );
        }
        builder
            .connect_io(pipe.client.reader, pipe.client.writer)
            .await
            .unwrap()
    }

    fn text(result: &CallToolResult) -> String {
        serde_json::to_value(result).unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[tokio::test]
    async fn the_picker_is_served_and_degrades_to_text_in_both_eras() {
        for mode in [Mode::Auto, Mode::Handshake] {
            let host = connect(mode.clone(), true).await;
            let tools = host.list_tools().await.unwrap();
            let pick = tools.iter().find(|t| t.name == "pick_region").unwrap();
            let meta = serde_json::to_value(&pick.meta).unwrap();
            assert_eq!(meta["ui"]["resourceUri"], REGION_PICKER);
            assert_eq!(meta["ui/resourceUri"], REGION_PICKER);
            let choose = tools.iter().find(|t| t.name == "choose_region").unwrap();
            let meta = serde_json::to_value(&choose.meta).unwrap();
            assert_eq!(meta["ui"]["visibility"], json!(["app"]));
            let read = host.read_resource(REGION_PICKER).await.unwrap();
            let ResourceContents::Text(page) = &read.contents[0] else {
                panic!("{read:?}");
            };
            assert_eq!(page.mime_type.as_deref(), Some("text/html;profile=mcp-app"));
            assert!(page.text.contains("choose_region"));
            let shown = host.call_tool("pick_region", json!({})).await.unwrap();
            assert!(text(&shown).ends_with("Pick one in the region picker."));
            assert_eq!(shown.structured_content.unwrap()["regions"], json!(REGIONS));

            let plain = connect(mode.clone(), false).await;
            let shown = plain.call_tool("pick_region", json!({})).await.unwrap();
            assert!(text(&shown).ends_with("when provision asks where the database lives."));
            let chosen = plain
                .call_tool("choose_region", json!({"region": "us-east-1"}))
                .await
                .unwrap();
            assert_eq!(text(&chosen), "Chose us-east-1.");
            let refused = plain
                .call_tool("choose_region", json!({"region": "mars-1"}))
                .await
                .unwrap();
            assert_eq!(refused.is_error, Some(true));
        }
    }
}
