//! What a server needs to make a sealed round single use: a key naming the token, and how long
//! to remember it.
//!
//! A sealed `requestState` can be redeemed again and again until its `exp`, for the same
//! method, target, arguments, audience and principal — the Python SDK behaves the same, and the
//! spec says the claims alone "do not guarantee single use". A server that needs at-most-once
//! consumption opens with [`crate::RequestStateSecurity::open_single_use`] and records the
//! [`ReplayKey`] until [`SingleUseState::expires_at`] in a store shared by every instance that
//! holds the keys (the `modelctx` crate's replay guards do this); a key seen before is a replay.
//! This crate has no runtime, so the store itself (often a network round trip) lives with the
//! server.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::digest;

/// Length of a [`ReplayKey`] in bytes.
pub const REPLAY_KEY_LEN: usize = 16;

/// Names one sealed token for a replay guard: unique per seal, the same for every copy of the
/// token. The built-in codec uses the token's key id and random nonce (`kid ‖ nonce`, 16 bytes);
/// other codecs default to a digest of the token ([`crate::Codec::replay_key`]).
///
/// Not secret: everything it is made of is in the token the client holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplayKey([u8; REPLAY_KEY_LEN]);

impl ReplayKey {
    /// A key from its bytes (a codec's own nonce, or a digest of it when longer).
    pub const fn from_bytes(bytes: [u8; REPLAY_KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// The first 16 bytes of SHA-256 over `bytes`.
    pub fn digest(bytes: &[u8]) -> Self {
        let hash = digest::digest(&digest::SHA256, bytes);
        let mut key = [0u8; REPLAY_KEY_LEN];
        key.copy_from_slice(&hash.as_ref()[..REPLAY_KEY_LEN]);
        Self(key)
    }

    /// The key's bytes.
    pub const fn as_bytes(&self) -> &[u8; REPLAY_KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for ReplayKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplayKey({self})")
    }
}

impl fmt::Display for ReplayKey {
    /// Lower-case hex, 32 characters (a store key).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// A token opened for a single-use round: the plaintext state, plus what the replay guard must
/// record before the handler may see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleUseState {
    /// The handler's plaintext state, as [`crate::RequestStateSecurity::open`] returns it.
    pub state: String,
    /// The token's replay key.
    pub replay_key: ReplayKey,
    /// The token's `exp` claim: after it the token is refused as expired anyway, so the guard
    /// may forget the key then — plus [`crate::FUTURE_SKEW`] when instances with different
    /// clocks share the guard — and not before.
    pub expires_at: SystemTime,
    /// The round that sealed the token and the call's first-round trace context
    /// ([`crate::RequestStateSecurity::open_round`]).
    pub lineage: crate::RoundLineage,
}

/// An `exp` claim as a time; claims past year ~33,700 (a TTL no deployment uses) are clamped
/// there, so the time is always representable and never earlier than the claim for real TTLs.
pub(crate) fn expiry(exp: f64) -> SystemTime {
    const FAR_FUTURE_SECS: f64 = 1e12;
    // NaN (impossible once `now < exp` held) falls to the epoch instead of panicking.
    UNIX_EPOCH + Duration::try_from_secs_f64(exp.clamp(0.0, FAR_FUTURE_SECS)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_as_hex_and_digest_deterministically() {
        let key = ReplayKey::from_bytes(*b"\x00\x01abcdefghijklmn");
        assert_eq!(key.to_string(), "00016162636465666768696a6b6c6d6e");
        assert_eq!(ReplayKey::digest(b"token"), ReplayKey::digest(b"token"));
        assert_ne!(ReplayKey::digest(b"token"), ReplayKey::digest(b"token2"));
    }

    #[test]
    fn expiry_is_clamped_not_a_panic() {
        assert_eq!(expiry(1.5), UNIX_EPOCH + Duration::from_millis(1500));
        assert_eq!(expiry(-4.0), UNIX_EPOCH);
        assert_eq!(
            expiry(1e300),
            UNIX_EPOCH + Duration::from_secs(1_000_000_000_000)
        );
        assert_eq!(expiry(f64::NAN), UNIX_EPOCH);
    }
}
