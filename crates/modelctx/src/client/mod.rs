//! The MCP client: 2026-07-28 with multi-round-trip requests, and the 2025-11-25 handshake era.
//!
//! # Connecting
//!
//! [`Client::builder`] configures the era [`Mode`], the client's identity, its callbacks and
//! limits; then `connect_stdio` (spawn a server process), `connect_http` (streamable HTTP) or
//! `connect_io` (any byte stream, e.g. [`crate::memory::pipe`]) connects and
//! negotiates:
//!
//! * [`Mode::Auto`] (default) probes `server/discover`; a handshake-era server is detected by
//!   the probe failing in any way other than a transport failure, and the client falls back to
//!   `initialize`. A `-32022` naming a mutual version retries with it.
//! * [`Mode::Pinned`] speaks a 2026 version without probing.
//! * [`Mode::Handshake`] always uses `initialize`.
//!
//! [`Client::protocol_version`] tells what was negotiated.
//!
//! On 2026-07-28 every request carries the `_meta` envelope: protocol version, client
//! capabilities (derived from the callbacks given: elicitation → `{"form":{},"url":{}}`,
//! sampling → `{}`, roots → `{}`) and client info. Over HTTP the request also carries
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` mirrors of
//! `x-mcp-header` arguments.
//!
//! # Asking the user: callbacks and the input-required loop
//!
//! [`Client::call_tool`], [`Client::get_prompt`] and [`Client::read_resource`] run the loop:
//! every input request of a round goes concurrently to its callback, the request is retried
//! with the answers and the server's `requestState`, until the final result (at most
//! [`ClientBuilder::input_required_max_rounds`] rounds). The same callbacks answer the
//! handshake era's server→client requests. A question without a callback fails the call
//! locally with [`ClientError::MissingCallback`].
//!
//! A server cannot make a call cost without bound: at most
//! [`ClientBuilder::max_input_requests_per_round`] questions a round (16), at most
//! [`ClientBuilder::max_concurrent_callbacks`] callbacks at once (4), identical questions answered
//! once, and at most [`ClientBuilder::max_sampling_per_call`] sampling requests a call (10) —
//! in the loop, in a task's input requests and on the handshake-era back-channel alike. Past a
//! limit the call fails locally ([`ClientError::TooManyInputRequests`],
//! [`ClientError::SamplingBudgetExceeded`]) before any callback of the round runs.
//!
//! To drive the loop yourself — e.g. to persist a pending request and resume it in another
//! process — use the [`Session`] methods with `allow_input_required`, and
//! [`Client::resume_call_tool`] / [`PendingRequest`].
//!
//! # Tasks
//!
//! Two protocols, one per era. On 2026-07-28, the tasks extension ([`ClientBuilder::tasks`]):
//! the server may answer a `tools/call` with a task, which [`Client::call_tool`] follows to its
//! end. On 2025-11-25, the experimental tasks of that revision: [`Client::call_tool`] calls a tool
//! whose `execution.taskSupport` is `"required"` as a task by itself (`"optional"` with
//! [`RequestOptions::as_task_2025`]), and [`ClientBuilder::tasks_2025`] lets the server run its
//! sampling and elicitation requests as tasks on the client. See
//! [`modelctx_types::tasks_2025`] for how the two differ.
//!
//! # Authorization
//!
//! With the `auth-client` feature, [`ClientBuilder::oauth`] makes an HTTP client sign in to
//! OAuth-protected servers by itself: discovery, registration, authorization code with PKCE,
//! token refresh and scope step-up (see [`auth`]).
//!
//! # Time bounds
//!
//! [`ClientBuilder::loop_timeout`] bounds a whole loop; equivalently wrap the call in
//! [`tokio::time::timeout`]. Dropping a call is safe: on stdio the request in flight is
//! cancelled with `notifications/cancelled`, on HTTP its response stream is closed.
//!
//! # Example
//!
//! ```no_run
//! use modelctx::client::{Client, Mode};
//! use modelctx::types::{ElicitRequestParams, ElicitResult};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut command = tokio::process::Command::new("python3");
//! command.arg("server.py");
//! let client = Client::builder()
//!     .mode(Mode::Auto)
//!     .on_elicitation(|context, params: ElicitRequestParams| async move {
//!         // `context.key()` is the server's key on 2026-07-28 and the kind of question
//!         // (`form`, `url`) on the handshake-era back-channel, where `context.request_id()`
//!         // is the JSON-RPC id.
//!         println!("{:?}: {}", context.key(), params.message());
//!         let mut content = serde_json::Map::new();
//!         content.insert("region".to_owned(), json!("eu-west-1"));
//!         Ok(ElicitResult::accept(content))
//!     })
//!     .connect_stdio(command)
//!     .await?;
//! let answer = tokio::time::timeout(
//!     std::time::Duration::from_secs(30),
//!     client.call_tool("provision", json!({"name": "orders"})),
//! )
//! .await??;
//! println!("{}", answer.first_text().unwrap_or_default());
//! client.close().await?;
//! # Ok(()) }
//! ```

mod api;
#[cfg(feature = "auth-client")]
pub mod auth;
mod back_channel;
mod builder;
pub mod cache;
mod callbacks;
mod error;
pub mod extension;
#[cfg(feature = "flows")]
pub mod flows;
pub mod group;
mod input_loop;
#[cfg(test)]
mod layers;
mod listen;
mod listen_queue;
pub mod middleware;
mod negotiate;
#[cfg(feature = "auth-client")]
mod pause;
mod session;
mod shared;
mod task_cancel;
mod tasks;
mod tasks_2025;
mod tasks_2025_table;
mod tool_index;
mod trace;
mod transport;

pub use api::{Client, PendingRequest};
pub use builder::ClientBuilder;
pub use cache::CacheMode;
pub use callbacks::{
    CallbackContext, ElicitationCallback, InputOrigin, NotificationCallback, ProgressCallback,
    RootsCallback, SamplingCallback, Task2025StatusCallback, TaskStatusCallback,
};
pub use error::{ClientError, TransportError};
pub use listen::{ListenEvent, Subscription};
pub use negotiate::Mode;
pub use session::{MAX_LIST_PAGES, RequestOptions, RoundOutcome, Session};
pub use tasks::{TaskFollow, TaskSettings, ToolStart};
pub use tasks_2025::Tasks2025Settings;
pub use transport::TransportKind;
