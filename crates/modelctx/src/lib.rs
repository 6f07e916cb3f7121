//! # modelctx — the Model Context Protocol for Rust
//!
//! Servers and clients for MCP revision 2026-07-28 — stateless requests, `server/discover`,
//! multi-round-trip requests with sealed `requestState` — that also speak the 2025-11-25
//! handshake era, over stdio, streamable HTTP and in-memory pipes.
//!
//! The wire model lives in [`types`] (the `modelctx-types` crate); request-state sealing in
//! [`seal`] (the `modelctx-seal` crate).
//!
//! New here? The [`guide`] starts with [a server and a client in a few
//! lines](guide::getting_started), then takes one topic a chapter: [multi-round-trip
//! requests](guide::multi_round_trip), [authorization](guide::authorization), [tasks and
//! flows](guide::tasks_and_flows), [deployment](guide::deployment) and
//! [observability](guide::observability).
//!
//! # Crate features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `server` | yes | the server runtime |
//! | `client` | yes | the client runtime |
//! | `stdio` | yes | stdio serving and spawning server processes |
//! | `http-server` | yes | streamable HTTP server on axum/hyper |
//! | `http-client` | yes | streamable HTTP client on reqwest + rustls |
//! | `macros` | yes | the high-level [`server::McpServer`] and `#[tool]`, `#[prompt]`, `#[resource]`, `#[resolver]` |
//! | `auth` | yes | OAuth 2.1 resource server: JWT/JWKS or introspection, protected resource metadata, 401/403 challenges; the principal binds sealed state |
//! | `auth-client` | yes | OAuth 2.1 client: discovery, registration (pre-registered, CIMD, dynamic), PKCE, refresh, step-up, token stores |
//! | `tasks` | no | the tasks extension on the server: durable task tools, `tasks/*` methods, in-memory store |
//! | `tasks-sqlite`, `tasks-redis` | no | the SQLite (one host) and Redis (a fleet) task stores |
//! | `flows` | no | durable client flows: `FlowStore`, `FlowRunner`, in-memory store |
//! | `flows-sqlite`, `flows-redis` | no | the SQLite and Redis flow stores |
//! | `bus-redis` | no | the Redis change bus (`server::bus::RedisBus`): change notifications and task updates reach the listen streams of every instance sharing a Redis |
//! | `single-use-redis` | no | the Redis replay guard of single-use sealed rounds (a fleet) |
//! | `events-redis` | no | the Redis event store of resumable 2025-11-25 HTTP streams (a fleet) |
//! | `lambda` | no | [`server::lambda`]: a server as an AWS Lambda function behind API Gateway (REST and HTTP APIs) or a function URL, on `lambda_http`; buffered or streamed responses, 2026-07-28 only, what does not fit a function refused at start-up |
//! | `otel` | no | W3C trace context (`traceparent`, `tracestate`, `baggage`) through `params._meta` (SEP-414): clients inject it, servers adopt it as their span's parent; [`otel::OperationMetrics`], the operation-duration histograms; `otel::Telemetry`, OTLP/HTTP export |
//! | `test-util` | no | the store contracts, for testing a store backend of your own against the SDK's rules: `store::contract` (the kernel's), `server::tasks::contract`, `client::flows::contract` |

// On docs.rs (nightly, `--cfg docsrs`), each item behind a `cfg` says which feature or
// platform it needs; a stable `cargo doc` never sets the cfg.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use modelctx_types as types;

#[cfg(feature = "server")]
pub use modelctx_seal as seal;

// Plumbing shared by the server and the client; not public API (the fuzz targets reach the pieces
// they fuzz through `__fuzz`).
// The server and the client each use part of it.
#[cfg(any(feature = "server", feature = "client"))]
#[cfg_attr(
    not(all(feature = "http-server", feature = "http-client")),
    allow(dead_code, unreachable_pub)
)]
mod http;
mod transport;

pub use transport::memory;

#[cfg(any(feature = "server", feature = "client"))]
mod sync;

// The values the server's and the client's request spans share (bounded peer text, outcomes).
#[cfg(any(feature = "server", feature = "client"))]
mod span_fields;

// W3C trace-context propagation through `params._meta` (SEP-414), the operation-duration metrics.
#[cfg(all(feature = "otel", any(feature = "server", feature = "client")))]
pub mod otel;

#[cfg(any(feature = "server", feature = "client"))]
mod schema_check;

#[cfg(any(feature = "tasks-sqlite", feature = "flows-sqlite"))]
mod sqlite;

#[cfg(any(
    feature = "tasks-redis",
    feature = "flows-redis",
    feature = "single-use-redis",
    feature = "events-redis"
))]
mod redis_link;

#[cfg(any(feature = "tasks", feature = "flows"))]
pub mod store;

#[cfg(any(feature = "server", feature = "client"))]
mod paging;
// How far a store's state is shared (process, host, every instance): what a deployment over
// many instances checks at start-up. A leaf, re-exported by `server` and `store`.
#[cfg(any(feature = "server", feature = "tasks", feature = "flows"))]
mod state_scope;

// Wherever system randomness (getrandom) is compiled in for ids: the server and durable flows.
#[cfg(any(feature = "server", feature = "client", feature = "flows"))]
mod ids;

// DPoP (RFC 9449): what the client that makes proofs and the resource server that checks them share.
#[cfg(any(feature = "auth", feature = "auth-client"))]
// Each side uses its part: the proof maker (`auth-client`) and the proof checker (`auth`).
#[cfg_attr(not(all(feature = "auth", feature = "auth-client")), allow(dead_code))]
mod dpop;

// RFC 6570 templates both ways: the server matches them, a client expands a server's. A leaf
// (std only), so it is there whatever the features.
pub mod uri_template;

#[cfg(feature = "server")]
pub mod server;

#[cfg(feature = "client")]
pub mod client;

pub mod guide;

// The crate-level layering test (DESIGN.md, "Layers"); it reuses the client's source scanner.
#[cfg(all(test, feature = "server", feature = "client"))]
mod layers;

#[cfg(feature = "macros")]
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[cfg(feature = "macros")]
pub use modelctx_macros::{prompt, resolver, resource, tool};

/// The internals the fuzz targets (`fuzz/`) and this crate's integration tests exercise directly:
/// the SSE parser and the `Mcp-*` header value encoding (the URI templates are public API:
/// [`uri_template`]). Not a public API: no semver promise, it changes with the internals.
#[cfg(any(feature = "server", feature = "client"))]
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::http::headers::{decode_value, encode_value, needs_sentinel};
    pub use crate::http::sse::Parser as SseParser;
}

/// The README's code compiles: its examples are doc-tested here.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
