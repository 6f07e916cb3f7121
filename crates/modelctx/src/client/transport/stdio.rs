//! A spawned server process: its stdin and stdout carry the protocol (through the line engine),
//! its stderr is left as the caller configured it (inherited by default).
//!
//! Shutdown follows the stdio transport rule: close stdin, wait for the server to exit, then
//! terminate it (SIGTERM on Unix), and finally kill it.

use std::io;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// The spawned server.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Mutex<Option<Child>>,
    grace: Duration,
}

/// Spawns `command` with piped stdin/stdout. The child is killed if the client is dropped
/// without being closed.
pub(crate) fn spawn(
    mut command: Command,
    grace: Duration,
) -> io::Result<(ServerProcess, ChildStdout, ChildStdin)> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let missing = || io::Error::other("the child's stdio was not captured");
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stdin = child.stdin.take().ok_or_else(missing)?;
    Ok((
        ServerProcess {
            child: Mutex::new(Some(child)),
            grace,
        },
        stdout,
        stdin,
    ))
}

impl ServerProcess {
    /// Waits (its stdin already closed) up to the grace period for the server to exit, then
    /// sends SIGTERM and waits again, then kills it.
    pub(crate) async fn shutdown(&self) -> io::Result<()> {
        let Some(mut child) = self.child.lock().await.take() else {
            return Ok(());
        };
        if let Ok(status) = tokio::time::timeout(self.grace, child.wait()).await {
            tracing::debug!(status = ?status?, "server exited after stdin closed");
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            tracing::debug!("server still running; sending SIGTERM");
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            if tokio::time::timeout(self.grace, child.wait()).await.is_ok() {
                return Ok(());
            }
        }
        tracing::warn!("server ignored the shutdown; killing it");
        child.kill().await
    }
}
