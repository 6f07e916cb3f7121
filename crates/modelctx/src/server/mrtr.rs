//! The three methods that take part in multi-round-trip requests (`tools/call`, `prompts/get`,
//! `resources/read`): opening inbound sealed state, checking and sealing the
//! `InputRequiredResult`s their handlers return.

use std::sync::Arc;

use modelctx_seal::{FUTURE_SKEW, Reason, RequestBinding, RoundLineage};
use modelctx_types::jsonrpc::encode_result;
use modelctx_types::methods::{CallTool, GetPrompt, ReadResource};
use modelctx_types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ErrorObject, Extra,
    GetPromptRequestParams, InputRequiredResult, Meta, Method, Outcome, ReadResourceRequestParams,
    ResultType, Tool, WireResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::headers::check_param_headers;
use super::message::{
    Incoming, decode_params, internal, invalid_request_state, log_rejected_state,
};
use super::notifier::Notifier;
use super::registry::Registry;
use super::single_use::Redemption;
use super::{CachePolicy, RequestContext, Server};
use crate::schema_check::SchemaCheck;

/// `arguments` from the raw params (the binding of sealed state; read only when sealing acts).
fn raw_arguments(params: Option<&str>) -> Option<Value> {
    #[derive(Deserialize)]
    struct Probe {
        arguments: Option<Value>,
    }
    decode_params::<Probe>(params)
        .ok()
        .and_then(|p| p.arguments)
}

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

/// Which sealed-state binding a request has.
pub(crate) struct Target<'a> {
    pub(crate) method: &'static str,
    pub(crate) name: &'a str,
}

impl Server {
    /// Replaces an inbound sealed `requestState` with its plaintext (every inbound state is
    /// verified, even for handlers that never mint). For a single-use round (`tool`: the tool
    /// called, `None` for prompts and resources) the token is redeemed in the replay guard
    /// first, so a replay never reaches the handler.
    ///
    /// Returns where this request stands in its call when it opened a sealed state: its round
    /// (the sealing round's plus one) and the first round's trace context, which the request's
    /// span records and links to and which [`Self::seal_state`] carries on. `None` for a first
    /// round (recorded as round 1) and for unsealed state.
    pub(crate) async fn open_state(
        &self,
        incoming: &Incoming<'_>,
        ctx: &RequestContext,
        target: &Target<'_>,
        tool: Option<&Tool>,
        state: &mut Option<String>,
    ) -> Result<Option<RoundLineage>, ErrorObject> {
        let Some(token) = state.as_deref() else {
            super::trace::record_round(&incoming.span, 1);
            return Ok(None);
        };
        let Some(policy) = &self.inner.sealing else {
            return Ok(None);
        };
        let arguments = raw_arguments(incoming.params);
        let binding = RequestBinding::new(target.method, target.name)
            .with_arguments(arguments.as_ref())
            .with_principal(ctx.principal());
        let refuse = |reason: Reason| {
            log_rejected_state(target.method, Some(target.name), reason);
            invalid_request_state()
        };
        let single_use = self.inner.single_use.as_ref().filter(|p| p.covers(tool));
        let Some(protection) = single_use else {
            let (opened, lineage) = policy
                .open_round(token, &binding)
                .map_err(|e| refuse(e.reason()))?;
            *state = Some(opened);
            return Ok(Some(this_round(incoming, lineage)));
        };
        let opened = policy
            .open_single_use(token, &binding)
            .map_err(|e| refuse(e.reason()))?;
        // Kept past `exp` by the clock skew the policy tolerates, so that an instance whose clock
        // lags the guard's still finds the key while it accepts the token.
        let keep_until = opened.expires_at + FUTURE_SKEW;
        match protection
            .guard
            .redeem(&opened.replay_key, keep_until)
            .await
        {
            Ok(Redemption::First) => {
                *state = Some(opened.state);
                Ok(Some(this_round(incoming, opened.lineage)))
            }
            Ok(Redemption::Replay) => Err(refuse(Reason::Replayed)),
            Ok(Redemption::Forgotten) => Err(refuse(Reason::Forgotten)),
            Err(error) => {
                // Not the client's fault, and the token stays unredeemed: an internal error
                // the client may retry, not the invalid-state answer that ends its flow.
                tracing::error!(method = target.method, %error, "single-use round refused");
                Err(internal("Internal error"))
            }
        }
    }

