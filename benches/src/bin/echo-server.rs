//! The SDK echo server: one `echo {text}` tool that returns the text as a text content block.
//!
//! ```text
//! echo-server --stdio                                   # until stdin closes
//! echo-server --stdio-pipes                             # same, stdin / stdout as epoll pipes
//! echo-server --http 127.0.0.1:0 [--addr-file PATH]     # until SIGTERM / SIGINT
//!             [--current-thread]                        # tokio current-thread runtime
//! ```
//!
//! No logging subscriber is installed: nothing is logged on the hot path.
//!
//! `--stdio` is what users get from [`Server::serve_stdio`] (tokio's `Stdin` / `Stdout`, which
//! run every read and write on the blocking thread pool). `--stdio-pipes` measures a proposed
//! change: when stdin and stdout are pipes, hand them to [`Server::serve_io`] as non-blocking
//! `tokio::net::unix::pipe` ends driven by the reactor (it falls back to `--stdio` otherwise).

use std::path::PathBuf;
use std::process::ExitCode;

use mcp::server::Server;
use mcp::server::http::HttpConfig;
use mcp::types::{CallToolRequestParams, CallToolResult, Tool};
use mcp_benches::{Args, SERVER_NAME, SERVER_VERSION, TOOL, bind_loopback, eprint_line};
use serde_json::{Value, json};
use tokio::net::unix::pipe;

enum Mode {
    Stdio,
    StdioPipes,
    Http {
        addr: String,
        addr_file: Option<PathBuf>,
    },
}

struct Options {
    mode: Mode,
    current_thread: bool,
}

const USAGE: &str = "usage: echo-server (--stdio | --stdio-pipes | --http 127.0.0.1:PORT \
                     [--addr-file PATH]) [--current-thread]";

fn options() -> Result<Options, String> {
    let mut args = Args::from_env();
    let mut stdio = false;
    let mut pipes = false;
    let mut http = None;
    let mut addr_file = None;
    let mut current_thread = false;
    while let Some(word) = args.next() {
        match word.as_str() {
            "--stdio" => stdio = true,
            "--stdio-pipes" => pipes = true,
            "--http" => http = Some(args.value("--http")?),
            "--addr-file" => addr_file = Some(PathBuf::from(args.value("--addr-file")?)),
            "--current-thread" => current_thread = true,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let mode = match (stdio, pipes, http) {
        (true, false, None) => Mode::Stdio,
        (false, true, None) => Mode::StdioPipes,
        (false, false, Some(addr)) => Mode::Http { addr, addr_file },
        _ => return Err(USAGE.to_owned()),
    };
    Ok(Options {
        mode,
        current_thread,
    })
}

/// The echo handler: moves the text out of the arguments (no copy).
async fn echo(params: CallToolRequestParams) -> CallToolResult {
    let text = match params.arguments.and_then(|mut a| a.remove("text")) {
        Some(Value::String(text)) => text,
        _ => String::new(),
    };
    CallToolResult::text(text)
}

fn server() -> Result<Server, String> {
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    });
    let Value::Object(schema) = schema else {
        return Err("schema is not an object".to_owned());
    };
    Server::builder(SERVER_NAME, SERVER_VERSION)
        .tool(Tool::new(TOOL, schema), |_ctx, params| echo(params))
        .build()
        .map_err(|e| e.to_string())
}

/// stdin and stdout as non-blocking pipe ends, when both are pipes.
fn stdio_pipes() -> Option<(pipe::Receiver, pipe::Sender)> {
    use std::os::fd::AsFd as _;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    Some((
        pipe::Receiver::from_owned_fd(stdin).ok()?,
        pipe::Sender::from_owned_fd(stdout).ok()?,
    ))
}

async fn run(mode: Mode, server: Server) -> std::io::Result<()> {
    match mode {
        Mode::Stdio => server.serve_stdio().await,
        Mode::StdioPipes => match stdio_pipes() {
            Some((reader, writer)) => server.serve_io(reader, writer).await,
            None => server.serve_stdio().await,
        },
        Mode::Http { addr, addr_file } => {
            let listener = bind_loopback(&addr, addr_file.as_deref()).await?;
            // serve_http_on turns TCP_NODELAY on for every accepted connection.
            server
                .serve_http_on(
                    listener,
                    HttpConfig::default(),
                    mcp_benches::shutdown_signal(),
                )
                .await
        }
    }
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprint_line(&message);
            return ExitCode::from(2);
        }
    };
    let server = match server() {
        Ok(server) => server,
        Err(message) => {
            eprint_line(&format!("echo-server: {message}"));
            return ExitCode::FAILURE;
        }
    };
    let result = mcp_benches::runtime(options.current_thread)
        .and_then(|rt| rt.block_on(run(options.mode, server)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprint_line(&format!("echo-server: {error}"));
            ExitCode::FAILURE
        }
    }
}
