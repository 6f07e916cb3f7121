//! [`MemoryReplayGuard`]: the replay keys of one process, in a bounded table.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Mutex;
use std::time::SystemTime;

use futures::future::BoxFuture;
use modelctx_seal::{REPLAY_KEY_LEN, ReplayKey};

use super::{Redemption, ReplayGuard, ReplayGuardError};
use crate::sync::lock;

/// The default bound of a [`MemoryReplayGuard`]: at about 100 bytes a key, 10 MB. With the
/// default 600 s TTL it remembers every key up to a sustained 150 single-use rounds a second;
/// beyond that, a token must be redeemed within `capacity / rate` seconds of being minted
/// (100 s at 1 000 rounds a second).
pub const DEFAULT_CAPACITY: usize = 100_000;

/// Replay keys held in this process until they expire, for a single server instance (stdio, one
/// HTTP worker). Instances that share sealing keys must share a guard too
/// ([`super::RedisReplayGuard`]), or a token redeemed on one can be redeemed again on another.
///
/// The table holds at most `capacity` unexpired keys. When it is full, the key that expires
/// first is forgotten to make room, and the guard's *horizon* moves up to that key's expiry:
/// every token expiring at or before the horizon is refused from then on
/// ([`Redemption::Forgotten`], the same `-32602` as an expired token), whether it was redeemed
/// or not, so no token is ever accepted twice. A token that would be the first to go is refused
/// the same way rather than recorded.
///
/// What that bounds, precisely: every entry is a sealed token this server minted and a client
/// redeemed, each a real request that passed every check, so filling the table takes
/// `capacity` redemptions within a token lifetime (TTL + 60 s). Below that rate nothing is
/// forgotten. Above it, at `R` redemptions a second (all clients together), the table holds
/// the last `capacity / R` seconds of them, and a token is accepted if it is redeemed within
/// about `capacity / R` seconds of being minted: a flood of its own valid rounds by one
/// client shortens that window for everyone, but never refuses every round, as a guard that
/// fails closed when full would. Expired keys are dropped in expiry order, `O(log n)` each.
///
/// Tokens whose presenter chose the expiry ([`ReplayGuard::redeem_presented`], DPoP proofs)
/// are kept and forgotten in the order they arrived, and the horizon moves to the forgotten
/// token's own expiry: proofs dated ahead within the allowed skew do not outlast the honest
/// proofs that arrived after them, and a forgotten proof's replay is still refused. A token
/// already expired by this process's clock is refused ([`Redemption::Forgotten`]), never
/// recorded.
#[derive(Debug)]
pub struct MemoryReplayGuard {
    capacity: usize,
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    used: HashSet<ReplayKey>,
    /// The same keys in the order they go, soonest first: until when each is kept (its token's
    /// expiry, or for a presenter-dated token the latest expiry it could have carried), then the
    /// token's own expiry.
    expiries: BinaryHeap<Reverse<(SystemTime, SystemTime, [u8; REPLAY_KEY_LEN])>>,
    /// The latest expiry of a token whose key was forgotten before it expired: tokens expiring at
    /// or before it are refused.
    horizon: SystemTime,
}

