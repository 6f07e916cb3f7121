//! The in-memory OpenTelemetry exporters of the trace tests (`tests/otel.rs`,
//! `tests/otel_python.rs`) and the look-ups their assertions use.
//!
//! One global subscriber (a `tracing-opentelemetry` layer over a tracer provider with the
//! in-memory span exporter, and `OperationMetrics` over a meter provider with the in-memory
//! metric exporter) serves every test of a binary, as `server::capture_spans` does and for the
//! same reason (tracing caches call-site interest process-wide); each test finds its own spans
//! by their trace id.

use std::pin::Pin;
use std::sync::OnceLock;

use modelctx::otel::OperationMetrics;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{TraceContextExt as _, TraceId, TracerProvider as _};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// What every span and every operation-duration data point of a test binary ends in.
#[derive(Debug)]
pub struct Exporters {
    /// Every finished span.
    pub spans: InMemorySpanExporter,
    /// The operation-duration histograms, after [`SdkMeterProvider::force_flush`].
    pub metrics: InMemoryMetricExporter,
    /// The meter provider that exports into `metrics`.
    pub meters: SdkMeterProvider,
    _tracers: SdkTracerProvider,
}

/// Installs the binary's global subscriber on first use and returns its exporters.
pub fn exporters() -> &'static Exporters {
    use tracing_subscriber::layer::SubscriberExt as _;
    static EXPORTERS: OnceLock<Exporters> = OnceLock::new();
    EXPORTERS.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(tracers.tracer("otel-test")))
            .with(OperationMetrics::new(&meters.meter("otel-test")));
        tracing::subscriber::set_global_default(subscriber)
            .expect("this test binary has one global subscriber");
        Exporters {
            spans,
            metrics,
            meters,
            _tracers: tracers,
        }
    })
}

/// The exporter every span of the test binary ends in.
pub fn exporter() -> &'static InMemorySpanExporter {
    &exporters().spans
}

/// The finished spans of one trace.
pub fn spans_of(trace: TraceId) -> Vec<SpanData> {
    exporter()
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|span| span.span_context.trace_id() == trace)
        .collect()
}

/// The attribute `key` of `span`, as a string.
pub fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.to_string())
}

/// Asserts that `span` has each `(key, value)` attribute.
pub fn assert_attributes(span: &SpanData, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        assert_eq!(
            attribute(span, key).as_deref(),
            Some(*value),
            "{key} of {span:#?}"
        );
    }
}

/// Runs `call` under a root span of the test's own (`test root`) and returns its trace id.
pub async fn in_root<T>(call: Pin<Box<impl Future<Output = T>>>) -> (TraceId, T) {
    let root = tracing::info_span!("test root");
    let trace = root.context().span().span_context().trace_id();
    assert_ne!(
        trace,
        TraceId::INVALID,
        "the OpenTelemetry layer is installed"
    );
    let output = call.instrument(root).await;
    (trace, output)
}
