//! The conventions' `mcp.server.operation.duration` and `mcp.client.operation.duration`
//! histograms, measured from the request spans.
//!
//! A `tracing` layer, not code in the dispatch path: the spans already know when a request began
//! and ended and what it was, so the layer times each `mcp.server.request` and
//! `mcp.client.request` span from creation to close and records its low-cardinality fields as
//! the data point's attributes. The plain (untraced) path stays as it was, and an application
//! asks for metrics by adding the layer.
//!
//! Peer-chosen values must not make the number of time series unbounded, so a data point never
//! carries a request id or a resource URI, a protocol version is one this SDK knows or absent, on
//! the server a request answered with a JSON-RPC error keeps no tool or prompt name (it may name
//! no tool at all), and on the client a server's error code outside JSON-RPC's reserved range
//! (-32768 to -32000) is `_OTHER`. A server span's method is already one the server knows or
//! `_OTHER`, whatever the error (`server::trace`): a made-up method is refused by the 2026
//! ladder's `-32602` before it could be found unknown, so its code cannot tell.

use std::time::Instant;

use modelctx_types::ProtocolVersion;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The conventions' bucket boundaries, in seconds.
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The value of an attribute whose peer-chosen value is not kept.
const OTHER: &str = "_OTHER";

/// A `tracing` layer that records the OpenTelemetry semantic conventions' operation-duration
/// histograms for MCP from the SDK's request spans:
///
/// * `mcp.server.operation.duration`: each request the server serves, from its arrival to its
///   reply (the span `mcp.server.request`);
/// * `mcp.client.operation.duration`: each request the client sends, every round of a
///   multi-round call on its own, from sending to the reply (the span `mcp.client.request`).
///
/// Both are in seconds with the conventions' bucket boundaries (0.01 s to 300 s) and carry
/// `mcp.method.name`, `mcp.protocol.version`, `gen_ai.tool.name` / `gen_ai.prompt.name`,
/// `gen_ai.operation.name`, `network.transport`, and on failure `error.type` and
/// `rpc.response.status_code`. Attributes a peer could multiply without bound are left out
/// (request ids, resource URIs, unknown versions, on the server the tool or prompt names of
/// requests answered with a JSON-RPC error; a method the server does not know is `_OTHER`,
/// whatever its error).
///
/// Add it to the subscriber beside (or instead of) a `tracing-opentelemetry` layer; a
/// per-layer filter that hides the `modelctx::server` / `modelctx::client` spans hides their
/// metrics too.
#[derive(Debug, Clone)]
pub struct OperationMetrics {
    server: Histogram<f64>,
    client: Histogram<f64>,
}

impl OperationMetrics {
    /// The two histograms, created on `meter`.
    pub fn new(meter: &Meter) -> Self {
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(BOUNDARIES.to_vec())
                .build()
        };
        Self {
            server: histogram(
                "mcp.server.operation.duration",
                "MCP request duration as observed on the receiver, from the time it was received until the result is sent.",
            ),
            client: histogram(
                "mcp.client.operation.duration",
                "MCP request duration as observed on the sender, from the time it was sent until the response is received.",
            ),
        }
    }
}

/// Which side a span measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Server,
    Client,
}

/// One request being timed (in its span's extensions).
struct Operation {
    side: Side,
    started: Instant,
    fields: Fields,
}

/// The span fields a data point may carry, as recorded.
#[derive(Default)]
struct Fields {
    method: Option<String>,
    version: Option<String>,
    tool: Option<String>,
    prompt: Option<String>,
    operation: Option<String>,
    transport: Option<String>,
    error_type: Option<String>,
    status_code: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "mcp.method.name" => &mut self.method,
            "mcp.protocol.version" => &mut self.version,
            "gen_ai.tool.name" => &mut self.tool,
            "gen_ai.prompt.name" => &mut self.prompt,
            "gen_ai.operation.name" => &mut self.operation,
            "network.transport" => &mut self.transport,
            "error.type" => &mut self.error_type,
            "rpc.response.status_code" => &mut self.status_code,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

impl Fields {
    /// The data point's attributes, after the cardinality rules of the module docs.
    fn attributes(self, side: Side) -> Vec<KeyValue> {
        let Self {
            method,
            mut version,
            mut tool,
            mut prompt,
            operation,
            transport,
            mut error_type,
            mut status_code,
        } = self;
        // A version is one of the revisions this SDK knows, or none.
        if version
            .as_deref()
            .is_some_and(|version| !ProtocolVersion::KNOWN.contains(&version))
        {
            version = None;
        }
        if status_code.is_some() {
            match side {
                Side::Server => (tool, prompt) = (None, None),
                Side::Client => {
                    let reserved = status_code
                        .as_deref()
                        .and_then(|code| code.parse::<i64>().ok())
                        .is_some_and(|code| (-32768..=-32000).contains(&code));
                    if !reserved {
                        status_code = Some(OTHER.to_owned());
                        error_type = Some(OTHER.to_owned());
                    }
                }
            }
        }
        [
            ("mcp.method.name", method),
            ("mcp.protocol.version", version),
            ("gen_ai.tool.name", tool),
            ("gen_ai.prompt.name", prompt),
            ("gen_ai.operation.name", operation),
            ("network.transport", transport),
            ("error.type", error_type),
            ("rpc.response.status_code", status_code),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some(KeyValue::new(key, value?)))
        .collect()
    }
}

impl<S> tracing_subscriber::Layer<S> for OperationMetrics
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        let metadata = attributes.metadata();
        let side = match (metadata.target(), metadata.name()) {
            ("modelctx::server", "mcp.server.request") => Side::Server,
            ("modelctx::client", "mcp.client.request") => Side::Client,
            _ => return,
        };
        let Some(span) = context.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attributes.record(&mut fields);
        span.extensions_mut().insert(Operation {
            side,
            started: Instant::now(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, context: Context<'_, S>) {
        let Some(span) = context.span(id) else {
            return;
        };
        if let Some(operation) = span.extensions_mut().get_mut::<Operation>() {
            values.record(&mut operation.fields);
        }
    }

    fn on_close(&self, id: Id, context: Context<'_, S>) {
        let Some(span) = context.span(&id) else {
            return;
        };
        let Some(operation) = span.extensions_mut().remove::<Operation>() else {
            return;
        };
        let seconds = operation.started.elapsed().as_secs_f64();
        let histogram = match operation.side {
            Side::Server => &self.server,
            Side::Client => &self.client,
        };
        histogram.record(seconds, &operation.fields.attributes(operation.side));
    }
}
