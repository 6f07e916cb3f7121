//! Form fields of an elicitation: how each is described to the user, and how typed input (or a
//! prepared answer) becomes a checked JSON value.

use modelctx::types::{NumberType, PrimitiveSchema, StringFormat};
use serde_json::{Number, Value};

/// A short description of the field's type and constraints, e.g. `integer, 1 to 10`.
pub(crate) fn describe(field: &PrimitiveSchema) -> String {
    match field {
        PrimitiveSchema::String(s) => {
            let mut parts = vec!["text".to_owned()];
            if let Some(format) = &s.format {
                parts.push(format.to_string());
            }
            match (s.min_length, s.max_length) {
                (Some(min), Some(max)) => parts.push(format!("{min} to {max} characters")),
                (Some(min), None) => parts.push(format!("at least {min} characters")),
                (None, Some(max)) => parts.push(format!("at most {max} characters")),
                (None, None) => {}
            }
            parts.join(", ")
        }
        PrimitiveSchema::Number(n) => {
            let kind = if n.kind == NumberType::INTEGER {
                "integer"
            } else {
                "number"
            };
            match (&n.minimum, &n.maximum) {
                (Some(min), Some(max)) => format!("{kind}, {min} to {max}"),
                (Some(min), None) => format!("{kind}, at least {min}"),
                (None, Some(max)) => format!("{kind}, at most {max}"),
                (None, None) => kind.to_owned(),
            }
        }
        PrimitiveSchema::Boolean(_) => "yes/no".to_owned(),
        PrimitiveSchema::UntitledSingleSelect(_)
        | PrimitiveSchema::TitledSingleSelect(_)
        | PrimitiveSchema::LegacyTitledEnum(_) => "one of the choices: number or value".to_owned(),
        PrimitiveSchema::UntitledMultiSelect(m) => multi_description(m.min_items, m.max_items),
        PrimitiveSchema::TitledMultiSelect(m) => multi_description(m.min_items, m.max_items),
        _ => "JSON".to_owned(),
    }
}

fn multi_description(min: Option<u64>, max: Option<u64>) -> String {
    let mut text = "choices, comma-separated numbers or values".to_owned();
    match (min, max) {
        (Some(min), Some(max)) => text.push_str(&format!(", {min} to {max}")),
        (Some(min), None) => text.push_str(&format!(", at least {min}")),
        (None, Some(max)) => text.push_str(&format!(", at most {max}")),
        (None, None) => {}
    }
    text
}

/// Whether the field has a type this module knows (every one the spec defines); only a field
/// of an unknown type may take an object as its value.
pub(crate) fn is_typed(field: &PrimitiveSchema) -> bool {
    !matches!(field, PrimitiveSchema::Unknown(_))
}

/// The choices of an enum field: `(value, label)`.
pub(crate) fn choices(field: &PrimitiveSchema) -> Option<Vec<(String, String)>> {
    let plain = |values: &[String]| values.iter().map(|v| (v.clone(), v.clone())).collect();
    match field {
        PrimitiveSchema::UntitledSingleSelect(s) => Some(plain(&s.values)),
        PrimitiveSchema::UntitledMultiSelect(m) => Some(plain(&m.items.values)),
        PrimitiveSchema::TitledSingleSelect(s) => Some(
            s.options
                .iter()
                .map(|o| (o.value.clone(), o.title.clone()))
                .collect(),
        ),
        PrimitiveSchema::TitledMultiSelect(m) => Some(
            m.items
                .options
                .iter()
                .map(|o| (o.value.clone(), o.title.clone()))
                .collect(),
        ),
        PrimitiveSchema::LegacyTitledEnum(s) => Some(
            s.values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = s.names.as_ref().and_then(|n| n.get(i)).unwrap_or(v);
                    (v.clone(), label.clone())
                })
                .collect(),
        ),
        _ => None,
    }
}

/// The field's default, as JSON.
pub(crate) fn default(field: &PrimitiveSchema) -> Option<Value> {
    match field {
        PrimitiveSchema::String(s) => s.default.clone().map(Value::String),
        PrimitiveSchema::Number(n) => n.default.clone().map(Value::Number),
        PrimitiveSchema::Boolean(b) => b.default.map(Value::Bool),
        PrimitiveSchema::UntitledSingleSelect(s) => s.default.clone().map(Value::String),
        PrimitiveSchema::TitledSingleSelect(s) => s.default.clone().map(Value::String),
        PrimitiveSchema::LegacyTitledEnum(s) => s.default.clone().map(Value::String),
        PrimitiveSchema::UntitledMultiSelect(m) => m.default.clone().map(strings),
        PrimitiveSchema::TitledMultiSelect(m) => m.default.clone().map(strings),
        PrimitiveSchema::Unknown(map) => map.get("default").cloned(),
        _ => None,
    }
}

