//! What the server's request span (`server/trace.rs`) and the client's (`client/trace.rs`)
//! record alike, after the OpenTelemetry semantic conventions for MCP: peer-chosen text cut to a
//! bound, a JSON-RPC error, a tool result with `isError`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use tracing::Span;

/// The most bytes of peer-chosen text (a resource URI, a problem quoting an answer, a span
/// field) that a log line carries.
const LOGGED_TEXT_MAX: usize = 128;

/// `text` cut to [`LOGGED_TEXT_MAX`] bytes (at a character boundary), for a log line. Record
/// it as a string field (`field = logged(text)`, not `%text`): subscribers escape string
/// fields, so a newline in it cannot forge a second line.
pub(crate) fn logged(text: &str) -> &str {
    let mut end = text.len().min(LOGGED_TEXT_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A JSON-RPC error reply: `error.type` and `rpc.response.status_code` carry the code, the
/// status is `ERROR` with the (bounded) message.
pub(crate) fn record_rpc_error(span: &Span, code: i64, message: Option<&str>) {
    let code = code.to_string();
    span.record("error.type", code.as_str());
    span.record("rpc.response.status_code", code.as_str());
    span.record("otel.status_code", "ERROR");
    if let Some(message) = message {
        span.record("otel.status_message", logged(message));
    }
}

/// A failure that is no JSON-RPC error (`error.type` names its class).
pub(crate) fn record_failure(span: &Span, error_type: &'static str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// A `tools/call` result with `isError: true` is an error, as the conventions and Python say.
pub(crate) fn record_tool_result(span: &Span, result: &RawValue) {
    #[derive(Deserialize)]
    struct ToolResult {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    if serde_json::from_str::<ToolResult>(result.get()).is_ok_and(|result| result.is_error) {
        record_failure(span, "tool_error");
    }
}

/// The tool or prompt name, or the resource URI, of the methods that have one (`params` is the
/// request's params object).
pub(crate) fn target_of<'a>(method: &str, params: Option<&'a str>) -> Option<Cow<'a, str>> {
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Addressed<'a> {
        #[serde(borrow)]
        uri: Option<Cow<'a, str>>,
    }
    let params = params?;
    match method {
        "tools/call" | "prompts/get" => serde_json::from_str::<Named<'a>>(params).ok()?.name,
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            serde_json::from_str::<Addressed<'a>>(params).ok()?.uri
        }
        _ => None,
    }
}

/// The span's name (`{mcp.method.name} {target}` for a tool or prompt, the method alone
/// otherwise: a resource URI is an attribute only, to keep names low-cardinality) and the
/// target's attribute; `gen_ai.operation.name` on tool calls.
pub(crate) fn record_target(span: &Span, method: &str, target: Option<&str>) {
    let method = logged(method);
    if method == "tools/call" {
        span.record("gen_ai.operation.name", "execute_tool");
    }
    let target = target.map(logged);
    let named = match (method, target) {
        ("tools/call", Some(tool)) => {
            span.record("gen_ai.tool.name", tool);
            Some(tool)
        }
        ("prompts/get", Some(prompt)) => {
            span.record("gen_ai.prompt.name", prompt);
            Some(prompt)
        }
        (_, Some(uri)) => {
            span.record("mcp.resource.uri", uri);
            None
        }
        (_, None) => None,
    };
    match named {
        Some(target) => span.record("otel.name", format!("{method} {target}")),
        None => span.record("otel.name", method),
    };
}
