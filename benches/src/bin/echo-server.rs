//! The SDK echo server: one `echo {text}` tool that returns the text as a text content block.
//!
//! ```text
//! echo-server --stdio                                   # until stdin closes
//! echo-server --http 127.0.0.1:0 [--addr-file PATH]     # until SIGTERM / SIGINT
//!             [--current-thread]                        # tokio current-thread runtime
//! ```
//!
//! No logging subscriber is installed: nothing is logged on the hot path.

use std::path::PathBuf;
use std::process::ExitCode;

use mcp::server::Server;
use mcp::server::http::HttpConfig;
use mcp::types::{CallToolRequestParams, CallToolResult, Tool};
use mcp_benches::{Args, SERVER_NAME, SERVER_VERSION, TOOL, bind_loopback, eprint_line};
use serde_json::{Value, json};

enum Mode {
    Stdio,
    Http {
        addr: String,
        addr_file: Option<PathBuf>,
    },
}

struct Options {
    mode: Mode,
    current_thread: bool,
}

const USAGE: &str =
    "usage: echo-server (--stdio | --http 127.0.0.1:PORT [--addr-file PATH]) [--current-thread]";

fn options() -> Result<Options, String> {
    let mut args = Args::from_env();
    let mut stdio = false;
    let mut http = None;
    let mut addr_file = None;
    let mut current_thread = false;
    while let Some(word) = args.next() {
        match word.as_str() {
            "--stdio" => stdio = true,
            "--http" => http = Some(args.value("--http")?),
            "--addr-file" => addr_file = Some(PathBuf::from(args.value("--addr-file")?)),
            "--current-thread" => current_thread = true,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let mode = match (stdio, http) {
        (true, None) => Mode::Stdio,
        (false, Some(addr)) => Mode::Http { addr, addr_file },
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

async fn run(mode: Mode, server: Server) -> std::io::Result<()> {
    match mode {
        Mode::Stdio => server.serve_stdio().await,
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
