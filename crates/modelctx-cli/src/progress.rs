//! Progress notifications as a progress bar (on a terminal) or as lines (otherwise).

use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use modelctx::types::ProgressNotificationParams;
use modelctx::types::tasks::DetailedTask;
use modelctx::types::tasks_2025::Task as Task2025;

use crate::safe_text::line;
use crate::sync::lock;

/// Steps of the bar when the server gives a total (progress values need not be integers).
const SCALE: u64 = 1000;

/// Where the progress of the running request is shown.
#[derive(Debug, Clone)]
pub(crate) struct ProgressView {
    bar: Arc<Mutex<Option<ProgressBar>>>,
    terminal: bool,
    /// The task status last shown (status, message), so each change is one line.
    task: Arc<Mutex<Option<(String, String)>>>,
}

impl ProgressView {
    /// A view on stderr: a bar if stderr is a terminal, plain lines otherwise.
    pub(crate) fn stderr() -> Self {
        Self {
            bar: Arc::new(Mutex::new(None)),
            terminal: std::io::stderr().is_terminal(),
            task: Arc::new(Mutex::new(None)),
        }
    }

    /// Shows a change of the task the request became: a line `task ID: STATUS — MESSAGE` per
    /// change of status or status message (above the bar on a terminal).
    pub(crate) fn task(&self, task: &DetailedTask) {
        self.task_status(
            &task.task_id,
            task.status.as_str(),
            task.status_message.as_deref(),
        );
    }

    /// Shows a 2025-11-25 task's status: the same line as a 2026-07-28 task's.
    pub(crate) fn task_2025(&self, task: &Task2025) {
        self.task_status(
            &task.task_id,
            task.status.as_str(),
            task.status_message.as_deref(),
        );
    }

    /// `task ID: STATUS — MESSAGE`, once per change.
    fn task_status(&self, task_id: &str, status: &str, message: Option<&str>) {
        let (status, message) = (status.to_owned(), message.unwrap_or_default().to_owned());
        {
            let mut last = lock(&self.task);
            if last.as_ref() == Some(&(status.clone(), message.clone())) {
                return;
            }
            *last = Some((status.clone(), message.clone()));
        }
        // Server text: escaped before it reaches the terminal.
        let (id, status, message) = (line(task_id), line(&status), line(&message));
        let shown = if message.is_empty() {
            format!("task {id}: {status}")
        } else {
            format!("task {id}: {status} — {message}")
        };
        let slot = lock(&self.bar);
        match slot.as_ref() {
            Some(bar) if self.terminal => bar.println(shown),
            _ => {
                let _ = writeln!(std::io::stderr().lock(), "{shown}");
            }
        }
    }

    /// Shows one notification.
    pub(crate) fn update(&self, params: &ProgressNotificationParams) {
        let progress = params.progress.as_f64().unwrap_or(0.0);
        let total = params.total.as_ref().and_then(serde_json::Number::as_f64);
        let message = line(params.message.as_deref().unwrap_or_default()).into_owned();
        if !self.terminal {
            let mut err = std::io::stderr().lock();
            let _ = match total {
                Some(total) => writeln!(err, "progress {progress}/{total} {message}"),
                None => writeln!(err, "progress {progress} {message}"),
            };
            return;
        }
        let mut slot = lock(&self.bar);
        let bar = slot.get_or_insert_with(|| new_bar(total.is_some()));
        match total.filter(|t| *t > 0.0) {
            Some(total) => {
                let ratio = (progress / total).clamp(0.0, 1.0);
                // Rounded to the bar's resolution; a ratio of at most 1 fits in u64.
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "0 ≤ ratio ≤ 1"
                )]
                bar.set_position((ratio * SCALE as f64).round() as u64);
                bar.set_message(format!("{progress}/{total} {message}"));
            }
            None => {
                bar.set_message(format!("{progress} {message}"));
                bar.tick();
            }
        }
    }

    /// Removes the bar (before the terminal is used for a question, and at the end).
    pub(crate) fn clear(&self) {
        if let Some(bar) = lock(&self.bar).take() {
            bar.finish_and_clear();
        }
    }
}

fn new_bar(bounded: bool) -> ProgressBar {
    let bar = if bounded {
        ProgressBar::with_draw_target(Some(SCALE), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    };
    let template = if bounded {
        "{spinner} [{bar:30}] {msg}"
    } else {
        "{spinner} {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
