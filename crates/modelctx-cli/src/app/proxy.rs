//! What an app asks that takes time — a tool call or a resource read on the server, a link to
//! open — run beside the session, each ending in the JSON-RPC answer the app gets.
//!
//! The app's calls go through `mcp`'s own client, the one the tool was called with: a server
//! that asks a question mid-call (elicitation, sampling, roots) has it asked in the terminal as
//! `mcp call` asks it. Only tools the server listed, and whose `_meta.ui.visibility` includes
//! `"app"` (the default), may be called: the others are the model's alone, and an app calling
//! them is refused before anything reaches the server. A link is opened only with the user's
//! consent, by the browser opener that opens nothing but http(s) URLs.

use std::sync::Arc;

use modelctx::client::auth::open_in_browser;
use modelctx::client::{Client, ClientError};
use modelctx::types::{CallToolRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value};

use crate::app::ui_resource::visible_to_apps;
use crate::ask::Asker;
use crate::safe_text::line;

/// JSON-RPC: the method does not exist.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: invalid params.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: internal error.
const INTERNAL_ERROR: i64 = -32603;
/// The protocol's implementation-defined refusal (`ui/open-link` denied, a policy violation).
pub(crate) const REFUSED: i64 = -32000;

/// A JSON-RPC error for the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// How a piece of work ends: the result, or an error.
pub(crate) type Answer = Result<Value, Failure>;

/// The server's error, or the client's, as the app sees it.
fn failure(error: ClientError) -> Failure {
    match error {
        ClientError::Rpc(object) => Failure::new(i64::from(object.code.0), object.message),
        other => Failure::new(INTERNAL_ERROR, other.to_string()),
    }
}

/// Checks an app's `tools/call`: the tool is one `tools` lists, visible to apps. Returns the
/// request to send.
pub(crate) fn app_tool_call(
    tools: &[Value],
    params: &Map<String, Value>,
) -> Result<CallToolRequestParams, Failure> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(Failure::new(INVALID_PARAMS, "tools/call needs a tool name"));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            return Err(Failure::new(INVALID_PARAMS, "arguments must be an object"));
        }
    };
    let Some(tool) = tools
        .iter()
        .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
    else {
        return Err(Failure::new(
            INVALID_PARAMS,
            format!("the server lists no tool {name:?}"),
        ));
    };
    if !visible_to_apps(tool) {
        return Err(Failure::new(
            REFUSED,
            format!("tool {name:?} is not visible to apps (its _meta.ui.visibility lacks \"app\")"),
        ));
    }
    Ok(CallToolRequestParams::new(name.to_owned(), Some(arguments)))
}

/// Calls the tool on the server for the app.
pub(crate) async fn call_tool(client: Client, params: CallToolRequestParams) -> Answer {
    Box::pin(client.call_tool_with(params, modelctx::client::RequestOptions::new()))
        .await
        .map(|result| serde_json::to_value(result).unwrap_or(Value::Null))
        .map_err(failure)
}

/// Reads a resource on the server for the app.
pub(crate) async fn read_resource(client: Client, uri: String) -> Answer {
    Box::pin(client.read_resource_with(
        ReadResourceRequestParams::new(uri),
        modelctx::client::RequestOptions::new(),
    ))
    .await
    .map(|result| serde_json::to_value(result).unwrap_or(Value::Null))
    .map_err(failure)
}

/// The URL of an app's `ui/open-link`, if it is an http(s) URL a browser can open.
pub(crate) fn link(params: &Map<String, Value>) -> Result<url::Url, Failure> {
    let text = params
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match url::Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url),
        _ => Err(Failure::new(
            INVALID_PARAMS,
            "Invalid URL: only http and https links are opened",
        )),
    }
}

/// Asks the user whether to open `url` (the app's link), and opens it if they say yes.
pub(crate) async fn open_link(asker: Arc<Asker>, url: url::Url) -> Answer {
    if !asker.consent_to_open_link(url.as_str()).await {
        return Err(Failure::new(REFUSED, "Link opening denied by user"));
    }
    match open_in_browser(&url) {
        Ok(()) => Ok(Value::Object(Map::new())),
        Err(error) => {
            eprintln!("cannot open a browser: {}", line(&error.to_string()));
            Err(Failure::new(REFUSED, "the link could not be opened"))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_app_calls_only_listed_tools_visible_to_apps() {
        let tools = vec![
            json!({"name": "get-time", "_meta": {"ui": {"resourceUri": "ui://t"}}}),
            json!({"name": "refresh", "_meta": {"ui": {"visibility": ["app"]}}}),
            json!({"name": "delete_all", "_meta": {"ui": {"visibility": ["model"]}}}),
        ];
        let params = |value: Value| value.as_object().unwrap().clone();
        let call = app_tool_call(&tools, &params(json!({"name": "get-time"}))).unwrap();
        assert_eq!(call.name, "get-time");
        assert!(
            app_tool_call(
                &tools,
                &params(json!({"name": "refresh", "arguments": {"a": 1}}))
            )
            .is_ok()
        );
        let refused = app_tool_call(&tools, &params(json!({"name": "delete_all"}))).unwrap_err();
        assert_eq!(refused.code, REFUSED);
        assert!(
            refused.message.contains("not visible to apps"),
            "{refused:?}"
        );
        let unknown = app_tool_call(&tools, &params(json!({"name": "other"}))).unwrap_err();
        assert!(unknown.message.contains("lists no tool"), "{unknown:?}");
        assert!(app_tool_call(&tools, &params(json!({}))).is_err());
        assert!(
            app_tool_call(
                &tools,
                &params(json!({"name": "refresh", "arguments": [1]}))
            )
            .is_err()
        );
    }

    #[test]
    fn only_http_links_are_opened() {
        let params = |url: &str| json!({"url": url}).as_object().unwrap().clone();
        assert!(link(&params("https://modelcontextprotocol.io/")).is_ok());
        for bad in ["javascript:alert(1)", "file:///etc/passwd", "not a url", ""] {
            assert_eq!(
                link(&params(bad)).unwrap_err().code,
                INVALID_PARAMS,
                "{bad}"
            );
        }
    }
}
