//! Durable client flows: the manual input-required loop with its pending requests kept in a
//! store, so that the user may answer hours later and any worker — in this process or another
//! — resumes the request.
//!
//! A *flow* is one `tools/call`, `prompts/get` or `resources/read` that the server answered
//! with an `InputRequiredResult`. [`FlowRunner::start`] sends the first round; when the server
//! asks for input it saves a [`FlowRecord`] (the method, the params as first sent, the server's
//! `InputRequiredResult` with its sealed `requestState`, the server it belongs to, an optional
//! owner, timestamps) with the status [`FlowStatus::AwaitingUser`] and returns it. The
//! questions are shown to the user however the application likes; [`FlowRunner::answer`]
//! records the answers ([`FlowStatus::Answered`]). A worker calling
//! [`FlowRunner::resume_ready`] (or [`FlowRunner::resume`] for one flow) *claims* each answered
//! flow — a compare-and-set in the store, so exactly one worker resumes it — and retries the
//! request with the answers and the `requestState`. The server either finishes
//! ([`FlowStatus::Done`], the result is stored), or asks again: the new round is saved and the
//! flow waits for the user once more. A round that only carries `requestState` (the server is
//! not ready yet) is retried by the worker itself, with a backoff.
//!
//! ```text
//!   start ──► awaiting_user ──answer──► answered ──claim──► resuming ──► done | failed
//!                  ▲                        ▲                  │
//!                  └──── the server asks again ────────────────┤
//!                                           └── a transport failure (attempts left) ──┘
//! ```
//!
//! The clients that start and resume flows declare the capabilities the user answers for
//! (a server asks only for what the request declares) without answering anything themselves:
//! [`DeferToFlows::defer_elicitation`] and its twins on the
//! [`ClientBuilder`](super::ClientBuilder).
//!
//! The server needs no memory of the flow: everything it needs travels in `requestState`,
//! sealed with keys that every instance of the server shares. The worker that resumes may be
//! connected to another instance than the one that started the flow.
//!
//! # Stores
//!
//! [`FlowStore`] is the storage trait: five primitives (insert, load, compare-and-swap on a
//! version, list, remove), and the state transitions (answer, claim, advance, finish, release,
//! expire) written once on top of them. Every store of the [store kernel](crate::store) is a
//! flow store ([`FlowRecord`] is a kernel [`Record`](crate::store::Record)); the three below
//! are its backends. Every transition is a compare-and-swap, so two writers can never both move
//! a flow out of the same state.
//!
//! | store | feature | for |
//! |---|---|---|
//! | [`MemoryFlowStore`] | `flows` | tests, one process |
//! | [`SqliteFlowStore`] | `flows-sqlite` | the embedded default: one host, any number of processes sharing the file |
//! | [`RedisFlowStore`] | `flows-redis` | workers spread over hosts |
//!
//! # Claims and failures
//!
//! A claim is a lease ([`FlowRunner::lease`], 5 minutes by default): a worker that dies while
//! resuming leaves the flow `resuming`, and once the lease has run out another worker may claim
//! it again. A transport failure or a timeout puts the flow back to `answered` for another
//! attempt (at most [`FlowRunner::max_attempts`]); a JSON-RPC error from the server (for example
//! `-32602` for a `requestState` that has expired or was sealed with keys the server no longer
//! has) fails it; [`FlowRunner::restart`] then asks the server — and the user — again.
//! Resumption is therefore *at least once*: a worker that dies after the server
//! acted but before the flow was marked done is followed by a second retry. Servers whose final
//! round has side effects should make it idempotent (the sealed state is a natural key).
//!
//! The server's lifetime for sealed state bounds how long a flow may wait for the user: a
//! server meant for durable flows seals with a lifetime longer than users take to answer, and
//! flows left waiting longer are restarted or expired ([`FlowRunner::expire`]).
//!
//! Lease deadlines are wall-clock milliseconds: the hosts of one store need clocks that agree to
//! well within the lease.
//!
//! # Example
//!
//! `cargo run -p modelctx --example flows_sqlite` runs the whole story, with the worker in another
//! process; its commands (`start`, `answer`, `work`, `list`) drive each step by hand against any
//! server, e.g. `mcp serve demo --http 8765`.
//!
//! ```no_run
//! use modelctx::client::Client;
//! use modelctx::client::flows::{DeferToFlows as _, FlowRunner, FlowStart, SqliteFlowStore};
//! use modelctx::types::{CallToolRequestParams, ElicitResult, InputResponse, InputResponses};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runner = FlowRunner::new(SqliteFlowStore::open("flows.db")?);
//! // The user answers later: the client declares elicitation without answering it itself.
//! let client = Client::builder().defer_elicitation().connect_http("http://127.0.0.1:8000/mcp").await?;
//! let params = CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
//! let id = match runner.start(&client, "provisioner", None, params).await? {
//!     FlowStart::Complete(result) => return Ok(println!("{:?}", result.first_text())),
//!     FlowStart::Pending(flow) => flow.id,
//! };
//!
//! // Later, when the user has answered (in any process):
//! let mut content = serde_json::Map::new();
//! content.insert("region".to_owned(), json!("eu-west-1"));
//! let mut answers = InputResponses::new();
//! answers.insert("region".to_owned(), InputResponse::elicit(&ElicitResult::accept(content)));
//! runner.answer(&id, answers).await?;
//!
//! // In a worker (any process, any instance of the server):
//! for flow in runner.resume_ready(&client, "provisioner").await? {
//!     println!("{} is now {:?}", flow.id, flow.status);
//! }
//! # Ok(()) }
//! ```

mod backends;
#[cfg(feature = "test-util")]
pub mod contract;
mod error;
mod record;
mod runner;
mod status;
mod store;

pub use backends::MemoryFlowStore;
#[cfg(feature = "flows-redis")]
pub use backends::RedisFlowStore;
#[cfg(feature = "flows-sqlite")]
pub use backends::SqliteFlowStore;
pub use error::FlowError;
pub use record::{FlowFailure, FlowMethod, FlowRecord};
pub use runner::{DeferToFlows, FlowRequest, FlowRunner, FlowStart};
pub use status::FlowStatus;
pub use store::{FlowFilter, FlowStore};
