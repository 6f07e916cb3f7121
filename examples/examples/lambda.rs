//! The demo's `provision` served as an AWS Lambda function (feature `lambda`): the sealing keys
//! come from the environment, so the two rounds of one call can be served by two invocations
//! on two instances that share nothing else.
//!
//! ```sh
//! export MCP_REQUEST_STATE_KEYS=$(cargo run -q -p modelctx-cli -- keys generate)
//! cargo lambda watch --example lambda          # the emulator; then POST to
//!                                              # http://localhost:9000/lambda-url/lambda/mcp
//! cargo lambda build --release --example lambda  # the bootstrap to deploy
//! cargo run -p modelctx-examples --example lambda  # no runtime: the self-check below
//! ```
//!
//! Under a Lambda runtime (`AWS_LAMBDA_RUNTIME_API` set: Lambda itself, or `cargo lambda
//! watch`) it serves. `MCP_LAMBDA_DOMAINS` (comma-separated) names the function's domains for
//! the Host and Origin checks, `MCP_LAMBDA_STREAMED=1` streams responses (a function URL in the
//! `RESPONSE_STREAM` invoke mode), and `MCP_LAMBDA_RECORD=DIR` writes each event as it arrives
//! to `DIR` (how `lambda-events/function-url.json` was recorded from the emulator:
//! `scripts/lambda-emulator.sh`).
//!
//! Without a runtime it checks itself: a function URL event for each round of a `provision`
//! call, each served by a new instance, then the full demo server (its tasks in memory) refused
//! at start-up.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example shows what happens"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lambda_http::lambda_runtime::{self, LambdaEvent, service_fn};
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Service as _};
use modelctx::seal::RequestStateSecurity;
use modelctx::server::lambda::{self, LambdaConfig, LambdaError, LambdaFunction};
use modelctx_examples::lambda::{Source, event, instance, invoke, message, meta, modern_headers};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        serve().await
    } else {
        check_myself().await
    }
}

fn config() -> LambdaConfig {
    let mut config = LambdaConfig::default();
    if let Ok(domains) = std::env::var("MCP_LAMBDA_DOMAINS") {
        config = config.domains(domains.split(',').map(str::trim).filter(|d| !d.is_empty()));
    }
    if std::env::var("MCP_LAMBDA_STREAMED").is_ok_and(|v| v == "1") {
        config = config.streamed();
    }
    config
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let policy = RequestStateSecurity::from_env()?
        .ok_or("set MCP_REQUEST_STATE_KEYS (`mcp keys generate`): every instance must share it")?;
    let server = modelctx_examples::lambda::server(policy)?;
    let Some(dir) = std::env::var_os("MCP_LAMBDA_RECORD").map(PathBuf::from) else {
        lambda::run(server.server(), config()).await?;
        return Ok(());
    };
    // Recording: each event as the runtime delivers it, then served as `lambda::run` serves it.
    let function = LambdaFunction::new(server.server(), config())?;
    let count = Arc::new(AtomicUsize::new(0));
    let handler = service_fn(move |event: LambdaEvent<Value>| {
        let function = function.clone();
        let path = dir.join(format!("{:02}.json", count.fetch_add(1, Ordering::Relaxed)));
        async move {
            std::fs::write(&path, serde_json::to_vec_pretty(&event.payload)?)?;
            let request: LambdaRequest = serde_json::from_value(event.payload)?;
            let response = Adapter::from(function)
                .call(LambdaEvent::new(request, event.context))
                .await?;
            Ok::<_, lambda_runtime::Error>(response)
        }
    });
    lambda_runtime::run(handler)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

async fn check_myself() -> Result<(), Box<dyn std::error::Error>> {
    // What MCP_REQUEST_STATE_KEYS would hold; both instances are given only this.
    let keys = "an example key and never a real one: 32 bytes or more";
    let headers = modern_headers("tools/call", Some("provision"));
    let call = |arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"_meta": meta(), "name": "provision", "arguments": {"name": "orders"},
                          "inputResponses": arguments["inputResponses"],
                          "requestState": arguments["requestState"]}})
    };
    let first = instance(keys, LambdaConfig::default())?;
    let round_one = message(
        &invoke(
            &first,
            event(Source::FunctionUrl, &call(json!({})), &headers)?,
        )
        .await?,
    )?;
    let question = &round_one["result"]["inputRequests"]["region"]["params"]["message"];
    println!("invocation 1 (instance A) asks: {question}");
    drop(first);
    let second = instance(keys, LambdaConfig::default())?;
    let answer = json!({"inputResponses": {"region": {"action": "accept",
                                               "content": {"region": "eu-west-1"}}},
                        "requestState": round_one["result"]["requestState"]});
    let round_two = message(
        &invoke(
            &second,
            event(Source::FunctionUrl, &call(answer), &headers)?,
        )
        .await?,
    )?;
    let text = round_two["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    println!("invocation 2 (instance B) answers: {text}");
    if text != "Provisioned 'orders' in eu-west-1." {
        return Err(format!("unexpected result: {round_two}").into());
    }
    let policy = RequestStateSecurity::from_settings(Some(keys), None)?;
    let demo = modelctx_cli::demo::server(policy)?;
    match LambdaFunction::new(demo.server(), LambdaConfig::default()) {
        Err(refused @ LambdaError::Unfit(_)) => {
            println!("the full demo server, refused at start-up: {refused}");
        }
        _ => return Err("the demo server, its tasks in memory, was accepted".into()),
    }
    Ok(())
}
