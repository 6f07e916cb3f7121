//! JSON Schemas derived from Rust types with schemars: tool input and output schemas (JSON
//! Schema 2020-12) and the restricted flat form of an elicitation.

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use modelctx_types::{ElicitationSchema, Extra, PrimitiveSchema};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::schema_check::SchemaCheck;
use crate::sync::lock;

/// The schema of arguments as clients send them: an object schema without the generated
/// struct's `title`.
pub fn input_schema<T: JsonSchema>() -> Extra {
    let schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        _ => Extra::new(),
    };
    // The args struct is generated; its Rust name means nothing to a client.
    object.remove("title");
    object.insert("type".to_owned(), Value::from("object"));
    object
        .entry("properties")
        .or_insert_with(|| Value::Object(Extra::new()));
    object
}

/// The schema of structured output (`outputSchema`), as the value serialises.
pub fn output_schema<T: JsonSchema>() -> Extra {
    let schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    match schema.to_value() {
        Value::Object(object) => object,
        other => {
            let mut object = Extra::new();
            object.insert("allOf".to_owned(), Value::Array(vec![other]));
            object
        }
    }
}

/// A type that can be asked for with an elicitation form. Implemented for every
/// [`JsonSchema`] type whose schema is a flat object of primitive fields (strings, numbers,
/// integers, booleans and enums of strings, optional or not); others fail when rendered.
pub trait ElicitationForm {
    /// The form.
    ///
    /// # Errors
    /// When the type's schema is not a flat object of primitives.
    fn elicitation_schema() -> Result<ElicitationSchema, String>;
}

impl<T: JsonSchema + 'static> ElicitationForm for T {
    fn elicitation_schema() -> Result<ElicitationSchema, String> {
        let form = form::<T>(|| {
            flat_form(
                &SchemaSettings::draft2020_12()
                    .with(|s| {
                        s.inline_subschemas = true;
                        s.meta_schema = None;
                    })
                    .for_deserialize()
                    .into_generator()
                    .into_root_schema_for::<T>()
                    .to_value(),
                &T::schema_name(),
            )
        })?;
        Ok(form.schema.clone())
    }
}

/// A form type's rendered schema and, once an answer needs it, its compiled check.
struct Form {
    schema: ElicitationSchema,
    check: OnceLock<Result<Arc<SchemaCheck>, String>>,
}

/// The form of `T`, rendered by `render` the first time and kept for the process (the form of
/// a type never changes).
fn form<T: 'static>(
    render: impl FnOnce() -> Result<ElicitationSchema, String>,
) -> Result<Arc<Form>, String> {
    static FORMS: OnceLock<Mutex<HashMap<TypeId, Arc<Form>>>> = OnceLock::new();
    let forms = FORMS.get_or_init(Default::default);
    let key = TypeId::of::<T>();
    if let Some(form) = lock(forms).get(&key) {
        return Ok(Arc::clone(form));
    }
    // Rendered without the lock: rendering may itself look the form up (`form_check` of a
    // derived form renders through `elicitation_schema`).
    let schema = render()?;
    let mut forms = lock(forms);
    let form = forms.entry(key).or_insert_with(|| {
        Arc::new(Form {
            schema,
            check: OnceLock::new(),
        })
    });
    Ok(Arc::clone(form))
}

/// The compiled form of `T` (its rendered `requestedSchema`), to check answers against: compiled
/// on the first answer and kept beside the form.
pub(crate) fn form_check<T: ElicitationForm + 'static>() -> Result<Arc<SchemaCheck>, String> {
    let form = form::<T>(T::elicitation_schema)?;
    form.check
        .get_or_init(|| {
            let schema = serde_json::to_value(&form.schema).map_err(|e| e.to_string())?;
            SchemaCheck::compile_form(&schema).map(Arc::new)
        })
        .clone()
}

/// Reduces a generated schema to the elicitation subset.
fn flat_form(schema: &Value, type_name: &str) -> Result<ElicitationSchema, String> {
    let not_flat = || format!("{type_name} is not a flat object of primitive fields");
    let object = schema.as_object().ok_or_else(not_flat)?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(not_flat());
    }
    let mut properties = BTreeMap::new();
    for (name, field) in object
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let primitive = primitive(field).ok_or_else(|| {
            format!(
                "field {name:?} of {type_name} is not a primitive (string, number, integer, \
                 boolean or enum)"
            )
        })?;
        properties.insert(name.clone(), primitive);
    }
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_owned))
        .collect();
    let mut schema = ElicitationSchema::new(properties);
    schema.required = (!required.is_empty()).then_some(required);
    Ok(schema)
}

