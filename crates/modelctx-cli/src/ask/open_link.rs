//! `ui/open-link`: an app shown by `mcp app` asks to open a URL in the user's browser. The URL
//! is the app's text — the server's — so it is shown as a browser reads it (`crate::shown_url`:
//! the host highlighted, the warnings), and opened only once the user has said yes, or an
//! `--answer link=accept` has; Enter, a closed stdin or anything but yes refuses.

use console::style;
use serde_json::Value;

use super::terminal::{Lines, Terminal};
use crate::answers::Answers;
use crate::shown_url::highlight_url;

/// The kind of question, and the `--answer` key that answers it without asking.
const LINK_KEY: &str = "link";

/// What the user may type to "Open it in your browser?": Enter refuses.
const OPEN_ANSWERS: &[(&str, &str)] = &[
    ("y", "accept"),
    ("yes", "accept"),
    ("", "decline"),
    ("n", "decline"),
    ("no", "decline"),
];

/// Whether the user consents to opening `url`, which the app asked for.
pub(super) async fn consent(
    terminal: &Terminal,
    answers: &Answers,
    input: &mut Lines,
    url: &str,
) -> bool {
    let shown = highlight_url(url);
    terminal.header(
        "app asks you to open a link on",
        if shown.host.is_empty() {
            "no site"
        } else {
            &shown.host
        },
        Some(format!("--answer {LINK_KEY}=accept")),
    );
    shown.print();
    if let Some(answer) = answers.for_field(LINK_KEY) {
        let accepted = matches!(answer, Value::Bool(true))
            || answer.as_str().is_some_and(|text| text == "accept");
        terminal.note(&format!(
            "answered from --answer: {}",
            if accepted { "accept" } else { "decline" }
        ));
        return accepted;
    }
    if !terminal.interactive() {
        return false;
    }
    let choice = terminal
        .choose(
            input,
            &format!(
                "  Open it in your browser? [y]es, [{}]o: ",
                style("N").bold().for_stderr()
            ),
            OPEN_ANSWERS,
        )
        .await;
    choice == "accept"
}
