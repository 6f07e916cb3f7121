//! The manual input-required loop across processes: `start` calls `provision` one round at a
//! time and, when the server asks, saves the pending request (the params and the server's
//! `InputRequiredResult`, its sealed `requestState` included) to a file and exits. `resume`,
//! a new process talking to a *new* server process, loads the file, answers the question and
//! finishes the call. Nothing but the file and the shared key connects the two.
//!
//! ```sh
//! export MCP_REQUEST_STATE_KEYS=$(cargo run -q -p modelctx-cli -- keys generate)
//! cargo run -p modelctx-examples --example manual_loop_resume -- start  /tmp/pending.json
//! cargo run -p modelctx-examples --example manual_loop_resume -- resume /tmp/pending.json eu-west-1
//! cargo run -p modelctx-examples --example manual_loop_resume       # both, then a server with other keys
//! ```
//!
//! Each process spawns its own server (this program with `serve`: the low-level `provision`
//! server of `modelctx_examples::provision`), sealed with the keys in `MCP_REQUEST_STATE_KEYS`.
//! See also `crates/modelctx/examples/manual_loop.rs` (the same over HTTP, against one server).

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use std::path::Path;
use std::process::Command;

use modelctx::client::{Client, PendingRequest, RoundOutcome};
use modelctx::seal::RequestStateSecurity;
use modelctx::types::{CallToolRequestParams, ElicitRequestParams, ElicitResult, ErrorObject};
use modelctx_examples::provision;
use serde_json::{Map, Value, json};

/// This program, spawned as the stdio server. A spawned server gets a safe environment, not
/// all of ours: the sealing keys are passed on by name.
fn server_command() -> std::io::Result<tokio::process::Command> {
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command.arg("serve");
    for name in ["MCP_REQUEST_STATE_KEYS", "MCP_REQUEST_STATE_TTL"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    Ok(command)
}

/// Round 1 only: save what the server asked, with its state, and stop.
async fn start(file: &Path) -> Result<(), Box<dyn std::error::Error>> {
    // This process never answers: the user does, later, in `resume`. But the server only asks
    // clients that declare they can be asked, and a capability is declared by installing its
    // callback; this one is never called because the loop stops at the first round.
    let client = Client::builder()
        .on_elicitation(|_context, _params: ElicitRequestParams| async {
            Err::<ElicitResult, _>(ErrorObject::internal("answered in the resume process"))
        })
        .connect_stdio(server_command()?)
        .await?;
    let params =
        CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
    match client.session().call_tool(params.clone(), true).await? {
        RoundOutcome::Complete(result) => {
            println!(
                "complete at once: {}",
                result.first_text().unwrap_or_default()
            );
        }
        RoundOutcome::InputRequired(input_required) => {
            for (key, request) in input_required.input_requests.iter().flatten() {
                println!("the server asks {key:?}: {}", request.method());
            }
            let state = input_required.request_state.as_deref().unwrap_or_default();
            println!(
                "sealed requestState: {}… ({} chars)",
                &state[..state.len().min(16)],
                state.len()
            );
            let pending = PendingRequest {
                params,
                input_required,
            };
            std::fs::write(file, serde_json::to_vec_pretty(&pending)?)?;
            println!("pending request saved to {}", file.display());
        }
    }
    client.close().await?;
    Ok(())
}

/// A new process and a new server: answer and finish.
async fn resume(file: &Path, region: &str) -> Result<(), Box<dyn std::error::Error>> {
    let pending: PendingRequest<CallToolRequestParams> =
        serde_json::from_slice(&std::fs::read(file)?)?;
    let region = region.to_owned();
    let client = Client::builder()
        .on_elicitation(move |_context, params: ElicitRequestParams| {
            let mut content = Map::new();
            if let ElicitRequestParams::Form(form) = &params {
                for name in form.requested_schema.properties.keys() {
                    content.insert(name.clone(), Value::from(region.clone()));
                }
            }
            async move { Ok::<_, ErrorObject>(ElicitResult::accept(content)) }
        })
        .connect_stdio(server_command()?)
        .await?;
    let outcome = client.resume_call_tool(pending).await;
    client.close().await?;
    println!("{}", outcome?.first_text().unwrap_or_default());
    Ok(())
}

/// Runs `start` and `resume` as two processes sharing a fresh key, then `resume` under another
/// key, which the server must refuse.
fn demo() -> Result<(), Box<dyn std::error::Error>> {
    let me = std::env::current_exe()?;
    let file = std::env::temp_dir().join(format!("mcp-pending-{}.json", std::process::id()));
    let key = fresh_key()?;
    let run = |args: &[&str], key: &str| {
        Command::new(&me)
            .args(args)
            .env("MCP_REQUEST_STATE_KEYS", key)
            .output()
    };
    let file_arg = file.display().to_string();
    let started = run(&["start", &file_arg], &key)?;
    print!("[start]  {}", String::from_utf8_lossy(&started.stdout));
    let resumed = run(&["resume", &file_arg, "eu-west-1"], &key)?;
    print!("[resume] {}", String::from_utf8_lossy(&resumed.stdout));
    let foreign = run(&["resume", &file_arg, "eu-west-1"], &fresh_key()?)?;
    println!(
        "[resume under other keys: refused, as it must be] {}",
        String::from_utf8_lossy(&foreign.stderr).trim()
    );
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&resumed.stdout);
    if !started.status.success()
        || !text.contains("Provisioned 'orders' in eu-west-1 (protocol 2026-07-28, state seen by handler: 'provision-v1')")
    {
        return Err("the resumed call did not complete".into());
    }
    if foreign.status.success()
        || !String::from_utf8_lossy(&foreign.stderr).contains("Invalid or expired requestState")
    {
        return Err("a server with other keys accepted the state".into());
    }
    Ok(())
}

/// 32 random bytes as hex, as `mcp keys generate` prints.
fn fresh_key() -> Result<String, Box<dyn std::error::Error>> {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| "no randomness")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let runtime = || tokio::runtime::Runtime::new();
    match args.as_slice() {
        ["serve"] => runtime()?.block_on(async {
            let policy =
                RequestStateSecurity::from_env()?.unwrap_or_else(RequestStateSecurity::ephemeral);
            provision::server(policy)?.serve_stdio().await?;
            Ok(())
        }),
        ["start", file] => runtime()?.block_on(start(Path::new(file))),
        ["resume", file, region] => runtime()?.block_on(resume(Path::new(file), region)),
        // No command (or a test runner's flags): both halves, as two processes.
        _ => demo(),
    }
}
