//! The client's transports: newline-delimited JSON over a byte stream (a spawned server's
//! stdio, or an in-memory pipe) and streamable HTTP.
//!
//! A transport moves one request and brings back its reply; the session above it owns the
//! protocol (envelopes, negotiation, the input-required loop). Request ids are minted by the
//! transport, so a request that has to be re-issued (a broken HTTP stream) gets a new one.

pub(crate) mod engine;
#[cfg(feature = "http-client")]
pub(crate) mod http;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;

use serde_json::value::RawValue;

use modelctx_types::{ErrorObject, RequestId};

use super::error::ClientError;

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
}

/// A connected transport.
#[derive(Debug)]
pub(crate) enum Transport {
    /// Newline-delimited JSON (stdio child or caller streams).
    Lines(Box<engine::LineTransport>),
    /// Streamable HTTP.
    #[cfg(feature = "http-client")]
    Http(http::HttpTransport),
}

impl Transport {
    pub(crate) fn kind(&self) -> TransportKind {
        match self {
            Self::Lines(t) => t.kind(),
            #[cfg(feature = "http-client")]
            Self::Http(_) => TransportKind::Http,
        }
    }

    /// The clock of the OAuth client, whose paused time request bounds do not count.
    #[cfg(feature = "auth-client")]
    pub(crate) fn pause_clock(&self) -> Option<&crate::client::pause::PauseClock> {
        match self {
            Self::Lines(_) => None,
            Self::Http(t) => t.pause_clock(),
        }
    }

    /// Sends a request and waits for its reply.
    pub(crate) async fn request(&self, outgoing: &Outgoing) -> Result<Reply, ClientError> {
        match self {
            Self::Lines(t) => t.request(outgoing).await,
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.request(outgoing).await,
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), ClientError> {
        match self {
            Self::Lines(t) => t.notify(method, params),
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.notify(method, params).await,
        }
    }

    /// Called once the era is known (HTTP opens the optional handshake GET stream).
    pub(crate) async fn on_negotiated(&self) {
        match self {
            Self::Lines(_) => {}
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.on_negotiated().await,
        }
    }

    /// Closes the connection (stdio: close stdin, wait, terminate; HTTP: end a handshake session).
    pub(crate) async fn close(&self) -> Result<(), ClientError> {
        match self {
            Self::Lines(t) => t.close().await,
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.close().await,
        }
    }
}
