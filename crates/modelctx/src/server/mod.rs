//! The MCP server: a registry of tools, prompts and resources answered statelessly on
//! 2026-07-28, over stdio, streamable HTTP or an in-memory pipe.
//!
//! The module has two tiers; this file only declares modules and re-exports their names, in
//! two groups:
//!
//! * **The high-level server** (feature `macros`): `McpServer` and its builder, the
//!   `#[tool]`, `#[prompt]` and `#[resource]` support (`ToolDefinition`, `IntoToolResult`,
//!   `Json`, …), the handler's `Context`, the questions it asks (`Elicit`, `Sample`,
//!   `ListRoots`, …) and the resolvers that answer them across rounds (`Resolver`,
//!   `Resolution`, …). It holds a low-level [`Server`] and exposes a chosen set of its methods.
//! * **The low-level server**: [`Server`] and [`ServerBuilder`], the handler traits
//!   ([`ToolHandler`], …), the [`RequestContext`] they receive, the caching and subscription
//!   settings, the [`middleware`] chain, the transports' settings ([`StdioConfig`], `http`)
//!   and shutdown, and the optional pieces in their own modules (`auth`, [`bus`],
//!   [`single_use`], `tasks`).
//!
//! # The low-level server
//!
//! You describe each tool (its JSON Schema) and write a handler that
//! receives the raw `tools/call` params. The SDK does everything around it: the per-request
//! validation ladder (`_meta`, headers, version, capabilities), `server/discover`,
//! `resultType` and the server stamp on every result, caching hints, progress and logging,
//! cancellation, `subscriptions/listen`, and — once enabled with one line — sealing of
//! `requestState`.
//!
//! The same handlers serve 2025-11-25 clients (the `initialize` handshake). A handler that asks
//! by returning an `InputRequiredResult` is bridged for them: the SDK sends its questions as
//! server→client requests (`elicitation/create`, `sampling/createMessage`, `roots/list`, only
//! those the session declared), then calls the handler again with the answers as
//! `inputResponses` and its state — sealed and opened as on 2026-07-28 — until it returns a
//! result (at most 16 rounds). Handlers may also ask mid-call there with
//! [`RequestContext::elicit`] and its siblings.
//!
//! ```no_run
//! use modelctx::server::Server;
//! use modelctx::types::{CallToolResult, Tool};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let echo = Tool::new("echo", json!({"type": "object",
//!     "properties": {"text": {"type": "string"}}, "required": ["text"]})
//!     .as_object().unwrap().clone());
//! let server = Server::builder("echo-server", "1.0.0")
//!     .tool(echo, |_ctx, params: modelctx::types::CallToolRequestParams| async move {
//!         let text = params.arguments.as_ref().and_then(|a| a.get("text"))
//!             .and_then(|t| t.as_str()).unwrap_or_default().to_owned();
//!         CallToolResult::text(text)
//!     })
//!     .build()?;
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

pub mod apps;
#[cfg(feature = "auth")]
pub mod auth;
mod bridge;
// The server's settings and its handle: `ServerBuilder` freezes them into a `Server`.
mod builder;
pub mod bus;
mod caching;
mod chain;
// What a server announces: below the bus, the listen streams and the handshake era.
mod change;
mod context;
mod deadline;
mod dispatch;
// Extensions (SEP-2133): the seam every opt-in bundle of behaviour joins the server by.
pub mod extension;
mod handle;
mod handler;
mod handshake;
mod handshake_methods;
mod headers;
#[cfg(feature = "http-server")]
pub mod http;
mod in_flight;
pub mod in_process;
// Serving as an AWS Lambda function (over the HTTP endpoint).
mod ladder;
#[cfg(feature = "lambda")]
pub mod lambda;
// The `-32603` of the task and subscription limits.
pub mod lifespan;
mod limit_error;
mod listen;
// The plain messages of the core: a request as handed over, its reply, the errors.
mod message;
// The high-level server; its items are re-exported below, the macro support only through
// `crate::__private`.
#[cfg(feature = "macros")]
pub(crate) mod mcp_server;
pub mod middleware;
mod mrtr;
mod mrtr_methods;
// The channel a request's notifications travel on.
pub mod notification_handler;
mod notifier;
// Where a request comes from: the peer's address in an HTTP request head.
#[cfg(feature = "http-server")]
mod origin;
#[cfg(feature = "http-server")]
mod peer_rate;
// Files under a root from untrusted names, for file-backed resource templates.
pub mod path_safety;
mod pipeline;
mod registry;
// Stopping cleanly: the signal helper and the grace period of the transports.
mod shutdown;
pub mod single_use;
mod stdio;
// A request closing its resumable HTTP response stream (handshake-era polling).
#[cfg(feature = "http-server")]
mod stream_closer;
// How a stream connection ends (the drain) and what bounds the waits of its loop.
mod stdio_drain;
// The era of a stream connection, fixed by its first request.
mod stdio_era;
// A stream connection's bytes: lines decoded, huge params owned in place, the writer, pipes.
mod stdio_lines;
// What listen streams and handshake-era subscriptions hold together, and per client.
mod subscription_budget;
// What listen streams and handshake-era subscriptions may hold.
mod subscription_limits;
// The core hooks the tasks extension contributes (through `extension`).
mod task_hook;
// The `tracing` span of each request (OpenTelemetry's MCP conventions).
#[cfg(test)]
mod layers;
mod trace;
mod typed_params;
// The tasks extension (`io.modelcontextprotocol/tasks`).
#[cfg(feature = "tasks")]
pub mod tasks;

// The low-level server: the handle and its builder, the handlers and what they receive, the
// settings, the transports' settings and shutdown. (`Middleware`, `Next` and the rest of the
// chain are reached through `server::middleware` alone.)
pub use crate::http::headers::InvalidParamHeaders;
pub use crate::state_scope::StateScope;
pub use builder::ServerBuilder;
pub use caching::{CachePolicy, Caching};
pub use change::Change;
pub use context::RequestContext;
pub use handle::{KeptState, PrincipalHook, Server};
pub use handler::{
    BoxFuture, CompletionHandler, IntoOutcome, IntoResult, MethodHandler, PromptHandler,
    ResourceHandler, ResourceTemplateHandler, ToolHandler,
};
pub use registry::RegistrationError;
pub use shutdown::{DEFAULT_SHUTDOWN_GRACE, shutdown_signal};
pub use stdio::StdioConfig;
pub use subscription_limits::SubscriptionLimits;

// The high-level server (`#[tool]` and its siblings): the server and its builder, what the
// macros' definitions and results are, the handler's `Context`, the questions it asks and the
// resolvers that answer them across rounds.
#[cfg(feature = "macros")]
pub use mcp_server::{
    ArgumentUse, Ask, BackChannel, BuildError, Context, Elicit, ElicitUrl, Elicitation,
    ElicitationForm, FromElicitation, FromRef, HandlerFuture, Interrupt, IntoPromptResult,
    IntoResourceResult, IntoToolResult, Json, ListRoots, McpServer, McpServerBuilder,
    PromptDefinition, Question, Ready, Resolution, Resolver, ResolverInfo, ResolverOutput,
    ResourceDefinition, Sample, State, States, ToolDefinition, UsesState, input_schema,
    output_schema,
};
