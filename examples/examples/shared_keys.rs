//! Several instances of one server behind a load balancer: given the same keys, any instance
//! opens the `requestState` another sealed, so the retry of a multi-round-trip request may land
//! anywhere. An instance with other keys, or another service (another audience) sharing the
//! keys, refuses it with the one frozen error.
//!
//! ```sh
//! cargo run -p modelctx-examples --example shared_keys
//! ```
//!
//! In production the keys come from a secret store, e.g. `MCP_REQUEST_STATE_KEYS` (see
//! `mcp serve demo --help`); `mcp keys generate` makes one.

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use modelctx::client::{Client, PendingRequest, RoundOutcome};
use modelctx::seal::RequestStateSecurity;
use modelctx::server::http::HttpConfig;
use modelctx::types::CallToolRequestParams;
use modelctx_examples::provision;
use serde_json::json;

/// One instance on 127.0.0.1, sealing with `policy`; returns its URL.
async fn instance(policy: RequestStateSecurity) -> Result<String, Box<dyn std::error::Error>> {
    let server = provision::server(policy)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        server
            .serve_http_on(listener, HttpConfig::default(), std::future::pending())
            .await
    });
    Ok(url)
}

/// A client of the instance at `url` that answers the region.
async fn client(url: &str) -> Result<Client, modelctx::client::ClientError> {
    Client::builder()
        .on_elicitation(provision::answer_region("eu-west-1"))
        .connect_http(url)
        .await
}

/// Finishes `pending` at `url`.
async fn resume_at(
    url: &str,
    pending: PendingRequest<CallToolRequestParams>,
) -> Result<String, modelctx::client::ClientError> {
    let client = client(url).await?;
    let result = client.resume_call_tool(pending).await;
    client.close().await?;
    Ok(result?.first_text().unwrap_or_default().to_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The fleet's secret (at least 32 bytes); every instance is configured with it.
    let fleet_key = "fleet-secret-from-your-vault-0001";
    let a = instance(RequestStateSecurity::with_keys([fleet_key])?).await?;
    let b = instance(RequestStateSecurity::with_keys([fleet_key])?).await?;
    let stranger = instance(RequestStateSecurity::with_keys([
        "another-fleet-secret-0000000000002",
    ])?)
    .await?;
    // Another service that shares the keys but not the audience (the audience defaults to the
    // server name; this one sets its own).
    let other_service =
        instance(RequestStateSecurity::with_keys([fleet_key])?.with_audience("billing")).await?;

    // Round 1 at instance A, one round only (`allow_input_required`).
    let client = client(&a).await?;
    let params =
        CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
    let RoundOutcome::InputRequired(input_required) =
        client.session().call_tool(params.clone(), true).await?
    else {
        return Err("provision did not ask".into());
    };
    client.close().await?;
    println!("round 1 at A ({a}): the server asks for the region");
    let pending = PendingRequest {
        params,
        input_required,
    };

    // The retry lands on instance B.
    let finished = resume_at(&b, pending.clone()).await?;
    println!("retry at B ({b}): {finished}");

    // An instance with other keys, and another service, refuse the state.
    let refused = resume_at(&stranger, pending.clone()).await;
    println!("retry at an instance with other keys: {refused:?}");
    let other = resume_at(&other_service, pending).await;
    println!("retry at another service sharing the keys: {other:?}");

    if !finished.starts_with("Provisioned 'orders' in eu-west-1") {
        return Err(format!("unexpected result at B: {finished}").into());
    }
    for outcome in [refused, other] {
        match outcome {
            Err(error) if error.rpc_code().map(|c| c.0) == Some(-32602) => {}
            other => return Err(format!("expected -32602, got {other:?}").into()),
        }
    }
    Ok(())
}
