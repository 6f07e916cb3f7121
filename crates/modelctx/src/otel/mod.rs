//! OpenTelemetry (feature `otel`): W3C trace context through `params._meta` (SEP-414), and the
//! conventions' operation-duration histograms.
//!
//! Spans need nothing from this module: the server's and the client's request spans are
//! `tracing` spans (targets `modelctx::server`, `modelctx::client`) that a
//! `tracing-opentelemetry` layer exports, and with this feature the client writes each request
//! span's context into `_meta` and the server makes the context it reads there the parent of its
//! span. The metrics are a layer of their own, [`OperationMetrics`], over a `Meter` of your
//! meter provider:
//!
//! ```no_run
//! use modelctx::otel::OperationMetrics;
//! use opentelemetry::metrics::MeterProvider as _;
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let meters = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build(); // + a reader
//! let subscriber = tracing_subscriber::registry()
//!     .with(OperationMetrics::new(&meters.meter("modelctx")));
//! tracing::subscriber::set_global_default(subscriber)?;
//! # Ok(())
//! # }
//! ```
//!
//! To send both to a collector over OTLP/HTTP, [`Telemetry`] builds the providers with OTLP
//! exporters (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`) and gives the layer of both.

mod export;
mod metrics;
mod propagation;
#[cfg(any(feature = "server", feature = "flows"))]
mod rounds;

pub use export::{ENDPOINT_VAR, SERVICE_NAME_VAR, Telemetry, TelemetryBuilder, TelemetryError};
pub use metrics::OperationMetrics;
#[cfg(feature = "server")]
pub(crate) use propagation::adopt_parent;
#[cfg(feature = "client")]
pub(crate) use propagation::inject;
#[cfg(feature = "flows")]
pub(crate) use rounds::continue_trace;
#[cfg(feature = "server")]
pub(crate) use rounds::link_first_round;
#[cfg(any(feature = "server", feature = "flows"))]
pub(crate) use rounds::traceparent_of;
