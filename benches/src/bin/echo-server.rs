//! The SDK echo server: one `echo {text}` tool that returns the text as a text content block,
//! and `provision {name}`, the two-leg multi-round-trip flow of the Python peer
//! (`tests/python/provisioner.py`): an `InputRequiredResult` asking for a region with the state
//! `provision-v1`, sealed by the server (an ephemeral AES-256-GCM key), then the answer.
//!
//! ```text
//! echo-server --stdio                                   # until stdin closes
//! echo-server --stdio-pipes                             # same, stdin / stdout as epoll pipes
//! echo-server --http 127.0.0.1:0 [--addr-file PATH]     # until SIGTERM / SIGINT
//!             [--sse]                                   # every response as an event stream
//!             [--current-thread]                        # tokio current-thread runtime
//!             [--otlp-endpoint URL]                     # feature `otlp`: traced, exported
//! ```
//!
//! No logging subscriber is installed: nothing is logged on the hot path. With
//! `--otlp-endpoint` (feature `otlp`) the SDK's spans and metrics are on and exported to an
//! OTLP/HTTP collector at URL through `modelctx::otel::Telemetry` (batch processor), and flushed
//! at exit: the cost of tracing with an exporter attached.
//!
//! `--stdio` is what users get from [`Server::serve_stdio`] (tokio's `Stdin` / `Stdout`, which
//! run every read and write on the blocking thread pool). `--stdio-pipes` measures a proposed
//! change: when stdin and stdout are pipes, hand them to [`Server::serve_io`] as non-blocking
//! `tokio::net::unix::pipe` ends driven by the reactor (it falls back to `--stdio` otherwise).

use std::path::PathBuf;
use std::process::ExitCode;

use modelctx::seal::RequestStateSecurity;
use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ElicitAction, ElicitRequestFormParams, ErrorObject,
    InputRequest, InputRequiredResult, Outcome, Tool,
};
use modelctx_benches::{
    Args, FLOW_KEY, FLOW_STATE, FLOW_TOOL, SERVER_NAME, SERVER_VERSION, TOOL, bind_loopback,
    eprint_line,
};
use serde_json::{Value, json};
use tokio::net::unix::pipe;

enum Mode {
    Stdio,
    StdioPipes,
    Http {
        addr: String,
        addr_file: Option<PathBuf>,
        sse: bool,
    },
}

struct Options {
    mode: Mode,
    current_thread: bool,
    otlp_endpoint: Option<String>,
}

const USAGE: &str = "usage: echo-server (--stdio | --stdio-pipes | --http 127.0.0.1:PORT \
                     [--addr-file PATH] [--sse]) [--current-thread] [--otlp-endpoint URL]";

