//! Stopping a server cleanly: the signals that ask for it ([`shutdown_signal`]), and the grace
//! period the transports give the requests in flight ([`DEFAULT_SHUTDOWN_GRACE`]).
//!
//! Containers, systemd and Kubernetes stop a process with SIGTERM, a terminal with SIGINT. A
//! server served with a shutdown future
//! ([`Server::serve_stdio_until`](super::Server::serve_stdio_until),
//! [`Server::serve_io_until`](super::Server::serve_io_until),
//! [`Server::serve_http_on`](super::Server::serve_http_on)) then stops taking new requests, ends its `subscriptions/listen`
//! streams with their closing result, lets the requests in flight finish for up to the grace
//! period, drops those still running after it, and returns; the application flushes what it
//! buffers (telemetry) and exits 0.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use super::deadline;

/// How long requests in flight may take to finish once a shutdown begins (5 s), unless
/// [`StdioConfig::shutdown_grace`](super::StdioConfig::shutdown_grace) or
/// [`HttpConfig::shutdown_grace`](super::http::HttpConfig::shutdown_grace) says otherwise.
///
/// Short enough to leave room, within the time supervisors wait before SIGKILL (`docker stop`
/// 10 s, Kubernetes' `terminationGracePeriodSeconds` 30 s, systemd's `TimeoutStopSec` 90 s), for
/// what the application does after serving, such as flushing telemetry; long enough for a tool
/// call of ordinary length. Raise it with the supervisor's timeout for slow tools.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A future that completes when the process is asked to stop: SIGTERM or SIGINT on Unix,
/// Ctrl-C elsewhere. Pass it to a `serve_*` method that takes a shutdown future:
///
/// ```no_run
/// # async fn run(server: modelctx::server::Server) -> std::io::Result<()> {
/// use modelctx::server::{StdioConfig, shutdown_signal};
///
/// server
///     .serve_stdio_until(StdioConfig::default(), shutdown_signal()?)
///     .await?;
/// // Flush telemetry here: the requests in flight have answered.
/// # Ok(()) }
/// ```
///
/// On Unix the handlers are installed by this call, not when the future is first polled: a
/// signal that arrives from now on is caught, even before serving begins. (Once installed,
/// tokio keeps them for the life of the process: a second SIGTERM no longer kills it either,
/// which is what the grace period bounds.) Call it within a tokio runtime with I/O enabled.
///
/// # Errors
/// The handlers could not be installed (no runtime, or the runtime has no I/O driver).
pub fn shutdown_signal() -> io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            // Without a handler, Ctrl-C ends the process the default way: never complete then.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// A transport's view of a shutdown: the future that starts it, then the end of the grace
/// period.
pub(crate) struct Shutdown {
    trigger: Pin<Box<dyn Future<Output = ()> + Send>>,
    grace: Duration,
    /// Set when the trigger fired: the end of the grace period.
    deadline: Option<Instant>,
}

impl Shutdown {
    /// A shutdown that begins when `trigger` completes, and gives requests `grace` to finish.
    pub(crate) fn new(trigger: impl Future<Output = ()> + Send + 'static, grace: Duration) -> Self {
        Self {
            trigger: Box::pin(trigger),
            grace,
            deadline: None,
        }
    }

    /// Whether the shutdown has begun.
    pub(crate) fn begun(&self) -> bool {
        self.deadline.is_some()
    }

    /// Completes when the shutdown begins (at once if it has), starting the grace period.
    pub(crate) async fn begins(&mut self) {
        if self.deadline.is_none() {
            self.trigger.as_mut().await;
            self.deadline = Some(deadline::after_tokio(Instant::now(), self.grace));
        }
    }

    /// The end of the grace period, once the shutdown has begun.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Runs `work` to its end, or until the grace period of a shutdown (begun before or while it
    /// runs) is over: `None` then.
    pub(crate) async fn bound<T>(&mut self, work: impl Future<Output = T>) -> Option<T> {
        let mut work = std::pin::pin!(work);
        loop {
            if let Some(deadline) = self.deadline {
                return tokio::time::timeout_at(deadline, work).await.ok();
            }
            tokio::select! {
                biased;
                done = &mut work => return Some(done),
                () = self.begins() => {}
            }
        }
    }
}

/// Completes at `deadline`; never without one.
pub(crate) async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing is bounded before the trigger; after it, work gets the grace period and no more.
    #[tokio::test(start_paused = true)]
    async fn the_grace_period_starts_when_the_trigger_fires() {
        let (fire, fired) = tokio::sync::oneshot::channel::<()>();
        let mut shutdown = Shutdown::new(
            async {
                let _ = fired.await;
            },
            Duration::from_secs(5),
        );
        assert!(!shutdown.begun());
        let slow = tokio::time::sleep(Duration::from_secs(60));
        assert_eq!(shutdown.bound(slow).await, Some(()), "no shutdown yet");

        let started = Instant::now();
        fire.send(()).unwrap();
        assert_eq!(shutdown.bound(std::future::pending::<()>()).await, None);
        assert!(shutdown.begun());
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        // Work that ends within the grace period still ends.
        let mut shutdown = Shutdown::new(async {}, Duration::from_secs(5));
        shutdown.begins().await;
        let quick = tokio::time::sleep(Duration::from_secs(1));
        assert_eq!(shutdown.bound(quick).await, Some(()));
        // `Duration::MAX` is no grace limit, not a panic.
        let mut shutdown = Shutdown::new(async {}, Duration::MAX);
        shutdown.begins().await;
        let long = tokio::time::sleep(Duration::from_secs(86_400 * 365));
        assert_eq!(shutdown.bound(long).await, Some(()));
    }
}
