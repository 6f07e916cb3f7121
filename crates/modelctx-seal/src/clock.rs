//! Injected time, so expiry and clock skew are tested without sleeping.
//!
//! The policy reads the clock once per seal (to stamp `iat`/`exp`) and once per open (to check
//! them). [`ManualClock`] lets tests jump past a TTL instantly.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The operating system's wall clock (`SystemTime::now`), the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that only moves when told to; for tests.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use modelctx_seal::{Clock, ManualClock};
///
/// let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
/// clock.advance(Duration::from_secs(601));
/// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(1_800_000_601));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    // Nanoseconds since the Unix epoch; an atomic keeps the clock shareable without locks.
    nanos: AtomicU64,
}

impl ManualClock {
    /// A clock stopped at `start` (times before the Unix epoch are clamped to it).
    pub fn new(start: SystemTime) -> Self {
        Self {
            nanos: AtomicU64::new(to_nanos(start)),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // fetch_update cannot fail with a closure that always returns Some.
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// Moves the clock back by `by` (clamped at the epoch).
    pub fn rewind(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(by))
            });
    }

    /// Sets the clock to `now`.
    pub fn set(&self, now: SystemTime) {
        self.nanos.store(to_nanos(now), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

fn to_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Seconds since the Unix epoch as a float, like Python's `time.time()` (negative before it).
pub(crate) fn epoch_seconds(time: SystemTime) -> f64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}