fn strings(values: Vec<String>) -> Value {
    Value::Array(values.into_iter().map(Value::String).collect())
}

/// Reads what the user typed (not empty) as the field's value.
///
/// # Errors
/// A message for the user when the input does not fit the field.
pub(crate) fn parse(field: &PrimitiveSchema, input: &str) -> Result<Value, String> {
    let input = input.trim();
    match field {
        PrimitiveSchema::String(_) => check(field, &Value::String(input.to_owned())),
        PrimitiveSchema::Number(_) => {
            let number: Number = input
                .parse::<i64>()
                .map(Number::from)
                .ok()
                .or_else(|| input.parse::<f64>().ok().and_then(Number::from_f64))
                .ok_or_else(|| format!("{input:?} is not a number"))?;
            check(field, &Value::Number(number))
        }
        PrimitiveSchema::Boolean(_) => match input.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("{input:?}: answer yes or no")),
        },
        PrimitiveSchema::UntitledSingleSelect(_)
        | PrimitiveSchema::TitledSingleSelect(_)
        | PrimitiveSchema::LegacyTitledEnum(_) => {
            let choices = choices(field).unwrap_or_default();
            pick(&choices, input).map(Value::String)
        }
        PrimitiveSchema::UntitledMultiSelect(_) | PrimitiveSchema::TitledMultiSelect(_) => {
            let choices = choices(field).unwrap_or_default();
            let picked = input
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .map(|part| pick(&choices, part).map(Value::String))
                .collect::<Result<Vec<_>, _>>()?;
            check(field, &Value::Array(picked))
        }
        _ => serde_json::from_str(input).map_err(|e| format!("not JSON: {e}")),
    }
}

/// A choice by its number (1-based), value or label.
fn pick(choices: &[(String, String)], input: &str) -> Result<String, String> {
    if let Ok(index) = input.parse::<usize>()
        && let Some((value, _)) = index.checked_sub(1).and_then(|i| choices.get(i))
    {
        return Ok(value.clone());
    }
    choices
        .iter()
        .find(|(value, label)| value == input || label.eq_ignore_ascii_case(input))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| {
            let values: Vec<&str> = choices.iter().map(|(v, _)| v.as_str()).collect();
            format!("{input:?} is not one of: {}", values.join(", "))
        })
}

/// Checks a value (typed, or prepared with `--answer`) against the field; a string is read as
/// typed input for non-text fields, and a number or boolean answering a text field becomes its
/// text.
///
/// # Errors
/// A message for the user when the value does not fit the field.
pub(crate) fn check(field: &PrimitiveSchema, value: &Value) -> Result<Value, String> {
    match (field, value) {
        (PrimitiveSchema::String(s), Value::String(text)) => {
            let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
            if let Some(min) = s.min_length
                && chars < min
            {
                return Err(format!("at least {min} characters, please"));
            }
            if let Some(max) = s.max_length
                && chars > max
            {
                return Err(format!("at most {max} characters, please"));
            }
            if let Some(format) = &s.format {
                check_format(format, text)?;
            }
            Ok(value.clone())
        }
        (PrimitiveSchema::String(_), Value::Number(_) | Value::Bool(_)) => {
            check(field, &Value::String(value.to_string()))
        }
        (PrimitiveSchema::Number(n), Value::Number(number)) => {
            let as_f64 = number.as_f64().unwrap_or(f64::NAN);
            if n.kind == NumberType::INTEGER && !(number.is_i64() || number.is_u64()) {
                return Err(format!("{number} is not an integer"));
            }
            if let Some(min) = n.minimum.as_ref().and_then(Number::as_f64)
                && as_f64 < min
            {
                return Err(format!("{number} is below the minimum {min}"));
            }
            if let Some(max) = n.maximum.as_ref().and_then(Number::as_f64)
                && as_f64 > max
            {
                return Err(format!("{number} is above the maximum {max}"));
            }
            Ok(value.clone())
        }
        (PrimitiveSchema::Boolean(_), Value::Bool(_)) => Ok(value.clone()),
        (
            PrimitiveSchema::UntitledSingleSelect(_)
            | PrimitiveSchema::TitledSingleSelect(_)
            | PrimitiveSchema::LegacyTitledEnum(_),
            Value::String(text),
        ) => {
            let choices = choices(field).unwrap_or_default();
            if choices.iter().any(|(v, _)| v == text) {
                Ok(value.clone())
            } else {
                pick(&choices, text).map(Value::String)
            }
        }
        (
            PrimitiveSchema::UntitledMultiSelect(_) | PrimitiveSchema::TitledMultiSelect(_),
            Value::Array(items),
        ) => {
            let choices = choices(field).unwrap_or_default();
            let mut picked = Vec::with_capacity(items.len());
            for item in items {
                let text = item
                    .as_str()
                    .ok_or_else(|| format!("{item} is not one of the choices"))?;
                picked.push(Value::String(pick(&choices, text)?));
            }
            let (min, max) = match field {
                PrimitiveSchema::UntitledMultiSelect(m) => (m.min_items, m.max_items),
                PrimitiveSchema::TitledMultiSelect(m) => (m.min_items, m.max_items),
                _ => (None, None),
            };
            let count = u64::try_from(picked.len()).unwrap_or(u64::MAX);
            if min.is_some_and(|min| count < min) || max.is_some_and(|max| count > max) {
                return Err(multi_description(min, max));
            }
            Ok(Value::Array(picked))
        }
        (PrimitiveSchema::Unknown(_), _) => Ok(value.clone()),
        (_, Value::String(text)) => parse(field, text),
        _ => Err(format!(
            "{value} does not fit a field of type {}",
            describe(field)
        )),
    }
}

