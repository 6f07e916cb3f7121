//! The HTTP floor: a raw axum + serde_json JSON-RPC echo endpoint with no SDK. It parses the same
//! `tools/call` body with serde_json and returns the same result body as `echo-server` (content,
//! `isError`, `resultType`, `_meta.serverInfo`), with TCP_NODELAY on, like the SDK server.
//!
//! ```text
//! axum-floor --http 127.0.0.1:0 [--addr-file PATH] [--current-thread]   # until SIGTERM / SIGINT
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use modelctx_benches::{Args, HTTP_PATH, bind_loopback, eprint_line, floor_response};

const USAGE: &str = "usage: axum-floor --http 127.0.0.1:PORT [--addr-file PATH] [--current-thread]";

struct Options {
    addr: String,
    addr_file: Option<PathBuf>,
    current_thread: bool,
}

fn options() -> Result<Options, String> {
    let mut args = Args::from_env();
    let mut addr = None;
    let mut addr_file = None;
    let mut current_thread = false;
    while let Some(word) = args.next() {
        match word.as_str() {
            "--http" => addr = Some(args.value("--http")?),
            "--addr-file" => addr_file = Some(PathBuf::from(args.value("--addr-file")?)),
            "--current-thread" => current_thread = true,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Options {
        addr: addr.ok_or(USAGE)?,
        addr_file,
        current_thread,
    })
}

async fn handle(body: Bytes) -> Response {
    match floor_response(&body) {
        Some(json) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            json,
        )
            .into_response(),
        None => StatusCode::BAD_REQUEST.into_response(),
    }
}

async fn run(options: Options) -> std::io::Result<()> {
    use axum::serve::ListenerExt as _;
    let listener = bind_loopback(&options.addr, options.addr_file.as_deref()).await?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let app = Router::new().route(HTTP_PATH, post(handle));
    axum::serve(listener, app)
        .with_graceful_shutdown(modelctx_benches::shutdown_signal())
        .await
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprint_line(&message);
            return ExitCode::from(2);
        }
    };
    let result =
        modelctx_benches::runtime(options.current_thread).and_then(|rt| rt.block_on(run(options)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprint_line(&format!("axum-floor: {error}"));
            ExitCode::FAILURE
        }
    }
}
