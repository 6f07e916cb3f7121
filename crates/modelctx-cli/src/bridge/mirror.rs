//! The upstream's tools, prompts and resources, mirrored in the bridge's own server.
//!
//! Each listing is read upstream in full (every page, as the client walks them) and registered
//! with a handler that relays to the upstream (`forward`); the bridge's server then lists them
//! to the host in its own pages. On a change upstream the listing is read again and the
//! difference applied: names gone are removed, the others (re)registered, and the server tells
//! the host its list changed.

use std::collections::HashSet;

use modelctx::server::{RegistrationError, RequestContext, Server};
use modelctx::types::methods::{CallTool, GetPrompt, ReadResource};
use modelctx::types::{
    ErrorObject, Outcome, ReadResourceRequestParams, ReadResourceResult, ServerCapabilities,
};

use super::forward::{Relay, relay_round};
use crate::error::{CliError, Result};

/// Which lists the upstream has, from the capabilities it declared.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lists {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

impl Lists {
    pub(crate) fn of(capabilities: &ServerCapabilities) -> Self {
        Self {
            tools: capabilities.tools.is_some(),
            prompts: capabilities.prompts.is_some(),
            resources: capabilities.resources.is_some(),
        }
    }
}

/// What the mirror registered, to remove what the upstream no longer lists.
#[derive(Debug, Default)]
pub(crate) struct Mirrored {
    tools: HashSet<String>,
    prompts: HashSet<String>,
    resources: HashSet<String>,
    templates: HashSet<String>,
}

/// Applies a fresh listing to the server: what `registered` has and `listed` lacks is removed,
/// each listed item is registered anew (its description may have changed).
fn apply<T>(
    what: &str,
    listed: Vec<T>,
    registered: &mut HashSet<String>,
    name: impl Fn(&T) -> String,
    remove: impl Fn(&str) -> bool,
    mut add: impl FnMut(T) -> std::result::Result<(), RegistrationError>,
) -> Result<()> {
    let names: HashSet<String> = listed.iter().map(&name).collect();
    for gone in registered.difference(&names) {
        remove(gone);
    }
    for item in listed {
        remove(&name(&item));
        add(item).map_err(|e| CliError::failed(format!("mirroring the upstream's {what}: {e}")))?;
    }
    *registered = names;
    Ok(())
}

/// Reads the upstream's tools and mirrors them.
pub(crate) async fn sync_tools(
    relay: &Relay,
    server: &Server,
    mirrored: &mut Mirrored,
) -> Result<()> {
    let tools = relay
        .client
        .list_tools()
        .await
        .map_err(|e| upstream("tools/list", &e))?;
    apply(
        "tools",
        tools,
        &mut mirrored.tools,
        |tool| tool.name.clone(),
        |name| server.remove_tool(name),
        |tool| {
            let relay = relay.clone();
            server.add_tool(tool, move |ctx: RequestContext, params| {
                relay_round::<CallTool>(relay.clone(), ctx, params)
            })
        },
    )
}

/// Reads the upstream's prompts and mirrors them.
pub(crate) async fn sync_prompts(
    relay: &Relay,
    server: &Server,
    mirrored: &mut Mirrored,
) -> Result<()> {
    let prompts = relay
        .client
        .list_prompts()
        .await
        .map_err(|e| upstream("prompts/list", &e))?;
    apply(
        "prompts",
        prompts,
        &mut mirrored.prompts,
        |prompt| prompt.name.clone(),
        |name| server.remove_prompt(name),
        |prompt| {
            let relay = relay.clone();
            server.add_prompt(prompt, move |ctx: RequestContext, params| {
                relay_round::<GetPrompt>(relay.clone(), ctx, params)
            })
        },
    )
}

/// Reads the upstream's resources and resource templates and mirrors them.
pub(crate) async fn sync_resources(
    relay: &Relay,
    server: &Server,
    mirrored: &mut Mirrored,
) -> Result<()> {
    let resources = relay
        .client
        .list_resources()
        .await
        .map_err(|e| upstream("resources/list", &e))?;
    let templates = relay
        .client
        .list_resource_templates()
        .await
        .map_err(|e| upstream("resources/templates/list", &e))?;
    apply(
        "resources",
        resources,
        &mut mirrored.resources,
        |resource| resource.uri.clone(),
        |uri| server.remove_resource(uri),
        |resource| {
            let relay = relay.clone();
            server.add_resource(resource, move |ctx: RequestContext, params| {
                read_listed(relay.clone(), ctx, params)
            })
        },
    )?;
    apply(
        "resource templates",
        templates,
        &mut mirrored.templates,
        |template| template.uri_template.clone(),
        |uri_template| server.remove_resource_template(uri_template),
        |template| {
            let relay = relay.clone();
            server.add_resource_template(template, move |ctx: RequestContext, params, _| {
                relay_round::<ReadResource>(relay.clone(), ctx, params)
            })
        },
    )
}

/// A listed resource's read. The server's listed resources cannot ask (their handler returns a
/// result only), so an upstream that asks for input here fails the read with a clear error.
async fn read_listed(
    relay: Relay,
    ctx: RequestContext,
    params: ReadResourceRequestParams,
) -> std::result::Result<ReadResourceResult, ErrorObject> {
    match relay_round::<ReadResource>(relay, ctx, params).await? {
        Outcome::Complete(result) => Ok(result),
        _ => Err(ErrorObject::internal(
            "the upstream server asked for input to read a listed resource; the bridge relays \
             questions for templated resources only",
        )),
    }
}

fn upstream(method: &str, error: &modelctx::client::ClientError) -> CliError {
    CliError::failed(format!("the upstream server's {method}: {error}"))
}
