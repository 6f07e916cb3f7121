//! What does not fit a function, found before the first invocation ([`Unfit`]).
//!
//! A function's invocations land on instances it does not choose, each instance may be frozen
//! between invocations and dropped at any time, and none lives past its timeout. So whatever a
//! server keeps in one process for a later request — a task, a redeemed single-use round, the
//! key that opens a `requestState` — is lost to the next invocation that lands elsewhere: one
//! request in N fails, at random, in production. The server says what it keeps and how far it
//! is shared (`Server::kept_state`, through the stores' and guards' own scope); the function
//! refuses what one process holds at start-up, with the alternative in the message.

use crate::server::Server;
use crate::state_scope::StateScope;

use super::config::{LambdaConfig, Responses};

/// Why a server cannot be served as a Lambda function as configured. Each message names the
/// alternative.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unfit {
    /// Sealing keys generated at start-up ([`RequestStateSecurity::ephemeral`](crate::seal::RequestStateSecurity::ephemeral)).
    #[error(
        "requestState is sealed with keys generated at start-up, so each function instance \
         refuses the state another sealed and a multi-round-trip call fails whenever its rounds \
         land on two instances: set MCP_REQUEST_STATE_KEYS on the function (`mcp keys \
         generate`) and seal with RequestStateSecurity::from_env()"
    )]
    EphemeralSealingKeys,
    /// The tasks extension's store is in one process (or one host's file).
    #[error(
        "the tasks extension keeps its tasks in {0}: a task outlives the invocation that \
         started it, and its tasks/get lands on another instance (or after the instance is \
         gone); use a shared store: RedisTaskStore (feature `tasks-redis`), with the Redis bus \
         (feature `bus-redis`) for task notifications"
    )]
    TasksInOneInstance(&'static str),
    /// The replay guard of single-use rounds is in one process (or one host).
    #[error(
        "single-use rounds are recorded in {0}: a round redeemed on one instance could be \
         redeemed again on another; use RedisReplayGuard (feature `single-use-redis`)"
    )]
    ReplayGuardInOneInstance(&'static str),
    /// The HTTP+SSE transport of 2024-11-05 ([`HttpConfig::sse`](crate::server::http::HttpConfig::sse)).
    #[error(
        "the HTTP+SSE transport of 2024-11-05 keeps a session per open stream, which needs one \
         instance for the whole session; serve streamable HTTP 2026-07-28 only (no \
         HttpConfig::sse)"
    )]
    LegacySseSessions,
    /// A change bus (long-lived `subscriptions/listen` streams) with buffered responses.
    #[error(
        "the server has a change bus, for long-lived subscriptions/listen streams, but a \
         buffered Lambda response is sent only when the invocation ends, so a listener would \
         see nothing: serve with response streaming (LambdaConfig::streamed(), a function URL \
         in the RESPONSE_STREAM invoke mode), where each stream ends before the function's \
         timeout and the client listens again, or serve listen streams from long-running \
         instances sharing the bus"
    )]
    ListenStreamsBuffered,
}

/// Where state of this scope lives, for the messages; `None` for state every instance shares.
fn one_instance(scope: StateScope) -> Option<&'static str> {
    match scope {
        StateScope::Process => Some("this instance's memory"),
        StateScope::Host => Some("a file of this instance's host"),
        _ => None,
    }
}

/// Everything in `server` and `config` that does not fit a function (empty: it fits).
pub(crate) fn check(server: &Server, config: &LambdaConfig) -> Vec<Unfit> {
    let kept = server.kept_state();
    let mut unfit = Vec::new();
    if kept.sealing_keys == Some(StateScope::Process) {
        unfit.push(Unfit::EphemeralSealingKeys);
    }
    if let Some(place) = kept.tasks.and_then(one_instance) {
        unfit.push(Unfit::TasksInOneInstance(place));
    }
    if let Some(place) = kept.replay_guard.and_then(one_instance) {
        unfit.push(Unfit::ReplayGuardInOneInstance(place));
    }
    if config.http.sse.is_some() {
        unfit.push(Unfit::LegacySseSessions);
    }
    if kept.change_bus && config.responses == Responses::Buffered {
        unfit.push(Unfit::ListenStreamsBuffered);
    }
    unfit
}
