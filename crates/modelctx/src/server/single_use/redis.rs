//! [`RedisReplayGuard`]: replay keys in Redis, shared by every instance that holds the keys.

use std::time::SystemTime;

use futures::future::BoxFuture;
use modelctx_seal::ReplayKey;

use super::{Redemption, ReplayGuard, ReplayGuardError};
use crate::redis_link::RedisLink;

/// Replay keys in Redis: one string `<prefix>:<key hex>` per redeemed token, written with
/// `SET key 1 NX PX <ms>` — atomic, so of concurrent redemptions on any instances exactly one is
/// first, and Redis drops the key once the token has expired.
///
/// The time to keep a key is sent relative (`PX`, milliseconds from now, on this instance's
/// clock), never as an instant (`PXAT`): Redis compares an instant with its own clock, so with
/// the Redis host's clock ahead of this one an instant already past there made every `SET NX`
/// succeed and every replay pass. A token already expired on this clock is refused
/// ([`Redemption::Forgotten`]) without a command; presenter-dated tokens
/// ([`ReplayGuard::redeem_presented`], DPoP proofs) are kept until the latest expiry they could
/// carry, which leaves instances whose clocks lag this one the allowed skew to agree.
///
/// A command that fails or takes longer than the connection's response timeout (500 ms) refuses
/// the round; the connection reconnects on its own. Configure persistence (AOF) if a Redis
/// restart must not forget redeemed tokens that are still within their TTL.
#[derive(Clone)]
pub struct RedisReplayGuard {
    link: RedisLink,
}

impl std::fmt::Debug for RedisReplayGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.link.debug("RedisReplayGuard", f)
    }
}

impl RedisReplayGuard {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`); keys start with `prefix` (e.g.
    /// `mcp-replay`).
    ///
    /// # Errors
    /// An invalid URL, or Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, ReplayGuardError> {
        let link = RedisLink::connect(url, prefix)
            .await
            .map_err(ReplayGuardError::store)?;
        Ok(Self { link })
    }

    /// Records `key` for as long as from `now` until `kept_until`, unless it is recorded
    /// already; a token that expired by `expires_at` is refused without asking Redis.
    async fn redeem_at(
        &self,
        key: &ReplayKey,
        expires_at: SystemTime,
        kept_until: SystemTime,
        now: SystemTime,
    ) -> Result<Redemption, ReplayGuardError> {
        let Some(keep) = millis_until(now, kept_until.max(expires_at)).filter(|_| expires_at > now)
        else {
            return Ok(Redemption::Forgotten);
        };
        let mut connection = self.link.connection.clone();
        let set: Option<String> = redis::cmd("SET")
            .arg(self.link.key(key))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(keep)
            .query_async(&mut connection)
            .await
            .map_err(ReplayGuardError::store)?;
        Ok(match set {
            Some(_) => Redemption::First,
            None => Redemption::Replay,
        })
    }
}

/// The whole milliseconds from `now` to `then`, rounded up so that Redis never forgets a key
/// before the token expires; `None` when `then` is not after `now`.
fn millis_until(now: SystemTime, then: SystemTime) -> Option<u64> {
    let left = then
        .duration_since(now)
        .ok()
        .filter(|left| !left.is_zero())?;
    let millis = left.as_millis() + u128::from(!left.subsec_nanos().is_multiple_of(1_000_000));
    Some(u64::try_from(millis).unwrap_or(u64::MAX))
}

impl ReplayGuard for RedisReplayGuard {
    fn redeem<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        Box::pin(self.redeem_at(key, expires_at, expires_at, SystemTime::now()))
    }

    fn redeem_presented<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
        latest: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        Box::pin(self.redeem_at(key, expires_at, latest, SystemTime::now()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use modelctx_seal::REPLAY_KEY_LEN;
    use modelctx_test_support::redis::{Persistence, Redis};

    use super::*;

    #[test]
    fn times_to_keep_round_up_to_the_millisecond() {
        let at = |nanos| UNIX_EPOCH + Duration::from_nanos(nanos);
        assert_eq!(millis_until(UNIX_EPOCH, at(1_500_000_000)), Some(1_500));
        assert_eq!(millis_until(UNIX_EPOCH, at(1_500_000_001)), Some(1_501));
        assert_eq!(millis_until(UNIX_EPOCH, at(1)), Some(1));
        assert_eq!(millis_until(at(5), at(5)), None);
        assert_eq!(millis_until(at(6), at(5)), None);
    }

    /// A Redis whose clock runs ahead of this instance's (played by a clock of ours 30 s
    /// behind the real one, which the Redis on this machine keeps): a key kept for 10 s by our
    /// clock ends 20 s in the past by Redis's. Sent as an instant (`PXAT`), Redis stored it
    /// expired and every replay was a first redemption; sent as a duration it holds.
    #[tokio::test]
    async fn a_redis_clock_ahead_of_ours_does_not_make_replays_first() {
        let redis = Redis::start(Persistence::Off).await;
        let guard = RedisReplayGuard::connect(&redis.url, "skew").await.unwrap();
        let ours = SystemTime::now() - Duration::from_secs(30);
        let expires = ours + Duration::from_secs(10);
        let key = ReplayKey::from_bytes([7; REPLAY_KEY_LEN]);
        let first = guard.redeem_at(&key, expires, expires, ours).await.unwrap();
        assert_eq!(first, Redemption::First);
        let again = guard.redeem_at(&key, expires, expires, ours).await.unwrap();
        assert_eq!(again, Redemption::Replay);
    }
}
