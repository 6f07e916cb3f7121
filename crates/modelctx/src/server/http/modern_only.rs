//! The handshake era refused ([`HttpConfig::refuse_handshake_era`]): an endpoint whose
//! requests may each land on another instance — a serverless function, a fleet without sticky
//! sessions — cannot keep a 2025-11-25 session, so it serves 2026-07-28 only and says so.
//!
//! A request of that era (no modern `MCP-Protocol-Version`) gets `-32022 Unsupported protocol
//! version` on a 400, `data.supported` naming the versions served and `data.requested` the one
//! the client asked for (an `initialize`'s `protocolVersion`, else its header): the error a
//! dual-era client reads as "modern server, use these versions" (the spec's backwards
//! compatibility rule), and one whose message tells a person why. Anything else of that era (a
//! notification, a response, a body that is not JSON-RPC) gets a plain 400 with the same reason.

#[cfg(doc)]
use super::config::HttpConfig;
use axum::response::Response;
use http::StatusCode;
use modelctx_types::jsonrpc::{MessageRef, encode_error};
use modelctx_types::methods::Initialize;
use modelctx_types::{ErrorObject, InitializeRequestParams, Method as _};

use super::responses::json;
use crate::server::Server;

/// The era a client that sends no version header speaks.
const HANDSHAKE_ERA: &str = "2025-11-25";

/// The answer to a handshake-era POST on an endpoint that refuses the era for `reason`.
pub(crate) fn refuse(
    server: &Server,
    header_version: Option<&str>,
    body: &[u8],
    reason: &str,
) -> Response {
    let Ok(MessageRef::Request(request)) = MessageRef::decode_slice(body) else {
        let mut response = Response::new(axum::body::Body::from(format!(
            "This endpoint serves MCP 2026-07-28 only: {reason}"
        )));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return response;
    };
    let asked = (request.method == Initialize::NAME)
        .then(|| request.params_as::<InitializeRequestParams>().ok())
        .flatten()
        .map(|params| params.protocol_version);
    let requested = asked
        .as_ref()
        .map(|version| version.as_str())
        .or(header_version)
        .unwrap_or(HANDSHAKE_ERA);
    let mut error =
        ErrorObject::unsupported_protocol_version(server.supported_versions(), requested);
    error.message = format!(
        "Unsupported protocol version {requested}: this server speaks MCP {} only ({reason})",
        versions(server)
    );
    json(400, encode_error(Some(&request.id), &error))
}

fn versions(server: &Server) -> String {
    server
        .supported_versions()
        .iter()
        .map(|version| version.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
