//! A real OTLP/HTTP receiver for the export tests: `POST /v1/traces` and `POST /v1/metrics`
//! with `application/x-protobuf` bodies on 127.0.0.1 (a free port), each body decoded with the
//! OpenTelemetry protobuf definitions (`opentelemetry-proto`), not with the SDK's own types, and
//! handed to the test through a channel.

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
pub use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{HistogramDataPoint, metric};
pub use opentelemetry_proto::tonic::trace::v1::Span;
pub use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use tokio::sync::mpsc;

/// One decoded export request.
#[derive(Debug)]
pub enum Export {
    /// A `POST /v1/traces` body.
    Traces(ExportTraceServiceRequest),
    /// A `POST /v1/metrics` body.
    Metrics(ExportMetricsServiceRequest),
}

/// The receiver: its base URL (what `OTEL_EXPORTER_OTLP_ENDPOINT` takes) and what it received.
/// Served by a task of the caller's runtime; stops with it.
#[derive(Debug)]
pub struct OtlpReceiver {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    received: mpsc::UnboundedReceiver<Export>,
    /// Every span received so far, with its resource's `service.name`.
    pub spans: Vec<(String, Span)>,
    /// Every histogram data point received so far: (service.name, metric name, point).
    pub histograms: Vec<(String, String, HistogramDataPoint)>,
}

impl OtlpReceiver {
    /// Binds 127.0.0.1:0 and serves until the runtime ends. A body that is not the protobuf
    /// message of its path (or not `application/x-protobuf`) is answered 400 and kept out of
    /// the channel, so a test sees it as data that never arrived.
    pub async fn start() -> Self {
        let (sender, received) = mpsc::unbounded_channel();
        let router = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(sender);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            endpoint,
            received,
            spans: Vec::new(),
            histograms: Vec::new(),
        }
    }

    /// Takes what arrives until `done(self)` holds; panics after `within` without it (showing
    /// what did arrive).
    pub async fn wait_until(&mut self, within: Duration, done: impl Fn(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + within;
        while !done(self) {
            match tokio::time::timeout_at(deadline, self.received.recv()).await {
                Ok(Some(export)) => self.take(export),
                Ok(None) => unreachable!("the receiver keeps a sender"),
                Err(_) => panic!(
                    "not received within {within:?}; spans: {:#?}\nhistograms: {:#?}",
                    self.spans, self.histograms
                ),
            }
        }
    }

    fn take(&mut self, export: Export) {
        match export {
            Export::Traces(request) => {
                for resource in request.resource_spans {
                    let service = service_name(resource.resource.as_ref().map(|r| &r.attributes));
                    for scope in resource.scope_spans {
                        self.spans
                            .extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
                    }
                }
            }
            Export::Metrics(request) => {
                for resource in request.resource_metrics {
                    let service = service_name(resource.resource.as_ref().map(|r| &r.attributes));
                    for scope in resource.scope_metrics {
                        for metric in scope.metrics {
                            if let Some(metric::Data::Histogram(histogram)) = metric.data {
                                self.histograms.extend(
                                    histogram
                                        .data_points
                                        .into_iter()
                                        .map(|point| (service.clone(), metric.name.clone(), point)),
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The spans received so far whose service is `service` and whose name is `name`.
    pub fn spans_named(&self, service: &str, name: &str) -> Vec<&Span> {
        self.spans
            .iter()
            .filter(|(s, span)| s == service && span.name == name)
            .map(|(_, span)| span)
            .collect()
    }

    /// The data points of histogram `metric` from `service` received so far (cumulative: a
    /// later export repeats a series with its count so far).
    pub fn histogram_points(&self, service: &str, metric: &str) -> Vec<&HistogramDataPoint> {
        self.histograms
            .iter()
            .filter(|(s, m, _)| s == service && m == metric)
            .map(|(_, _, point)| point)
            .collect()
    }
}

/// The string value of attribute `key`.
pub fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref())
        .and_then(|value: &AnyValue| match &value.value {
            Some(any_value::Value::StringValue(text)) => Some(text.as_str()),
            _ => None,
        })
}

fn service_name(attributes: Option<&Vec<KeyValue>>) -> String {
    attributes
        .and_then(|attributes| attribute(attributes, "service.name"))
        .unwrap_or_default()
        .to_owned()
}

/// Decodes a body as `M`, sends it on as `wrap(M)`: 200, or 400 for anything else.
fn receive<M: prost::Message + Default>(
    sender: &mpsc::UnboundedSender<Export>,
    headers: &HeaderMap,
    body: Bytes,
    wrap: fn(M) -> Export,
) -> StatusCode {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value == "application/x-protobuf");
    match M::decode(body) {
        Ok(message) if protobuf => {
            let _ = sender.send(wrap(message));
            StatusCode::OK
        }
        _ => StatusCode::BAD_REQUEST,
    }
}

async fn traces(
    State(sender): State<mpsc::UnboundedSender<Export>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    receive(&sender, &headers, body, Export::Traces)
}

async fn metrics(
    State(sender): State<mpsc::UnboundedSender<Export>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    receive(&sender, &headers, body, Export::Metrics)
}
