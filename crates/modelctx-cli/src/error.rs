//! What can go wrong, and the exit code it earns.

use std::fmt;
use std::process::ExitCode;

/// A failed command: a message for stderr and an exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    code: u8,
}

/// The result of a command.
pub(crate) type Result<T> = std::result::Result<T, CliError>;

impl CliError {
    /// The command line was wrong (exit code 2, as for clap's own errors).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 2,
        }
    }

    /// The command failed (exit code 1).
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 1,
        }
    }

    /// The user interrupted the command (exit code 130, as a shell reports SIGINT).
    pub(crate) fn interrupted(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 130,
        }
    }

    /// The same error with `note` added to its message (on the same line).
    pub(crate) fn with_note(mut self, note: &str) -> Self {
        self.message.push_str("; ");
        self.message.push_str(note);
        self
    }

    /// The process exit code.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::io::Error> for CliError {
    fn from(value: std::io::Error) -> Self {
        Self::failed(value.to_string())
    }
}
