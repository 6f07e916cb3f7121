//! The guide's low-level server: a `provision` tool that asks the user which region the
//! database should live in (`InputRequiredResult`), with its `requestState` sealed.
//! The handler is `modelctx_examples::provision` (`examples/src/lib.rs`).
//!
//! ```sh
//! cargo run -p modelctx-examples --example provision_server -- stdio          # serve stdio
//! cargo run -p modelctx-examples --example provision_server -- http 8000      # http://127.0.0.1:8000/mcp
//! cargo run -p modelctx-examples --example provision_server                   # spawn itself and call it
//! ```
//!
//! Ask it from the terminal with the `mcp` command:
//! `mcp call provision name=orders -- target/debug/examples/provision_server stdio`.
//! `MCP_REQUEST_STATE_KEYS` / `MCP_REQUEST_STATE_TTL` configure sealing as for `mcp serve demo`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example shows what happens"
)]

use modelctx::client::Client;
use modelctx::seal::RequestStateSecurity;
use modelctx::types::{ElicitRequestParams, ElicitResult, ErrorObject};
use modelctx_examples::provision;
use serde_json::{Map, Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy = RequestStateSecurity::from_env()?.unwrap_or_else(RequestStateSecurity::ephemeral);
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("stdio") => provision::server(policy)?.serve_stdio().await?,
        Some("http") => {
            let port = args.get(1).map_or("0", String::as_str);
            let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            provision::server(policy)?
                .serve_http_on(listener, Default::default(), std::future::pending())
                .await?;
        }
        // No mode (or a test runner's flags): spawn this program as a stdio server and call it.
        _ => call_myself().await?,
    }
    Ok(())
}

async fn call_myself() -> Result<(), Box<dyn std::error::Error>> {
    let mut server = tokio::process::Command::new(std::env::current_exe()?);
    server.arg("stdio");
    let client = Client::builder()
        .on_elicitation(|context, params: ElicitRequestParams| async move {
            println!(
                "the server asks ({:?}): {}",
                context.key(),
                params.message()
            );
            let mut content = Map::new();
            content.insert("region".to_owned(), Value::from("eu-west-1"));
            Ok::<_, ErrorObject>(ElicitResult::accept(content))
        })
        .connect_stdio(server)
        .await?;
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await?;
    let text = result.first_text().unwrap_or_default().to_owned();
    println!("{text}");
    client.close().await?;
    if !text.starts_with("Provisioned 'orders' in eu-west-1") {
        return Err(format!("unexpected result: {text}").into());
    }
    Ok(())
}
