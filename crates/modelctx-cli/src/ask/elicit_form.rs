//! Elicitation forms: a form answered from the `--answer`s that cover it, or asked field by
//! field — each field's title, description, choices and default shown, the input parsed and
//! checked against the field's schema (`crate::form`), `!decline` and `!cancel` at any prompt —
//! and sent only when the user says so.

use std::collections::BTreeSet;

use console::style;
use modelctx::client::CallbackContext;
use modelctx::types::{ElicitAction, ElicitRequestFormParams, ElicitResult, PrimitiveSchema};
use serde_json::{Map, Value};

use super::terminal::{Lines, Terminal, warn};
use crate::answers::{Answers, explicit_action};
use crate::form;
use crate::safe_text::line;

/// What the user may type (lower-cased) to "Send …?" after filling a form, and what it means:
/// Enter accepts the answer shown.
const SEND_ANSWERS: &[(&str, &str)] = &[
    ("", "accept"),
    ("a", "accept"),
    ("accept", "accept"),
    ("y", "accept"),
    ("yes", "accept"),
    ("d", "decline"),
    ("decline", "decline"),
    ("n", "decline"),
    ("no", "decline"),
    ("c", "cancel"),
    ("cancel", "cancel"),
    ("e", "edit"),
    ("edit", "edit"),
];

/// What the user chose at one prompt.
enum Step<T> {
    Value(T),
    Stop(ElicitAction),
}

/// Answers a form: from the `--answer`s that cover it (checked against the schema), else field
/// by field in the terminal, then "Send …?" to accept, decline, cancel or edit.
pub(super) async fn answer(
    terminal: &Terminal,
    answers: &Answers,
    input: &mut Lines,
    key: Option<&str>,
    form: &ElicitRequestFormParams,
) -> ElicitResult {
    terminal.header("asks", &form.message, None);
    let schema = &form.requested_schema;
    let required: BTreeSet<&str> = schema
        .required
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();

    // Prepared answers: one for the whole request, then one per field.
    let mut prepared = Map::new();
    let fields = schema.properties.iter().filter(|(_, f)| form::is_typed(f));
    if let Some(answer) = answers.for_form(
        key,
        CallbackContext::FORM_KEY,
        fields.map(|(name, _)| name.as_str()),
    ) {
        if let Some((action, content)) = explicit_action(answer) {
            terminal.note(&format!("answered from --answer: {action}"));
            return action_result(action, content);
        }
        match answer {
            Value::Object(map) => prepared.extend(map.clone()),
            value if schema.properties.len() == 1 => {
                if let Some(name) = schema.properties.keys().next() {
                    prepared.insert(name.clone(), value.clone());
                }
            }
            _ => terminal.note(
                "the --answer for this request is not an object, and the form has \
                       several fields; asking",
            ),
        }
    }
    for (name, field) in &schema.properties {
        if !prepared.contains_key(name)
            && let Some(value) = answers.for_field(name)
            // An object named after a typed field answered the whole form (above).
            && !(value.is_object() && form::is_typed(field))
        {
            prepared.insert(name.clone(), value.clone());
        }
    }
    let mut content = Map::new();
    for (name, value) in prepared {
        match schema.properties.get(&name) {
            Some(field) => match form::check(field, &value) {
                Ok(value) => {
                    content.insert(name, value);
                }
                Err(problem) => {
                    terminal.note(&format!("--answer {name}: {problem}; asking instead"));
                }
            },
            None => terminal.note(&format!("--answer {name}: the form has no such field")),
        }
    }
    if !content.is_empty() && required.iter().all(|r| content.contains_key(*r)) {
        for (name, field) in &schema.properties {
            if !content.contains_key(name)
                && let Some(value) = form::default(field)
            {
                content.insert(name.clone(), value);
            }
        }
        terminal.note(&format!(
            "answered from --answer: {}",
            Value::Object(content.clone())
        ));
        return ElicitResult::accept(content);
    }
    if !terminal.interactive() {
        terminal.note("no --answer covers this form; cancelling");
        return ElicitResult::cancel();
    }

    let defaults = schema
        .properties
        .values()
        .any(|f| form::default(f).is_some());
    terminal.note(if defaults {
        "Type !decline or !cancel at any prompt; Enter keeps a [default]."
    } else {
        "Type !decline or !cancel at any prompt."
    });
    loop {
        let mut answer = content.clone();
        for (name, field) in &schema.properties {
            if answer.contains_key(name) {
                continue;
            }
            match ask_field(
                terminal,
                input,
                name,
                field,
                required.contains(name.as_str()),
            )
            .await
            {
                Step::Value(Some(value)) => {
                    answer.insert(name.clone(), value);
                }
                Step::Value(None) => {}
                Step::Stop(action) => return action_result(action_name(action), None),
            }
        }
        let shown = line(&Value::Object(answer.clone()).to_string()).into_owned();
        let choice = terminal
            .choose(
                input,
                &format!(
                    "  Send {shown}? [{}]ccept, [d]ecline, [c]ancel, [e]dit: ",
                    style("A").bold().for_stderr()
                ),
                SEND_ANSWERS,
            )
            .await;
        match choice {
            "accept" => return ElicitResult::accept(answer),
            "edit" => {}
            other => return action_result(other, None),
        }
    }
}

/// Asks one field until the input fits; `Value(None)` leaves an optional field out.
async fn ask_field(
    terminal: &Terminal,
    input: &mut Lines,
    name: &str,
    field: &PrimitiveSchema,
    required: bool,
) -> Step<Option<Value>> {
    let label = line(field.title().unwrap_or(name)).into_owned();
    if let Some(description) = field.description() {
        terminal.note(&format!("{label}: {description}"));
    }
    if let Some(choices) = form::choices(field) {
        let listed: Vec<String> = choices
            .iter()
            .enumerate()
            .map(|(i, (value, title))| {
                if value == title {
                    format!("{}) {value}", i + 1)
                } else {
                    format!("{}) {title} ({value})", i + 1)
                }
            })
            .collect();
        terminal.note(&format!("  {}", listed.join("  ")));
    }
    let default = form::default(field);
    let prompt = format!(
        "  {}{} ({}){}: ",
        style(&label).bold().for_stderr(),
        if required { "*" } else { "" },
        line(&form::describe(field)),
        default
            .as_ref()
            .map(|d| format!(" [{}]", line(&shown_default(d))))
            .unwrap_or_default()
    );
    loop {
        let Some(line) = terminal.read(input, &prompt).await else {
            terminal.note("stdin is closed; cancelling");
            return Step::Stop(ElicitAction::Cancel);
        };
        let line = line.trim();
        match line {
            "!decline" => return Step::Stop(ElicitAction::Decline),
            "!cancel" => return Step::Stop(ElicitAction::Cancel),
            "" => match (&default, required) {
                (Some(value), _) => return Step::Value(Some(value.clone())),
                (None, false) => return Step::Value(None),
                (None, true) => warn("a value is required (or !decline / !cancel)"),
            },
            text => match form::parse(field, text) {
                Ok(value) => return Step::Value(Some(value)),
                Err(problem) => warn(&problem),
            },
        }
    }
}

fn shown_default(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

fn action_name(action: ElicitAction) -> &'static str {
    match action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    }
}

fn action_result(action: &str, content: Option<&Map<String, Value>>) -> ElicitResult {
    match action {
        "accept" => ElicitResult::accept(content.cloned().unwrap_or_default()),
        "decline" => ElicitResult::decline(),
        _ => ElicitResult::cancel(),
    }
}
