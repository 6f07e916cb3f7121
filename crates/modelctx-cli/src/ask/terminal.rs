//! The terminal the questions are put on: one question at a time, prompts and commentary on
//! stderr, answers read from stdin line by line (so a pipe drives them as well as a terminal
//! does). The bottom of `ask`: every kind of question (form, URL, sampling, roots) talks to
//! the user through it, and it knows none of them.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::OnceLock;

use console::style;
use tokio::sync::{Mutex, MutexGuard, mpsc};

use crate::progress::ProgressView;
use crate::safe_text::line;

/// The terminal, shared by the callbacks of one client: a batched round's callbacks run
/// concurrently, and the lock on the input keeps the terminal to one of them.
#[derive(Debug)]
pub(super) struct Terminal {
    /// Whether to ask on stdin at all (`mcp bench` never does).
    interactive: bool,
    server: OnceLock<String>,
    progress: ProgressView,
    input: Mutex<Lines>,
}

impl Terminal {
    pub(super) fn new(interactive: bool, progress: ProgressView) -> Self {
        Self {
            interactive,
            server: OnceLock::new(),
            progress,
            input: Mutex::new(Lines::default()),
        }
    }

    /// Whether the user can be asked (stdin is read at all).
    pub(super) fn interactive(&self) -> bool {
        self.interactive
    }

    /// Names the server in every question from now on ("show which server is asking").
    pub(super) fn set_server(&self, label: String) {
        let _ = self.server.set(label);
    }

    pub(super) fn server(&self) -> &str {
        self.server.get().map_or("the server", String::as_str)
    }

    /// The terminal for one question: the other callbacks wait, and the progress line is
    /// cleared for the question.
    pub(super) async fn take(&self) -> MutexGuard<'_, Lines> {
        let input = self.input.lock().await;
        self.progress.clear();
        input
    }

    /// The terminal held for a line of commentary, the progress line left as it is.
    pub(super) async fn hold(&self) -> MutexGuard<'_, Lines> {
        self.input.lock().await
    }

    /// A dim line of commentary (none when not interactive: `mcp bench` stays quiet).
    pub(super) fn note(&self, text: &str) {
        if self.interactive {
            note_line(text);
        }
    }

    /// Which server asks what; `answer_with` is the `--answer` that would answer it without
    /// asking, shown only where the question names nothing the user could type instead (a
    /// form's fields are named at its prompts, and answer it by those names).
    pub(super) fn header(&self, what: &str, message: &str, answer_with: Option<String>) {
        if !self.interactive {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "\n{} {} {what}: {}",
            style("?").cyan().bold().for_stderr(),
            style(line(self.server())).bold().for_stderr(),
            style(line(message)).bold().for_stderr()
        );
        if let Some(flag) = answer_with {
            let _ = writeln!(
                err,
                "  {}",
                style(format!("({} answers this without asking)", line(&flag)))
                    .dim()
                    .for_stderr()
            );
        }
    }

    /// Asks until one of `options` (lower-cased input → choice) is typed; closed stdin cancels.
    pub(super) async fn choose(
        &self,
        input: &mut Lines,
        prompt: &str,
        options: &[(&str, &'static str)],
    ) -> &'static str {
        loop {
            let Some(line) = self.read(input, prompt).await else {
                self.note("stdin is closed; cancelling");
                return "cancel";
            };
            let typed = line.trim().to_ascii_lowercase();
            if let Some((_, choice)) = options.iter().find(|(text, _)| *text == typed) {
                return choice;
            }
            warn(&format!(
                "{:?}: choose one of the bracketed letters",
                line.trim()
            ));
        }
    }

    pub(super) async fn read(&self, input: &mut Lines, prompt: &str) -> Option<String> {
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{prompt}");
            let _ = err.flush();
        }
        let line = input.next().await;
        if let Some(line) = &line
            && !std::io::stdin().is_terminal()
        {
            // Nothing echoed what was piped in: show it, so the transcript reads like a session.
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        line
    }
}

/// A dim line; `text` may quote the server (a description, a choice), so it is escaped.
fn note_line(text: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "  {}",
        style(line(text)).dim().for_stderr()
    );
}

/// A problem with what was typed; it may quote the server (the choices), so it is escaped.
pub(super) fn warn(text: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "  {} {}",
        style("!").red().bold().for_stderr(),
        line(text)
    );
}

/// Lines of stdin, read by a thread started on first use (a blocked read never holds up the
/// runtime or the exit).
#[derive(Debug, Default)]
pub(super) struct Lines {
    receiver: Option<mpsc::UnboundedReceiver<String>>,
}

impl Lines {
    async fn next(&mut self) -> Option<String> {
        let receiver = self.receiver.get_or_insert_with(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    if sender.send(line.trim_end_matches('\r').to_owned()).is_err() {
                        break;
                    }
                }
            });
            receiver
        });
        receiver.recv().await
    }
}
