//! `mcp bridge URL`: a remote streamable-HTTP server served to a host over stdio, in the era
//! each side speaks (issue 36, shape 1; DESIGN.md, "The bridge").
//!
//! The host spawns `mcp bridge https://…/mcp` as its stdio server. The bridge connects to the
//! upstream as `mcp call` does (the same options: `--mode`, headers, OAuth with everything
//! `mcp call` has), mirrors what the upstream offers in a server of its own (`mirror`), whose
//! handlers relay each request a round at a time (`forward`), and relays the upstream's
//! changes (`changes`). The bridge's server speaks both eras on stdio, so a 2025-11-25 host
//! (`initialize`, answered with the server info, capabilities and instructions the upstream
//! gave at discovery) and a 2026-07-28 host are both served, whatever the upstream speaks.

mod changes;
mod forward;
mod host_requests;
mod mirror;

use std::process::ExitCode;
use std::sync::Arc;

use modelctx::client::Client;
use modelctx::server::{RequestContext, Server, StdioConfig, shutdown_signal};
use modelctx::types::methods::LoggingMessage;
use modelctx::types::{
    CompleteRequestParams, Era, Implementation, LoggingMessageNotificationParams,
    NotificationMethod as _,
};
use tokio::sync::mpsc;

use self::changes::{CHANGE_BACKLOG, UpstreamChange};
use self::forward::Relay;
use self::host_requests::HostRequests;
use self::mirror::{Lists, Mirrored};
use crate::cli::BridgeArgs;
use crate::error::{CliError, Result};
use crate::target::{Target, close};

/// How many upstream log messages may wait for the host before newer ones are dropped.
const LOG_BACKLOG: usize = 256;

/// Runs the bridge until the host closes stdin (or SIGTERM / SIGINT).
pub(crate) async fn bridge(args: BridgeArgs) -> Result<ExitCode> {
    let signal = shutdown_signal()
        .map_err(|e| CliError::failed(format!("cannot handle SIGTERM and SIGINT: {e}")))?;
    let (target, rest) = Target::split(std::slice::from_ref(&args.url), &[])?;
    if let Some(extra) = rest.first() {
        return Err(CliError::usage(format!("unexpected argument {extra:?}")));
    }
    let host_requests = HostRequests::default();
    let (changes_tx, changes_rx) = mpsc::channel(CHANGE_BACKLOG);
    let (logs_tx, logs_rx) = mpsc::channel::<LoggingMessageNotificationParams>(LOG_BACKLOG);
    let builder = upstream_client(&host_requests, changes_tx.clone(), logs_tx);
    let client = target.connect(builder, &args.connect).await?;
    let relay = Relay {
        client: client.clone(),
        host_requests,
        logs: Arc::new(tokio::sync::Mutex::new(logs_rx)),
        timeout: crate::target::timeout(&args.connect),
    };
    let server = mirror_server(&client)?;
    let lists = Lists::of(&client.server_capabilities().unwrap_or_default());
    let mut mirrored = Mirrored::default();
    if lists.tools {
        mirror::sync_tools(&relay, &server, &mut mirrored).await?;
    }
    if lists.prompts {
        mirror::sync_prompts(&relay, &server, &mut mirrored).await?;
    }
    if lists.resources {
        mirror::sync_resources(&relay, &server, &mut mirrored).await?;
    }
    let mut following = vec![tokio::spawn(changes::apply(
        relay.clone(),
        server.clone(),
        lists,
        mirrored,
        changes_rx,
    ))];
    if client.era() == Era::Modern && (lists.tools || lists.prompts || lists.resources) {
        following.push(tokio::spawn(changes::listen_upstream(
            client.clone(),
            lists,
            changes_tx,
        )));
    } else {
        drop(changes_tx);
    }
    let served = server
        .serve_stdio_until(StdioConfig::default(), signal)
        .await;
    for task in following {
        task.abort();
    }
    drop(relay);
    close(client).await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The upstream's client: a 2025-11-25 upstream's questions go to the host (`host_requests`),
/// its change notifications to the mirror. Every kind of question is declared (form and URL
/// elicitation, sampling, roots): the bridge's server checks each one against what the host
/// declared before asking it.
fn upstream_client(
    host_requests: &HostRequests,
    changes: mpsc::Sender<UpstreamChange>,
    logs: mpsc::Sender<LoggingMessageNotificationParams>,
) -> modelctx::client::ClientBuilder {
    let (elicit, sample, roots) = (
        host_requests.clone(),
        host_requests.clone(),
        host_requests.clone(),
    );
    Client::builder()
        .on_elicitation(move |question, params| elicit.clone().elicit(question, params))
        .on_sampling(move |question, params| sample.clone().create_message(question, params))
        .on_list_roots(move |question| roots.clone().list_roots(question))
        .on_notification(move |notification| {
            if let Some(change) = UpstreamChange::of_notification(notification) {
                // Full: changes of each kind coalesce (module docs of `changes`).
                let _ = changes.try_send(change);
            } else if notification.method == LoggingMessage::NAME
                && let Ok(message) = notification.params_as::<LoggingMessageNotificationParams>()
            {
                // Full: the host reads slower than the upstream logs; the excess is dropped.
                let _ = logs.try_send(message);
            }
        })
}

/// The bridge's server: the upstream's identity, instructions, lists, completions and logging.
fn mirror_server(client: &Client) -> Result<Server> {
    let info = client
        .server_info()
        .unwrap_or_else(|| Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION")));
    let mut builder = Server::builder(info.name, info.version);
    if let Some(title) = info.title {
        builder = builder.title(title);
    }
    if let Some(description) = info.description {
        builder = builder.description(description);
    }
    if let Some(url) = info.website_url {
        builder = builder.website_url(url);
    }
    if let Some(icons) = info.icons {
        builder = builder.icons(icons);
    }
    if let Some(instructions) = client.instructions() {
        builder = builder.instructions(instructions);
    }
    let capabilities = client.server_capabilities().unwrap_or_default();
    let lists = Lists::of(&capabilities);
    if lists.tools {
        builder = builder.declare_tools();
    }
    if lists.prompts {
        builder = builder.declare_prompts();
    }
    if lists.resources {
        builder = builder.declare_resources();
    }
    if capabilities.completions.is_some() {
        let upstream = client.clone();
        builder = builder.completion(
            move |_ctx: RequestContext, mut params: CompleteRequestParams| {
                let upstream = upstream.clone();
                async move {
                    // The host's envelope stays on the host's hop (the client writes its own).
                    params.meta = None;
                    upstream
                        .complete(params)
                        .await
                        .map_err(forward::upstream_error)
                }
            },
        );
    }
    let logging = capabilities.logging.is_some();
    builder
        .logging(logging)
        .build()
        .map_err(|e| CliError::failed(format!("the bridge's server: {e}")))
}
