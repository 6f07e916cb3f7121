//! JSON Schema checks of tool arguments and structured results (2020-12 unless the schema names
//! another dialect with `$schema`).
//!
//! A schema is compiled once — when a server registers the tool, when a client reads
//! `tools/list` — and checked per call. The check is a fast `is_valid` pass; only a failing
//! instance pays for the error report, which names the first failing location.

use serde_json::Value;

/// A compiled schema.
#[derive(Debug)]
pub(crate) struct SchemaCheck {
    validator: jsonschema::Validator,
}

impl SchemaCheck {
    /// Compiles `schema`; the error says why it is not a usable schema. External references are
    /// not fetched (`jsonschema` is built without its resolvers), so they fail here.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|error| error.to_string())
    }

    /// Compiles the `requestedSchema` of an elicitation form. Unlike tool schemas, `format`
    /// (email, uri, date, date-time) is asserted, not just annotated: the form promised the user
    /// those formats, and the server is about to use the answer as data.
    #[cfg(feature = "server")]
    pub(crate) fn compile_form(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|error| error.to_string())
    }

    /// `Ok` when `instance` conforms; otherwise the first violation, prefixed with where it is
    /// (`/items/0: "x" is not of type "integer"`; no prefix at the root).
    pub(crate) fn check(&self, instance: &Value) -> Result<(), String> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let Some(error) = self.validator.iter_errors(instance).next() else {
            return Ok(());
        };
        let path = error.instance_path().to_string();
        Err(if path.is_empty() {
            error.to_string()
        } else {
            format!("{path}: {error}")
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conforming_instances_pass_and_violations_name_their_place() {
        let check = SchemaCheck::compile(&json!({
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 1}},
            "required": ["count"]
        }))
        .unwrap();
        assert_eq!(check.check(&json!({"count": 3})), Ok(()));
        let error = check.check(&json!({"count": 0})).unwrap_err();
        assert!(error.starts_with("/count: "), "{error}");
        assert!(error.contains("minimum of 1"), "{error}");
        let error = check.check(&json!({})).unwrap_err();
        assert!(
            error.contains("\"count\" is a required property"),
            "{error}"
        );
    }

    #[test]
    fn the_default_dialect_is_2020_12() {
        // `prefixItems` exists only from 2020-12 on.
        let check = SchemaCheck::compile(&json!({"prefixItems": [{"type": "string"}]})).unwrap();
        assert!(check.check(&json!([1])).is_err());
    }

    #[cfg(feature = "server")]
    #[test]
    fn forms_assert_formats_and_tool_schemas_only_annotate_them() {
        let schema = json!({"type": "object", "properties": {"email": {"type": "string", "format": "email"}}});
        let not_an_email = json!({"email": "not an address"});
        assert!(
            SchemaCheck::compile(&schema)
                .unwrap()
                .check(&not_an_email)
                .is_ok()
        );
        let form = SchemaCheck::compile_form(&schema).unwrap();
        assert!(form.check(&not_an_email).is_err());
        assert_eq!(form.check(&json!({"email": "ada@example.com"})), Ok(()));
    }

    #[test]
    fn an_unusable_schema_is_refused() {
        assert!(SchemaCheck::compile(&json!({"type": "no-such-type"})).is_err());
        assert!(SchemaCheck::compile(&json!({"$ref": "https://example.com/remote.json"})).is_err());
    }
}
