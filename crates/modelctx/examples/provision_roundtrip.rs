//! A multi-round-trip request, end to end, in one process: a server whose `provision` tool needs
//! the user's choice of region answers with an `InputRequiredResult` (its `requestState` sealed),
//! and a client answers the question and retries the same request.
//!
//! The client side is written as raw JSON lines here so that every byte on the wire is visible.
//!
//! ```sh
//! cargo run -p modelctx --example provision_roundtrip
//! ```

#![allow(
    clippy::print_stdout,
    reason = "the example prints the wire for the reader"
)]

use modelctx::memory;
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ElicitAction, ElicitRequestFormParams, ErrorObject,
    Extra, InputRequest, InputRequiredResult, Outcome, Tool,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The low-level `provision` tool: round 1 asks for the region, the retry provisions.
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
        .and_then(|r| r.get("region"))
        .and_then(|a| a.as_elicit().ok());
    if let Some(answer) = answer.filter(|a| a.action == ElicitAction::Accept) {
        let region = answer
            .content
            .as_ref()
            .and_then(|c| c.get("region"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        let state = params.request_state.as_deref().unwrap_or("none");
        return Ok(Outcome::Complete(CallToolResult::text(format!(
            "Provisioned '{name}' in {region} (protocol {}, state seen by handler: '{state}').",
            ctx.protocol_version()
        ))));
    }
    let schema = serde_json::from_value(json!({
        "type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]
    }))
    .map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Outcome::InputRequired(
        InputRequiredResult::new()
            .with_request(
                "region",
                InputRequest::elicit(ElicitRequestFormParams::new(
                    "Which region should the database live in?",
                    schema,
                )),
            )
            .with_state("provision-v1"),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let server = Server::builder("Provisioner", "0.0.1")
        .tool(
            Tool::new("provision", serde_json::from_value::<Extra>(schema)?)
                .with_description("Provision a database"),
            provision,
        )
        // The one-line opt-in: requestState is sealed (AES-256-GCM) and bound to this request.
        .seal_request_state_ephemeral()
        .build()?;

    let pipe = memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let mut to_server = pipe.client.writer;
    let mut from_server = BufReader::new(pipe.client.reader).lines();

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "example-client", "version": "1.0.0"},
    });
    let mut send = async |message: Value| -> Result<Value, Box<dyn std::error::Error>> {
        println!("C>S {message}");
        to_server
            .write_all(format!("{message}\n").as_bytes())
            .await?;
        let Some(line) = from_server.next_line().await? else {
            return Err("no reply".into());
        };
        let reply: Value = serde_json::from_str(&line)?;
        println!("S>C {reply}\n");
        Ok(reply)
    };

    let first = send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"_meta": meta, "name": "provision", "arguments": {"name": "orders"}}}))
    .await?;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required");
    let question = &result["inputRequests"]["region"]["params"]["message"];
    println!("    the server asks: {question} — the user answers \"eu-west-1\"\n");

    // The retry: a new id, the same name and arguments, the answer under the same key, and the
    // sealed requestState echoed byte for byte.
    let second = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"_meta": meta, "name": "provision", "arguments": {"name": "orders"},
                   "inputResponses": {"region": {"action": "accept", "content": {"region": "eu-west-1"}}},
                   "requestState": result["requestState"]}})).await?;
    println!(
        "    final result: {}",
        second["result"]["content"][0]["text"]
    );

    // Tampering with the state gets the one frozen error.
    let mut tampered = result["requestState"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    tampered.push('x');
    let third = send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"_meta": meta, "name": "provision", "arguments": {"name": "orders"},
                   "inputResponses": {"region": {"action": "accept", "content": {"region": "eu-west-1"}}},
                   "requestState": tampered}})).await?;
    println!("    tampered state: {}", third["error"]);
    Ok(())
}
