//! The manual input-required loop across processes.
//!
//! `start` calls a tool one round at a time (`Session::call_tool(…, allow_input_required =
//! true)`); when the server asks for input it saves the pending request — the params and the
//! server's `InputRequiredResult`, `requestState` included — to a JSON file and exits. `resume`,
//! run later and possibly elsewhere, loads the file, answers the questions with its elicitation
//! callback and finishes the call with `Client::resume_call_tool`.
//!
//! ```sh
//! PY=$(scripts/python-env.sh)
//! $PY tests/python/provisioner.py --http 8765 &
//! cargo run --example manual_loop -- start  /tmp/pending.json http://127.0.0.1:8765/mcp
//! cargo run --example manual_loop -- resume /tmp/pending.json http://127.0.0.1:8765/mcp eu-west-1
//! ```
//!
//! The server needs no memory of the first process: everything travels in `requestState`.

use std::io::Write as _;

use modelctx::client::{Client, PendingRequest, RoundOutcome};
use modelctx::types::{CallToolRequestParams, ElicitRequestParams, ElicitResult, ErrorObject};
use serde_json::{Map, Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    match args.as_slice() {
        [command, file, url] if command == "start" => {
            let client = Client::connect_http(url).await?;
            let arguments = json!({"name": "orders"});
            let params = CallToolRequestParams::new("provision", arguments.as_object().cloned());
            match client.session().call_tool(params.clone(), true).await? {
                RoundOutcome::Complete(result) => {
                    writeln!(out, "complete: {}", result.first_text().unwrap_or_default())?;
                }
                RoundOutcome::InputRequired(input_required) => {
                    let pending = PendingRequest {
                        params,
                        input_required,
                    };
                    std::fs::write(file, serde_json::to_vec_pretty(&pending)?)?;
                    writeln!(out, "pending request saved to {file}")?;
                }
            }
            client.close().await?;
        }
        [command, file, url, region] if command == "resume" => {
            let pending: PendingRequest<CallToolRequestParams> =
                serde_json::from_slice(&std::fs::read(file)?)?;
            let region = region.clone();
            let client = Client::builder()
                .on_elicitation(move |_context, params: ElicitRequestParams| {
                    // Answer every field of the form with the region given on the command line.
                    let mut content = Map::new();
                    if let ElicitRequestParams::Form(form) = &params {
                        for name in form.requested_schema.properties.keys() {
                            content.insert(name.clone(), Value::from(region.clone()));
                        }
                    }
                    async move { Ok::<_, ErrorObject>(ElicitResult::accept(content)) }
                })
                .connect_http(url)
                .await?;
            let result = client.resume_call_tool(pending).await?;
            writeln!(out, "{}", result.first_text().unwrap_or_default())?;
            client.close().await?;
        }
        _ => {
            return Err(
                "usage: manual_loop start FILE URL | manual_loop resume FILE URL REGION".into(),
            );
        }
    }
    Ok(())
}
