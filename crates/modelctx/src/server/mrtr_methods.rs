//! The three methods that take part in multi-round-trip requests (`tools/call`, `prompts/get`,
//! `resources/read`), each from its typed params to its encoded result: the ladder, the inbound
//! state opened (`mrtr`), the handler run — over the bridge for a handshake-era client
//! (`bridge`) — and its outcome checked and sealed (`mrtr`).
//!
//! Above both `mrtr` and `bridge`: the bridge checks what a handler returns with `mrtr`'s
//! checks, and these methods call the bridge, so the state handling and the methods are two
//! modules rather than one that the bridge would name back.

use std::sync::Arc;

use modelctx_types::methods::{CallTool, GetPrompt, ReadResource};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ErrorObject, Extra, GetPromptRequestParams, Method,
    Outcome, ReadResourceRequestParams,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::bridge::bridge;
use super::headers::check_param_headers;
use super::ladder::{
    context, gate, has_prompts, has_resources, has_tools, prepare, prepare_typed, respond,
};
use super::message::Incoming;
use super::mrtr::{Target, finish_outcome, open_state};
use super::notifier::Notifier;
use super::registry::Registry;
use super::{CachePolicy, Server};
use crate::schema_check::SchemaCheck;

/// Every answer in `inputResponses` must at least have the shape of an answer (an elicitation,
/// sampling or roots result); a malformed structure is a protocol error, not a question to ask
/// again. Whether it fits the question asked under its key is for the handler to judge.
fn check_input_responses(
    responses: Option<&modelctx_types::InputResponses>,
) -> Result<(), ErrorObject> {
    for (key, response) in responses.into_iter().flatten() {
        if response.kind().is_none() {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid request parameters: inputResponses[{key:?}] is not an elicitation, \
                 sampling or roots result"
            )));
        }
    }
    Ok(())
}

