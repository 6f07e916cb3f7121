//! The HTTP side of a server of one era (`ServerBuilder::only_era`): a 2026-07-28-only endpoint
//! refuses `initialize` with `-32022` naming the versions it speaks (400), whatever headers the
//! client sent, so a 2025-11-25 client is told why instead of meeting an unknown method. (A
//! handshake-only endpoint needs nothing here: every request takes the handshake-era path.)

use modelctx_types::jsonrpc::{MessageRef, encode_error};
use modelctx_types::methods::Initialize;
use modelctx_types::{Era, Extra, Method as _};

use super::responses::{http_status, json};
use crate::server::Server;
use crate::server::handshake::initialize_on_modern;

/// The refusal of an `initialize` POSTed to a modern-only server; `None` for anything else.
pub(crate) fn refuse_initialize(server: &Server, body: &[u8]) -> Option<axum::response::Response> {
    if server.only_era() != Some(Era::Modern) {
        return None;
    }
    let Ok(MessageRef::Request(request)) = MessageRef::decode_slice(body) else {
        return None;
    };
    if request.method != Initialize::NAME {
        return None;
    }
    let requested = request
        .params_as::<Extra>()
        .ok()
        .and_then(|params| params.get("protocolVersion")?.as_str().map(str::to_owned))
        .unwrap_or_default();
    let error = initialize_on_modern(&requested, server.supported_versions());
    Some(json(
        http_status(Some(error.code)),
        encode_error(Some(&request.id), &error),
    ))
}
