//! Which server to talk to, and connecting to it.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use modelctx::client::auth::{AuthError, UrlRefusal};
use modelctx::client::{Client, ClientBuilder, ClientError, Mode};
use modelctx::types::{Implementation, ProtocolVersion};

use crate::cli::{ConnectArgs, ModeArg};
use crate::error::{CliError, Result};

/// How long `mcp` waits, once it gives up on a command (`--timeout`, Ctrl-C, a failure), for
/// the server to hear it: the `notifications/cancelled` of the request in flight, then the
/// `DELETE` of a 2025-11-25 HTTP session or a stdio server's shutdown.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A server: a streamable HTTP endpoint, or a command spawned as a stdio server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `http://…` or `https://…`.
    Http(String),
    /// The command line of a stdio server.
    Stdio(Vec<String>),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http(url) => f.write_str(url),
            Self::Stdio(command) => write!(f, "stdio: {}", command.join(" ")),
        }
    }
}

impl Target {
    /// Splits the positional arguments: with a `-- CMD…` command line the target is that
    /// command and every positional is an operand; otherwise the first positional must be a
    /// URL. Returns the target and the remaining operands.
    pub(crate) fn split(positional: &[String], command: &[String]) -> Result<(Self, Vec<String>)> {
        if !command.is_empty() {
            if let Some(first) = positional.first()
                && is_url(first)
            {
                return Err(CliError::usage(format!(
                    "give either a URL ({first}) or a command after `--`, not both"
                )));
            }
            return Ok((Self::Stdio(command.to_vec()), positional.to_vec()));
        }
        match positional.split_first() {
            Some((first, rest)) if is_url(first) => Ok((Self::Http(first.clone()), rest.to_vec())),
            Some((first, _)) => Err(CliError::usage(format!(
                "{first:?} is not an http(s) URL; give a URL, or a stdio server's command line \
                 after `--` (e.g. `mcp tools -- python server.py`)"
            ))),
            None => Err(CliError::usage(
                "no server given: pass a URL, or a stdio server's command line after `--`",
            )),
        }
    }

    /// Connects with `builder`, configured from `args`, within `--connect-timeout` (a stdio
    /// server's start included, signing in not).
    pub(crate) async fn connect(
        &self,
        builder: ClientBuilder,
        args: &ConnectArgs,
    ) -> Result<Client> {
        let mut builder = builder
            .mode(match args.mode {
                ModeArg::Auto => Mode::Auto,
                ModeArg::Modern => Mode::Pinned(ProtocolVersion::LATEST),
                ModeArg::Handshake => Mode::Handshake,
            })
            .client_info(Implementation::new(
                "modelctx-cli",
                env!("CARGO_PKG_VERSION"),
            ))
            .input_required_max_rounds(args.max_rounds);
        for header in &args.headers {
            let (name, value) = header.split_once(':').ok_or_else(|| {
                CliError::usage(format!("--header {header:?}: expected `Name: value`"))
            })?;
            let name = name
                .trim()
                .parse()
                .map_err(|e| CliError::usage(format!("--header {header:?}: {e}")))?;
            let value = value
                .trim()
                .parse()
                .map_err(|e| CliError::usage(format!("--header {header:?}: {e}")))?;
            builder = builder.http_header(name, value);
        }
        match (self, crate::oauth::config(args).await?) {
            (_, None) => {}
            (Self::Http(_), Some(oauth)) => builder = builder.oauth(oauth),
            (Self::Stdio(_), Some(_)) => {
                return Err(CliError::usage(
                    "--oauth signs in to HTTP servers; a stdio server takes no sign-in",
                ));
            }
        }
        let connecting = async {
            match self {
                Self::Http(url) => Box::pin(builder.connect_http_or_sse(url)).await,
                Self::Stdio(command) => {
                    let mut process = tokio::process::Command::new(&command[0]);
                    process.args(&command[1..]);
                    // Its own process group: Ctrl-C in the terminal reaches `mcp` alone, which
                    // then cancels what runs (a task) through the server before closing it; the
                    // server would otherwise die of the same SIGINT first.
                    #[cfg(unix)]
                    process.process_group(0);
                    // The server is the user's own command line, run as their shell would run
                    // it: with their environment (an SDK client passes a safe subset).
                    let builder = builder.inherit_environment(true);
                    Box::pin(builder.connect_stdio(process)).await
                }
            }
        };
        let client =
            crate::sign_in_clock::within(Some(args.connect_timeout), &args.sign_in, connecting)
                .await
                .ok_or_else(|| {
                    CliError::failed(format!(
                        "connecting to {self} timed out after {} s (--connect-timeout)",
                        args.connect_timeout.as_secs_f64()
                    ))
                })?;
        client.map_err(|e| {
            CliError::failed(format!(
                "cannot connect to {self}: {}",
                explain(
                    &e,
                    args.oauth
                        || args.oauth_headless
                        || args.oauth_identity_token_file.is_some()
                        || args.oauth_identity_token_env.is_some()
                )
            ))
        })
    }
}

