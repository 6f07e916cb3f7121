//! OTLP export: the spans and the operation-duration histograms sent to a collector over
//! OTLP/HTTP (protobuf), configured the way every OpenTelemetry SDK is.
//!
//! The SDK's batch span processor and periodic metric reader run on threads of their own and
//! export with reqwest's blocking client (rustls, as the SDK's HTTP client), so export works under
//! any tokio runtime, a current-thread one included, and without one; an export never runs on,
//! or waits for, the runtime that serves requests.

use std::borrow::Cow;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkError;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::resource::{EnvResourceDetector, ResourceDetector as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use super::OperationMetrics;

/// The collector's base URL (OTLP/HTTP; `/v1/traces` and `/v1/metrics` are appended).
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The signal-specific endpoints (full URLs, used as they are).
const SIGNAL_ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];
/// The service name of the `service.name` resource attribute.
pub const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";

/// The instrumentation scope of the tracer and the meter.
const SCOPE: &str = "modelctx";

/// Why [`Telemetry`] could not be built or flushed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The endpoint (given, or from the environment variable named) is no http(s) URL.
    #[error("{source_name}: {value:?} is not an http(s) URL: {reason}")]
    InvalidEndpoint {
        /// `endpoint` for [`TelemetryBuilder::endpoint`], else the environment variable.
        source_name: Cow<'static, str>,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An OTLP exporter could not be built (e.g. another OTLP environment variable is invalid).
    #[error("OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Flushing or shutting down the tracer or meter provider failed (e.g. the collector did not
    /// answer in time).
    #[error("OpenTelemetry {signal} shutdown: {source}")]
    Shutdown {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// The SDK's error.
        source: OTelSdkError,
    },
}

/// Builds [`Telemetry`]: where to send, under which service name.
///
/// Explicit settings win over the environment: [`endpoint`](Self::endpoint) over
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (and the signal-specific `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
/// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`), [`service_name`](Self::service_name) over
/// `OTEL_SERVICE_NAME` (and `service.name` in `OTEL_RESOURCE_ATTRIBUTES`). Without either the
/// environment decides, then the defaults: `http://localhost:4318`, and
/// [`default_service_name`](Self::default_service_name) or else OpenTelemetry's
/// `unknown_service:<executable>`. The other `OTEL_EXPORTER_OTLP_*` variables (headers,
/// timeout, compression) and `OTEL_RESOURCE_ATTRIBUTES` apply as the OpenTelemetry SDK reads
/// them.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct TelemetryBuilder {
    endpoint: Option<String>,
    service_name: Option<String>,
    default_service_name: Option<String>,
}

impl TelemetryBuilder {
    /// The collector's OTLP/HTTP base URL, e.g. `http://localhost:4318`: spans go to
    /// `{url}/v1/traces`, metrics to `{url}/v1/metrics` (as with `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// which this overrides together with the signal-specific variables).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The `service.name` resource attribute; overrides `OTEL_SERVICE_NAME`.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// The `service.name` when neither [`service_name`](Self::service_name) nor the environment
    /// (`OTEL_SERVICE_NAME`, `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) names one: what an
    /// application calls itself by default while letting operators rename it.
    pub fn default_service_name(mut self, name: impl Into<String>) -> Self {
        self.default_service_name = Some(name.into());
        self
    }

    /// Checks the endpoint and builds the tracer and meter providers with their OTLP
    /// exporters (a batch span processor, a periodic metric reader). Nothing is sent yet and
    /// no runtime is needed.
    ///
    /// # Errors
    ///
    /// [`TelemetryError::InvalidEndpoint`] when the endpoint in use (given, or from the
    /// environment) is no http(s) URL with a host; [`TelemetryError::Exporter`] when another
    /// OTLP setting is invalid.
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        let mut spans = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        let mut metrics = MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        match &self.endpoint {
            Some(endpoint) => {
                let base = checked_endpoint("endpoint", endpoint)?;
                let base = base.trim_end_matches('/');
                spans = spans.with_endpoint(format!("{base}/v1/traces"));
                metrics = metrics.with_endpoint(format!("{base}/v1/metrics"));
            }
            None => {
                // The exporters read these themselves; checked here for the same clear error.
                for var in std::iter::once(ENDPOINT_VAR).chain(SIGNAL_ENDPOINT_VARS) {
                    if let Some(value) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
                        checked_endpoint(var, &value)?;
                    }
                }
            }
        }
        let resource = self.resource();
        let tracers = SdkTracerProvider::builder()
            .with_batch_exporter(spans.build()?)
            .with_resource(resource.clone())
            .build();
        let meters = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics.build()?)
            .with_resource(resource)
            .build();
        Ok(Telemetry { tracers, meters })
    }

    /// The SDK's resource (its detectors read `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES`) with the service name this builder decides.
    fn resource(&self) -> Resource {
        let resource = Resource::builder();
        if let Some(name) = &self.service_name {
            return resource.with_service_name(name.clone()).build();
        }
        let named_by_environment = std::env::var(SERVICE_NAME_VAR).is_ok_and(|v| !v.is_empty())
            || EnvResourceDetector::new()
                .detect()
                .get(&opentelemetry::Key::from_static_str("service.name"))
                .is_some();
        match &self.default_service_name {
            Some(name) if !named_by_environment => resource.with_service_name(name.clone()),
            _ => resource,
        }
        .build()
    }
}

