//! The `mcp` command: talk to any MCP server from a terminal or a script.
//!
//! * `mcp tools|prompts|resources TARGET` lists; `mcp call TARGET TOOL [ARGS…]`,
//!   `mcp prompt TARGET NAME [key=value…]` and `mcp read TARGET URI` run one request through
//!   every input-required round, asking the user in the terminal (or reading `--answer`s).
//!   TARGET is an http(s) URL, or a stdio server's command line after `--`. `--oauth` signs in
//!   to a server that answers 401 (OAuth 2.1: loopback redirect, tokens kept in a file). A tool
//!   call the server runs as a task is followed to its end, a line per status change; Ctrl-C
//!   cancels it.
//! * `mcp app [TARGET] TOOL [ARGS…]` shows a tool's MCP App in the browser, `mcp` being its
//!   host: the app's page on a second origin of 127.0.0.1 under the policy its server declared,
//!   its calls sent to the server through the same client, its messages printed.
//! * `mcp listen TARGET [--resource URI]… [--lists …] [--task ID]…` follows a server's
//!   changes, a line per notification, listening again when the server closes the stream.
//! * `mcp serve demo [--http ADDR [--auth-issuer ISSUER [--auth-dpop MODE]]] [--bus redis://…]` runs the [`demo`]
//!   server, optionally accepting only the access tokens of ISSUER, and sharing changes with the
//!   other instances on the bus; SIGTERM or SIGINT stops it cleanly (`--shutdown-grace`).
//! * `mcp keys generate` and `mcp state inspect --key K TOKEN` help operators with sealed
//!   request state.
//! * `mcp bridge URL` serves a remote streamable-HTTP server to a host over stdio, each side in
//!   its own era (a 2025-11-25 host in front of a 2026-07-28 server: `initialize` answered from
//!   `server/discover`, the server's questions asked over the host's back-channel).
//! * `mcp bench TARGET --tool NAME` measures calls/s and latency against any server.
//!
//! The binary is a thin wrapper around [`run`].

// On docs.rs (nightly, `--cfg docsrs`), each item behind a `cfg` says which feature or
// platform it needs; a stable `cargo doc` never sets the cfg.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool prints its results and its questions"
)]

mod answers;
mod app;
mod ask;
mod bench;
mod bridge;
mod cli;
mod client_cmd;
pub mod demo;
pub mod demo_app;
mod error;
mod form;
#[cfg(test)]
mod import_cycles;
mod keys;
mod listen_cmd;
mod oauth;
mod progress;
mod read_output;
mod render;
mod safe_text;
mod serve;
mod shown_url;
mod sign_in_clock;
mod sync;
mod target;
mod telemetry;

use std::process::ExitCode;

use clap::Parser as _;

use crate::cli::{Cli, Command, KeysCommand, ServeCommand, StateCommand};
use crate::client_cmd::{Get, List};
use crate::telemetry::Exporting;

/// Parses the command line and runs the command; returns the process exit code (0 success,
/// 1 failure or a tool error, 2 usage).
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    // A client command runs on one thread: its requests go out one after another, and on
    // tokio's multi-thread runtime each round trip hopped between the main thread (the command)
    // and a worker (the transport's reader and writer tasks), a thread wake-up each way. The
    // server and `mcp bench` keep the multi-thread runtime: a server serves requests at once,
    // and the bench measures the client as an SDK user's `#[tokio::main]` runs it.
    let mut runtime = match cli.command {
        Command::Serve(_) | Command::Bench(_) => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let exporting = match &cli.command {
        Command::Call(args)
        | Command::Prompt(args)
        | Command::Read(cli::ReadArgs { call: args, .. })
        | Command::Task(args) => {
            Exporting::start(args.otlp_endpoint.as_deref(), telemetry::CLIENT_SERVICE)
        }
        Command::Serve(ServeCommand::Demo(args)) => {
            Exporting::start(args.otlp_endpoint.as_deref(), telemetry::SERVER_SERVICE)
        }
        _ => Ok(None),
    };
    let exporting = match exporting {
        Ok(exporting) => exporting,
        Err(error) => {
            eprintln!("error: {error}");
            return error.exit_code();
        }
    };
    if let Some(exporting) = &exporting
        && !matches!(cli.command, Command::Serve(_))
    {
        // `serve` adds the layer to its own log subscriber.
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let _ = tracing_subscriber::registry()
            .with(exporting.layer())
            .try_init();
    }
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Tools(args) => client_cmd::list(List::Tools, args).await,
            Command::Prompts(args) => client_cmd::list(List::Prompts, args).await,
            Command::Resources(args) => client_cmd::list(List::Resources, args).await,
            Command::Call(args) => Box::pin(client_cmd::get(Get::Tool, args)).await,
            Command::Prompt(args) => Box::pin(client_cmd::get(Get::Prompt, args)).await,
            Command::Read(args) => Box::pin(client_cmd::read(args)).await,
            Command::Task(args) => Box::pin(client_cmd::get(Get::Task, args)).await,
            Command::App(args) => Box::pin(app::run(args)).await,
            Command::Listen(args) => listen_cmd::listen(args).await,
            Command::Serve(ServeCommand::Demo(args)) => serve::demo(args, exporting.as_ref()).await,
            Command::Keys(KeysCommand::Generate) => keys::generate().map(|key| {
                println!("{key}");
                ExitCode::SUCCESS
            }),
            Command::State(StateCommand::Inspect(args)) => keys::inspect(&args),
            Command::Bench(args) => bench::bench(args).await,
            Command::Bridge(args) => Box::pin(bridge::bridge(args)).await,
        }
    });
    // A stdin reader blocked on a terminal must not hold the exit up.
    runtime.shutdown_background();
    // After the runtime: the spans of requests cut short have ended too.
    if let Some(exporting) = exporting {
        exporting.finish();
    }
    match outcome {
        Ok(code) => code,
        Err(error) => {
            // Error messages quote the server (its errors, names, ids): escaped for the terminal,
            // and on one line, newlines included: a server's second line would otherwise pass for
            // one of ours (`error: your sign-in expired; run …`).
            eprintln!("error: {}", safe_text::line(&error.to_string()));
            error.exit_code()
        }
    }
}
