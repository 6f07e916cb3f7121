//! The OAuth client's clock: seconds since the Unix epoch, the unit of token lifetimes,
//! registrations and the `iat` of DPoP proofs and client assertions. A leaf of `auth`, so that
//! the proofs (`proof.rs`, below the flow) and the flow read one clock without naming each
//! other.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 for a clock set before it).
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
