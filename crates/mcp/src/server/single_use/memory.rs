//! [`MemoryReplayGuard`]: the replay keys of one process, in a bounded table.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Mutex;
use std::time::SystemTime;

use futures::future::BoxFuture;
use mcp_seal::{REPLAY_KEY_LEN, ReplayKey};

use super::{Redemption, ReplayGuard, ReplayGuardError};
use crate::sync::lock;

/// The default bound of a [`MemoryReplayGuard`]: at about 80 bytes a key, 8 MB; with the default
/// 600 s TTL, a sustained 160 single-use rounds a second.
pub const DEFAULT_CAPACITY: usize = 100_000;

/// Replay keys held in this process until they expire, for a single server instance (stdio, one
/// HTTP worker). Instances that share sealing keys must share a guard too
/// ([`super::RedisReplayGuard`]), or a token redeemed on one can be redeemed again on another.
///
/// The table holds at most `capacity` unexpired keys. When it is full a redemption fails and
/// the round is refused (fail closed) until keys expire: evicting an unexpired key would
/// re-open its token to replay. Expired keys are dropped in expiry order, `O(log n)` each.
#[derive(Debug)]
pub struct MemoryReplayGuard {
    capacity: usize,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    used: HashSet<ReplayKey>,
    /// The same keys by expiry, soonest first.
    expiries: BinaryHeap<Reverse<(SystemTime, [u8; REPLAY_KEY_LEN])>>,
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
            table: Mutex::new(Table::default()),
        }
    }

    /// How many unexpired keys it may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn redeem_at(
        &self,
        key: &ReplayKey,
        expires_at: SystemTime,
        now: SystemTime,
    ) -> Result<Redemption, ReplayGuardError> {
        let mut table = lock(&self.table);
        let Table { used, expiries } = &mut *table;
        while let Some(Reverse((expiry, _))) = expiries.peek()
            && *expiry <= now
        {
            if let Some(Reverse((_, expired))) = expiries.pop() {
                used.remove(&ReplayKey::from_bytes(expired));
            }
        }
        if used.contains(key) {
            return Ok(Redemption::Replay);
        }
        if used.len() >= self.capacity {
            return Err(ReplayGuardError::Full {
                capacity: self.capacity,
            });
        }
        used.insert(*key);
        expiries.push(Reverse((expires_at, *key.as_bytes())));
        Ok(Redemption::First)
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn redeem<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        let verdict = self.redeem_at(key, expires_at, SystemTime::now());
        Box::pin(std::future::ready(verdict))
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
        assert_eq!(
            guard.redeem_at(&key(1), exp, now).unwrap(),
            Redemption::First
        );
        assert_eq!(
            guard.redeem_at(&key(1), exp, now).unwrap(),
            Redemption::Replay
        );
        assert_eq!(
            guard.redeem_at(&key(2), exp, now).unwrap(),
            Redemption::First
        );
        let later = now + Duration::from_secs(59);
        assert_eq!(
            guard.redeem_at(&key(1), exp, later).unwrap(),
            Redemption::Replay
        );
        // At `exp` the key is forgotten (the token is expired from then on anyway).
        assert_eq!(
            guard
                .redeem_at(&key(1), exp + Duration::from_secs(60), exp)
                .unwrap(),
            Redemption::First
        );
    }

    #[test]
    fn a_full_table_fails_closed_until_keys_expire() {
        let guard = MemoryReplayGuard::new(3);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        for n in 0..3u8 {
            let exp = now + Duration::from_secs(10 + u64::from(n));
            assert_eq!(
                guard.redeem_at(&key(n), exp, now).unwrap(),
                Redemption::First
            );
        }
        let exp = now + Duration::from_secs(60);
        let full = guard.redeem_at(&key(9), exp, now);
        assert!(
            matches!(full, Err(ReplayGuardError::Full { capacity: 3 })),
            "full: refused, {full:?}"
        );
        // Replays are still recognised while full.
        let replay = guard.redeem_at(&key(0), exp, now).unwrap();
        assert_eq!(replay, Redemption::Replay);
        // The first key expires: exactly one slot frees, in expiry order.
        let t = now + Duration::from_secs(10);
        assert_eq!(guard.redeem_at(&key(9), exp, t).unwrap(), Redemption::First);
        assert!(guard.redeem_at(&key(8), exp, t).is_err());
        assert_eq!(lock(&guard.table).used.len(), 3);
        assert_eq!(lock(&guard.table).expiries.len(), 3);
    }
}
