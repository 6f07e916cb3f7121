//! The conformance fixture server: every tool, prompt and resource the suite's server scenarios
//! call, with exactly the names, inputs and outputs the checks compare.

mod handshake;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;

use modelctx::seal::RequestStateSecurity;
use modelctx::server::{RegistrationError, Server, ServerBuilder};
use modelctx::types::CompleteResult;

/// The server name the reference fixture reports.
pub const NAME: &str = "modelctx-conformance-test-server";

/// Builds the fixture server, sealing with `policy` (`None`: a process-local random key; the
/// binaries pass [`RequestStateSecurity::from_env`]).
///
/// # Errors
/// An invalid sealing configuration.
pub fn build(policy: Option<RequestStateSecurity>) -> Result<Server, RegistrationError> {
    builder(policy).build()
}

/// The fixture server's builder, for binaries that configure more (e.g. a change bus).
pub fn builder(policy: Option<RequestStateSecurity>) -> ServerBuilder {
    builder_with_task_store(policy, None)
}

/// [`builder`] with the tasks in `store` (e.g. a Redis store shared by a fleet) instead of
/// SQLite (`MCP_TASKS_DB`, default in memory).
pub fn builder_with_task_store(
    policy: Option<RequestStateSecurity>,
    store: Option<std::sync::Arc<dyn modelctx::server::tasks::TaskStore>>,
) -> ServerBuilder {
    let builder = Server::builder(NAME, "0.1.0")
        .instructions("The conformance fixture server of the mcp Rust SDK.")
        .seal_request_state(policy.unwrap_or_else(RequestStateSecurity::ephemeral))
        .completion(|_ctx, _params| async { CompleteResult::default() });
    let builder = tools::register(builder);
    let builder = mrtr::register(builder);
    let builder = prompts::register(builder);
    let builder = resources::register(builder);
    let builder = handshake::register(builder);
    tasks::register(builder, store)
}

/// `{"type":"object", …}` as the map a `Tool` holds.
pub(crate) fn object(value: serde_json::Value) -> modelctx::types::Extra {
    match value {
        serde_json::Value::Object(map) => map,
        _ => modelctx::types::Extra::new(),
    }
}
