//! Fixtures only the 2025-11-25 scenarios call: tools that log through the session level and ask
//! the client mid-call through the back-channel.

use modelctx::server::{RequestContext, ServerBuilder};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, ElicitRequestFormParams,
    ErrorObject, LoggingLevel, SamplingMessage,
};
use serde_json::{Value, json};

use super::tools::tool;

fn argument(params: &CallToolRequestParams, name: &str) -> String {
    params
        .arguments
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn form(message: &str, schema: Value) -> Result<ElicitRequestFormParams, ErrorObject> {
    let schema =
        serde_json::from_value(schema).map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(ElicitRequestFormParams::new(message, schema))
}

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            tool("test_tool_with_logging", "Logs three messages while it runs.", json!({"type":"object","properties":{}})),
            |ctx: RequestContext, _| async move {
                for (i, message) in ["Tool execution started", "Tool processing data", "Tool execution completed"].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                    ctx.log(LoggingLevel::Info, None, json!(message)).await;
                }
                CallToolResult::text("Tool with logging executed successfully")
            },
        )
        .tool(
            tool("test_sampling", "Asks the client's model (handshake era).", json!({"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]})),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(argument(&params, "prompt"))], 100);
                let answer = ctx.create_message(&request).await?;
                let text = answer.content.as_slice().iter().find_map(|c| c.as_text()).unwrap_or_default().to_owned();
                Ok::<_, ErrorObject>(CallToolResult::text(format!("LLM response: {text}")))
            },
        )
        .tool(
            tool("test_elicitation", "Asks the user (handshake era).", json!({"type":"object","properties":{"message":{"type":"string"}},"required":["message"]})),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                // The reference requires `response`, but the suite's client answers
                // {username, email}; the SDK refuses content that breaks the form it sent, so
                // the field stays optional here.
                let request = form(&argument(&params, "message"), json!({"type":"object","properties":{"response":{"type":"string"}}}))?;
                let answer = ctx.elicit(request).await?;
                Ok::<_, ErrorObject>(CallToolResult::text(format!(
                    "User response: action={:?}, content={}",
                    answer.action,
                    serde_json::to_string(&answer.content).unwrap_or_default()
                )))
            },
        )
        .tool(
            tool("test_elicitation_sep1034_defaults", "Asks with default values (SEP-1034).", json!({"type":"object","properties":{}})),
            |ctx: RequestContext, _| async move {
                let request = form("Please provide user information", json!({"type":"object","properties":{
                    "name": {"type":"string","title":"Name","default":"John Doe"},
                    "age": {"type":"integer","title":"Age","default":30},
                    "score": {"type":"number","title":"Score","default":95.5},
                    "status": {"type":"string","title":"Status","enum":["active","inactive","pending"],"default":"active"},
                    "verified": {"type":"boolean","title":"Verified","default":true}
                }}))?;
                let answer = ctx.elicit(request).await?;
                Ok::<_, ErrorObject>(CallToolResult::text(format!("Elicitation completed: action={:?}", answer.action)))
            },
        )
        .tool(
            tool("test_elicitation_sep1330_enums", "Asks with every enum form (SEP-1330).", json!({"type":"object","properties":{}})),
            |ctx: RequestContext, _| async move {
                let request = form("Please select options", json!({"type":"object","properties":{
                    "untitledSingle": {"type":"string","enum":["option1","option2","option3"]},
                    "titledSingle": {"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
                    "legacyEnum": {"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
                    "untitledMulti": {"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
                    "titledMulti": {"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}
                }}))?;
                let answer = ctx.elicit(request).await?;
                Ok::<_, ErrorObject>(CallToolResult::text(format!("Elicitation completed: action={:?}", answer.action)))
            },
        )
        .tool(
            tool("test_reconnection", "Completes at once (SSE polling is not implemented).", json!({"type":"object","properties":{}})),
            |_, _| async { CallToolResult::text("Reconnection test completed") },
        )
}
