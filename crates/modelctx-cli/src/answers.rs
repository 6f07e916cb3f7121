//! Answers given on the command line (`--answer KEY=JSON`, `--answers FILE`), and which
//! question each one answers.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{CliError, Result};

/// Prepared answers, in the order given (a later entry for the same key wins).
#[derive(Debug, Clone, Default)]
pub(crate) struct Answers {
    entries: Vec<(String, Value)>,
}

impl Answers {
    /// Reads `--answers FILE` first, then every `--answer KEY=JSON`.
    pub(crate) fn from_args(flags: &[String], file: Option<&Path>) -> Result<Self> {
        let mut entries = Vec::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::usage(format!("--answers {}: {e}", path.display())))?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| CliError::usage(format!("--answers {}: {e}", path.display())))?;
            let Value::Object(map) = value else {
                return Err(CliError::usage(format!(
                    "--answers {}: expected a JSON object of KEY: answer",
                    path.display()
                )));
            };
            entries.extend(map);
        }
        for flag in flags {
            entries.push(parse_flag(flag)?);
        }
        Ok(Self { entries })
    }

    /// The answer to the input request under `key`: an answer named by the full key, or by its
    /// last segment (`ask_region` for `my_server::ask_region` or `__main__:ask_region`).
    pub(crate) fn for_request(&self, key: &str) -> Option<&Value> {
        let short = last_segment(key);
        self.entries
            .iter()
            .rev()
            .find(|(name, _)| name == key)
            .or_else(|| self.entries.iter().rev().find(|(name, _)| name == short))
            .map(|(_, value)| value)
    }

    /// The answer to a question of kind `kind` (`url`, `sampling`, `roots`: the key the SDK
    /// gives 2025-11-25 back-channel questions, which carry none): named by the question's key
    /// (as [`Self::for_request`]), or else by its kind, so that `--answer url=accept` answers a
    /// URL question in either era, whatever key the server chose.
    pub(crate) fn for_question(&self, key: &str, kind: &str) -> Option<&Value> {
        self.for_request(key).or_else(|| self.for_field(kind))
    }

    /// The answer to a whole form: named by the input request's key or by the kind `form` (as
    /// [`Self::for_question`]), or an object named after one of the form's `fields`. A typed
    /// field's value is never an object, so such an answer is meant for the whole form
    /// (`{"action": "decline"}`, or the content), in either era.
    pub(crate) fn for_form<'a>(
        &self,
        key: Option<&str>,
        kind: &str,
        mut fields: impl Iterator<Item = &'a str>,
    ) -> Option<&Value> {
        self.for_question(key.unwrap_or(kind), kind).or_else(|| {
            fields.find_map(|field| self.for_field(field).filter(|value| value.is_object()))
        })
    }

    /// The answer to a form field named `field`.
    pub(crate) fn for_field(&self, field: &str) -> Option<&Value> {
        self.entries
            .iter()
            .rev()
            .find(|(name, _)| name == field)
            .map(|(_, value)| value)
    }
}

/// `KEY=JSON`; a value that is not JSON is a string.
fn parse_flag(flag: &str) -> Result<(String, Value)> {
    let (key, raw) = flag
        .split_once('=')
        .filter(|(key, _)| !key.is_empty())
        .ok_or_else(|| CliError::usage(format!("--answer {flag:?}: expected KEY=JSON")))?;
    Ok((key.to_owned(), lenient_json(raw)))
}

/// The JSON value `raw` spells, or `raw` as a string.
pub(crate) fn lenient_json(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// The last segment of an input-request key.
fn last_segment(key: &str) -> &str {
    key.rsplit([':', '/', '.']).next().unwrap_or(key)
}

/// An answer that is an explicit action (`{"action": "decline"}`), if it is one.
pub(crate) fn explicit_action(value: &Value) -> Option<(&str, Option<&Map<String, Value>>)> {
    let object = value.as_object()?;
    let action = object.get("action")?.as_str()?;
    Some((action, object.get("content").and_then(Value::as_object)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answers(flags: &[&str]) -> Answers {
        let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
        Answers::from_args(&flags, None).unwrap()
    }

    #[test]
    fn keys_and_segments() {
        let a = answers(&[
            "region=\"eu-west-1\"",
            "my_server::questions::ask_budget={\"amount\":3}",
        ]);
        assert_eq!(a.for_request("region"), Some(&json!("eu-west-1")));
        assert_eq!(
            a.for_request("my_server::questions::region"),
            Some(&json!("eu-west-1"))
        );
        assert_eq!(a.for_request("__main__:region"), Some(&json!("eu-west-1")));
        assert_eq!(
            a.for_request("my_server::questions::ask_budget"),
            Some(&json!({"amount": 3}))
        );
        assert_eq!(a.for_request("ask_budget"), None);
        assert_eq!(a.for_field("region"), Some(&json!("eu-west-1")));
    }

    #[test]
    fn values_are_json_or_strings() {
        let a = answers(&["n=3", "s=eu-west-1", "b=true", "e=", "later=1", "later=2"]);
        assert_eq!(a.for_field("n"), Some(&json!(3)));
        assert_eq!(a.for_field("s"), Some(&json!("eu-west-1")));
        assert_eq!(a.for_field("b"), Some(&json!(true)));
        assert_eq!(a.for_field("e"), Some(&json!("")));
        assert_eq!(a.for_field("later"), Some(&json!(2)));
        assert!(Answers::from_args(&["novalue".to_owned()], None).is_err());
        assert!(Answers::from_args(&["=1".to_owned()], None).is_err());
    }

    #[test]
    fn forms_by_key_or_by_field() {
        let a = answers(&["region={\"action\":\"decline\"}", "size=3"]);
        let decline = json!({"action": "decline"});
        // 2026-07-28: by the key's last segment.
        assert_eq!(
            a.for_form(Some("demo::region"), "form", ["x"].into_iter()),
            Some(&decline)
        );
        // An object named after a field, in either era.
        assert_eq!(
            a.for_form(Some("form"), "form", ["size", "region"].into_iter()),
            Some(&decline)
        );
        // A plain value answers its field only.
        assert_eq!(a.for_form(None, "form", ["size"].into_iter()), None);
        assert_eq!(
            a.for_form(Some("other"), "form", ["size"].into_iter()),
            None
        );
        // By the kind, whatever the server's key.
        let by_kind = answers(&["form={\"action\":\"cancel\"}"]);
        assert_eq!(
            by_kind.for_form(Some("region"), "form", ["region"].into_iter()),
            Some(&json!({"action": "cancel"}))
        );
    }

    /// A 2025-11-25 back-channel question's key is its kind (`url`); the same flag answers a
    /// 2026-07-28 question whatever its key, and the server's key still wins.
    #[test]
    fn questions_by_key_or_by_kind() {
        let a = answers(&["url=accept"]);
        assert_eq!(a.for_question("url", "url"), Some(&json!("accept")));
        assert_eq!(a.for_question("consent", "url"), Some(&json!("accept")));
        assert_eq!(a.for_question("consent", "sampling"), None);
        let both = answers(&["url=accept", "consent=decline"]);
        assert_eq!(both.for_question("consent", "url"), Some(&json!("decline")));
    }

    #[test]
    fn actions() {
        assert_eq!(
            explicit_action(&json!({"action": "decline"})),
            Some(("decline", None))
        );
        assert_eq!(explicit_action(&json!({"region": "x"})), None);
    }
}
