//! The three methods that take part in multi-round-trip requests (`tools/call`, `prompts/get`,
//! `resources/read`): opening inbound sealed state, checking and sealing the
//! `InputRequiredResult`s their handlers return.

use std::sync::Arc;

use modelctx_seal::{FUTURE_SKEW, Reason, RequestBinding, RoundLineage};
use modelctx_types::jsonrpc::encode_result;
use modelctx_types::{
    ClientCapabilities, ErrorObject, InputRequiredResult, Meta, Outcome, ResultType, Tool,
    WireResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ladder::respond;
use super::message::{
    Incoming, decode_params, internal, invalid_request_state, log_rejected_state,
};
use super::single_use::Redemption;
use super::{RequestContext, Server};

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

/// Which sealed-state binding a request has.
pub(crate) struct Target<'a> {
    pub(crate) method: &'static str,
    pub(crate) name: &'a str,
}

/// Replaces an inbound sealed `requestState` with its plaintext (every inbound state is
/// verified, even for handlers that never mint). For a single-use round (`tool`: the tool
/// called, `None` for prompts and resources) the token is redeemed in the replay guard
/// first, so a replay never reaches the handler.
///
/// Returns where this request stands in its call when it opened a sealed state: its round
/// (the sealing round's plus one) and the first round's trace context, which the request's
/// span records and links to and which [`seal_state`] carries on. `None` for a first
/// round (recorded as round 1) and for unsealed state.
pub(crate) async fn open_state(
    server: &Server,
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
    let Some(policy) = &server.inner.sealing else {
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
    let single_use = server.inner.single_use.as_ref().filter(|p| p.covers(tool));
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
    server: &Server,
    incoming: &Incoming<'_>,
    ctx: &RequestContext,
    target: &Target<'_>,
    outcome: Outcome<T>,
    lineage: Option<&RoundLineage>,
) -> Result<Vec<u8>, ErrorObject> {
    match outcome {
        Outcome::Complete(result) => respond(server, incoming, result),
        Outcome::InputRequired(irr) => {
            finish_input_required(server, incoming, ctx, target, irr, lineage)
        }
        Outcome::Extension(extension) => {
            encode_result(&incoming.id, &*extension.raw).map_err(|e| internal(&e.to_string()))
        }
    }
}

fn finish_input_required(
    server: &Server,
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
    check_input_required(ctx, target, &irr)?;
    if let Some(state) = irr.request_state.take() {
        irr.request_state = Some(seal_state(server, incoming, ctx, target, state, lineage)?);
    }
    irr.result_type = Some(ResultType::INPUT_REQUIRED);
    irr.meta
        .get_or_insert_with(Meta::new)
        .set_server_info_raw(Arc::clone(&server.inner.info_raw));
    encode_result(&incoming.id, &irr).map_err(|e| internal(&e.to_string()))
}

/// What every `InputRequiredResult` must be, whichever way it reaches the client: questions
/// or state, and only questions this request's client declared it can answer (`-32021`
/// with `data.requiredCapabilities` otherwise).
pub(crate) fn check_input_required(
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
/// `lineage` is this round's, from [`open_state`]: a later round seals its number and
/// carries the first round's trace context on; a first round (`None`) seals, with the
/// `otel` feature, its own span's `traceparent`, and otherwise exactly Python's claims.
pub(crate) fn seal_state(
    server: &Server,
    incoming: &Incoming<'_>,
    ctx: &RequestContext,
    target: &Target<'_>,
    state: String,
    lineage: Option<&RoundLineage>,
) -> Result<String, ErrorObject> {
    let Some(policy) = &server.inner.sealing else {
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
