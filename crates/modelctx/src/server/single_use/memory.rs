//! [`MemoryReplayGuard`]: the replay keys of one process, in a bounded table.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Mutex;
use std::time::SystemTime;

use futures::future::BoxFuture;
use modelctx_seal::{REPLAY_KEY_LEN, ReplayKey};

use super::{Redemption, ReplayGuard, ReplayGuardError};
use crate::sync::lock;

/// The default bound of a [`MemoryReplayGuard`]: at about 80 bytes a key, 8 MB. With the
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
#[derive(Debug)]
pub struct MemoryReplayGuard {
    capacity: usize,
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    used: HashSet<ReplayKey>,
    /// The same keys by expiry, soonest first.
    expiries: BinaryHeap<Reverse<(SystemTime, [u8; REPLAY_KEY_LEN])>>,
    /// The latest expiry of a key forgotten before it expired: tokens expiring at or before it
    /// are refused.
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

    fn redeem_at(&self, key: &ReplayKey, expires_at: SystemTime, now: SystemTime) -> Redemption {
        let mut table = lock(&self.table);
        let Table {
            used,
            expiries,
            horizon,
        } = &mut *table;
        while let Some(Reverse((expiry, _))) = expiries.peek()
            && *expiry <= now
        {
            if let Some(Reverse((_, expired))) = expiries.pop() {
                used.remove(&ReplayKey::from_bytes(expired));
            }
        }
        if used.contains(key) {
            return Redemption::Replay;
        }
        if expires_at <= *horizon {
            return Redemption::Forgotten;
        }
        if used.len() >= self.capacity {
            match expiries.peek() {
                // The new token would be the first to go: refuse it instead.
                Some(Reverse((soonest, _))) if expires_at <= *soonest => {
                    return Redemption::Forgotten;
                }
                _ => {}
            }
            if let Some(Reverse((expiry, forgotten))) = expiries.pop() {
                used.remove(&ReplayKey::from_bytes(forgotten));
                *horizon = (*horizon).max(expiry);
            }
        }
        used.insert(*key);
        expiries.push(Reverse((expires_at, *key.as_bytes())));
        Redemption::First
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn redeem<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        let verdict = self.redeem_at(key, expires_at, SystemTime::now());
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

    #[test]
    fn a_key_is_redeemed_once_until_it_expires() {
        let guard = MemoryReplayGuard::new(8);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let exp = now + Duration::from_secs(60);
        assert_eq!(guard.redeem_at(&key(1), exp, now), Redemption::First);
        assert_eq!(guard.redeem_at(&key(1), exp, now), Redemption::Replay);
        assert_eq!(guard.redeem_at(&key(2), exp, now), Redemption::First);
        let later = now + Duration::from_secs(59);
        assert_eq!(guard.redeem_at(&key(1), exp, later), Redemption::Replay);
        // At `exp` the key is forgotten (the token is expired from then on anyway).
        assert_eq!(
            guard.redeem_at(&key(1), exp + Duration::from_secs(60), exp),
            Redemption::First
        );
    }

    #[test]
    fn a_full_table_forgets_its_oldest_keys_and_every_token_as_old() {
        let guard = MemoryReplayGuard::new(3);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let exp = |n: u64| now + Duration::from_secs(10 + n);
        for n in 0..3u8 {
            let redeemed = guard.redeem_at(&key(n), exp(u64::from(n)), now);
            assert_eq!(redeemed, Redemption::First);
        }
        // Full: a newer token is recorded, and the key that expires first is forgotten...
        assert_eq!(guard.redeem_at(&key(9), exp(9), now), Redemption::First);
        // ...without reopening its token: it is refused, as is any token as old.
        assert_eq!(guard.redeem_at(&key(0), exp(0), now), Redemption::Forgotten);
        assert_eq!(guard.redeem_at(&key(7), exp(0), now), Redemption::Forgotten);
        // Keys still held are replays; a token older than all of them is not recorded.
        assert_eq!(guard.redeem_at(&key(1), exp(1), now), Redemption::Replay);
        assert_eq!(guard.redeem_at(&key(6), exp(1), now), Redemption::Forgotten);
        assert_eq!(guard.redeem_at(&key(9), exp(9), now), Redemption::Replay);
        let table = lock(&guard.table);
        assert_eq!((table.used.len(), table.expiries.len()), (3, 3));
        assert_eq!(table.horizon, exp(0));
        drop(table);
        // Keys that expire make room without moving the horizon.
        let t = exp(2);
        assert_eq!(guard.redeem_at(&key(5), exp(5), t), Redemption::First);
        assert_eq!(guard.redeem_at(&key(4), exp(4), t), Redemption::First);
        assert_eq!(lock(&guard.table).horizon, exp(0));
    }
}