fn options() -> Result<Options, String> {
    let mut args = Args::from_env();
    let mut stdio = false;
    let mut pipes = false;
    let mut http = None;
    let mut addr_file = None;
    let mut current_thread = false;
    let mut sse = false;
    let mut otlp_endpoint = None;
    while let Some(word) = args.next() {
        match word.as_str() {
            "--stdio" => stdio = true,
            "--stdio-pipes" => pipes = true,
            "--http" => http = Some(args.value("--http")?),
            "--addr-file" => addr_file = Some(PathBuf::from(args.value("--addr-file")?)),
            "--current-thread" => current_thread = true,
            "--sse" => sse = true,
            "--otlp-endpoint" => otlp_endpoint = Some(args.value("--otlp-endpoint")?),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let mode = match (stdio, pipes, http) {
        (true, false, None) => Mode::Stdio,
        (false, true, None) => Mode::StdioPipes,
        (false, false, Some(addr)) => Mode::Http {
            addr,
            addr_file,
            sse,
        },
        _ => return Err(USAGE.to_owned()),
    };
    Ok(Options {
        mode,
        current_thread,
        otlp_endpoint,
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

/// The flow handler, as the Python peer's: ask for the region (round 1), or report the answer
/// and the plaintext state the handler saw (the retry).
async fn provision(
    ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let name = params
        .arguments
        .as_ref()
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("db");
    let answer = params
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get(FLOW_KEY))
        .and_then(|response| response.as_elicit().ok());
    let Some(answer) = answer else {
        let schema = serde_json::from_value(Value::Object(object_schema("region")?))
            .map_err(|e| ErrorObject::internal(e.to_string()))?;
        return Ok(Outcome::InputRequired(
            InputRequiredResult::new()
                .with_request(
                    FLOW_KEY,
                    InputRequest::elicit(ElicitRequestFormParams::new(
                        "Which region should the database live in?",
                        schema,
                    )),
                )
                .with_state(FLOW_STATE),
        ));
    };
    if answer.action != ElicitAction::Accept {
        return Ok(Outcome::Complete(CallToolResult::error(format!(
            "Provisioning '{name}' was not accepted."
        ))));
    }
    let region = answer
        .content
        .as_ref()
        .and_then(|c| c.get("region"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let state = params.request_state.as_deref().unwrap_or_default();
    Ok(Outcome::Complete(CallToolResult::text(format!(
        "Provisioned '{name}' in {region} (protocol {}, state seen by handler: '{state}').",
        ctx.protocol_version()
    ))))
}

/// `{type: object, properties: {PROPERTY: {type: string}}, required: [PROPERTY]}`.
fn object_schema(property: &str) -> Result<modelctx::types::Extra, ErrorObject> {
    match json!({
        "type": "object",
        "properties": {property: {"type": "string"}},
        "required": [property],
    }) {
        Value::Object(schema) => Ok(schema),
        _ => Err(ErrorObject::internal("schema is not an object")),
    }
}

fn server() -> Result<Server, String> {
    Server::builder(SERVER_NAME, SERVER_VERSION)
        .tool(
            Tool::new(TOOL, object_schema("text").map_err(|e| e.message)?),
            |_ctx, params| echo(params),
        )
        .tool(
            Tool::new(FLOW_TOOL, object_schema("name").map_err(|e| e.message)?),
            provision,
        )
        .seal_request_state(RequestStateSecurity::ephemeral())
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
        Mode::Http {
            addr,
            addr_file,
            sse,
        } => {
            let listener = bind_loopback(&addr, addr_file.as_deref()).await?;
            // serve_http_on turns TCP_NODELAY on for every accepted connection.
            server
                .serve_http_on(
                    listener,
                    HttpConfig::default().sse_responses(sse),
                    modelctx_benches::shutdown_signal(),
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
    let telemetry = match options.otlp_endpoint.as_deref().map(traced) {
        None => None,
        Some(Ok(telemetry)) => Some(telemetry),
        Some(Err(message)) => {
            eprint_line(&format!("echo-server: {message}"));
            return ExitCode::from(2);
        }
    };
    let result = modelctx_benches::runtime(options.current_thread)
        .and_then(|rt| rt.block_on(run(options.mode, server)));
    #[cfg(feature = "otlp")]
    if let Some(Err(error)) = telemetry.map(|telemetry| telemetry.shutdown()) {
        eprint_line(&format!("echo-server: {error}"));
    }
    #[cfg(not(feature = "otlp"))]
    let _ = telemetry;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprint_line(&format!("echo-server: {error}"));
            ExitCode::FAILURE
        }
    }
}

/// Installs the exporting subscriber (INFO spans: the SDK's request spans).
#[cfg(feature = "otlp")]
fn traced(endpoint: &str) -> Result<modelctx::otel::Telemetry, String> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let telemetry = modelctx::otel::Telemetry::builder()
        .endpoint(endpoint)
        .service_name("echo-server")
        .build()
        .map_err(|e| e.to_string())?;
    let layer = telemetry
        .layer()
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .map_err(|e| e.to_string())?;
    Ok(telemetry)
}

/// Without the `otlp` feature there is nothing to export with.
#[cfg(not(feature = "otlp"))]
fn traced(_endpoint: &str) -> Result<std::convert::Infallible, String> {
    Err("--otlp-endpoint needs the `otlp` feature (cargo build --features otlp)".to_owned())
}
