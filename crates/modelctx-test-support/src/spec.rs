//! For the wire model's tests: where the official spec files are, and validators built from the
//! official schemas.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

/// The folder holding `<revision>/schema.json` and `2026-07-28/examples/`: `$MCP_SPEC_DIR`, or
/// `../shared/spec` beside the repository. Panics (never skips) when it is missing.
pub fn spec_dir() -> PathBuf {
    let dir = std::env::var_os("MCP_SPEC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec"));
    assert!(
        dir.join("2026-07-28/schema.json").is_file(),
        "the official MCP spec files are missing: expected {}/2026-07-28/schema.json \
         (set MCP_SPEC_DIR to their folder)",
        dir.display()
    );
    dir
}

fn load_schema(revision: &str) -> Value {
    let path = spec_dir().join(revision).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The `$defs` of a revision's schema.
pub fn defs(revision: &str) -> &'static Value {
    static V2026: OnceLock<Value> = OnceLock::new();
    static V2025: OnceLock<Value> = OnceLock::new();
    let cell = match revision {
        "2026-07-28" => &V2026,
        "2025-11-25" => &V2025,
        other => panic!("no schema cached for {other}"),
    };
    cell.get_or_init(|| {
        let schema = load_schema(revision);
        schema
            .get("$defs")
            .or_else(|| schema.get("definitions"))
            .cloned()
            .unwrap()
    })
}

/// A validator for definition `name` of `revision`, compiled once per process.
pub fn validator(revision: &str, name: &str) -> &'static jsonschema::Validator {
    type Cache = Mutex<HashMap<(String, String), &'static jsonschema::Validator>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (revision.to_owned(), name.to_owned());
    if let Some(v) = cache.lock().unwrap().get(&key) {
        return v;
    }
    let defs = defs(revision);
    assert!(
        defs.get(name).is_some(),
        "{revision} schema has no definition {name}"
    );
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "$ref": format!("#/$defs/{name}"),
    });
    let compiled: &'static jsonschema::Validator =
        Box::leak(Box::new(jsonschema::validator_for(&schema).unwrap()));
    cache.lock().unwrap().insert(key, compiled);
    compiled
}

/// Validates `instance` against definition `name` of `revision`; returns the error messages.
pub fn schema_errors(revision: &str, name: &str, instance: &Value) -> Vec<String> {
    validator(revision, name)
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Asserts that `instance` validates against definition `name` of `revision`.
#[track_caller]
pub fn assert_valid(revision: &str, name: &str, instance: &Value) {
    let errors = schema_errors(revision, name, instance);
    assert!(
        errors.is_empty(),
        "{name} ({revision}) invalid: {errors:#?}\n{instance:#}"
    );
}