fn check_format(format: &StringFormat, text: &str) -> Result<(), String> {
    let ok = if *format == StringFormat::EMAIL {
        text.split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
    } else if *format == StringFormat::URI {
        text.split_once(':')
            .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty())
    } else if *format == StringFormat::DATE {
        is_date(text)
    } else if *format == StringFormat::DATE_TIME {
        text.len() > 10 && is_date(&text[..10]) && text.as_bytes()[10].eq_ignore_ascii_case(&b't')
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{text:?} is not a valid {format}"))
    }
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(schema: Value) -> PrimitiveSchema {
        serde_json::from_value(schema).unwrap()
    }

    #[test]
    fn strings_and_formats() {
        let s = field(json!({"type": "string", "minLength": 2, "maxLength": 4}));
        assert_eq!(parse(&s, " abc ").unwrap(), json!("abc"));
        assert!(parse(&s, "a").is_err());
        assert!(parse(&s, "abcde").is_err());
        assert_eq!(check(&s, &json!(12)).unwrap(), json!("12"));
        let email = field(json!({"type": "string", "format": "email"}));
        assert!(parse(&email, "a@b.io").is_ok());
        assert!(parse(&email, "nope").is_err());
        let date = field(json!({"type": "string", "format": "date"}));
        assert!(parse(&date, "2026-07-28").is_ok());
        assert!(parse(&date, "28/07/2026").is_err());
    }

    #[test]
    fn numbers() {
        let int = field(json!({"type": "integer", "minimum": 1, "maximum": 10}));
        assert_eq!(parse(&int, "3").unwrap(), json!(3));
        assert!(parse(&int, "3.5").is_err());
        assert!(parse(&int, "11").is_err());
        assert!(parse(&int, "x").is_err());
        assert_eq!(check(&int, &json!("4")).unwrap(), json!(4));
        let num = field(json!({"type": "number"}));
        assert_eq!(parse(&num, "2.5").unwrap(), json!(2.5));
        assert_eq!(describe(&int), "integer, 1 to 10");
    }

    #[test]
    fn booleans_and_choices() {
        let b = field(json!({"type": "boolean", "default": true}));
        assert_eq!(parse(&b, "Yes").unwrap(), json!(true));
        assert_eq!(parse(&b, "n").unwrap(), json!(false));
        assert!(parse(&b, "maybe").is_err());
        assert_eq!(default(&b), Some(json!(true)));

        let one = field(json!({"type": "string", "enum": ["staging", "production"]}));
        assert_eq!(parse(&one, "2").unwrap(), json!("production"));
        assert_eq!(parse(&one, "staging").unwrap(), json!("staging"));
        assert!(parse(&one, "3").is_err());
        assert!(check(&one, &json!("prod")).is_err());

        let titled = field(json!({"type": "string", "oneOf": [
            {"const": "eu", "title": "Europe"}, {"const": "us", "title": "United States"}]}));
        assert_eq!(parse(&titled, "europe").unwrap(), json!("eu"));

        let many = field(json!({"type": "array", "minItems": 1,
            "items": {"type": "string", "enum": ["a", "b", "c"]}}));
        assert_eq!(parse(&many, "1, c").unwrap(), json!(["a", "c"]));
        assert!(parse(&many, ",").is_err());
        assert_eq!(check(&many, &json!(["b"])).unwrap(), json!(["b"]));
    }
}
