//! What a transport carries, whatever its kind: the request to send (its method, its
//! serialized params, the HTTP headers it mirrors), how it is written on the wire, and the
//! reply it brings back. Below the transports, which all use it, and the `Transport` that
//! picks one of them (`mod.rs`).

use serde_json::value::RawValue;

use modelctx_types::{ErrorObject, RequestId};

/// One request to send.
#[derive(Debug)]
pub(crate) struct Outgoing {
    /// The JSON-RPC method.
    pub(crate) method: &'static str,
    /// The params, already serialized by serde_json (the envelope is written around them per
    /// attempt, with a fresh id each time).
    pub(crate) params: String,
    /// What HTTP mirrors into headers (unused by the line transports).
    #[cfg_attr(not(feature = "http-client"), allow(dead_code))]
    pub(crate) headers: HttpHeaders,
    /// Whether abandoning the request sends `notifications/cancelled` (never for `initialize`).
    pub(crate) cancellable: bool,
    /// The request's span (`client/trace.rs`), where the transport records the id it picks;
    /// disabled when nobody listens.
    pub(crate) span: tracing::Span,
}

/// The HTTP headers a request carries besides the fixed ones.
#[derive(Debug, Default, Clone)]
#[cfg_attr(not(feature = "http-client"), allow(dead_code))]
pub(crate) struct HttpHeaders {
    /// `MCP-Protocol-Version`; `None` omits it (the handshake's `initialize`).
    pub(crate) protocol_version: Option<String>,
    /// Whether to send `Mcp-Method` / `Mcp-Name` (2026-07-28).
    pub(crate) routing: bool,
    /// The `Mcp-Name` value (unencoded), for `tools/call`, `prompts/get`, `resources/read`.
    pub(crate) name: Option<String>,
    /// `Mcp-Param-*` headers: lower-cased name and already-encoded value.
    pub(crate) params: Vec<(String, String)>,
}

/// Encodes a request around already-serialized params (valid JSON from serde_json), without
/// re-validating them. No trailing newline.
pub(crate) fn encode_request(id: &RequestId, method: &str, params: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(params.len() + 64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // Ids and method names are strings and integers: writing them into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(br#","method":"#);
    let _ = serde_json::to_writer(&mut out, method);
    out.extend_from_slice(br#","params":"#);
    out.extend_from_slice(params.as_bytes());
    out.push(b'}');
    out
}

/// The server's answer: the raw result, or its JSON-RPC error.
pub(crate) type Reply = Result<Box<RawValue>, ErrorObject>;

/// Which kind of transport a session runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A spawned server process, newline-delimited JSON on its stdin/stdout.
    Stdio,
    /// Newline-delimited JSON over caller-provided streams (e.g. an in-memory pipe).
    Io,
    /// Streamable HTTP.
    Http,
    /// The HTTP+SSE transport of 2024-11-05 (an event stream and a POST endpoint).
    Sse,
}
