//! One trace per logical multi-round call: on the server every later round's span links to the
//! first round's span, whichever instance serves it; a durable client flow resumed by another
//! worker continues the trace of the call that started it.
//!
//! In round 1 the server seals the W3C `traceparent` of its own span into the `requestState`
//! it returns (the `tc` claim, `modelctx_seal::RoundLineage`); every sealed round carries it on
//! unchanged, and a retry's span gets an OpenTelemetry link to it. The context travels inside
//! the AEAD, so a client can neither forge nor redirect the link; it is still parsed strictly
//! (W3C's `traceparent` grammar, through the SDK's propagator) and its length is bounded by the
//! seal crate, because a key holder of another implementation could have written it.
//!
//! A flow (`client::flows`) stores the `traceparent` of the call span that started it in its
//! record; the call span of each resumption takes it as its *parent* (`set_parent`), so the
//! resumption sits in the starting call's trace, under its call span, however long after and in
//! whichever process. A parent is possible (the resumption's span has not started when the
//! context is set, and nothing else claims to be its parent), and it keeps the whole logical
//! call one subtree, which a link would not. The stored value came from a store other processes
//! write, so it is parsed as strictly as the server's claim.

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The `traceparent` of `span` (an enabled span), or `None` without an OpenTelemetry layer
/// (whose spans have no context).
pub(crate) fn traceparent_of(span: &Span) -> Option<String> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            span_context.trace_id(),
            span_context.span_id(),
            span_context.trace_flags().to_u8()
        )
    })
}

/// Links `span` to the first round's span named by `traceparent`; a `traceparent` that is not
/// W3C's links nothing.
#[cfg(feature = "server")]
pub(crate) fn link_first_round(span: &Span, traceparent: &str) {
    if let Some(first) = parse_traceparent(traceparent) {
        span.add_link(first);
    }
}

/// Makes the span named by `traceparent` the parent of `span` (an enabled span not started
/// yet); a `traceparent` that is not W3C's changes nothing.
#[cfg(feature = "flows")]
pub(crate) fn continue_trace(span: &Span, traceparent: &str) {
    if let Some(parent) = parse_traceparent(traceparent) {
        let context = opentelemetry::Context::new().with_remote_span_context(parent);
        // Fails only without an OpenTelemetry layer, where there is nothing to parent.
        let _ = span.set_parent(context);
    }
}

/// The span context a W3C `traceparent` names, if it is one. Stricter than the propagator, which
/// trims surrounding whitespace: only the grammar's characters (lower-case hex and `-`).
fn parse_traceparent(traceparent: &str) -> Option<SpanContext> {
    if !traceparent
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'))
    {
        return None;
    }
    struct Only<'a>(&'a str);
    impl Extractor for Only<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            (key == "traceparent").then_some(self.0)
        }
        fn keys(&self) -> Vec<&str> {
            vec!["traceparent"]
        }
    }
    let context = TraceContextPropagator::new().extract(&Only(traceparent));
    let named = context.span().span_context().clone();
    named.is_valid().then_some(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_w3c_traceparents_link() {
        let named = parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            .expect("a W3C traceparent");
        assert_eq!(
            named.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(named.span_id().to_string(), "b7ad6b7169203331");
        for bad in [
            "",
            "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n",
            " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad:?}");
        }
    }
}
