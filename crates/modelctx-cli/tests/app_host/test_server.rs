//! The small server the security tests run in-process: a `show` tool whose app is
//! `test_app.html` (declaring one connect domain), tools of each visibility, a tool that asks,
//! and tools whose UI metadata a host must refuse — all with hand-set `_meta`, through the
//! low-level builder.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::server::Server;
use modelctx::server::http::HttpConfig;
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ElicitRequestParams, InputRequest, InputRequiredResult,
    Outcome, ReadResourceRequestParams, ReadResourceResult, Resource, Tool,
};
use serde_json::{Value, json};

/// The test app's document.
const TEST_APP: &str = include_str!("test_app.html");

/// The MIME type of an MCP App.
const APP: &str = "text/html;profile=mcp-app";

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("a tool")
}

/// A static resource whose single content is `content` (JSON), listed as `listing`.
fn resource(server: Server, listing: Value, content: Value) -> Server {
    let resource: Resource = serde_json::from_value(listing).unwrap();
    server
        .add_resource(resource, move |_ctx, _params: ReadResourceRequestParams| {
            let content = content.clone();
            async move {
                serde_json::from_value::<ReadResourceResult>(json!({"contents": [content]}))
                    .unwrap()
            }
        })
        .unwrap();
    server
}

/// The server; `connect_domain` is the one origin its app declares, and `secret_calls` counts
/// the calls of `secret`, which apps may not call.
pub(crate) fn server(connect_domain: &str, secret_calls: Arc<AtomicUsize>) -> Server {
    let greeting = json!({"type": "object", "properties": {"greeting": {"type": "string"}}});
    let server = Server::builder("test-app-server", "1.0.0")
        .tool(
            tool(json!({"name": "show", "inputSchema": greeting,
                "_meta": {"ui": {"resourceUri": "ui://test/app.html"}}})),
            |_ctx, params: CallToolRequestParams| async move {
                let greeting = params
                    .arguments
                    .and_then(|a| a.get("greeting").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                CallToolResult::text(format!("shown: {greeting}"))
            },
        )
        .tool(
            tool(json!({"name": "secret", "inputSchema": {"type": "object"},
                "_meta": {"ui": {"visibility": ["model"]}}})),
            move |_ctx, _params| {
                secret_calls.fetch_add(1, Ordering::SeqCst);
                async { CallToolResult::text("the secret") }
            },
        )
        .tool(
            tool(json!({"name": "refresh", "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": "ui://test/app.html", "visibility": ["app"]}}})),
            |_ctx, _params| async { CallToolResult::text("refreshed") },
        )
        .tool(
            tool(json!({"name": "confirm", "inputSchema": {"type": "object"}})),
            |_ctx, params: CallToolRequestParams| async move {
                let answer = params
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get("confirm"))
                    .and_then(|response| response.accepted());
                match answer {
                    Some(content) => Outcome::Complete(CallToolResult::text(format!(
                        "confirmed: {}",
                        content.get("ok").unwrap_or(&Value::Null)
                    ))),
                    None => {
                        let question: ElicitRequestParams =
                            serde_json::from_value(json!({"mode": "form",
                            "message": "Proceed with the app's request?",
                            "requestedSchema": {"type": "object",
                                "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}))
                            .unwrap();
                        Outcome::InputRequired(
                            InputRequiredResult::new()
                                .with_request("confirm", InputRequest::elicit(question)),
                        )
                    }
                }
            },
        )
        .tool(
            tool(json!({"name": "not_ui", "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": "https://evil.example/app.html"}}})),
            |_ctx, _params| async { CallToolResult::text("x") },
        )
        .tool(
            tool(
                json!({"name": "plain_html", "inputSchema": {"type": "object"},
                "_meta": {"ui/resourceUri": "ui://test/plain.html"}}),
            ),
            |_ctx, _params| async { CallToolResult::text("x") },
        )
        .tool(
            tool(
                json!({"name": "hostile_csp", "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": "ui://test/hostile.html"}}}),
            ),
            |_ctx, _params| async { CallToolResult::text("x") },
        )
        .build()
        .unwrap();
    let server = resource(
        server,
        json!({"uri": "ui://test/app.html", "name": "test app", "mimeType": APP}),
        json!({"uri": "ui://test/app.html", "mimeType": APP, "text": TEST_APP,
            "_meta": {"ui": {"csp": {"connectDomains": [connect_domain]}, "prefersBorder": true}}}),
    );
    let server = resource(
        server,
        json!({"uri": "ui://test/plain.html", "name": "plain"}),
        json!({"uri": "ui://test/plain.html", "mimeType": "text/html", "text": "<p>x</p>"}),
    );
    resource(
        server,
        json!({"uri": "ui://test/hostile.html", "name": "hostile", "mimeType": APP}),
        json!({"uri": "ui://test/hostile.html", "mimeType": APP, "text": "<p>x</p>",
            "_meta": {"ui": {"csp": {"connectDomains": ["https://x.example; script-src *"]}}}}),
    )
}

/// Serves `server` over streamable HTTP on 127.0.0.1; its MCP endpoint's URL.
pub(crate) async fn serve(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        server
            .serve_http_on(listener, HttpConfig::default(), std::future::pending())
            .await
    });
    url
}
