//! Single-use sealed rounds: a replay guard that lets each sealed `requestState` be redeemed
//! once.
//!
//! Without it, a sealed state can be replayed until it expires (the Python SDK behaves the
//! same): the claims bind it to one method, target, argument set, audience and principal, so a
//! replay repeats the same request by the same caller — harmless for reads, not for a tool that
//! deletes or pays. The spec leaves at-most-once consumption to the server; this is how.
//!
//! * Install a guard with [`ServerBuilder::single_use`](super::ServerBuilder::single_use) (or
//!   `McpServerBuilder::single_use`). [`MemoryReplayGuard`] serves one process; instances that
//!   share sealing keys share a [`RedisReplayGuard`] (feature `single-use-redis`).
//! * [`SingleUse`] picks the rounds: by default those of tools that declare
//!   `destructiveHint: true` (`#[tool(destructive)]`, or the low-level tool's annotations), or
//!   every sealed round.
//! * The token's [`ReplayKey`] (`modelctx::seal::ReplayKey`: the built-in codec's `kid ‖ nonce`) is recorded after every
//!   other check passed and before the handler runs, until the token's `exp` plus the clock skew
//!   tolerated between instances ([`modelctx_seal::FUTURE_SKEW`], 60 s). A replay answers
//!   the one `-32602 "Invalid or expired requestState"` (logged as `replayed`), and so does a
//!   token older than what a bounded guard still remembers, or already expired by the guard's
//!   clock ([`Redemption::Forgotten`]); a guard
//!   that cannot answer (Redis unreachable) refuses the round with `-32603` and the token stays
//!   unused, so the client may retry it.

mod memory;
#[cfg(feature = "single-use-redis")]
mod redis;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use modelctx_seal::ReplayKey;
use modelctx_types::Tool;

pub use memory::{DEFAULT_CAPACITY, MemoryReplayGuard};
#[cfg(feature = "single-use-redis")]
pub use redis::RedisReplayGuard;

/// Whether a replay key was seen before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Redemption {
    /// The first use: the key is now recorded, the round goes on.
    First,
    /// The key was already recorded: a replay, refused.
    Replay,
    /// The token expires no later than keys the guard forgot to make room (a bounded guard,
    /// such as [`MemoryReplayGuard`]), or has expired by the guard's clock, so the guard could
    /// not keep it: it may have been redeemed, so it is refused like an expired one. Never
    /// answered for a key the guard still holds.
    Forgotten,
}

/// The guard could not decide; the server refuses the round (fail closed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayGuardError {
    /// The store failed or did not answer in time.
    #[error("replay guard store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ReplayGuardError {
    /// Wraps a store's error (for custom guards).
    pub fn store(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Store(Box::new(error))
    }
}

/// Records the replay keys of redeemed single-use rounds.
///
/// Async because a guard shared by a fleet is a network store; `modelctx-seal`, which has no
/// runtime, only names the token ([`ReplayKey`]) and its expiry.
pub trait ReplayGuard: Send + Sync + fmt::Debug {
    /// Records `key` until `expires_at` if it is new ([`Redemption::First`]), atomically: of
    /// concurrent redemptions of one key, exactly one is first. The key may be forgotten at
    /// `expires_at` (the token is refused as expired from then on). A bounded guard may forget
    /// it earlier only if from then on it answers [`Redemption::Forgotten`] for every token
    /// expiring no later than it.
    ///
    /// # Errors
    /// The guard cannot tell (unreachable, failing): the server refuses the round (fail
    /// closed).
    fn redeem<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>>;

    /// [`Self::redeem`] for a token whose presenter chose its expiry: a DPoP proof is accepted
    /// until its own `iat` plus the window, and the client may date it up to the allowed clock
    /// skew ahead. `expires_at` is that expiry: the key must be refused as a replay until then,
    /// and the replay of a forgotten key carries the same one, so a bounded guard compares it
    /// with what it forgot. `latest` is the latest expiry any token arriving now could carry
    /// (the arrival time, plus the window and the skew, on the server's clock): a bounded guard
    /// keeps and forgets keys in its order, the order they arrived in, because in the order of
    /// the presenters' own expiries a flood of proofs dated ahead would outlast, and so push
    /// out, every honest proof that arrived after it.
    ///
    /// The default redeems `key` until `expires_at` ([`Self::redeem`]), which every guard keeping
    /// `redeem`'s contract does soundly; [`MemoryReplayGuard`] and `RedisReplayGuard` use
    /// `latest` as well.
    ///
    /// # Errors
    /// As [`Self::redeem`].
    fn redeem_presented<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
        latest: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        let _ = latest;
        self.redeem(key, expires_at)
    }

    /// Who shares the redeemed keys (default: every instance that reaches the guard). A guard
    /// of one process ([`MemoryReplayGuard`]) lets a round redeemed here be redeemed again on
    /// another instance, so a deployment over many instances (`server::lambda`) refuses it.
    fn scope(&self) -> crate::state_scope::StateScope {
        crate::state_scope::StateScope::Shared
    }
}

/// Which sealed rounds a replay guard makes single use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SingleUse {
    /// The rounds of tools that declare `annotations.destructiveHint: true` (explicitly: an
    /// absent hint is not an opt-in).
    #[default]
    DestructiveTools,
    /// Every sealed round: every tool, prompt and resource read.
    All,
}

/// A guard and the rounds it covers, as a server holds them.
#[derive(Debug, Clone)]
pub(crate) struct ReplayProtection {
    pub(crate) guard: Arc<dyn ReplayGuard>,
    pub(crate) scope: SingleUse,
}

impl ReplayProtection {
    /// Whether the rounds of `tool` (`None`: a prompt or resource) are single use.
    pub(crate) fn covers(&self, tool: Option<&Tool>) -> bool {
        match self.scope {
            SingleUse::All => true,
            SingleUse::DestructiveTools => tool
                .and_then(|tool| tool.annotations.as_ref())
                .is_some_and(|hints| hints.destructive_hint == Some(true)),
        }
    }
}
