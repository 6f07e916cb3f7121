//! Cancelling a task whose follow was abandoned (dropped, or timed out), in the background: one
//! guard for both task protocols, which differ only in their `tasks/cancel`.

use futures::future::BoxFuture;

use super::error::ClientError;
use super::session::Session;

/// How a task protocol cancels a task.
pub(super) type Cancel = fn(Session, String) -> BoxFuture<'static, Result<(), ClientError>>;

/// Sends the task's `tasks/cancel` when dropped while armed.
pub(super) struct CancelGuard {
    session: Option<Session>,
    task_id: String,
    cancel: Cancel,
}

impl CancelGuard {
    /// Armed when `session` is given (the settings' `cancel_on_drop`).
    pub(super) fn new(session: Option<Session>, task_id: &str, cancel: Cancel) -> Self {
        Self {
            session,
            task_id: task_id.to_owned(),
            cancel,
        }
    }

    /// Settles a follow's outcome: only a timeout leaves the guard armed, since otherwise the task
    /// ended (or the follow failed for a reason unrelated to time) and is left be.
    pub(super) fn settle<T>(mut self, outcome: &Result<T, ClientError>) {
        if !matches!(outcome, Err(ClientError::Timeout { .. })) {
            self.session = None;
        }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let task_id = std::mem::take(&mut self.task_id);
        let cancelled = (self.cancel)(session, task_id.clone());
        handle.spawn(async move {
            if let Err(error) = cancelled.await {
                tracing::debug!(task = %task_id, %error, "tasks/cancel of an abandoned task failed");
            }
        });
    }
}
