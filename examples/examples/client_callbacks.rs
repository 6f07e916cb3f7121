//! A client with callbacks: elicitation (a form), sampling (a stand-in LLM) and roots, plus
//! progress. The client runs every input-required round itself; the same callbacks answer a
//! handshake-era (2025-11-25) server's back-channel requests.
//!
//! ```sh
//! cargo run -p modelctx-examples --example client_callbacks                    # the demo server, in process
//! cargo run -p modelctx-examples --example client_callbacks -- handshake          # the same, 2025-11-25 handshake
//! cargo run -p modelctx-examples --example client_callbacks -- http://127.0.0.1:8000/mcp
//! ```
//!
//! The server is `mcp serve demo` (`modelctx_cli::demo`): `provision` asks a form, `summarize`
//! samples the client's LLM, `where_am_i` lists its roots.

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use modelctx::client::{Client, ClientBuilder, Mode, RequestOptions};
use modelctx::memory;
use modelctx::types::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorObject, ListRootsResult, Root,
};
use modelctx_cli::demo::server;
use serde_json::{Map, Value, json};

fn callbacks(mode: Mode) -> ClientBuilder {
    Client::builder()
        .mode(mode)
        // Forms: fill each field (a real client asks the user, naming the server).
        .on_elicitation(|context, params: ElicitRequestParams| async move {
            let ElicitRequestParams::Form(form) = params else {
                // URL mode: show the URL and get consent; never open it unasked.
                return Ok::<_, ErrorObject>(ElicitResult::decline());
            };
            println!("  form {:?}: {}", context.key(), form.message);
            let mut content = Map::new();
            for name in form.requested_schema.properties.keys() {
                content.insert(name.clone(), Value::from("eu-west-1"));
            }
            Ok(ElicitResult::accept(content))
        })
        // Sampling: hand the messages to your LLM; here, a stand-in.
        .on_sampling(|_context, params: CreateMessageRequestParams| async move {
            println!(
                "  sampling: {} message(s), at most {} tokens",
                params.messages.len(),
                params.max_tokens
            );
            Ok::<_, ErrorObject>(CreateMessageResult::text(
                "stand-in-llm",
                "A short summary.",
            ))
        })
        // Roots: the directories the user lets the server see.
        .on_list_roots(|_context| async move {
            let cwd = std::env::current_dir().map_err(|e| ErrorObject::internal(e.to_string()))?;
            Ok::<_, ErrorObject>(ListRootsResult::new(vec![Root::new(
                format!("file://{}", cwd.display()),
                None,
            )]))
        })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args.iter().find(|a| a.starts_with("http"));
    let modes = match (
        args.iter().any(|a| a == "legacy"),
        args.iter().any(|a| a == "auto"),
    ) {
        (true, false) => vec![Mode::Handshake],
        (false, true) => vec![Mode::Auto],
        // Both eras, one after the other: the same callbacks serve both.
        _ => vec![Mode::Auto, Mode::Handshake],
    };
    for mode in modes {
        run(mode, url.map(String::as_str)).await?;
    }
    Ok(())
}

async fn run(mode: Mode, url: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let client = match url {
        Some(url) => callbacks(mode).connect_http(url).await?,
        None => {
            // The demo server on the other end of an in-memory pipe.
            let pipe = memory::pipe();
            let demo = server(None)?;
            tokio::spawn(
                async move { demo.serve_io(pipe.server.reader, pipe.server.writer).await },
            );
            callbacks(mode)
                .connect_io(pipe.client.reader, pipe.client.writer)
                .await?
        }
    };
    println!(
        "connected to {:?}, protocol {}",
        client.server_info().map(|i| i.name),
        client.protocol_version()
    );

    // Progress notifications arrive on the reader task while the call runs.
    let options = RequestOptions::new().on_progress(|progress| {
        println!(
            "  progress {}/{} {}",
            progress.progress,
            progress
                .total
                .as_ref()
                .map_or_else(|| "?".to_owned(), ToString::to_string),
            progress.message.as_deref().unwrap_or_default()
        );
    });
    let params =
        CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
    let provisioned = client.call_tool_with(params, options).await?;
    println!(
        "provision: {}",
        provisioned.first_text().unwrap_or_default()
    );

    let summary = client
        .call_tool("summarize", json!({"text": "a long report"}))
        .await?;
    println!("summarize: {}", summary.first_text().unwrap_or_default());

    let roots = client.call_tool("where_am_i", json!({})).await?;
    println!("where_am_i: {}", roots.first_text().unwrap_or_default());
    client.close().await?;

    let expected = [
        (
            provisioned.first_text(),
            "Provisioned 'orders' in eu-west-1.",
        ),
        (
            summary.first_text(),
            "Summary by stand-in-llm: A short summary.",
        ),
    ];
    for (got, want) in expected {
        if got != Some(want) {
            return Err(format!("expected {want:?}, got {got:?}").into());
        }
    }
    Ok(())
}
