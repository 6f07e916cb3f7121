//! The clock of the time the user spends signing in, and the bounds that do not count it:
//! `--connect-timeout` and `--timeout` run [`within`] it. The parsed arguments carry one
//! (`ConnectArgs::sign_in`) so that connecting and the command share it; `--oauth`'s handler
//! (`oauth.rs`) pauses it. A leaf, so that the arguments hold it without naming the sign-in
//! that pauses it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::sync::lock;

/// The time spent waiting for the user to sign in, which `--timeout` does not count.
#[derive(Debug, Clone, Default)]
pub(crate) struct SignInClock(Arc<Mutex<Paused>>);

#[derive(Debug, Default)]
struct Paused {
    since: Option<Instant>,
    total: Duration,
}

impl SignInClock {
    /// The time paused so far, the running pause included.
    fn paused(&self) -> Duration {
        let state = lock(&self.0);
        state.total + state.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Pauses the clock until the guard is dropped.
    pub(crate) fn pause(&self) -> PauseGuard<'_> {
        lock(&self.0).since.get_or_insert_with(Instant::now);
        PauseGuard(self)
    }
}

/// A running pause: it ends when dropped.
pub(crate) struct PauseGuard<'a>(&'a SignInClock);

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.0);
        if let Some(since) = state.since.take() {
            state.total += since.elapsed();
        }
    }
}

/// Runs `work` for at most `after` (`None`: unbounded), not counting the time `clock` is paused
/// meanwhile. `None` when the time ran out.
pub(crate) async fn within<T>(
    after: Option<Duration>,
    clock: &SignInClock,
    work: impl Future<Output = T>,
) -> Option<T> {
    let Some(after) = after else {
        return Some(work.await);
    };
    let start = Instant::now();
    // Only the pauses from now on: connecting and the command have a bound each, and a sign-in
    // while connecting must not lengthen the command's.
    let paused_before = clock.paused();
    let deadline = || start + after + clock.paused().saturating_sub(paused_before);
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            outcome = &mut work => return Some(outcome),
            () = tokio::time::sleep_until(deadline()) => {
                if Instant::now() >= deadline() {
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn paused_time_does_not_count() {
        let clock = SignInClock::default();
        // 3 s of work with a 2 s bound: out of time.
        let slow = || {
            within(
                Some(Duration::from_secs(2)),
                &clock,
                tokio::time::sleep(Duration::from_secs(3)),
            )
        };
        assert!(slow().await.is_none());
        // The same work, 2 s of it signing in: fits.
        let signing_in = async {
            {
                let _paused = clock.pause();
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            7
        };
        assert_eq!(
            within(Some(Duration::from_secs(2)), &clock, signing_in).await,
            Some(7)
        );
        assert_eq!(within(None, &clock, async { 1 }).await, Some(1));
        // The 2 s paused before do not lengthen a later bound.
        assert!(slow().await.is_none());
    }
}