/// A client error for the user, with a hint when the server wants a sign-in.
pub(crate) fn explain(error: &ClientError, oauth: bool) -> String {
    match error {
        ClientError::HttpStatus { status: 401, .. } if !oauth => {
            format!("{error}: the server requires signing in; pass --oauth (or --oauth-headless)")
        }
        ClientError::HttpStatus { status: 403, .. } => {
            format!("{error}: the signed-in user may not do this")
        }
        ClientError::Auth(auth) => format!("signing in failed: {}", sign_in_error(auth)),
        other => other.to_string(),
    }
}

/// An OAuth error in the CLI's terms: a refused URL names the flag that allows it, not the
/// library setting.
fn sign_in_error(error: &AuthError) -> String {
    let AuthError::ForbiddenUrl { url, reason } = error else {
        return error.to_string();
    };
    let why = match reason {
        UrlRefusal::CrossOrigin => "the challenge's resource_metadata is not on the MCP \
                                    server's origin (allow https URLs at public addresses with \
                                    --oauth-cross-origin-metadata)"
            .to_owned(),
        UrlRefusal::NotPublic { host } => format!(
            "{host} is not the MCP server's host and not a public address (loopback, private, \
             link-local and other special addresses are refused); name a trusted \
             authorization server with --oauth-issuer"
        ),
        other => other.to_string(),
    };
    format!("refusing to contact {url}: {why}")
}

/// `--timeout` as a duration.
pub(crate) fn timeout(args: &ConnectArgs) -> Option<Duration> {
    args.timeout
}

/// Runs `work` until it ends or the user presses Ctrl-C (then: exit code 130).
pub(crate) async fn interruptible<T>(work: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::select! {
        outcome = work => outcome,
        _ = tokio::signal::ctrl_c() => Err(CliError::interrupted("interrupted")),
    }
}

/// Closes the connection of a command that gave up, before the process exits: what was in
/// flight is cancelled (`notifications/cancelled`), a 2025-11-25 HTTP session ended (`DELETE`),
/// a stdio server shut down. Bounded by [`CLOSE_WAIT`], and by another Ctrl-C.
pub(crate) async fn close(client: Client) {
    tokio::select! {
        closed = tokio::time::timeout(CLOSE_WAIT, client.close()) => {
            if closed.is_err() {
                eprintln!(
                    "closing the connection took more than {} s; not waiting longer",
                    CLOSE_WAIT.as_secs()
                );
            }
        }
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn is_url(value: &str) -> bool {
    value.starts_with("http://") || value.starts_with("https://")
}

/// `name version` of the server, for the user.
pub(crate) fn describe_server(client: &Client) -> String {
    match client.server_info() {
        Some(info) => format!("{} {}", info.name, info.version),
        None => "the server".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn url_or_command() {
        let (target, rest) = Target::split(
            &strings(&["http://127.0.0.1:1/mcp", "echo", "text=hi"]),
            &[],
        )
        .unwrap();
        assert_eq!(target, Target::Http("http://127.0.0.1:1/mcp".into()));
        assert_eq!(rest, strings(&["echo", "text=hi"]));

        let (target, rest) = Target::split(
            &strings(&["echo", "text=hi"]),
            &strings(&["python", "s.py"]),
        )
        .unwrap();
        assert_eq!(target, Target::Stdio(strings(&["python", "s.py"])));
        assert_eq!(rest, strings(&["echo", "text=hi"]));

        assert!(Target::split(&strings(&["echo"]), &[]).is_err());
        assert!(Target::split(&[], &[]).is_err());
        assert!(
            Target::split(&strings(&["https://x/mcp", "echo"]), &strings(&["python"])).is_err()
        );
    }
}
