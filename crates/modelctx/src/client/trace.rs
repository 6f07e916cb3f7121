//! The client's `tracing` spans, named and attributed after the OpenTelemetry semantic
//! conventions for MCP like the server's (`server/trace.rs`), so that `tracing-opentelemetry`
//! exports them as the conventions' client spans.
//!
//! * **One span per request sent** (`mcp.client.request`, target `modelctx::client`,
//!   `otel.kind = "client"`): every round of a multi-round call, negotiation, listings, task
//!   polls. Named `{mcp.method.name} {target}` with `mcp.method.name`, `mcp.protocol.version`,
//!   `jsonrpc.request.id` (recorded by the transport, a re-issued request's last id),
//!   `gen_ai.tool.name` / `gen_ai.prompt.name`, `gen_ai.operation.name`, `mcp.resource.uri`,
//!   `network.transport`, and on failure `error.type` (the JSON-RPC code and
//!   `rpc.response.status_code`, `tool_error` for `isError`, or the class of a local failure).
//!   With the `otel` feature its context goes into the request's `_meta` (SEP-414).
//! * **One span per logical call** (`mcp.client.call`, `otel.kind = "internal"`) around the
//!   input-required loop of `tools/call`, `prompts/get` and `resources/read` (and the task a
//!   call may become): its rounds are its children, so a multi-round call is one subtree of one
//!   trace. Internal, not client: the conventions' client span is the request on the wire, and
//!   one client span inside another would count the call twice.
//!
//! Cost: without a subscriber interested in `modelctx::client` both spans are disabled after the
//! call site's cached interest check, and nothing is probed, formatted or injected.

use std::borrow::Cow;
use std::future::Future;

use modelctx_types::methods::CallTool;
use modelctx_types::{Method as _, ProtocolVersion};
use serde_json::value::RawValue;
use tracing::Span;
use tracing::field::Empty;

use super::error::ClientError;
use crate::span_fields::{
    logged, record_failure, record_rpc_error, record_target, record_tool_result, target_of,
};

/// The span of one request on the wire: disabled (and free) when no subscriber wants it.
/// `http`: streamable HTTP (`network.transport` `tcp`), else a process's pipes or caller streams
/// (`pipe`).
pub(crate) fn request_span(method: &'static str, http: bool) -> Span {
    tracing::info_span!(
        target: "modelctx::client",
        "mcp.client.request",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_message = Empty,
        mcp.method.name = method,
        mcp.protocol.version = Empty,
        jsonrpc.request.id = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        mcp.resource.uri = Empty,
        network.transport = if http { "tcp" } else { "pipe" },
        error.type = Empty,
        rpc.response.status_code = Empty,
    )
}

/// The span of one logical call (all its rounds): disabled when no subscriber wants it.
/// `target` (the tool or prompt name, the resource URI) is asked for only when it is enabled.
pub(crate) fn call_span(method: &'static str, target: impl FnOnce() -> Option<String>) -> Span {
    let span = tracing::info_span!(
        target: "modelctx::client",
        "mcp.client.call",
        otel.name = Empty,
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_message = Empty,
        mcp.method.name = method,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        mcp.resource.uri = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    if !span.is_disabled() {
        record_target(&span, method, target().as_deref());
    }
    span
}

/// Records the name and target of a request or call from its serialized params (an enabled
/// span only).
pub(crate) fn record_request(
    span: &Span,
    method: &str,
    params: &str,
    version: Option<&ProtocolVersion>,
) {
    if let Some(version) = version {
        span.record("mcp.protocol.version", version.as_str());
    }
    let target: Option<Cow<'_, str>> = target_of(method, Some(params));
    record_target(span, method, target.as_deref());
}

/// Records how a request ended: the raw reply, or the local failure (an enabled span only).
pub(crate) fn record_reply(
    span: &Span,
    method: &str,
    reply: &Result<Result<Box<RawValue>, modelctx_types::ErrorObject>, ClientError>,
) {
    match reply {
        Ok(Ok(result)) if method == CallTool::NAME => record_tool_result(span, result),
        Ok(Ok(_)) => {}
        Ok(Err(error)) => record_rpc_error(span, error.code.0.into(), Some(&error.message)),
        Err(error) => record_error(span, error),
    }
}

/// A failed request or call: a server's JSON-RPC error by its code, a local failure by its class.
fn record_error(span: &Span, error: &ClientError) {
    if let ClientError::Rpc(error) = error {
        record_rpc_error(span, error.code.0.into(), Some(&error.message));
        return;
    }
    let error_type = match error {
        ClientError::Timeout { .. } => "timeout",
        ClientError::Transport(_) | ClientError::HttpStatus { .. } => "transport",
        ClientError::InvalidResult(_) | ClientError::Protocol(_) => "protocol",
        ClientError::Refused(_) => "refused",
        ClientError::InvalidStructuredContent { .. } => "invalid_structured_content",
        ClientError::RoundsExceeded { .. }
        | ClientError::TooManyInputRequests { .. }
        | ClientError::SamplingBudgetExceeded { .. } => "limit_exceeded",
        ClientError::MissingCallback { .. } | ClientError::CallbackRefused { .. } => "input",
        _ => "_OTHER",
    };
    record_failure(span, error_type);
    span.record("otel.status_message", logged(&error.to_string()));
}

/// Runs one logical call (`call`, every round of it) in `span`, an enabled span from
/// [`call_span`] (callers box this, so that its state stays out of the plain call's future);
/// `tool_error` tells a result that is an error (`isError`).
pub(crate) async fn in_call_span<T>(
    span: Span,
    call: impl Future<Output = Result<T, ClientError>>,
    tool_error: impl FnOnce(&T) -> bool,
) -> Result<T, ClientError> {
    let outcome = tracing::Instrument::instrument(call, span.clone()).await;
    match &outcome {
        Ok(result) if tool_error(result) => record_failure(&span, "tool_error"),
        Ok(_) => {}
        Err(error) => record_error(&span, error),
    }
    outcome
}
