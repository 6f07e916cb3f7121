//! The conformance fixture server: every tool, prompt and resource the suite's server scenarios
//! call, with exactly the names, inputs and outputs the checks compare.

mod legacy;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;

use std::time::Duration;

use mcp::seal::RequestStateSecurity;
use mcp::server::{RegistrationError, Server};
use mcp::types::CompleteResult;

/// The server name the reference fixture reports.
pub const NAME: &str = "mcp-conformance-test-server";

/// How request state is sealed.
#[derive(Debug, Clone, Default)]
pub struct Sealing {
    /// Shared secrets (`keys[0]` mints); empty means a process-local random key.
    pub keys: Vec<Vec<u8>>,
    /// Per-round lifetime.
    pub ttl: Option<Duration>,
}

impl Sealing {
    /// Reads `MCP_REQUEST_STATE_KEYS` (comma-separated secrets) and `MCP_REQUEST_STATE_TTL`
    /// (seconds).
    pub fn from_env() -> Self {
        let keys = std::env::var("MCP_REQUEST_STATE_KEYS")
            .map(|v| {
                v.split(',')
                    .filter(|k| !k.is_empty())
                    .map(|k| k.as_bytes().to_vec())
                    .collect()
            })
            .unwrap_or_default();
        let ttl = std::env::var("MCP_REQUEST_STATE_TTL")
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .map(Duration::from_secs_f64);
        Self { keys, ttl }
    }

    fn policy(&self) -> Result<RequestStateSecurity, RegistrationError> {
        let policy = if self.keys.is_empty() {
            RequestStateSecurity::ephemeral()
        } else {
            RequestStateSecurity::with_keys(&self.keys)
                .map_err(|e| RegistrationError::Sealing(e.to_string()))?
        };
        match self.ttl {
            Some(ttl) => policy
                .with_ttl(ttl)
                .map_err(|e| RegistrationError::Sealing(e.to_string())),
            None => Ok(policy),
        }
    }
}

/// Builds the fixture server.
///
/// # Errors
/// An invalid sealing configuration.
pub fn build(sealing: &Sealing) -> Result<Server, RegistrationError> {
    let builder = Server::builder(NAME, "0.1.0")
        .instructions("The conformance fixture server of the mcp Rust SDK.")
        .seal_request_state(sealing.policy()?)
        .completion(|_ctx, _params| async { CompleteResult::default() });
    let builder = tools::register(builder);
    let builder = mrtr::register(builder);
    let builder = prompts::register(builder);
    let builder = resources::register(builder);
    let builder = legacy::register(builder);
    let builder = tasks::register(builder);
    builder.build()
}

/// `{"type":"object", …}` as the map a `Tool` holds.
pub(crate) fn object(value: serde_json::Value) -> mcp::types::Extra {
    match value {
        serde_json::Value::Object(map) => map,
        _ => mcp::types::Extra::new(),
    }
}
