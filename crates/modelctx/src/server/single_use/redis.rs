//! [`RedisReplayGuard`]: replay keys in Redis, shared by every instance that holds the keys.

use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use modelctx_seal::ReplayKey;

use super::{Redemption, ReplayGuard, ReplayGuardError};
use crate::redis_link::RedisLink;

/// Replay keys in Redis: one string `<prefix>:<key hex>` per redeemed token, written with
/// `SET key 1 NX PXAT <exp ms>` — atomic, so of concurrent redemptions on any instances exactly
/// one is first, and Redis drops the key once the token has expired (Redis ≥ 6.2).
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
}

/// `expires_at` in Unix milliseconds, rounded up so that Redis never forgets a key before the
/// token expires; at least 1 (Redis refuses `PXAT 0`).
fn unix_millis_ceil(expires_at: SystemTime) -> u64 {
    let since = expires_at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let millis = since.as_millis() + u128::from(!since.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(millis).unwrap_or(u64::MAX).max(1)
}

impl ReplayGuard for RedisReplayGuard {
    fn redeem<'a>(
        &'a self,
        key: &'a ReplayKey,
        expires_at: SystemTime,
    ) -> BoxFuture<'a, Result<Redemption, ReplayGuardError>> {
        Box::pin(async move {
            let mut connection = self.link.connection.clone();
            let set: Option<String> = redis::cmd("SET")
                .arg(self.link.key(key))
                .arg(1)
                .arg("NX")
                .arg("PXAT")
                .arg(unix_millis_ceil(expires_at))
                .query_async(&mut connection)
                .await
                .map_err(ReplayGuardError::store)?;
            Ok(match set {
                Some(_) => Redemption::First,
                None => Redemption::Replay,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn expiry_rounds_up_to_the_millisecond() {
        let at = |nanos| UNIX_EPOCH + Duration::from_nanos(nanos);
        assert_eq!(unix_millis_ceil(at(1_500_000_000)), 1_500);
        assert_eq!(unix_millis_ceil(at(1_500_000_001)), 1_501);
        assert_eq!(unix_millis_ceil(UNIX_EPOCH), 1);
    }
}
