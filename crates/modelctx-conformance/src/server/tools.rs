//! The plain tool fixtures (`tools-call-*`, `server-stateless`, the header scenarios).

use modelctx::server::{Change, RequestContext, ServerBuilder};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ContentBlock, ElicitAction,
    ElicitRequestFormParams, ErrorObject, InputRequest, InputRequiredResult, LoggingLevel, Outcome,
    ResourceContents, Tool,
};
use serde_json::json;

use super::object;

/// A 1×1 PNG.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

pub(crate) fn tool(name: &str, description: &str, schema: serde_json::Value) -> Tool {
    Tool::new(name, object(schema)).with_description(description)
}

fn no_args(name: &str, description: &str) -> Tool {
    tool(
        name,
        description,
        json!({"type": "object", "properties": {}}),
    )
}

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        // First in the list: the header scenario calls `tools[0]` with `{}`.
        .tool(no_args("test_simple_text", "Returns a simple text response."), |_, _| async {
            CallToolResult::text("This is a simple text response for testing.")
        })
        .tool(no_args("test_image_content", "Returns an image."), |_, _| async {
            CallToolResult::new(vec![ContentBlock::image(PNG, "image/png")])
        })
        .tool(no_args("test_audio_content", "Returns audio."), |_, _| async {
            CallToolResult::new(vec![ContentBlock::audio(WAV, "audio/wav")])
        })
        .tool(no_args("test_embedded_resource", "Returns an embedded resource."), |_, _| async {
            CallToolResult::new(vec![ContentBlock::resource(ResourceContents::text(
                "test://embedded-resource",
                Some("text/plain".into()),
                "This is an embedded resource content.",
            ))])
        })
        .tool(no_args("test_multiple_content_types", "Returns text, an image and a resource."), |_, _| async {
            CallToolResult::new(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::resource(ResourceContents::text(
                    "test://mixed-content-resource",
                    Some("application/json".into()),
                    r#"{"test": "data", "value": 123}"#,
                )),
            ])
        })
        .tool(no_args("test_error_handling", "Always fails (an isError result)."), |_, _| async {
            CallToolResult::error("Error executing tool test_error_handling")
        })
        .tool(no_args("test_tool_with_progress", "Reports progress 0, 50, 100."), progress)
        .tool(no_args("test_missing_capability", "Requires the sampling capability."), |ctx: RequestContext, _| async move {
            ctx.require_capabilities(&ClientCapabilities::new().with_sampling())?;
            Ok::<_, ErrorObject>(CallToolResult::text("The client declared sampling."))
        })
        .tool(no_args("test_trigger_tool_change", "Announces a tool list change."), |ctx: RequestContext, _| async move {
            ctx.server().notify(Change::ToolsListChanged);
            CallToolResult::text("tool list changed")
        })
        .tool(no_args("test_trigger_prompt_change", "Announces a prompt list change."), |ctx: RequestContext, _| async move {
            ctx.server().notify(Change::PromptsListChanged);
            CallToolResult::text("prompt list changed")
        })
        .tool(no_args("test_streaming_elicitation", "Asks for confirmation after a progress note."), streaming_elicitation)
        .tool(no_args("test_logging_tool", "Logs only when the request opted in."), |ctx: RequestContext, _| async move {
            ctx.log(LoggingLevel::Info, Some("conformance"), json!("logging tool ran")).await;
            CallToolResult::text("Logging tool executed.")
        })
        .tool(
            tool("test_x_mcp_header", "Echoes a region mirrored into Mcp-Param-Region.", json!({
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region", "default": "<none>"}},
            })),
            |_, params: CallToolRequestParams| async move {
                let region = params.arguments.as_ref().and_then(|a| a.get("region")).and_then(|r| r.as_str()).unwrap_or("<none>").to_owned();
                CallToolResult::text(format!("region: {region}"))
            },
        )
        .tool(
            tool("json_schema_2020_12_tool", "A tool whose schema uses JSON Schema 2020-12 keywords.", json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            })),
            |_, _| async { CallToolResult::text("JSON Schema 2020-12 tool executed.") },
        )
}

async fn progress(ctx: RequestContext, _params: CallToolRequestParams) -> CallToolResult {
    for (step, value) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        ctx.progress(
            value,
            Some(100.0),
            Some(&format!("Completed step {value} of 100")),
        )
        .await;
    }
    let token = ctx
        .progress_token()
        .map(ToString::to_string)
        .unwrap_or_default();
    CallToolResult::text(token.trim_matches('"').to_owned())
}

async fn streaming_elicitation(
    ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    if let Some(answer) = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("confirm"))
    {
        let confirmed = answer
            .as_elicit()
            .is_ok_and(|r| r.action == ElicitAction::Accept);
        return Ok(Outcome::Complete(CallToolResult::text(format!(
            "confirmed: {confirmed}"
        ))));
    }
    ctx.require_capabilities(&ClientCapabilities::new().with_elicitation_form())?;
    ctx.progress(1.0, Some(2.0), Some("about to ask")).await;
    let schema = serde_json::from_value(
        json!({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}),
    )
    .map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(InputRequiredResult::new()
        .with_request(
            "confirm",
            InputRequest::elicit(ElicitRequestFormParams::new("Please confirm", schema)),
        )
        .into())
}