impl Default for MemoryReplayGuard {
    /// A guard holding at most [`DEFAULT_CAPACITY`] keys.
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl MemoryReplayGuard {
    /// A guard holding at most `capacity` unexpired keys (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            table: Mutex::new(Table {
                used: HashSet::new(),
                expiries: BinaryHeap::new(),
                horizon: SystemTime::UNIX_EPOCH,
            }),
        }
    }

    /// How many unexpired keys it may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Redeems `key`, whose token expires at `expires_at`, keeping it until `kept_until` (at
    /// least `expires_at`) and in that order, at `now`.
    fn redeem_at(
        &self,
        key: &ReplayKey,
        expires_at: SystemTime,
        kept_until: SystemTime,
        now: SystemTime,
    ) -> Redemption {
        let kept_until = kept_until.max(expires_at);
        let mut table = lock(&self.table);
        let Table {
            used,
            expiries,
            horizon,
        } = &mut *table;
        while let Some(Reverse((kept, _, _))) = expiries.peek()
            && *kept <= now
        {
            if let Some(Reverse((_, _, expired))) = expiries.pop() {
                used.remove(&ReplayKey::from_bytes(expired));
            }
        }
        if used.contains(key) {
            return Redemption::Replay;
        }
        // Expired already (a clock behind this one accepted it): recorded, it would be dropped
        // at once and accepted again, so it is refused like a forgotten one.
        if expires_at <= *horizon || expires_at <= now {
            return Redemption::Forgotten;
        }
        if used.len() >= self.capacity {
            match expiries.peek() {
                // The new token would be the first to go: refuse it instead.
                Some(Reverse((soonest, _, _))) if kept_until <= *soonest => {
                    return Redemption::Forgotten;
                }
                _ => {}
            }
            if let Some(Reverse((_, expiry, forgotten))) = expiries.pop() {
                used.remove(&ReplayKey::from_bytes(forgotten));
                *horizon = (*horizon).max(expiry);
            }
        }
        used.insert(*key);
        expiries.push(Reverse((kept_until, expires_at, *key.as_bytes())));
        Redemption::First
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn scope(&self) -> crate::state_scope::StateScope {
        crate::state_scope::StateScope::Process
    }

    fn redeem<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        let verdict = self.redeem_at(key, expires_at, expires_at, SystemTime::now());
        Box::pin(std::future::ready(Ok(verdict)))
    }

    fn redeem_presented<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
        latest: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        let verdict = self.redeem_at(key, expires_at, latest, SystemTime::now());
        Box::pin(std::future::ready(Ok(verdict)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn key(n: u8) -> ReplayKey {
        ReplayKey::from_bytes([n; REPLAY_KEY_LEN])
    }

    /// A token whose expiry the server fixed (a sealed round), redeemed at `now`.
    fn redeem(
        guard: &MemoryReplayGuard,
        n: u8,
        expires_at: SystemTime,
        now: SystemTime,
    ) -> Redemption {
        guard.redeem_at(&key(n), expires_at, expires_at, now)
    }

    #[test]
    fn a_key_is_redeemed_once_until_it_expires() {
        let guard = MemoryReplayGuard::new(8);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let exp = now + Duration::from_secs(60);
        assert_eq!(redeem(&guard, 1, exp, now), Redemption::First);
        assert_eq!(redeem(&guard, 1, exp, now), Redemption::Replay);
        assert_eq!(redeem(&guard, 2, exp, now), Redemption::First);
        let later = now + Duration::from_secs(59);
        assert_eq!(redeem(&guard, 1, exp, later), Redemption::Replay);
        // At `exp` the key is forgotten (the token is expired from then on anyway).
        let next = exp + Duration::from_secs(60);
        assert_eq!(redeem(&guard, 1, next, exp), Redemption::First);
    }

    /// A token already expired by the guard's clock is refused every time: recorded, it would
    /// be dropped at once and accepted again.
    #[test]
    fn an_expired_token_is_refused_not_recorded() {
        let guard = MemoryReplayGuard::new(8);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        for _ in 0..2 {
            assert_eq!(redeem(&guard, 1, now, now), Redemption::Forgotten);
        }
        assert!(lock(&guard.table).used.is_empty());
    }

    #[test]
    fn a_full_table_forgets_its_oldest_keys_and_every_token_as_old() {
        let guard = MemoryReplayGuard::new(3);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let exp = |n: u8| now + Duration::from_secs(10 + u64::from(n));
        for n in 0..3u8 {
            assert_eq!(redeem(&guard, n, exp(n), now), Redemption::First);
        }
        // Full: a newer token is recorded, and the key that expires first is forgotten...
        assert_eq!(redeem(&guard, 9, exp(9), now), Redemption::First);
        // ...without reopening its token: it is refused, as is any token as old.
        assert_eq!(redeem(&guard, 0, exp(0), now), Redemption::Forgotten);
        assert_eq!(redeem(&guard, 7, exp(0), now), Redemption::Forgotten);
        // Keys still held are replays; a token older than all of them is not recorded.
        assert_eq!(redeem(&guard, 1, exp(1), now), Redemption::Replay);
        assert_eq!(redeem(&guard, 6, exp(1), now), Redemption::Forgotten);
        assert_eq!(redeem(&guard, 9, exp(9), now), Redemption::Replay);
        let table = lock(&guard.table);
        assert_eq!((table.used.len(), table.expiries.len()), (3, 3));
        assert_eq!(table.horizon, exp(0));
        drop(table);
        // Keys that expire make room without moving the horizon.
        let t = exp(2);
        assert_eq!(redeem(&guard, 5, exp(5), t), Redemption::First);
        assert_eq!(redeem(&guard, 4, exp(4), t), Redemption::First);
        assert_eq!(lock(&guard.table).horizon, exp(0));
    }

    /// Proofs dated ahead (a DPoP `iat` up to the skew in the future) do not push out the
    /// honest proof that arrived after them: presenter-dated keys go in the order they arrived,
    /// and the one forgotten stays refused, since the horizon is its own expiry.
    #[test]
    fn presenter_dated_tokens_are_forgotten_in_arrival_order() {
        let guard = MemoryReplayGuard::new(3);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let secs = Duration::from_secs;
        // DPoP's defaults: accepted until `iat` + 60 s (+ 1), dated up to 5 s ahead.
        let proof = |n: u8, iat: SystemTime, arrival: SystemTime| {
            guard.redeem_at(&key(n), iat + secs(61), arrival + secs(66), arrival)
        };
        assert_eq!(proof(1, t0 + secs(5), t0), Redemption::First);
        assert_eq!(proof(2, t0 + secs(5), t0), Redemption::First);
        let honest = t0 + secs(1);
        assert_eq!(proof(3, honest, honest), Redemption::First);
        // Full: the next proof dated ahead pushes out the oldest arrival, not the honest proof
        // whose own expiry is the soonest.
        assert_eq!(proof(4, t0 + secs(7), t0 + secs(2)), Redemption::First);
        let later = t0 + secs(3);
        assert_eq!(proof(3, honest, later), Redemption::Replay);
        assert_eq!(proof(1, t0 + secs(5), later), Redemption::Forgotten);
        assert_eq!(lock(&guard.table).horizon, t0 + secs(66));
    }
}
