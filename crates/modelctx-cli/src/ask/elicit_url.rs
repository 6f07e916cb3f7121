//! URL elicitation: consent to open a URL the server names. The URL is shown as a browser
//! would open it (`crate::shown_url`); `mcp` never opens or fetches it itself.

use std::io::Write as _;

use console::style;
use modelctx::client::CallbackContext;
use modelctx::types::{ElicitRequestUrlParams, ElicitResult};
use serde_json::Value;

use super::terminal::{Lines, Terminal};
use crate::answers::{Answers, explicit_action};
use crate::shown_url::highlight_url;

/// What the user may type to "Do you consent to open it?" for a URL: Enter declines.
const URL_CONSENT_ANSWERS: &[(&str, &str)] = &[
    ("y", "accept"),
    ("yes", "accept"),
    ("", "decline"),
    ("n", "decline"),
    ("no", "decline"),
    ("c", "cancel"),
    ("cancel", "cancel"),
];

/// Answers a request to open a URL: the URL shown as a browser reads it (its host
/// highlighted, its warnings), then consent from an `--answer` or the user; Enter declines.
pub(super) async fn answer(
    terminal: &Terminal,
    answers: &Answers,
    input: &mut Lines,
    key: Option<&str>,
    params: &ElicitRequestUrlParams,
) -> ElicitResult {
    let key = key.unwrap_or(CallbackContext::URL_KEY);
    terminal.header(
        "asks you to open a URL",
        &params.message,
        Some(format!("--answer {key}=accept")),
    );
    let shown = highlight_url(&params.url);
    shown.print();
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "  {}",
            style("mcp does not open or fetch this URL; if you consent, open it yourself.")
                .dim()
                .for_stderr()
        );
    }
    if let Some(answer) = answers.for_question(key, CallbackContext::URL_KEY) {
        let action = match answer {
            Value::Bool(true) => Some("accept"),
            Value::Bool(false) => Some("decline"),
            Value::String(text) => Some(text.as_str()),
            other => explicit_action(other).map(|(action, _)| action),
        };
        if let Some(action) = action.filter(|a| ["accept", "decline", "cancel"].contains(a)) {
            terminal.note(&format!("answered from --answer: {action}"));
            return url_result(action);
        }
    }
    if !terminal.interactive() {
        terminal.note("no --answer covers this URL; cancelling");
        return ElicitResult::cancel();
    }
    let choice = terminal
        .choose(
            input,
            &format!(
                "  Do you consent to open it? [y]es (accept), [{}]o (decline), [c]ancel: ",
                style("N").bold().for_stderr()
            ),
            URL_CONSENT_ANSWERS,
        )
        .await;
    url_result(choice)
}

fn url_result(action: &str) -> ElicitResult {
    match action {
        "accept" => ElicitResult::accept_url(),
        "decline" => ElicitResult::decline(),
        _ => ElicitResult::cancel(),
    }
}
