//! A rate limit per peer address, for requests that create server state (handshake-era sessions).
//!
//! GCRA (the token bucket written as one instant per peer): a peer may send `burst` requests at
//! once, then one per `interval`. A peer is an IPv4 address, or the /64 prefix of an IPv6 one
//! (one host usually holds a whole /64, so counting its addresses apart would not limit it). The
//! table is bounded: peers whose allowance is whole again carry no information and are dropped
//! when it fills, and if it is still full (more active peers than it holds) arbitrary ones go,
//! which at worst hands those a fresh burst.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::deadline::{FAR_FUTURE, after};
use crate::sync::lock;

/// How many peers are tracked at most.
const MAX_PEERS: usize = 10_000;

/// A rate: `burst` requests at once, then one more every `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    burst: u32,
    interval: Duration,
}

impl RateLimit {
    /// `burst` at once (at least 1), then one every `interval`.
    #[must_use]
    pub const fn new(burst: u32, interval: Duration) -> Self {
        Self {
            burst: if burst == 0 { 1 } else { burst },
            interval,
        }
    }

    /// How many requests may come at once.
    #[must_use]
    pub const fn burst(&self) -> u32 {
        self.burst
    }

    /// The steady pace: one request per `interval`.
    #[must_use]
    pub const fn interval(&self) -> Duration {
        self.interval
    }
}

/// The limit applied to each peer.
#[derive(Debug)]
pub(crate) struct PeerRate {
    limit: RateLimit,
    /// Per peer, the instant its allowance is whole again (GCRA's theoretical arrival time).
    peers: Mutex<HashMap<IpAddr, Instant>>,
}

/// The key a peer is counted under.
pub(crate) fn peer_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
    }
}

impl PeerRate {
    pub(crate) fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            peers: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one request of `peer`: `Err(wait)` when it is over its rate and may try again
    /// after `wait`.
    pub(crate) fn check(&self, peer: IpAddr) -> Result<(), Duration> {
        self.check_at(peer, Instant::now())
    }

    fn check_at(&self, peer: IpAddr, now: Instant) -> Result<(), Duration> {
        let RateLimit { burst, interval } = self.limit;
        // "Never again" is far future: a larger interval would overflow the instants, and
        // clamping it here (not only the sum) keeps the burst exact.
        let interval = interval.min(FAR_FUTURE);
        let tolerance = interval.saturating_mul(burst - 1);
        let key = peer_key(peer);
        let mut peers = lock(&self.peers);
        let due = peers.get(&key).copied().unwrap_or(now).max(now);
        let allowed_from = due.checked_sub(tolerance).unwrap_or(now);
        if allowed_from > now {
            return Err(allowed_from - now);
        }
        if peers.len() >= MAX_PEERS && !peers.contains_key(&key) {
            make_room(&mut peers, now);
        }
        peers.insert(key, after(due, interval));
        Ok(())
    }
}

/// Drops the peers whose allowance is whole; if too many remain, arbitrary ones, down to three
/// quarters of the table, so that the next pass is a quarter of a table away.
fn make_room(peers: &mut HashMap<IpAddr, Instant>, now: Instant) {
    peers.retain(|_, due| *due > now);
    let excess = peers.len().saturating_sub(MAX_PEERS / 4 * 3);
    let victims: Vec<IpAddr> = peers.keys().take(excess).copied().collect();
    for victim in victims {
        peers.remove(&victim);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn a_burst_then_one_per_interval() {
        let limit = PeerRate::new(RateLimit::new(3, Duration::from_secs(1)));
        let peer = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let other = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limit.check_at(peer, start), Ok(()));
        }
        assert_eq!(limit.check_at(peer, start), Err(Duration::from_secs(1)));
        assert_eq!(limit.check_at(other, start), Ok(()), "peers are apart");
        let later = start + Duration::from_millis(1500);
        assert_eq!(limit.check_at(peer, later), Ok(()));
        assert_eq!(limit.check_at(peer, later), Err(Duration::from_millis(500)));
        // Idle long enough, the whole burst is back.
        let much_later = start + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(limit.check_at(peer, much_later), Ok(()));
        }
        assert!(limit.check_at(peer, much_later).is_err());
    }

    #[test]
    fn an_ipv6_host_is_its_64_prefix() {
        let limit = PeerRate::new(RateLimit::new(1, Duration::from_secs(1)));
        let now = Instant::now();
        let one: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
        let same_prefix: Ipv6Addr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_prefix: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert!(limit.check_at(one.into(), now).is_ok());
        assert!(limit.check_at(same_prefix.into(), now).is_err());
        assert!(limit.check_at(other_prefix.into(), now).is_ok());
        let mapped: Ipv6Addr = "::ffff:192.0.2.7".parse().unwrap();
        assert!(limit.check_at(mapped.into(), now).is_ok());
        assert!(
            limit
                .check_at(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)), now)
                .is_err(),
            "a mapped address is the IPv4 peer"
        );
    }

    #[test]
    fn a_huge_interval_means_the_burst_and_then_never() {
        let limit = PeerRate::new(RateLimit::new(2, Duration::MAX));
        let peer = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let now = Instant::now();
        assert_eq!(limit.check_at(peer, now), Ok(()));
        assert_eq!(limit.check_at(peer, now), Ok(()));
        let wait = limit.check_at(peer, now).unwrap_err();
        assert!(wait >= FAR_FUTURE, "{wait:?}");
        let single = PeerRate::new(RateLimit::new(1, Duration::MAX));
        assert_eq!(single.check_at(peer, now), Ok(()));
        assert!(
            single
                .check_at(peer, now + Duration::from_secs(3600))
                .is_err()
        );
    }

    #[test]
    fn the_table_stays_bounded() {
        let limit = PeerRate::new(RateLimit::new(1, Duration::from_secs(3600)));
        let now = Instant::now();
        for n in 0..3 * MAX_PEERS as u32 {
            assert!(limit.check_at(IpAddr::V4(Ipv4Addr::from(n)), now).is_ok());
        }
        assert!(lock(&limit.peers).len() <= MAX_PEERS);
    }
}