/// One field in the elicitation subset: `["string","null"]` becomes `"string"` (optionality is
/// `required`'s business), integer formats are dropped, unit-enum `oneOf`s become `enum`s.
fn primitive(field: &Value) -> Option<PrimitiveSchema> {
    let field = field.as_object()?;
    let mut out = Extra::new();
    let kind = match field.get("type") {
        Some(Value::String(kind)) => Some(kind.clone()),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .map(str::to_owned),
        _ => None,
    };
    let values: Option<Vec<Value>> = match (field.get("enum"), field.get("oneOf")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(Value::Array(options))) => options
            .iter()
            .map(|o| o.get("const").cloned())
            .collect::<Option<Vec<_>>>(),
        _ => None,
    };
    match (kind.as_deref(), values) {
        (Some("string") | None, Some(values)) => {
            let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
            if !values.iter().all(Value::is_string) {
                return None;
            }
            out.insert("type".to_owned(), Value::from("string"));
            out.insert("enum".to_owned(), Value::Array(values));
        }
        (Some(kind @ ("string" | "number" | "integer" | "boolean")), None) => {
            out.insert("type".to_owned(), Value::from(kind));
            let keep: &[&str] = match kind {
                "string" => &["minLength", "maxLength", "default"],
                "boolean" => &["default"],
                _ => &["minimum", "maximum", "default"],
            };
            for name in keep {
                if let Some(value) = field.get(*name).filter(|v| !v.is_null()) {
                    out.insert((*name).to_owned(), value.clone());
                }
            }
            if let Some(format) = field.get("format").and_then(Value::as_str)
                && kind == "string"
                && matches!(format, "email" | "uri" | "date" | "date-time")
            {
                out.insert("format".to_owned(), Value::from(format));
            }
        }
        _ => return None,
    }
    for name in ["title", "description"] {
        if let Some(value) = field.get(name).filter(|v| v.is_string()) {
            out.insert(name.to_owned(), value.clone());
        }
    }
    match serde_json::from_value(Value::Object(out)).ok()? {
        PrimitiveSchema::Unknown(_) => None,
        primitive => Some(primitive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Format {
        Pdf,
        Html,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Form {
        /// Where to sit.
        seat: String,
        amount: u32,
        note: Option<String>,
        format: Format,
        confirm: bool,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Nested {
        inner: Form,
    }

    #[test]
    fn flat_forms_keep_the_elicitation_subset() {
        let schema = serde_json::to_value(Form::elicitation_schema().unwrap()).unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "seat": {"type": "string", "description": "Where to sit."},
                    "amount": {"type": "integer", "minimum": 0},
                    "note": {"type": "string"},
                    "format": {"type": "string", "enum": ["Pdf", "Html"]},
                    "confirm": {"type": "boolean"},
                },
                "required": ["seat", "amount", "format", "confirm"],
            })
        );
    }

    /// One cache holds a form type's schema and its compiled check: rendered once, compiled once.
    #[test]
    fn a_form_and_its_check_are_cached_together() {
        #[allow(dead_code)]
        #[derive(JsonSchema)]
        struct Seats {
            seats: u32,
        }
        let check = form_check::<Seats>().unwrap();
        assert!(Arc::ptr_eq(&check, &form_check::<Seats>().unwrap()));
        let cached = form::<Seats>(|| unreachable!("rendered once")).unwrap();
        let compiled = cached.check.get().unwrap().as_ref().unwrap();
        assert!(Arc::ptr_eq(compiled, &check));
        assert_eq!(cached.schema, Seats::elicitation_schema().unwrap());
        assert!(check.check(&json!({"seats": 2})).is_ok());
        assert!(check.check(&json!({"seats": "two"})).is_err());
    }

    #[test]
    fn nested_objects_are_not_forms() {
        let error = Nested::elicitation_schema().unwrap_err();
        assert!(error.contains("\"inner\""), "{error}");
    }

    #[test]
    fn input_schemas_are_untitled_objects() {
        let schema = input_schema::<Form>();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("title").is_none());
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}
