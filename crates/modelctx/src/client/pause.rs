//! Time spent with the user does not count against request time bounds: a request that had
//! to sign in is not timed out (and a `server/discover` probe does not fall back to the
//! handshake) because the user took a minute in the browser.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::sync::lock;

/// How long authorization handlers have been running, in total.
#[derive(Debug, Default)]
pub(crate) struct PauseClock {
    state: Mutex<PauseState>,
}

#[derive(Debug, Default)]
struct PauseState {
    /// Paused time of finished pauses.
    accumulated: Duration,
    /// Since when the current pause runs (`depth > 0`).
    since: Option<Instant>,
    depth: u32,
}

/// Ends a pause when dropped.
pub(crate) struct Pause<'a>(&'a PauseClock);

impl Drop for Pause<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.depth = state.depth.saturating_sub(1);
        if state.depth == 0
            && let Some(since) = state.since.take()
        {
            state.accumulated += since.elapsed();
        }
    }
}

impl PauseClock {
    /// Pauses request clocks until the guard drops.
    pub(crate) fn pause(&self) -> Pause<'_> {
        let mut state = lock(&self.state);
        state.depth += 1;
        if state.since.is_none() {
            state.since = Some(Instant::now());
        }
        Pause(self)
    }

    /// Total paused time so far, the running pause included; and whether one is running.
    fn total(&self) -> (Duration, bool) {
        let state = lock(&self.state);
        let running = state.since.map(|since| since.elapsed());
        (
            state.accumulated + running.unwrap_or_default(),
            running.is_some(),
        )
    }
}

/// Runs `future` for at most `after`, not counting the time `clock` was paused meanwhile;
/// `None` when the time ran out.
pub(crate) async fn bounded<F: Future>(
    after: Duration,
    future: F,
    clock: Option<&PauseClock>,
) -> Option<F::Output> {
    let Some(clock) = clock else {
        return tokio::time::timeout(after, future).await.ok();
    };
    let start = Instant::now();
    let (paused_at_start, _) = clock.total();
    let mut future = std::pin::pin!(future);
    loop {
        let (paused, running) = clock.total();
        let deadline = start + after + paused.saturating_sub(paused_at_start);
        tokio::select! {
            output = &mut future => return Some(output),
            () = tokio::time::sleep_until(deadline) => {
                let (now_paused, now_running) = clock.total();
                if !running && !now_running && now_paused == paused {
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
    async fn pauses_do_not_count() {
        let clock = PauseClock::default();
        // 3 s of work, 2.5 s of it paused, against a 1 s bound: done in time.
        let work = async {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let pause = clock.pause();
            tokio::time::sleep(Duration::from_millis(2500)).await;
            drop(pause);
            tokio::time::sleep(Duration::from_millis(250)).await;
            "done"
        };
        assert_eq!(
            bounded(Duration::from_secs(1), work, Some(&clock)).await,
            Some("done")
        );
        // Unpaused work over the bound still times out.
        let slow = tokio::time::sleep(Duration::from_secs(2));
        assert_eq!(
            bounded(Duration::from_secs(1), slow, Some(&clock)).await,
            None
        );
        // A pause that started before the request does not extend it.
        let long_pause = clock.pause();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(long_pause);
        let slow = tokio::time::sleep(Duration::from_secs(2));
        assert_eq!(
            bounded(Duration::from_secs(1), slow, Some(&clock)).await,
            None
        );
        assert_eq!(
            bounded(Duration::from_secs(1), async { 1 }, None).await,
            Some(1)
        );
    }
}
