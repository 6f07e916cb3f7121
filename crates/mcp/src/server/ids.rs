//! Unguessable ids the server mints: task and instance ids, URL-elicitation ids.

use std::sync::atomic::{AtomicU64, Ordering};

/// 128 random bits, hex.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to the clock and a counter (never for secrets, but an id
        // must still be unique).
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let salt = COUNTER.fetch_add(1, Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        bytes[..8].copy_from_slice(&now.to_be_bytes());
        bytes[8..].copy_from_slice(&salt.to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
