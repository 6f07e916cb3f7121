//! The 2026-07-28 request envelope, written by hand so that tests control every byte.

use modelctx::types::Method as _;
use modelctx::types::methods::{CallTool, GetPrompt, ReadResource};
use serde_json::{Value, json};

/// The protocol revision every request here speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The multi-round-trip fixture: round one asks for `confirm` and carries the state
/// `awaiting-confirmation` (sealed by the server); round two completes with
/// [`CONFIRMED_TEXT`].
pub const MRTR_TOOL: &str = "test_input_required_result_request_state";

/// The text of a completed [`MRTR_TOOL`] flow.
pub const CONFIRMED_TEXT: &str = "state-ok: confirmation received";

/// The one error every request-state failure answers (`modelctx_seal::WIRE_MESSAGE` and its reason).
pub fn invalid_request_state() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
}

/// `params._meta` with the two required envelope keys.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    })
}

/// A request with `_meta` added to `params` (which must be an object).
pub fn request(id: impl Into<Value>, method: &str, mut params: Value) -> Value {
    if let Some(map) = params.as_object_mut() {
        map.entry("_meta").or_insert_with(meta);
    }
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// A `tools/call` request.
pub fn call_tool(id: impl Into<Value>, name: &str, arguments: &Value) -> Value {
    request(
        id,
        CallTool::NAME,
        json!({"name": name, "arguments": arguments}),
    )
}

/// Round two of the [`MRTR_TOOL`] flow: the confirmation and the state echoed verbatim.
pub fn mrtr_round_two(id: impl Into<Value>, request_state: &str) -> Value {
    request(
        id,
        CallTool::NAME,
        json!({
            "name": MRTR_TOOL,
            "arguments": {},
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            "requestState": request_state,
        }),
    )
}

/// The headers a 2026-07-28 HTTP request carries (`Mcp-Name` only for the methods that have a
/// target). Values are sent as given, so tests can also send wrong ones.
pub fn http_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        (
            "MCP-Protocol-Version".to_owned(),
            PROTOCOL_VERSION.to_owned(),
        ),
        ("Mcp-Method".to_owned(), method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    headers
}

/// The headers for a request body, read from its `method` and `params.name` / `params.uri`.
pub fn headers_for(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().unwrap_or(CallTool::NAME);
    let name = match method {
        CallTool::NAME | GetPrompt::NAME => body["params"]["name"].as_str(),
        ReadResource::NAME => body["params"]["uri"].as_str(),
        _ => None,
    };
    let name = match (method, name) {
        (CallTool::NAME | GetPrompt::NAME | ReadResource::NAME, None) => Some("unknown"),
        (_, name) => name,
    };
    http_headers(method, name)
}