    /// Encodes a multi-round-trip outcome: complete results are stamped; input-required results
    /// are checked (shape, the client's capabilities), their state sealed, and stamped.
    pub(crate) fn finish_outcome<T: Serialize + WireResult>(
        &self,
        incoming: &Incoming<'_>,
        ctx: &RequestContext,
        target: &Target<'_>,
        outcome: Outcome<T>,
        lineage: Option<&RoundLineage>,
    ) -> Result<Vec<u8>, ErrorObject> {
        match outcome {
            Outcome::Complete(result) => self.respond(incoming, result),
            Outcome::InputRequired(irr) => {
                self.finish_input_required(incoming, ctx, target, irr, lineage)
            }
            Outcome::Extension(extension) => {
                encode_result(&incoming.id, &*extension.raw).map_err(|e| internal(&e.to_string()))
            }
        }
    }

    fn finish_input_required(
        &self,
        incoming: &Incoming<'_>,
        ctx: &RequestContext,
        target: &Target<'_>,
        mut irr: InputRequiredResult,
        lineage: Option<&RoundLineage>,
    ) -> Result<Vec<u8>, ErrorObject> {
        debug_assert!(
            incoming.handshake.is_none(),
            "the bridge answers every InputRequiredResult of a handshake-era request"
        );
        self.check_input_required(ctx, target, &irr)?;
        if let Some(state) = irr.request_state.take() {
            irr.request_state = Some(self.seal_state(incoming, ctx, target, state, lineage)?);
        }
        irr.result_type = Some(ResultType::INPUT_REQUIRED);
        irr.meta
            .get_or_insert_with(Meta::new)
            .set_server_info_raw(Arc::clone(&self.inner.info_raw));
        encode_result(&incoming.id, &irr).map_err(|e| internal(&e.to_string()))
    }

    /// What every `InputRequiredResult` must be, whichever way it reaches the client: questions
    /// or state, and only questions this request's client declared it can answer (`-32021`
    /// with `data.requiredCapabilities` otherwise).
    pub(crate) fn check_input_required(
        &self,
        ctx: &RequestContext,
        target: &Target<'_>,
        irr: &InputRequiredResult,
    ) -> Result<(), ErrorObject> {
        if !irr.is_valid() {
            tracing::error!(
                method = target.method,
                "handler returned an InputRequiredResult without inputRequests or requestState"
            );
            return Err(internal("Handler returned an invalid result"));
        }
        let declared = ctx.client_capabilities();
        let mut missing = ClientCapabilities::new();
        for request in irr.input_requests.iter().flat_map(|r| r.values()) {
            let required = request.required_capabilities();
            if !declared.satisfies(&required) {
                missing.union(&required);
            }
        }
        if missing != ClientCapabilities::new() {
            tracing::warn!(
                method = target.method,
                "handler asked for input the client cannot give"
            );
            ctx.require_capabilities(&missing)?;
        }
        Ok(())
    }

    /// Seals a handler's plaintext state, bound to this request (unchanged when sealing is off).
    /// `lineage` is this round's, from [`Self::open_state`]: a later round seals its number and
    /// carries the first round's trace context on; a first round (`None`) seals, with the
    /// `otel` feature, its own span's `traceparent`, and otherwise exactly Python's claims.
    pub(crate) fn seal_state(
        &self,
        incoming: &Incoming<'_>,
        ctx: &RequestContext,
        target: &Target<'_>,
        state: String,
        lineage: Option<&RoundLineage>,
    ) -> Result<String, ErrorObject> {
        let Some(policy) = &self.inner.sealing else {
            return Ok(state);
        };
        let arguments = raw_arguments(incoming.params);
        let binding = RequestBinding::new(target.method, target.name)
            .with_arguments(arguments.as_ref())
            .with_principal(ctx.principal());
        #[cfg(feature = "otel")]
        let first = lineage
            .is_none()
            .then(|| first_round(&incoming.span))
            .flatten();
        #[cfg(feature = "otel")]
        let lineage = lineage.or(first.as_ref());
        let sealed = match lineage {
            Some(lineage) => policy.seal_round(&state, &binding, lineage),
            None => policy.seal(&state, &binding),
        };
        sealed.map_err(|error| {
            tracing::error!(%error, "requestState could not be sealed");
            internal("Internal error")
        })
    }

