//! Rotating the request-state key without dropping a flow in progress. `keys[0]` mints and every
//! key verifies, so a fleet moves through three phases, each rolled out everywhere before the
//! next starts:
//!
//! 1. `[OLD, NEW]` — everyone can verify NEW; OLD still mints.
//! 2. `[NEW, OLD]` — NEW mints; tokens minted under OLD still verify.
//! 3. `[NEW]` — after one TTL, when no OLD token can still be alive.
//!
//! ```sh
//! cargo run -p modelctx-examples --example key_rotation
//! ```
//!
//! Each step starts a flow (round 1) on an instance in one phase and finishes it (the retry) on
//! an instance in another, as a load balancer would during a rolling deploy.

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use modelctx::client::{Client, ClientError, PendingRequest, RoundOutcome};
use modelctx::memory;
use modelctx::seal::RequestStateSecurity;
use modelctx::types::CallToolRequestParams;
use modelctx_examples::provision;
use serde_json::json;

const OLD: &str = "old-secret-0123456789abcdef012345";
const NEW: &str = "new-secret-0123456789abcdef012345";

/// A client connected to a fresh instance sealing with `keys`.
async fn instance(keys: &[&str]) -> Result<Client, Box<dyn std::error::Error>> {
    let server = provision::server(RequestStateSecurity::with_keys(keys)?)?;
    let pipe = memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    Ok(Client::builder()
        .on_elicitation(provision::answer_region("eu-west-1"))
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await?)
}

/// Round 1 on an instance with `keys`.
async fn start(
    keys: &[&str],
) -> Result<PendingRequest<CallToolRequestParams>, Box<dyn std::error::Error>> {
    let client = instance(keys).await?;
    let params =
        CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
    let RoundOutcome::InputRequired(input_required) =
        client.session().call_tool(params.clone(), true).await?
    else {
        return Err("provision did not ask".into());
    };
    client.close().await?;
    Ok(PendingRequest {
        params,
        input_required,
    })
}

/// The retry on an instance with `keys`: does the flow finish?
async fn finishes(
    keys: &[&str],
    pending: &PendingRequest<CallToolRequestParams>,
) -> Result<bool, Box<dyn std::error::Error>> {
    let client = instance(keys).await?;
    let outcome = client.resume_call_tool(pending.clone()).await;
    client.close().await?;
    match outcome {
        Ok(_) => Ok(true),
        Err(ClientError::Rpc(error)) if error.code.0 == -32602 => Ok(false),
        Err(other) => Err(other.into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // (minted on, finished on, must finish?, what it shows)
    let steps: [(&[&str], &[&str], bool, &str); 7] = [
        (
            &[OLD],
            &[OLD, NEW],
            true,
            "phase 1 reaches an instance before another",
        ),
        (
            &[OLD, NEW],
            &[OLD],
            true,
            "phase 1 instances still mint under OLD",
        ),
        (
            &[NEW, OLD],
            &[OLD, NEW],
            true,
            "phase 2 tokens open on phase 1 instances",
        ),
        (
            &[OLD],
            &[NEW, OLD],
            true,
            "flows started before the rotation still finish",
        ),
        (
            &[NEW, OLD],
            &[OLD],
            false,
            "why phase 1 must be everywhere before phase 2",
        ),
        (&[NEW, OLD], &[NEW], true, "phase 3"),
        (
            &[OLD],
            &[NEW],
            false,
            "an OLD token after phase 3 (expired by then anyway)",
        ),
    ];
    let name = |keys: &[&str]| {
        let names: Vec<&str> = keys
            .iter()
            .map(|k| if *k == OLD { "OLD" } else { "NEW" })
            .collect();
        format!("[{}]", names.join(", "))
    };
    let mut surprises = 0;
    for (minted, finished, expected, why) in steps {
        let pending = start(minted).await?;
        let done = finishes(finished, &pending).await?;
        println!(
            "minted {:<10} finished {:<10} -> {:<8} {why}",
            name(minted),
            name(finished),
            if done { "ok" } else { "-32602" }
        );
        if done != expected {
            surprises += 1;
        }
    }
    if surprises > 0 {
        return Err(format!("{surprises} step(s) did not behave as the rotation plan says").into());
    }
    Ok(())
}
