//! Digests shared with the Python SDK: the argument digest (`a` claim) and the resolver question
//! digest.
//!
//! Both are `base64url-no-padding(SHA-256(canonical JSON)[:16])` (22 characters); they differ in
//! the JSON: arguments are written with sorted keys, questions in field order.
//!
//! ```
//! use modelctx_seal::arguments_digest;
//! use serde_json::json;
//!
//! assert_eq!(arguments_digest(Some(&json!({"x": 7}))), "Ey8lUoApKugLEhHi5PR-xw");
//! assert_eq!(arguments_digest(Some(&json!({"name": "orders"}))), "cpW1mcFtGeM0ZPdUOr4a0A");
//! assert_eq!(arguments_digest(None), "RBNvo1WzZ4oRRq0W9-hkng"); // same as {}
//! ```

use aws_lc_rs::digest;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::Value;

use crate::canonical_json;

/// Length of a digest in base64url characters (16 bytes, unpadded).
pub const DIGEST_LEN: usize = 22;

/// A 16-byte truncated SHA-256 as 22 base64url characters, held on the stack.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShortDigest([u8; DIGEST_LEN]);

impl std::fmt::Debug for ShortDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ShortDigest {
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let hash = digest::digest(&digest::SHA256, bytes);
        let mut out = [0u8; DIGEST_LEN];
        // 16 bytes always encode to exactly 22 characters, so this cannot fail.
        let _ = URL_SAFE_NO_PAD.encode_slice(&hash.as_ref()[..16], &mut out);
        Self(out)
    }

    pub(crate) fn as_str(&self) -> &str {
        // base64url output is ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Python truthiness of a JSON value: the SDK digests `arguments or {}`.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Digest of a request's arguments with a caller-supplied scratch buffer (cleared first).
pub(crate) fn arguments_short_digest(
    arguments: Option<&Value>,
    scratch: &mut Vec<u8>,
) -> ShortDigest {
    scratch.clear();
    match arguments {
        Some(value) if !is_falsy(value) => canonical_json::write_sorted(value, scratch),
        // Absent, null or any other falsy value digests as an empty object, as in Python.
        _ => scratch.extend_from_slice(b"{}"),
    }
    ShortDigest::of(scratch)
}

/// The `a` claim: digest of `json.dumps(arguments or {}, sort_keys=True, separators=(",", ":"))`
/// with Python's ASCII escapes and number formatting.
///
/// Like Python, any falsy `arguments` (absent, `null`, `false`, `0`, `""`, `[]`, `{}`) digests as
/// `{}`. Keys are sorted here, independent of serde_json's map order.
///
/// Equal to Python's digest of the same request text, with two exceptions that come from
/// `serde_json::Value` itself: integers beyond the `u64`/`i64` range arrive as floats, and the
/// integer literal `-0` arrives as the float `-0.0` (Python keeps both as ints). Tokens minted
/// and opened by this crate are unaffected; only a fleet mixing Python and Rust servers on the
/// same keys could see such a request's state refused.
pub fn arguments_digest(arguments: Option<&Value>) -> String {
    let mut scratch = Vec::with_capacity(64);
    arguments_short_digest(arguments, &mut scratch)
        .as_str()
        .to_owned()
}

/// Digest pinning a resolver's answer to the exact question the client was shown (the `q` /
/// `asked` entries of the Python SDK's resolver state).
///
/// Python computes `compact_json(params.model_dump(mode="json", by_alias=True, exclude_none=True))`
/// **without** sorting keys, so `params` is serialised in its own field order: declare the fields
/// in pydantic's order and skip `None`s. For a form elicitation that is `_meta`, `mode`,
/// `message`, `requestedSchema` (then `task`). `None` (no params) digests `null`.
///
/// # Errors
/// Whatever `params`' `Serialize` impl reports.
///
/// ```
/// use modelctx_seal::question_digest;
/// use serde_json::json;
///
/// #[derive(serde::Serialize)]
/// #[serde(rename_all = "camelCase")]
/// struct FormParams<'a> {
///     mode: &'a str,
///     message: &'a str,
///     requested_schema: serde_json::Value,
/// }
///
/// let params = FormParams {
///     mode: "form",
///     message: "Which region?",
///     requested_schema: json!({"properties": {"region": {"type": "string"}}, "type": "object"}),
/// };
/// let digest = question_digest(Some(&params))?;
/// assert_eq!(digest.len(), 22);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn question_digest<T: Serialize + ?Sized>(
    params: Option<&T>,
) -> Result<String, serde_json::Error> {
    let mut rendered = Vec::with_capacity(128);
    match params {
        Some(params) => canonical_json::write_ordered(params, &mut rendered)?,
        None => rendered.extend_from_slice(b"null"),
    }
    Ok(ShortDigest::of(&rendered).as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_python_digests() {
        assert_eq!(
            arguments_digest(Some(&json!({"x": 7}))),
            "Ey8lUoApKugLEhHi5PR-xw"
        );
        assert_eq!(
            arguments_digest(Some(&json!({"name": "orders"}))),
            "cpW1mcFtGeM0ZPdUOr4a0A"
        );
        assert_eq!(arguments_digest(Some(&json!({}))), "RBNvo1WzZ4oRRq0W9-hkng");
    }

    #[test]
    fn falsy_arguments_digest_as_empty_object() {
        let empty = arguments_digest(None);
        for value in [
            json!(null),
            json!(false),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
        ] {
            assert_eq!(arguments_digest(Some(&value)), empty, "{value}");
        }
        assert_ne!(arguments_digest(Some(&json!([1]))), empty);
    }
}