    pub(crate) async fn call_tool(
        &self,
        incoming: &Incoming<'_>,
        typed: Option<CallToolRequestParams>,
        registry: &Registry,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Result<Vec<u8>, ErrorObject> {
        let (mut params, meta, version) =
            self.prepare_typed(incoming, typed, |p: &CallToolRequestParams| {
                Some(p.name.as_str())
            })?;
        self.gate(incoming, self.has_tools(registry))?;
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
        let ctx = self.context(incoming, meta, version, notifier, cancel);
        let lineage = self
            .open_state(
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
            return self.respond(
                incoming,
                CallToolResult::error(format!("Input validation error: {problem}")),
            );
        }
        let outcome = if incoming.handshake.is_some() {
            let handler = &entry.handler;
            Box::pin(self.bridge(&ctx, &target, params, |ctx, params| {
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
        self.finish_outcome(incoming, &ctx, &target, outcome, lineage.as_ref())
    }

    pub(crate) async fn get_prompt(
        &self,
        incoming: &Incoming<'_>,
        registry: &Registry,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Result<Vec<u8>, ErrorObject> {
        let (mut params, meta, version) =
            self.prepare::<GetPromptRequestParams>(incoming, |p| Some(p.name.as_str()))?;
        self.gate(incoming, self.has_prompts(registry))?;
        let entry = registry.prompt(&params.name).cloned().ok_or_else(|| {
            ErrorObject::invalid_params(format!("Unknown prompt: {}", params.name))
        })?;
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
        let ctx = self.context(incoming, meta, version, notifier, cancel);
        let lineage = self
            .open_state(incoming, &ctx, &target, None, &mut params.request_state)
            .await?;
        let outcome = if incoming.handshake.is_some() {
            let handler = &entry.handler;
            Box::pin(self.bridge(&ctx, &target, params, |ctx, params| {
                handler.get(ctx, params)
            }))
            .await
        } else {
            entry.handler.get(ctx.clone(), params).await
        };
        ctx.finish();
        self.finish_outcome(incoming, &ctx, &target, outcome?, lineage.as_ref())
    }

    pub(crate) async fn read_resource(
        &self,
        incoming: &Incoming<'_>,
        registry: &Registry,
        notifier: Option<Notifier>,
        cancel: CancellationToken,
    ) -> Result<Vec<u8>, ErrorObject> {
        let (mut params, meta, version) =
            self.prepare::<ReadResourceRequestParams>(incoming, |p| Some(p.uri.as_str()))?;
        self.gate(incoming, self.has_resources(registry))?;
        let uri = params.uri.clone();
        let target = Target {
            method: ReadResource::NAME,
            name: &uri,
        };
        check_input_responses(params.input_responses.as_ref())?;
        let ctx = self.context(incoming, meta, version, notifier, cancel);
        let lineage = self
            .open_state(incoming, &ctx, &target, None, &mut params.request_state)
            .await?;
        let outcome = if let Some(entry) = registry.resource(&uri).cloned() {
            let result = entry.handler.read(ctx.clone(), params).await;
            result.map(Outcome::Complete)
        } else if let Some((entry, variables)) = registry.template_for(&uri) {
            let entry = Arc::clone(entry);
            if incoming.handshake.is_some() {
                let handler = &entry.handler;
                Box::pin(self.bridge(&ctx, &target, params, |ctx, params| {
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
                let CachePolicy { ttl_ms, scope } = &self.inner.caching.reads;
                result.ttl_ms.get_or_insert(*ttl_ms);
                result.cache_scope.get_or_insert_with(|| scope.clone());
                Outcome::Complete(result)
            }
            other => other,
        };
        self.finish_outcome(incoming, &ctx, &target, outcome, lineage.as_ref())
    }
}

/// The round a retry is, from the lineage of the state it opened, recorded on its span and, with
/// `otel`, linked to the first round's span.
fn this_round(incoming: &Incoming<'_>, opened: RoundLineage) -> RoundLineage {
    let lineage = opened.next();
    super::trace::record_round(&incoming.span, lineage.round());
    #[cfg(feature = "otel")]
    if let Some(first) = lineage.trace_context()
        && !incoming.span.is_disabled()
    {
        crate::otel::link_first_round(&incoming.span, first);
    }
    lineage
}

/// A first round's lineage with its own span's `traceparent`, for the rounds after it to link
/// to; `None` (Python's claims alone) when the span is disabled or has no OpenTelemetry context.
#[cfg(feature = "otel")]
fn first_round(span: &tracing::Span) -> Option<RoundLineage> {
    if span.is_disabled() {
        return None;
    }
    crate::otel::traceparent_of(span).map(|tc| RoundLineage::FIRST.with_trace_context(tc))
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
