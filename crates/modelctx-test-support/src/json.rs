//! JSON shorthands.

use serde_json::{Map, Value};

/// The map inside a JSON object (`json!({...})` into `Extra`, `arguments`, a schema); panics on
/// anything else.
pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}
