//! A small interactive client: connects to a server (a command to spawn, or an HTTP URL),
//! lists its tools and calls one, asking you on the terminal whenever the server asks for
//! input (elicitation), in either protocol era.
//!
//! ```sh
//! PY=$(scripts/python-env.sh)
//! cargo run --example client_quickstart -- provision '{"name":"orders"}' -- $PY tests/python/provisioner.py
//! cargo run --example client_quickstart -- provision '{"name":"orders"}' http://127.0.0.1:8765/mcp
//! ```

use std::io::{BufRead as _, Write as _};

use modelctx::client::{CallbackContext, Client};
use modelctx::types::{ElicitRequestParams, ElicitResult, ErrorObject};
use serde_json::{Map, Value};

/// Asks each form field on the terminal (blocking I/O, off the async runtime).
fn ask(context: &CallbackContext, params: &ElicitRequestParams) -> std::io::Result<ElicitResult> {
    let mut err = std::io::stderr().lock();
    let origin = context
        .key()
        .map(|key| format!("input request {key:?}"))
        .or_else(|| {
            context
                .request_id()
                .map(|id| format!("server request {id}"))
        })
        .unwrap_or_default();
    writeln!(err, "[{origin}] {}", params.message())?;
    let ElicitRequestParams::Form(form) = params else {
        writeln!(err, "(a URL elicitation: not opening it; declining)")?;
        return Ok(ElicitResult::decline());
    };
    let mut content = Map::new();
    let stdin = std::io::stdin();
    for (name, field) in &form.requested_schema.properties {
        let kind = serde_json::to_value(field)
            .ok()
            .and_then(|f| f.get("type").and_then(Value::as_str).map(ToOwned::to_owned))
            .unwrap_or_default();
        write!(err, "  {name} ({kind}), empty line to decline: ")?;
        err.flush()?;
        let mut line = String::new();
        stdin.lock().read_line(&mut line)?;
        let line = line.trim();
        if line.is_empty() {
            return Ok(ElicitResult::decline());
        }
        // Numbers and booleans as JSON, anything else as a string.
        let value = match kind.as_str() {
            "integer" | "number" | "boolean" => {
                serde_json::from_str(line).unwrap_or_else(|_| Value::from(line))
            }
            _ => Value::from(line),
        };
        content.insert(name.clone(), value);
    }
    Ok(ElicitResult::accept(content))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(tool), Some(arguments), Some(target)) = (args.first(), args.get(1), args.get(2))
    else {
        return Err("usage: client_quickstart TOOL JSON_ARGS (URL | -- COMMAND ARGS…)".into());
    };
    let arguments: Value = serde_json::from_str(arguments)?;
    let builder = Client::builder().on_elicitation(|context, params| async move {
        tokio::task::spawn_blocking(move || ask(&context, &params))
            .await
            .map_err(|e| ErrorObject::internal(e.to_string()))?
            .map_err(|e| ErrorObject::internal(e.to_string()))
    });
    let client = if target == "--" {
        let (program, rest) = args[3..].split_first().ok_or("missing server command")?;
        let mut command = tokio::process::Command::new(program);
        command.args(rest);
        builder.connect_stdio(command).await?
    } else {
        builder.connect_http(target).await?
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "connected: protocol {}, server {:?}",
        client.protocol_version(),
        client.server_info().map(|i| i.name)
    )?;
    let names: Vec<String> = client
        .list_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    writeln!(out, "tools: {}", names.join(", "))?;
    let result = client.call_tool(tool.as_str(), arguments).await?;
    writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?;
    client.close().await?;
    Ok(())
}
