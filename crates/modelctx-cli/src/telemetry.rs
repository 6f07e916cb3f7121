//! `--otlp-endpoint`: the spans and metrics of `mcp serve demo` and `mcp call|prompt|read|task`
//! sent to an OpenTelemetry collector (OTLP/HTTP), through `modelctx::otel::Telemetry`.
//!
//! Export is on when `--otlp-endpoint URL` is given or `OTEL_EXPORTER_OTLP_ENDPOINT` is set
//! (the flag wins). The service is `mcp-demo-server` or `mcp-client` unless `OTEL_SERVICE_NAME`
//! names it. Only spans at INFO and above are exported (the SDK's request spans and the
//! commands' own), never the HTTP stack's debug spans.

use crate::error::{CliError, Result};

/// The service name of `mcp serve demo`.
pub(crate) const SERVER_SERVICE: &str = "mcp-demo-server";
/// The service name of the client commands.
pub(crate) const CLIENT_SERVICE: &str = "mcp-client";

/// OTLP export while the command runs; [`finish`](Self::finish) flushes it.
#[derive(Debug)]
pub(crate) struct Exporting(#[cfg(feature = "otel")] modelctx::otel::Telemetry);

#[cfg(feature = "otel")]
impl Exporting {
    /// Export for `flag` or the environment, under `default_service`; `None` when neither asks.
    pub(crate) fn start(flag: Option<&str>, default_service: &str) -> Result<Option<Self>> {
        use modelctx::otel::{ENDPOINT_VAR, Telemetry, TelemetryError};
        let from_environment = std::env::var_os(ENDPOINT_VAR).is_some_and(|v| !v.is_empty());
        if flag.is_none() && !from_environment {
            return Ok(None);
        }
        let mut builder = Telemetry::builder().default_service_name(default_service);
        if let Some(endpoint) = flag {
            builder = builder.endpoint(endpoint);
        }
        let telemetry = builder.build().map_err(|error| match error {
            // The flag's error names the flag, not the builder method.
            TelemetryError::InvalidEndpoint {
                source_name,
                value,
                reason,
            } if source_name == "endpoint" => CliError::usage(format!(
                "--otlp-endpoint {value:?}: not an http(s) URL: {reason}"
            )),
            other => CliError::usage(other.to_string()),
        })?;
        Ok(Some(Self(telemetry)))
    }

    /// The layer to add to the command's subscriber.
    pub(crate) fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
    {
        use tracing_subscriber::Layer as _;
        self.0
            .layer()
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
    }

    /// Sends what is buffered (outside the runtime: it blocks until the collector answers or
    /// the export times out). A collector that is not there costs a warning, not the result.
    pub(crate) fn finish(self) {
        if let Err(error) = self.0.shutdown() {
            eprintln!("warning: telemetry not (fully) sent to the collector: {error}");
        }
    }
}

#[cfg(not(feature = "otel"))]
impl Exporting {
    /// Without the `otel` feature `--otlp-endpoint` is refused and the environment ignored.
    pub(crate) fn start(flag: Option<&str>, _default_service: &str) -> Result<Option<Self>> {
        match flag {
            Some(_) => Err(CliError::usage(
                "--otlp-endpoint: this mcp was built without the `otel` feature",
            )),
            None => Ok(None),
        }
    }

    /// Never called: there is no `Exporting` without the feature.
    pub(crate) fn layer(&self) -> tracing_subscriber::layer::Identity {
        tracing_subscriber::layer::Identity::new()
    }

    pub(crate) fn finish(self) {}
}
