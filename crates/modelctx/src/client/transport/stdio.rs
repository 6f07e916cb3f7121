//! A spawned server process: its stdin and stdout carry the protocol (through the line engine),
//! its stderr is left as the caller configured it (inherited by default).
//!
//! Shutdown follows the stdio transport rule: close stdin, wait for the server to exit, then
//! terminate it (SIGTERM on Unix), and finally kill it. On Unix the server runs in a process
//! group of its own and the signals go to the group, so what the server started (a wrapper
//! script's interpreter, a worker pool) ends with it; a client dropped without closing kills
//! the group too.
//!
//! The server gets a safe default environment unless the builder says to inherit all of it
//! ([`safe_environment`]).

use std::io;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// The spawned server.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Mutex<Option<Child>>,
    /// The server's process group (Unix): the signals of the shutdown go to all of it.
    #[cfg(unix)]
    group: Option<rustix::process::Pid>,
    grace: Duration,
}

/// The variables a spawned server inherits by default: what a program needs to run, none of
/// the client's secrets (the Python SDK's list).
#[cfg(unix)]
const SAFE_VARIABLES: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
#[cfg(windows)]
const SAFE_VARIABLES: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
];
#[cfg(not(any(unix, windows)))]
const SAFE_VARIABLES: &[&str] = &["PATH"];

/// Gives `command` the safe variables of this process's environment (a value starting `()`, a
/// shell function, is left out) and the ones set on it, and nothing else.
pub(crate) fn safe_environment(command: &mut Command) {
    let explicit: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = command
        .as_std()
        .get_envs()
        .map(|(key, value)| (key.to_owned(), value.map(ToOwned::to_owned)))
        .collect();
    command.env_clear();
    for name in SAFE_VARIABLES {
        if let Some(value) = std::env::var_os(name)
            && !value.as_encoded_bytes().starts_with(b"()")
        {
            command.env(name, value);
        }
    }
    for (key, value) in explicit {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
}

/// Spawns `command` with piped stdin/stdout, in a process group of its own (Unix), with a safe
/// environment unless `inherit_environment`. The child is killed if the client is dropped
/// without being closed.
pub(crate) fn spawn(
    mut command: Command,
    grace: Duration,
    inherit_environment: bool,
) -> io::Result<(ServerProcess, ChildStdout, ChildStdin)> {
    if !inherit_environment {
        safe_environment(&mut command);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn()?;
    let missing = || io::Error::other("the child's stdio was not captured");
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stdin = child.stdin.take().ok_or_else(missing)?;
    Ok((
        ServerProcess {
            #[cfg(unix)]
            group: child.id().and_then(group_of),
            child: Mutex::new(Some(child)),
            grace,
        },
        stdout,
        stdin,
    ))
}

/// The process group a child leads (its pid: it was spawned with `process_group(0)`).
#[cfg(unix)]
fn group_of(pid: u32) -> Option<rustix::process::Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
}

/// Sends `signal` to the whole group; an error (the group is gone) changes nothing.
#[cfg(unix)]
fn signal_group(group: rustix::process::Pid, signal: rustix::process::Signal) {
    let _ = rustix::process::kill_process_group(group, signal);
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
        if let Some(group) = self.group {
            tracing::debug!("server still running; sending SIGTERM to its process group");
            signal_group(group, rustix::process::Signal::TERM);
            if tokio::time::timeout(self.grace, child.wait()).await.is_ok() {
                // The server is gone; what it started and left behind goes too.
                signal_group(group, rustix::process::Signal::KILL);
                return Ok(());
            }
        }
        tracing::warn!("server ignored the shutdown; killing it");
        #[cfg(unix)]
        if let Some(group) = self.group {
            signal_group(group, rustix::process::Signal::KILL);
        }
        child.kill().await
    }
}

impl Drop for ServerProcess {
    /// A client dropped without closing: `kill_on_drop` kills the server, and this its group.
    fn drop(&mut self) {
        #[cfg(unix)]
        if let (Some(group), Ok(child)) = (self.group, self.child.try_lock())
            && child.is_some()
        {
            signal_group(group, rustix::process::Signal::KILL);
        }
    }
}
