//! Instants computed from configured durations, which may be arbitrarily large.

use std::time::{Duration, Instant};

/// How far ahead "never" is: about 30 years, as tokio's own far-future deadlines.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `at + by`, or a far-future instant when that is not representable (`Duration::MAX` and the
/// like), instead of the panic of `Instant + Duration`.
pub(crate) fn after(at: Instant, by: Duration) -> Instant {
    at.checked_add(by)
        .or_else(|| at.checked_add(FAR_FUTURE))
        .unwrap_or(at)
}

/// [`after`] on tokio's clock (which tests may pause).
pub(crate) fn after_tokio(at: tokio::time::Instant, by: Duration) -> tokio::time::Instant {
    tokio::time::Instant::from_std(after(at.into_std(), by))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_duration_is_far_future_not_a_panic() {
        let now = Instant::now();
        assert_eq!(
            after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(after(now, Duration::MAX) >= now + FAR_FUTURE);
    }

    #[tokio::test(start_paused = true)]
    async fn on_a_paused_clock_too() {
        let now = tokio::time::Instant::now();
        assert_eq!(
            after_tokio(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(after_tokio(now, Duration::MAX) >= now + FAR_FUTURE);
        // A stream's keep-alive timer, a task's cancel grace: built from such deadlines.
        let mut timer = tokio::time::interval_at(after_tokio(now, Duration::MAX), Duration::MAX);
        assert!(futures::poll!(std::pin::pin!(timer.tick())).is_pending());
    }
}
