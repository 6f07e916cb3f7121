//! The standard MCP request headers (SEP-2243) and their value encoding.
//!
//! Values are sent as-is unless they are non-ASCII, contain control characters, have leading or
//! trailing whitespace, or look like the sentinel itself; those are sent as
//! `=?base64?{base64(utf8)}?=`. Servers decode the sentinel before comparing a header with the
//! body, which stays the source of truth.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use modelctx_types::Extra;
use serde_json::Value;

/// `MCP-Protocol-Version`: the request's protocol revision (equal to `_meta`).
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`: the JSON-RPC method.
pub(crate) const METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name` or `params.uri` of `tools/call`, `prompts/get`, `resources/read`.
pub(crate) const NAME: &str = "mcp-name";
/// Prefix of the headers that mirror `x-mcp-header` tool arguments.
pub(crate) const PARAM_PREFIX: &str = "mcp-param-";
/// `Mcp-Session-Id` (handshake era only; never sent or honoured on 2026-07-28).
pub(crate) const SESSION_ID: &str = "mcp-session-id";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// Whether `value` must travel base64-wrapped.
pub fn needs_sentinel(value: &str) -> bool {
    value.bytes().any(|b| !(0x20..=0x7e).contains(&b))
        || value.starts_with([' ', '\t'])
        || value.ends_with([' ', '\t'])
        || (value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END))
}

/// Encodes a header value, wrapping it in the base64 sentinel when required.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if needs_sentinel(value) {
        Cow::Owned(format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            STANDARD.encode(value)
        ))
    } else {
        Cow::Borrowed(value)
    }
}

/// A header value that claims the sentinel but does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed base64 header value {0:?}")]
pub struct MalformedHeaderValue(pub String);

/// Decodes a received header value: the sentinel is unwrapped, anything else is literal.
/// Surrounding optional whitespace (which HTTP does not preserve) is ignored.
///
/// # Errors
/// When the value has the sentinel form but its payload is not valid base64 of UTF-8.
pub fn decode_value(raw: &str) -> Result<Cow<'_, str>, MalformedHeaderValue> {
    let value = raw.trim_matches([' ', '\t']);
    let Some(payload) = value
        .strip_prefix(SENTINEL_START)
        .and_then(|rest| rest.strip_suffix(SENTINEL_END))
    else {
        return Ok(Cow::Borrowed(value));
    };
    STANDARD
        .decode(payload)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map(Cow::Owned)
        .ok_or_else(|| MalformedHeaderValue(raw.to_owned()))
}

/// The primitive type of an `x-mcp-header` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// A string argument.
    String,
    /// An integer argument (within ±(2^53−1)).
    Integer,
    /// A boolean argument.
    Boolean,
}

/// One tool argument mirrored into an `Mcp-Param-{name}` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// The header suffix as declared (`Region` → `Mcp-Param-Region`).
    pub name: String,
    /// The lower-cased full header name (`mcp-param-region`).
    pub header: String,
    /// Property names from the root of the arguments to the value.
    pub path: Vec<String>,
    /// Its type.
    pub kind: ParamKind,
}

