//! One `tracing` span per request the server serves, named and attributed after the
//! OpenTelemetry semantic conventions for MCP (gen-ai `mcp.md`, status Development), so that
//! `tracing-opentelemetry` exports it as the conventions' server span.
//!
//! The span's name in OpenTelemetry is `otel.name`: `{mcp.method.name} {target}` where the target
//! is the tool or prompt name; a resource URI goes into `mcp.resource.uri` but not into the name
//! (the conventions advise against high-cardinality names). `otel.kind` is `server`. On a JSON-RPC
//! error `error.type` and `rpc.response.status_code` carry the code and `otel.status_code` is
//! `ERROR`; a tool result with `isError: true` sets `error.type = "tool_error"` and the error status.
//!
//! Every value the peer chose (method, id, names, URI, version, error message) is recorded
//! through `span_fields::logged`: cut to 128 bytes and recorded as a string, which subscribers escape,
//! so a peer can neither make the span (and every log line printed in its context) long nor forge
//! a line with a newline.
//!
//! `mcp.method.name` is a method this server knows (`knows_method`) or `_OTHER`, as
//! OpenTelemetry records an unknown HTTP or RPC method, and so is the span's name: attributes
//! are what our metrics (`otel::OperationMetrics`) group by, and span-derived metrics (the
//! collector's `spanmetrics` connector, Tempo's and Jaeger's) group by the span's name, so a
//! peer inventing methods must mint no series in either. The made-up name stays readable in
//! `rpc.method_original`, the RPC conventions' attribute for exactly this (the MCP conventions
//! define none), which nothing groups by.
//!
//! A request of a multi-round call (`tools/call`, `prompts/get`, `resources/read`) records
//! `mcp.request_state.round`: 1 without `requestState`, `n + 1` for a retry whose sealed state
//! was sealed in round `n` (the `r` claim, inside the AEAD, so a client cannot choose it); a
//! retry with unsealed state (sealing off) has no round. With the `otel` feature every later
//! round also links to the first round's span (`otel::rounds`).
//!
//! Cost: the span is created through `tracing`'s macro, which without a subscriber interested
//! in the `modelctx::server` target yields a disabled span after checking the call site's
//! cached interest. Only an enabled span probes the params (target, `_meta`) and the reply.

use std::borrow::Cow;

use modelctx_types::{ProtocolVersion, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use tracing::Span;
use tracing::field::Empty;

use modelctx_types::methods::{MODERN_CLIENT_METHODS, REMOVED_IN_2026};

use super::Server;
use super::message::{Incoming, Reply, probe_meta};
use crate::span_fields::{logged, record_rpc_error, record_target, record_tool_result, target_of};

/// `mcp.method.name` of a method no server knows.
const OTHER_METHOD: &str = "_OTHER";

/// The span of one request, disabled (and free) when no subscriber wants it, and the method's
/// name on it (`mcp.method.name`), which [`record_request`] takes.
pub(crate) fn request_span<'a>(server: &Server, incoming: &Incoming<'a>) -> (Span, &'a str) {
    span_on(server, incoming, network_transport(incoming))
}

/// [`request_span`] with the `network.transport` given.
fn span_on<'a>(
    server: &Server,
    incoming: &Incoming<'a>,
    transport: &'static str,
) -> (Span, &'a str) {
    // The field values are computed only for an enabled span (the macro checks interest first),
    // so the plain path never looks the method up. The name found is kept: the span's name and
    // `rpc.method_original` follow from it without a second lookup, and a known method costs
    // what it did before made-up ones left the span's name.
    let mut name = OTHER_METHOD;
    let span = tracing::info_span!(
        target: "modelctx::server",
        "mcp.server.request",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_code = Empty,
        otel.status_message = Empty,
        mcp.method.name = {
            name = method_name(server, incoming.method);
            name
        },
        rpc.method_original = Empty,
        mcp.protocol.version = Empty,
        jsonrpc.request.id = logged(&id_text(&incoming.id)),
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        mcp.request_state.round = Empty,
        mcp.resource.uri = Empty,
        network.transport = transport,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    (span, name)
}

/// Whether `method` is a request this server serves in either era: the protocol's methods
/// (those 2026-07-28 removed included, which the handshake era still has) and the extension
/// methods registered with it. Anything else is a name the peer made up (`server::trace`
/// records it as `_OTHER`).
pub(crate) fn knows_method(server: &Server, method: &str) -> bool {
    MODERN_CLIENT_METHODS.contains(&method)
        || REMOVED_IN_2026.contains(&method)
        || server.inner.methods.contains_key(method)
}

/// `method` when this server knows it, else [`OTHER_METHOD`].
fn method_name<'a>(server: &Server, method: &'a str) -> &'a str {
    if knows_method(server, method) {
        logged(method)
    } else {
        OTHER_METHOD
    }
}

