//! `mcp app [TARGET] TOOL [ARGS…]`: a host for MCP Apps (the `io.modelcontextprotocol/ui`
//! extension) in the user's own browser.
//!
//! The command finds the tool's UI resource (`ui_resource.rs`), reads and checks it, builds its
//! sandbox from the resource's `_meta.ui` (`csp.rs`), calls the tool, and serves two origins on
//! 127.0.0.1 (`http.rs`): our host page (`host_page.rs`), and the app's document under its
//! policy, which the page shows in a sandboxed iframe. The page relays between the app and
//! `mcp` over a loopback channel (`channel.rs`, checked by `message.rs`); `mcp` is the host of
//! the protocol (`session.rs`) and runs what the app asks of the server or the user beside it
//! (`proxy.rs`), through the same client and terminal as `mcp call`. DESIGN.md ("The MCP Apps
//! host") says why it is shaped so.

mod channel;
mod csp;
mod host_page;
mod http;
mod message;
mod proxy;
mod session;
mod ui_resource;

use std::process::ExitCode;
use std::sync::Arc;

use modelctx::client::auth::open_in_browser;
use modelctx::client::{Client, ClientBuilder, RequestOptions};
use modelctx::types::apps::{APPS_EXTENSION, UiClientCapabilities};
use modelctx::types::{CallToolRequestParams, ExtensionId, ReadResourceRequestParams};
use serde_json::{Map, Value};
use tokio::time::Instant;

use self::channel::Channel;
use self::csp::Sandbox;
use self::http::PageText;
use self::session::{Session, Shown};
use self::ui_resource::{app_document, resource_uri};
use crate::cli::AppArgs;
use crate::client_cmd::{bounded, connect_asking, tool_arguments};
use crate::error::{CliError, Result};
use crate::progress::ProgressView;
use crate::safe_text::line;
use crate::target::{Target, close, describe_server, interruptible};

/// `mcp app [TARGET] TOOL [ARGS…]`.
pub(crate) async fn run(args: AppArgs) -> Result<ExitCode> {
    let (target, operands) = Target::split(&args.positional, &args.command)?;
    let Some((name, rest)) = operands.split_first() else {
        return Err(CliError::usage(
            "which tool? `mcp app [TARGET] TOOL [ARGS…]`",
        ));
    };
    let progress = ProgressView::stderr();
    let (client, asker) = connect_asking(
        &target,
        &args.connect,
        &args.answer,
        &progress,
        advertise_apps,
    )
    .await?;
    let connected = Instant::now();
    let preparing = Box::pin(prepare(&client, name, rest, &progress));
    let prepared = interruptible(bounded(&args.connect, preparing)).await;
    progress.clear();
    let (shown, document, sandbox) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            close(client).await;
            return Err(error);
        }
    };
    let (channel, inbound) = Channel::new();
    let text = PageText {
        title: name.clone(),
        server: describe_server(&client),
        border: document.ui.get("prefersBorder") != Some(&Value::Bool(false)),
    };
    let served = match http::serve(document.html, &sandbox, text, Arc::clone(&channel)).await {
        Ok(served) => served,
        Err(error) => {
            close(client).await;
            return Err(CliError::failed(format!("cannot serve the app: {error}")));
        }
    };
    show(&served.page_url, args.no_open);
    let deadline = args.connect.timeout.map(|after| connected + after);
    let session = Session::new(client.clone(), asker, channel, shown);
    session.run(inbound, deadline).await;
    drop(served);
    close(client).await;
    Ok(ExitCode::SUCCESS)
}

/// Everything before the page: the tool, its UI resource and sandbox, and the tool's result.
async fn prepare(
    client: &Client,
    name: &str,
    operands: &[String],
    progress: &ProgressView,
) -> Result<(Shown, ui_resource::AppDocument, Sandbox)> {
    let failed = |what: &str| {
        let what = what.to_owned();
        move |error: modelctx::client::ClientError| {
            CliError::failed(format!("{what}: {}", line(&error.to_string())))
        }
    };
    let tools: Vec<Value> = client
        .list_tools()
        .await
        .map_err(failed("tools/list"))?
        .iter()
        .map(to_json)
        .collect();
    let tool = tools
        .iter()
        .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
        .cloned()
        .ok_or_else(|| CliError::failed(format!("the server lists no tool {}", line(name))))?;
    let uri = resource_uri(&tool)
        .map_err(|why| CliError::failed(format!("tool {}: {why}", line(name))))?;
    // The listing may carry the resource's `_meta.ui` too; servers may also leave UI resources
    // out of it.
    let listing = client.list_resources().await.ok().and_then(|resources| {
        resources
            .iter()
            .map(to_json)
            .find(|r| r.get("uri").and_then(Value::as_str) == Some(uri.as_str()))
    });
    let read = client
        .read_resource_with(
            ReadResourceRequestParams::new(uri.clone()),
            RequestOptions::new(),
        )
        .await
        .map_err(failed(&format!("reading {uri}")))?;
    let document = app_document(&uri, listing.as_ref(), &to_json(&read))
        .map_err(|why| CliError::failed(format!("tool {}: {why}", line(name))))?;
    let sandbox = Sandbox::from_ui_meta(&document.ui)
        .map_err(|why| CliError::failed(format!("refusing the app {}: {why}", line(&uri))))?;
    eprintln!(
        "app {} ({} bytes): {}",
        line(&uri),
        document.html.len(),
        line(&sandbox.summary())
    );
    let arguments: Map<String, Value> = tool_arguments(client, name, operands).await?;
    let shown_progress = progress.clone();
    let options = RequestOptions::new().on_progress(move |p| shown_progress.update(&p));
    let params = CallToolRequestParams::new(name.to_owned(), Some(arguments.clone()));
    let result = Box::pin(client.call_tool_with(params, options))
        .await
        .map_err(failed("tools/call"))?;
    let result = to_json(&result);
    if result.get("isError") == Some(&Value::Bool(true)) {
        eprintln!("the tool reported an error (isError); the app shows it");
    }
    let shown = Shown {
        tool,
        arguments,
        result,
        tools,
        sandbox: sandbox.approved(),
    };
    Ok((shown, document, sandbox))
}

/// Opens the host page in the browser, or prints its URL alone on stdout (`--no-open`).
/// Declares the host's support (`io.modelcontextprotocol/ui` with the app MIME type) on every
/// request and at `initialize`, so that a server that gives UI only to hosts that render it
/// (`client_supports_apps`) gives it to `mcp app`.
fn advertise_apps(builder: ClientBuilder) -> ClientBuilder {
    let settings = serde_json::to_value(UiClientCapabilities::html_apps())
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    match ExtensionId::new(APPS_EXTENSION) {
        Ok(id) => builder.extension(id, settings),
        Err(_) => builder,
    }
}

fn show(url: &str, no_open: bool) {
    if no_open {
        println!("{url}");
    } else {
        eprintln!("opening {url} in your browser");
        let opened = url::Url::parse(url)
            .map_err(std::io::Error::other)
            .and_then(|parsed| open_in_browser(&parsed));
        if let Err(error) = opened {
            eprintln!("cannot open a browser ({error}); open {url} yourself");
        }
    }
    eprintln!("serving the app; Ctrl-C closes it");
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
