//! Serving a [`Server`] (or an [`McpServer`](crate::server::McpServer), through its
//! `server()`) as an AWS Lambda function behind API Gateway — REST or HTTP APIs — or a function
//! URL (feature `lambda`).
//!
//! Revision 2026-07-28 is stateless: any request can land on any instance. So a function is
//! the streamable HTTP endpoint of [`Server::http_router`], handed to the Lambda runtime by
//! [`lambda_http`](https://docs.rs/lambda_http) (the AWS Labs runtime client): each invocation
//! is one POST. A multi-round-trip call works across invocations because its `requestState` is
//! sealed with keys every instance shares (`MCP_REQUEST_STATE_KEYS`,
//! [`RequestStateSecurity::from_env`](crate::seal::RequestStateSecurity::from_env)); what must
//! outlive an invocation lives in Redis (tasks, the bus, the replay guard).
//!
//! ```no_run
//! use modelctx::seal::RequestStateSecurity;
//! use modelctx::server::Server;
//! use modelctx::server::lambda::{self, LambdaConfig};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let keys = RequestStateSecurity::from_env()?.ok_or("set MCP_REQUEST_STATE_KEYS")?;
//!     let server = Server::builder("provisioner", "1.0.0")
//!         .seal_request_state(keys)
//!         // .tool(…)
//!         .build()?;
//!     let config = LambdaConfig::default().domains(["abc123.lambda-url.eu-west-1.on.aws"]);
//!     lambda::run(&server, config).await?;
//!     Ok(())
//! }
//! ```
//!
//! What a function is given, and what it refuses:
//!
//! * **Responses**: [`Responses::Buffered`] (default; every API Gateway integration and
//!   function URL) sends each response when its request is done, JSON or an event stream as
//!   one body, held to [`SYNC_PAYLOAD_LIMIT`] (a larger one becomes a `-32603` naming the
//!   limit, instead of Lambda's opaque failure); [`Responses::Streamed`] (a function URL in the
//!   `RESPONSE_STREAM` invoke mode, or a REST API with streaming) sends event streams as they
//!   are written and ends them before the invocation's deadline.
//! * **Limits**: request bodies up to [`SYNC_PAYLOAD_LIMIT`], Lambda's own (API Gateway's 10 MB
//!   never reaches a function).
//! * **Host and Origin**: [`LambdaConfig::domains`] names the function's domains (function URL,
//!   API, custom domain): `Host` must be one of them, pages served from them may call. Without
//!   it, any host (AWS routes by host already) and no browser origin.
//! * **The handshake era is refused on every request**: a 2025-11-25 session lives in one
//!   instance, and the next request lands on another. `initialize` gets `-32022 Unsupported
//!   protocol version` on a 400, naming 2026-07-28 (the error a dual-era client reads as "use
//!   2026-07-28") and why.
//! * **Refused at start-up** ([`Unfit`], through [`LambdaFunction::new`] and [`run`]): sealing
//!   keys generated at start-up, tasks or single-use rounds kept in one instance (in memory or
//!   SQLite), the 2024-11-05 HTTP+SSE sessions, a change bus (long-lived listen streams) with
//!   buffered responses. Each message names the alternative.
//! * **`subscriptions/listen`** is refused with buffered responses (`-32601` saying why); with
//!   streamed ones each stream ends [`LambdaConfig::deadline_margin`] before the invocation's
//!   deadline, and the client listens again.
//!
//! A handler reads the invocation's `lambda_http::Context` (request id, deadline, ARN) from the
//! HTTP request parts of its context, as any HTTP extension.

mod config;
mod fit;
mod function;

#[cfg(doc)]
use crate::server::Server;
pub use config::{LambdaConfig, Responses, SYNC_PAYLOAD_LIMIT};
pub use fit::Unfit;
pub use function::{LambdaError, LambdaFunction, run};
