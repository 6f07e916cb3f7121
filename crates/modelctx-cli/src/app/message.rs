//! What `mcp app` accepts from an app: JSON-RPC 2.0 messages of the shapes the MCP Apps
//! protocol uses, and nothing else.
//!
//! Every message comes from the app's page — the server's code, running in the user's browser —
//! through our host page (which already drops what its own iframe did not send, and what is not
//! of these shapes) and the loopback channel. It is checked again here, where the protocol is
//! handled: a request has a string or integer `id`, a method name of at most
//! [`MAX_METHOD_LEN`] characters from a small alphabet and object (or absent) `params`; a
//! notification is the same without `id`; a response has an `id` and exactly one of `result`
//! and `error`. Anything else — a batch, a `jsonrpc` other than `"2.0"`, a float id, a method
//! with a control character — is dropped unanswered.

use serde_json::{Map, Value};

/// The longest method name accepted (the protocol's longest is 39 characters).
pub(crate) const MAX_METHOD_LEN: usize = 128;

/// The longest string id accepted.
const MAX_ID_LEN: usize = 128;

/// A message from the app, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AppMessage {
    /// A request: it gets exactly one response.
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    /// A notification: no response.
    Notification {
        method: String,
        params: Map<String, Value>,
    },
    /// The app's response to a request of ours (`ui/resource-teardown`).
    Response { id: Value, outcome: Value },
}

impl AppMessage {
    /// Checks a message's shape; `None` for anything the protocol does not send.
    pub(crate) fn parse(message: Value) -> Option<Self> {
        let Value::Object(mut object) = message else {
            return None;
        };
        if object.remove("jsonrpc")? != "2.0" {
            return None;
        }
        let id = match object.remove("id") {
            None => None,
            Some(id) if valid_id(&id) => Some(id),
            Some(_) => return None,
        };
        match (id, object.remove("method")) {
            (id, Some(Value::String(method))) if valid_method(&method) => {
                let params = match object.remove("params") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(params)) => params,
                    Some(_) => return None,
                };
                if object.contains_key("result") || object.contains_key("error") {
                    return None;
                }
                Some(match id {
                    Some(id) => Self::Request { id, method, params },
                    None => Self::Notification { method, params },
                })
            }
            (Some(id), None) => {
                let outcome = match (object.remove("result"), object.remove("error")) {
                    (Some(result), None) => result,
                    (None, Some(error @ Value::Object(_))) => error,
                    _ => return None,
                };
                Some(Self::Response { id, outcome })
            }
            _ => None,
        }
    }
}

/// A JSON-RPC id: an integer, or a short string.
fn valid_id(id: &Value) -> bool {
    match id {
        Value::Number(number) => number.is_i64() || number.is_u64(),
        Value::String(text) => text.len() <= MAX_ID_LEN,
        _ => false,
    }
}

/// A method name: letters, digits and `/ _ - .`, at most [`MAX_METHOD_LEN`] long.
fn valid_method(method: &str) -> bool {
    (1..=MAX_METHOD_LEN).contains(&method.len())
        && method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/_-.".contains(&b))
}

/// A response to the app's request `id`.
pub(crate) fn result(id: &Value, result: Value) -> Value {
    envelope([("id", id.clone()), ("result", result)])
}

/// An error response to the app's request `id`.
pub(crate) fn error(id: &Value, code: i64, message: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A notification to the app.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    envelope([("method", Value::from(method)), ("params", params)])
}

/// `{"jsonrpc": "2.0", …members}`.
fn envelope<const N: usize>(members: [(&str, Value); N]) -> Value {
    let mut message = Map::new();
    message.insert("jsonrpc".to_owned(), Value::from("2.0"));
    for (name, value) in members {
        message.insert(name.to_owned(), value);
    }
    Value::Object(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_protocol_s_shapes_are_accepted() {
        assert_eq!(
            AppMessage::parse(json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
                "params": {"appInfo": {"name": "x"}}})),
            Some(AppMessage::Request {
                id: json!(1),
                method: "ui/initialize".into(),
                params: json!({"appInfo": {"name": "x"}})
                    .as_object()
                    .unwrap()
                    .clone(),
            })
        );
        assert_eq!(
            AppMessage::parse(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})),
            Some(AppMessage::Notification {
                method: "ui/notifications/initialized".into(),
                params: Map::new(),
            })
        );
        assert_eq!(
            AppMessage::parse(json!({"jsonrpc": "2.0", "id": "teardown", "result": {}})),
            Some(AppMessage::Response {
                id: json!("teardown"),
                outcome: json!({}),
            })
        );
        assert!(matches!(
            AppMessage::parse(
                json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "no"}})
            ),
            Some(AppMessage::Response { .. })
        ));
    }

    #[test]
    fn other_shapes_are_dropped() {
        for hostile in [
            json!(null),
            json!("ui/message"),
            json!([{"jsonrpc": "2.0", "method": "ping", "id": 1}]),
            json!({"method": "ping", "id": 1}),
            json!({"jsonrpc": "1.0", "method": "ping", "id": 1}),
            json!({"jsonrpc": 2, "method": "ping", "id": 1}),
            json!({"jsonrpc": "2.0", "method": 5, "id": 1}),
            json!({"jsonrpc": "2.0", "method": "", "id": 1}),
            json!({"jsonrpc": "2.0", "method": "ui/message\n", "id": 1}),
            json!({"jsonrpc": "2.0", "method": "ui/mess age", "id": 1}),
            json!({"jsonrpc": "2.0", "method": "x".repeat(MAX_METHOD_LEN + 1)}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": 1.5}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": {"a": 1}}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": null}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": "i".repeat(MAX_ID_LEN + 1)}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": 1, "params": [1, 2]}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": 1, "params": "x"}),
            json!({"jsonrpc": "2.0", "method": "ping", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": "no"}),
            json!({"jsonrpc": "2.0", "result": {}}),
        ] {
            assert_eq!(AppMessage::parse(hostile.clone()), None, "{hostile}");
        }
    }

    #[test]
    fn answers_are_json_rpc() {
        assert_eq!(
            error(&json!(7), -32601, "no"),
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "no"}})
        );
        assert_eq!(
            result(&json!("a"), json!({})),
            json!({"jsonrpc": "2.0", "id": "a", "result": {}})
        );
        assert_eq!(
            notification("ui/notifications/tool-input", json!({"arguments": {}})),
            json!({"jsonrpc": "2.0", "method": "ui/notifications/tool-input",
                   "params": {"arguments": {}}})
        );
    }
}