impl ParamHeader {
    /// The argument's value in `arguments`, when present and not null.
    pub(crate) fn value_in<'a>(&self, arguments: Option<&'a Extra>) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments?.get(first)?;
        for key in rest {
            value = value.get(key)?;
        }
        (!value.is_null()).then_some(value)
    }

    /// The header value for an argument value: strings as-is (sentinel when needed), integers
    /// in decimal, booleans as `true` / `false`. `None` for values of another type.
    pub(crate) fn encode(&self, value: &Value) -> Option<String> {
        match value {
            Value::String(s) => Some(encode_value(s).into_owned()),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// Whether a received (already sentinel-decoded) header value matches the body value.
    /// Integers compare numerically.
    pub(crate) fn matches(&self, header: &str, value: &Value) -> bool {
        match (self.kind, value) {
            (_, Value::String(s)) => header == s,
            (_, Value::Bool(b)) => header == if *b { "true" } else { "false" },
            (_, Value::Number(n)) => match (header.parse::<i64>(), n.as_i64()) {
                (Ok(h), Some(v)) => h == v,
                _ => header.parse::<f64>().ok() == n.as_f64() && n.as_f64().is_some(),
            },
            _ => false,
        }
    }
}

/// Why a tool's `x-mcp-header` annotations are invalid (clients drop such tools).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidParamHeaders {
    /// An annotation that is not a non-empty string.
    #[error("x-mcp-header at {0} must be a non-empty string")]
    NotANonEmptyString(String),
    /// A name with characters outside RFC 9110 `tchar`.
    #[error("x-mcp-header {0:?} is not an HTTP token")]
    NotAToken(String),
    /// Two annotations with the same name, ignoring case.
    #[error("x-mcp-header {0:?} is declared twice")]
    Duplicate(String),
    /// An annotation on a property that is not a string, integer or boolean.
    #[error("x-mcp-header {0:?} is on a property that is not a string, integer or boolean")]
    NotPrimitive(String),
    /// An annotation reachable other than through `properties` (items, combinators, `$ref`…).
    #[error("x-mcp-header at {0} is not reachable through properties alone")]
    Unreachable(String),
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Reads the `x-mcp-header` annotations of a tool's input schema.
///
/// # Errors
/// When any annotation breaks the rules of SEP-2243 (see [`InvalidParamHeaders`]).
pub(crate) fn param_headers(input_schema: &Extra) -> Result<Vec<ParamHeader>, InvalidParamHeaders> {
    let mut found = Vec::new();
    collect_properties(input_schema, &mut Vec::new(), &mut found)?;
    // Any annotation elsewhere in the schema is unreachable through properties alone.
    let mut total = 0;
    count_annotations(&Value::Object(input_schema.clone()), &mut total);
    if total != found.len() {
        return Err(InvalidParamHeaders::Unreachable(
            "a non-properties location".to_owned(),
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for header in &found {
        let lower = header.name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(InvalidParamHeaders::Duplicate(header.name.clone()));
        }
        seen.push(lower);
    }
    Ok(found)
}

fn collect_properties(
    schema: &Extra,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), InvalidParamHeaders> {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Ok(());
    };
    for (key, property) in properties {
        let Value::Object(property) = property else {
            continue;
        };
        path.push(key.clone());
        if let Some(annotation) = property.get("x-mcp-header") {
            let location = path.join(".");
            let name = match annotation {
                Value::String(name) if !name.is_empty() => name.clone(),
                _ => return Err(InvalidParamHeaders::NotANonEmptyString(location)),
            };
            if !name.chars().all(is_tchar) {
                return Err(InvalidParamHeaders::NotAToken(name));
            }
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("string") => ParamKind::String,
                Some("integer") => ParamKind::Integer,
                Some("boolean") => ParamKind::Boolean,
                _ => return Err(InvalidParamHeaders::NotPrimitive(name)),
            };
            found.push(ParamHeader {
                header: format!("{PARAM_PREFIX}{}", name.to_ascii_lowercase()),
                name,
                path: path.clone(),
                kind,
            });
        }
        collect_properties(property, path, found)?;
        path.pop();
    }
    Ok(())
}

fn count_annotations(value: &Value, total: &mut usize) {
    match value {
        Value::Object(map) => {
            if map.contains_key("x-mcp-header") {
                *total += 1;
            }
            map.values().for_each(|v| count_annotations(v, total));
        }
        Value::Array(items) => items.iter().for_each(|v| count_annotations(v, total)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Extra {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn sentinel_rules() {
        for plain in ["us-west1", "", "us west 1", "test-method"] {
            assert_eq!(encode_value(plain), plain);
        }
        for unsafe_value in [
            "Hello, 世界",
            " padded ",
            " lead",
            "trail ",
            "a\nb",
            "a\r\nb",
            "\tx",
        ] {
            let encoded = encode_value(unsafe_value);
            assert!(
                encoded.starts_with("=?base64?") && encoded.ends_with("?="),
                "{unsafe_value:?}"
            );
            assert_eq!(decode_value(&encoded).unwrap(), unsafe_value);
        }
        // A plain value that looks like the sentinel is wrapped too, so it survives.
        let tricky = "=?base64?SGk=?=";
        assert_eq!(decode_value(&encode_value(tricky)).unwrap(), tricky);
        assert_eq!(decode_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode_value("=?base64?***?=").is_err());
        assert_eq!(decode_value("  plain ").unwrap(), "plain");
    }

    #[test]
    fn reads_annotations() {
        let headers = param_headers(&schema(json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "priority":{"type":"integer","x-mcp-header":"Priority"},
            "nested":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}},
            "query":{"type":"string"}}})))
        .unwrap();
        assert_eq!(headers.len(), 3);
        let flag = headers.iter().find(|h| h.name == "Flag").unwrap();
        assert_eq!(flag.path, ["nested", "flag"]);
        assert_eq!(flag.header, "mcp-param-flag");
        let args = json!({"nested":{"flag":true},"region":null});
        assert_eq!(flag.value_in(args.as_object()), Some(&json!(true)));
        let region = headers.iter().find(|h| h.name == "Region").unwrap();
        assert_eq!(region.value_in(args.as_object()), None);
        assert!(headers[1].matches("42", &json!(42)));
    }

    #[test]
    fn rejects_invalid_annotations() {
        let cases = [
            json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"properties":{"a":{"type":"object","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"null","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"Region:Primary"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"Région"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"Region\t1"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}),
            json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"properties":{"a":{"anyOf":[{"type":"string","x-mcp-header":"A"}]}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":7}}}),
        ];
        for case in cases {
            assert!(param_headers(&schema(case.clone())).is_err(), "{case}");
        }
    }
}
