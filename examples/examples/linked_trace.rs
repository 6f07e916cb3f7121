//! The linked trace of a two-round tool call (feature `otel`): a server and a client in
//! process, a `tracing-opentelemetry` layer over OpenTelemetry's in-memory exporter, one
//! `provision` call that asks for a region and finishes on the retry, and the spans it left,
//! printed as a tree.
//!
//! ```sh
//! cargo run -p modelctx-examples --example linked_trace
//! ```
//!
//! What to look for: one trace. Under the application's span, the client's call span
//! (`mcp.client.call`, INTERNAL) has one CLIENT span per round, and each round's SERVER span is
//! the child of its client span (the context travels in `params._meta`). The server's second
//! round records `mcp.request_state.round = 2` and links to the first round's server span: the
//! first round sealed its `traceparent` into the `requestState`, so the link would hold even if
//! another instance sharing the keys served the retry, or if the retry carried no trace
//! context at all. The example checks this itself and exits non-zero when it does not hold.

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use std::collections::HashMap;

use modelctx::client::Client;
use modelctx::memory;
use modelctx::seal::RequestStateSecurity;
use modelctx_examples::provision;
use opentelemetry::trace::{SpanId, SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Spans go to OpenTelemetry through `tracing-opentelemetry`; here into memory, in
    // production into an OTLP exporter.
    let exporter = InMemorySpanExporter::default();
    let tracers = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(tracers.tracer("linked_trace"))),
    )?;

    // The guide's `provision` server on one end of an in-memory pipe, a client on the other.
    let pipe = memory::pipe();
    let server = provision::server(RequestStateSecurity::ephemeral())?;
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let client = Client::builder()
        .on_elicitation(provision::answer_region("eu-west-1"))
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await?;

    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .instrument(tracing::info_span!("provision a database"))
        .await?;
    println!("{}\n", result.first_text().unwrap_or_default());
    client.close().await?;

    // The call's trace (connecting, `server/discover`, was a trace of its own).
    let spans = exporter.get_finished_spans()?;
    let call = spans
        .iter()
        .find(|span| span.name == "provision a database")
        .ok_or("no span of the call")?
        .span_context
        .trace_id();
    let spans: Vec<SpanData> = spans
        .into_iter()
        .filter(|span| span.span_context.trace_id() == call)
        .collect();
    println!("trace {call}");
    print_tree(&spans);
    check(&spans)
}

/// Prints every span under its parent, with its kind, round and links.
fn print_tree(spans: &[SpanData]) {
    let names: HashMap<SpanId, &SpanData> = spans
        .iter()
        .map(|span| (span.span_context.span_id(), span))
        .collect();
    let mut children: HashMap<SpanId, Vec<&SpanData>> = HashMap::new();
    for span in spans {
        children.entry(span.parent_span_id).or_default().push(span);
    }
    for siblings in children.values_mut() {
        siblings.sort_by_key(|span| span.start_time);
    }
    fn walk(
        span: &SpanData,
        depth: usize,
        children: &HashMap<SpanId, Vec<&SpanData>>,
        names: &HashMap<SpanId, &SpanData>,
    ) {
        let mut line = format!(
            "{}{} [{}] span {}",
            "    ".repeat(depth),
            span.name,
            kind(&span.span_kind),
            span.span_context.span_id()
        );
        if let Some(round) = attribute(span, "mcp.request_state.round") {
            line.push_str(&format!(" round={round}"));
        }
        for link in span.links.iter() {
            let target = link.span_context.span_id();
            let linked = names.get(&target).map_or_else(
                || "?".to_owned(),
                |linked| match attribute(linked, "mcp.request_state.round") {
                    Some(round) => format!("{}, round {round}", linked.name),
                    None => linked.name.to_string(),
                },
            );
            line.push_str(&format!(" -> links to span {target} ({linked})"));
        }
        println!("{line}");
        for child in children
            .get(&span.span_context.span_id())
            .into_iter()
            .flatten()
        {
            walk(child, depth + 1, children, names);
        }
    }
    for root in children.get(&SpanId::INVALID).into_iter().flatten() {
        walk(root, 1, &children, &names);
    }
}

fn kind(kind: &SpanKind) -> &'static str {
    match kind {
        SpanKind::Client => "client",
        SpanKind::Server => "server",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
        SpanKind::Internal => "internal",
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.to_string())
}

/// The call's trace: two server rounds, numbered 1 and 2, each the child of a client round
/// span, the second linked to the first.
fn check(spans: &[SpanData]) -> Result<(), Box<dyn std::error::Error>> {
    let mut servers: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.span_kind == SpanKind::Server)
        .collect();
    servers.sort_by_key(|span| span.start_time);
    let under_client_rounds = servers.iter().all(|server| {
        spans.iter().any(|span| {
            span.span_kind == SpanKind::Client
                && span.span_context.span_id() == server.parent_span_id
        })
    });
    let [first, second] = servers.as_slice() else {
        return Err(format!("expected two server rounds, got {}", servers.len()).into());
    };
    let rounds = (
        attribute(first, "mcp.request_state.round"),
        attribute(second, "mcp.request_state.round"),
    );
    let linked = second
        .links
        .iter()
        .any(|link| link.span_context.span_id() == first.span_context.span_id());
    if !under_client_rounds || rounds != (Some("1".into()), Some("2".into())) || !linked {
        return Err(format!(
            "expected the second round linked to the first: under the client's rounds \
             {under_client_rounds}, rounds {rounds:?}, linked {linked}"
        )
        .into());
    }
    Ok(())
}