/// The id as the conventions write it: a string id as it is (no quotes), a number in decimal.
fn id_text(id: &RequestId) -> Cow<'_, str> {
    match id.as_str() {
        Some(text) => Cow::Borrowed(text),
        None => Cow::Owned(id.to_string()),
    }
}

/// `pipe` for stdio and the in-memory pipe, `tcp` for streamable HTTP.
fn network_transport(incoming: &Incoming<'_>) -> &'static str {
    #[cfg(feature = "http-server")]
    if incoming.http.is_some() {
        return "tcp";
    }
    let _ = incoming;
    "pipe"
}

/// Records what the request says about itself (an enabled span only); `name` is its
/// `mcp.method.name` ([`request_span`]).
pub(crate) fn record_request(span: &Span, name: &str, incoming: &Incoming<'_>) {
    if name == OTHER_METHOD {
        // What was sent, where nothing groups by it.
        span.record("rpc.method_original", logged(incoming.method));
    }
    let meta = probe_meta(incoming.params).ok().flatten();
    // With `otel`, a W3C trace context in `_meta` (SEP-414) becomes the span's parent: set
    // before the span is first entered, while its parent can still change.
    #[cfg(feature = "otel")]
    if let Some(meta) = &meta {
        crate::otel::adopt_parent(span, &meta.extra);
    }
    let version = match &incoming.handshake {
        Some(session) => Some(session.version.clone()),
        None => meta.and_then(|meta| meta.protocol_version),
    };
    if let Some(version) = version.as_ref().map(ProtocolVersion::as_str) {
        span.record("mcp.protocol.version", logged(version));
    }
    // Only known methods have a target: a made-up one names `_OTHER` and nothing else.
    let target = target_of(name, incoming.params);
    record_target(span, name, target.as_deref());
}

/// Records which round of its multi-round call a request is (an enabled span only; a no-op on a
/// disabled one).
pub(crate) fn record_round(span: &Span, round: u32) {
    if !span.is_disabled() {
        span.record("mcp.request_state.round", round);
    }
}

/// Records how the request ended, read back from the encoded reply (an enabled span only).
pub(crate) fn record_reply(span: &Span, reply: &Reply) {
    #[derive(Deserialize)]
    struct Response<'a> {
        #[serde(borrow)]
        error: Option<Error<'a>>,
        #[serde(borrow)]
        result: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Error<'a> {
        code: i64,
        #[serde(borrow)]
        message: Option<Cow<'a, str>>,
    }
    let Reply::Message { body, .. } = reply else {
        return;
    };
    let Ok(response) = serde_json::from_slice::<Response<'_>>(body) else {
        return;
    };
    if let Some(error) = response.error {
        record_rpc_error(span, error.code, error.message.as_deref());
        return;
    }
    if let Some(result) = response.result {
        record_tool_result(span, result);
    }
}

/// The span of an `initialize`, which the transports answer themselves (it opens the session,
/// so it never reaches `pipeline::dispatch`): made and recorded like every other
/// request's, its parent from `_meta` included, so a handshake-era client's trace shows it as
/// the Python SDK's does. `over_http`: it came over streamable HTTP (`network.transport` `tcp`).
pub(crate) fn initialize_span(
    server: &Server,
    id: &RequestId,
    method: &str,
    params: Option<&str>,
    over_http: bool,
) -> Span {
    let incoming = Incoming {
        id: id.clone(),
        method,
        params,
        typed: None,
        headers: None,
        principal: None,
        principal_bound: false,
        span: Span::none(),
        handshake: None,
        closing: None,
        #[cfg(feature = "http-server")]
        http: None,
    };
    let (span, name) = span_on(server, &incoming, if over_http { "tcp" } else { "pipe" });
    if !span.is_disabled() {
        record_request(&span, name, &incoming);
    }
    span
}

/// Records how an `initialize` ended: its reply and the version it opened the session with
/// (nothing when `span` is disabled).
pub(crate) fn record_initialize(span: &Span, reply: &Reply, version: Option<&ProtocolVersion>) {
    if span.is_disabled() {
        return;
    }
    if let Some(version) = version {
        span.record("mcp.protocol.version", logged(version.as_str()));
    }
    record_reply(span, reply);
}
