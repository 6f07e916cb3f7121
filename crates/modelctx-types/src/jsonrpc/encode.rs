//! Encoders that write the envelope around typed params or results directly, with no
//! intermediate `serde_json::Value`.

use serde::Serialize;

use super::{ErrorObject, RequestId};

fn start(capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
    out
}

fn write_id(out: &mut Vec<u8>, id: &RequestId) -> Result<(), serde_json::Error> {
    out.extend_from_slice(br#","id":"#);
    serde_json::to_writer(&mut *out, id)
}

fn write_method(out: &mut Vec<u8>, method: &str) -> Result<(), serde_json::Error> {
    out.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut *out, method)
}

/// Encodes a request. No trailing newline.
///
/// # Errors
/// Only when `params` fails to serialize.
pub fn encode_request<P: Serialize + ?Sized>(
    id: &RequestId,
    method: &str,
    params: &P,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = start(256);
    write_id(&mut out, id)?;
    write_method(&mut out, method)?;
    out.extend_from_slice(br#","params":"#);
    serde_json::to_writer(&mut out, params)?;
    out.push(b'}');
    Ok(out)
}

/// Encodes a notification; `params` is omitted when `None`. No trailing newline.
///
/// # Errors
/// Only when `params` fails to serialize.
pub fn encode_notification<P: Serialize + ?Sized>(
    method: &str,
    params: Option<&P>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = start(128);
    write_method(&mut out, method)?;
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut out, params)?;
    }
    out.push(b'}');
    Ok(out)
}

/// Encodes a successful response. No trailing newline.
///
/// # Errors
/// Only when `result` fails to serialize.
pub fn encode_result<R: Serialize + ?Sized>(
    id: &RequestId,
    result: &R,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = start(256);
    write_id(&mut out, id)?;
    out.extend_from_slice(br#","result":"#);
    serde_json::to_writer(&mut out, result)?;
    out.push(b'}');
    Ok(out)
}

/// Encodes an error response. The id is omitted when the request's id was unreadable (the
/// 2026-07-28 schema makes it optional and does not allow `null`). No trailing newline.
pub fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> Vec<u8> {
    let mut out = start(128);
    if let Some(id) = id {
        // Writing an id into a Vec cannot fail.
        let _ = write_id(&mut out, id);
    }
    out.extend_from_slice(br#","error":"#);
    // An ErrorObject is strings, an integer and a Value: serializing it cannot fail.
    let _ = serde_json::to_writer(&mut out, error);
    out.push(b'}');
    out
}