pub(crate) async fn call_tool(
    server: &Server,
    incoming: &Incoming<'_>,
    typed: Option<CallToolRequestParams>,
    registry: &Registry,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Result<Vec<u8>, ErrorObject> {
    let (mut params, meta, version) =
        prepare_typed(server, incoming, typed, |p: &CallToolRequestParams| {
            Some(p.name.as_str())
        })?;
    gate(incoming, has_tools(server, registry))?;
    let entry = registry
        .tool(&params.name)
        .cloned()
        .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown tool: {}", params.name)))?;
    if let Some(headers) = incoming.headers {
        check_param_headers(headers, &entry.headers, params.arguments.as_ref())?;
    }
    let target = Target {
        method: CallTool::NAME,
        name: &entry.tool.name,
    };
    check_input_responses(params.input_responses.as_ref())?;
    // The context first: the principal the state is bound to is the context's.
    let ctx = context(server, incoming, meta, version, notifier, cancel);
    let lineage = open_state(
        server,
        incoming,
        &ctx,
        &target,
        Some(&entry.tool),
        &mut params.request_state,
    )
    .await?;
    // Arguments that break the schema are a tool error the model can correct, not a
    // protocol error (2025-11-25 on).
    if let Err(problem) = check_arguments(&entry.input_check, &mut params.arguments) {
        return respond(
            server,
            incoming,
            CallToolResult::error(format!("Input validation error: {problem}")),
        );
    }
    let outcome = if incoming.handshake.is_some() {
        let handler = &entry.handler;
        Box::pin(bridge(&ctx, &target, params, |ctx, params| {
            handler.call(ctx, params)
        }))
        .await
    } else {
        entry.handler.call(ctx.clone(), params).await
    };
    ctx.finish();
    let mut outcome = outcome?;
    if let (Some(check), Outcome::Complete(result)) = (&entry.output_check, &mut outcome) {
        check_structured_content(check, &entry.tool.name, result);
    }
    finish_outcome(server, incoming, &ctx, &target, outcome, lineage.as_ref())
}

pub(crate) async fn get_prompt(
    server: &Server,
    incoming: &Incoming<'_>,
    registry: &Registry,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Result<Vec<u8>, ErrorObject> {
    let (mut params, meta, version) =
        prepare::<GetPromptRequestParams>(server, incoming, |p| Some(p.name.as_str()))?;
    gate(incoming, has_prompts(server, registry))?;
    let entry = registry
        .prompt(&params.name)
        .cloned()
        .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown prompt: {}", params.name)))?;
    for argument in entry.prompt.arguments.iter().flatten() {
        let given = params
            .arguments
            .as_ref()
            .is_some_and(|a| a.contains_key(&argument.name));
        if argument.required == Some(true) && !given {
            return Err(ErrorObject::invalid_params(format!(
                "Missing required argument {:?} for prompt {:?}",
                argument.name, entry.prompt.name
            )));
        }
    }
    let target = Target {
        method: GetPrompt::NAME,
        name: &entry.prompt.name,
    };
    check_input_responses(params.input_responses.as_ref())?;
    let ctx = context(server, incoming, meta, version, notifier, cancel);
    let lineage = open_state(
        server,
        incoming,
        &ctx,
        &target,
        None,
        &mut params.request_state,
    )
    .await?;
    let outcome = if incoming.handshake.is_some() {
        let handler = &entry.handler;
        Box::pin(bridge(&ctx, &target, params, |ctx, params| {
            handler.get(ctx, params)
        }))
        .await
    } else {
        entry.handler.get(ctx.clone(), params).await
    };
    ctx.finish();
    finish_outcome(server, incoming, &ctx, &target, outcome?, lineage.as_ref())
}

pub(crate) async fn read_resource(
    server: &Server,
    incoming: &Incoming<'_>,
    registry: &Registry,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Result<Vec<u8>, ErrorObject> {
    let (mut params, meta, version) =
        prepare::<ReadResourceRequestParams>(server, incoming, |p| Some(p.uri.as_str()))?;
    gate(incoming, has_resources(server, registry))?;
    let uri = params.uri.clone();
    let target = Target {
        method: ReadResource::NAME,
        name: &uri,
    };
    check_input_responses(params.input_responses.as_ref())?;
    let ctx = context(server, incoming, meta, version, notifier, cancel);
    let lineage = open_state(
        server,
        incoming,
        &ctx,
        &target,
        None,
        &mut params.request_state,
    )
    .await?;
    let outcome = if let Some(entry) = registry.resource(&uri).cloned() {
        let result = entry.handler.read(ctx.clone(), params).await;
        result.map(Outcome::Complete)
    } else if let Some((entry, variables)) = registry.template_for(&uri) {
        let entry = Arc::clone(entry);
        if incoming.handshake.is_some() {
            let handler = &entry.handler;
            Box::pin(bridge(&ctx, &target, params, |ctx, params| {
                handler.read(ctx, params, variables.clone())
            }))
            .await
        } else {
            entry.handler.read(ctx.clone(), params, variables).await
        }
    } else {
        return Err(ErrorObject::resource_not_found(&uri));
    };
    ctx.finish();
    let outcome = match outcome? {
        Outcome::Complete(result) if result.contents.is_empty() => {
            // Never an empty `contents`: that is how "not found" must not be said.
            return Err(ErrorObject::resource_not_found(&uri));
        }
        Outcome::Complete(mut result) => {
            let CachePolicy { ttl_ms, scope } = &server.inner.caching.reads;
            result.ttl_ms.get_or_insert(*ttl_ms);
            result.cache_scope.get_or_insert_with(|| scope.clone());
            Outcome::Complete(result)
        }
        other => other,
    };
    finish_outcome(server, incoming, &ctx, &target, outcome, lineage.as_ref())
}

/// Checks tool arguments (absent ones as `{}`) against the tool's `inputSchema`, without
/// copying them.
fn check_arguments(check: &SchemaCheck, arguments: &mut Option<Extra>) -> Result<(), String> {
    let given = arguments.is_some();
    let value = Value::Object(arguments.take().unwrap_or_default());
    let verdict = check.check(&value);
    if let (true, Value::Object(map)) = (given, value) {
        *arguments = Some(map);
    }
    verdict
}

/// A successful result must carry `structuredContent` that conforms to the tool's
/// `outputSchema` (2026-07-28 makes it a server MUST). A handler that breaks it is a server bug:
/// it is logged, and the caller gets a tool error rather than data its schema does not describe.
fn check_structured_content(check: &SchemaCheck, tool: &str, result: &mut CallToolResult) {
    if result.is_error == Some(true) {
        return;
    }
    let problem = match &result.structured_content {
        None => "outputSchema defined but no structured output returned".to_owned(),
        Some(content) => match check.check(content) {
            Ok(()) => return,
            Err(problem) => problem,
        },
    };
    tracing::error!(%tool, %problem, "tool result does not match its outputSchema");
    *result = CallToolResult::error(format!("Output validation error: {problem}"));
}
