//! W3C trace-context propagation through `params._meta` (SEP-414).
//!
//! The client writes the context of each request's span into `_meta` as `traceparent`,
//! `tracestate` and `baggage`; the server makes the context it reads there the parent of its
//! request span. The format is always W3C's, not that of the global propagator the application
//! may have installed: SEP-414 names these keys and their W3C meaning, so a Python or
//! TypeScript peer reads them, and an application that installs no propagator (OpenTelemetry's
//! default is a no-op) still propagates. Baggage travels only beside a `traceparent`.
//!
//! Everything read is peer input: the propagators parse it strictly (a malformed `traceparent`
//! is no parent, `tracestate` holds at most 32 members, baggage at most 180 members and
//! 8192 bytes), and a value that is no string is ignored. A peer chooses which trace our span
//! joins, and with a parent-based sampler whether it is sampled; that is what propagation is for.

use std::sync::LazyLock;

use modelctx_types::Extra;
use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde_json::Value;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// `traceparent` + `tracestate`, then `baggage`: built once.
static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(|| {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ])
});

/// Writes the context of `span` (an enabled span) into a request's `_meta`, replacing any
/// trace context already there; whether it wrote anything (not without a
/// `tracing-opentelemetry` layer, whose spans have no context).
#[cfg(feature = "client")]
pub(crate) fn inject(span: &Span, meta: &mut Option<Box<modelctx_types::RequestMeta>>) -> bool {
    use opentelemetry::propagation::Injector;
    struct Meta<'a>(&'a mut Extra);
    impl Injector for Meta<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return false;
    }
    let meta = meta.get_or_insert_with(Box::default);
    PROPAGATOR.inject_context(&context, &mut Meta(&mut meta.extra));
    true
}

/// Makes the trace context in a request's `_meta` the parent of `span` (an enabled span not
/// entered yet). Without a `traceparent` the span keeps its local parent.
#[cfg(feature = "server")]
pub(crate) fn adopt_parent(span: &Span, meta: &Extra) {
    use modelctx_types::meta::keys;
    use opentelemetry::propagation::Extractor;
    struct Meta<'a>(&'a Extra);
    impl Extractor for Meta<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }
        fn keys(&self) -> Vec<&str> {
            [keys::TRACEPARENT, keys::TRACESTATE, keys::BAGGAGE]
                .into_iter()
                .filter(|key| self.0.contains_key(*key))
                .collect()
        }
    }
    if !meta.contains_key(keys::TRACEPARENT) {
        return;
    }
    let context = PROPAGATOR.extract(&Meta(meta));
    if context.span().span_context().is_remote() {
        // Fails only without an OpenTelemetry layer, where there is nothing to parent.
        let _ = span.set_parent(context);
    }
}