/// `value` if it is an absolute http(s) URL with a host (what the OTLP/HTTP exporter can
/// send to); the error names `source_name`.
fn checked_endpoint(
    source_name: impl Into<Cow<'static, str>>,
    value: &str,
) -> Result<&str, TelemetryError> {
    let source_name = source_name.into();
    let invalid = |reason: &str| TelemetryError::InvalidEndpoint {
        source_name: source_name.clone(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: http::Uri = value.parse().map_err(|e: http::uri::InvalidUri| {
        invalid(&format!("{e} (expected e.g. http://localhost:4318)"))
    })?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(_) => return Err(invalid("the scheme must be http or https")),
        None => return Err(invalid("expected e.g. http://localhost:4318")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    if uri.query().is_some() {
        return Err(invalid(
            "a base URL takes no query (the signal paths are appended)",
        ));
    }
    Ok(value)
}

/// OpenTelemetry with OTLP export: a tracer provider and a meter provider whose exporters
/// send to a collector over OTLP/HTTP (protobuf), and the `tracing` layer that feeds them.
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt as _;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let telemetry = modelctx::otel::Telemetry::builder()
///     .default_service_name("my-mcp-server")
///     .build()?; // OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318
/// tracing::subscriber::set_global_default(tracing_subscriber::registry().with(telemetry.layer()))?;
/// // … serve …
/// telemetry.shutdown()?; // flushes what is buffered
/// # Ok(())
/// # }
/// ```
///
/// It is also the guard: [`shutdown`](Self::shutdown), or dropping it, flushes the spans and
/// metrics still buffered and stops the exporters' threads. Both block the calling thread
/// until the collector answers or the export times out (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s
/// by default).
#[derive(Debug)]
pub struct Telemetry {
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl Telemetry {
    /// A builder; see [`TelemetryBuilder`] for what it reads from the environment.
    pub fn builder() -> TelemetryBuilder {
        TelemetryBuilder::default()
    }

    /// Configured by the environment alone (`Telemetry::builder().build()`).
    ///
    /// # Errors
    ///
    /// As [`TelemetryBuilder::build`].
    pub fn from_env() -> Result<Self, TelemetryError> {
        Self::builder().build()
    }

    /// The layer to put on a `tracing` subscriber: a `tracing-opentelemetry` layer over the
    /// tracer provider (every span becomes an OpenTelemetry span, the SDK's request spans as
    /// the conventions' SERVER and CLIENT spans) and [`OperationMetrics`] over the meter
    /// provider. Filter it (e.g. with a per-layer filter) to choose which spans are exported.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracers.tracer(SCOPE))
            .and_then(OperationMetrics::new(&self.meters.meter(SCOPE)))
    }

    /// The tracer provider, for tracers of the application's own.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracers
    }

    /// The meter provider, for instruments of the application's own.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meters
    }

    /// Exports what is buffered and stops the exporters (spans ended later are dropped).
    /// Blocks until done: call it at the end of `main`, or from `spawn_blocking`.
    ///
    /// # Errors
    ///
    /// [`TelemetryError::Shutdown`] when a provider could not flush (e.g. the collector is
    /// unreachable) or was shut down before; both providers are shut down either way.
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        let traces = self.tracers.shutdown();
        let metrics = self.meters.shutdown();
        traces.map_err(|source| TelemetryError::Shutdown {
            signal: "traces",
            source,
        })?;
        metrics.map_err(|source| TelemetryError::Shutdown {
            signal: "metrics",
            source,
        })
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // After an explicit shutdown these report "already shut down", which is no news.
        let _ = self.tracers.shutdown();
        let _ = self.meters.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_must_be_http_urls_with_a_host() {
        for good in [
            "http://localhost:4318",
            "https://collector.example.com/",
            "http://127.0.0.1:4318/otlp",
        ] {
            assert_eq!(checked_endpoint("endpoint", good).unwrap(), good);
        }
        for (bad, reason) in [
            ("localhost:4318", "expected e.g."),
            ("ftp://collector", "http or https"),
            ("collector", "expected e.g."),
            ("http://", "expected e.g."),
            ("http://collector:4318?x=1", "no query"),
            ("", "expected e.g."),
        ] {
            let error = checked_endpoint(ENDPOINT_VAR, bad).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("{ENDPOINT_VAR}: {bad:?}")) && error.contains(reason),
                "{bad:?}: {error}"
            );
        }
    }

    #[test]
    fn an_invalid_explicit_endpoint_is_refused_by_build() {
        let error = Telemetry::builder()
            .endpoint("collector:4318")
            .build()
            .unwrap_err();
        assert!(
            matches!(&error, TelemetryError::InvalidEndpoint { source_name, .. } if source_name == "endpoint"),
            "{error}"
        );
    }
}
