//! What runs once per server around its life (the Python SDK's `lifespan`): start-up hooks
//! before it serves its first request, shutdown hooks when it stops
//! ([`ServerBuilder::on_startup`](super::ServerBuilder::on_startup),
//! [`on_shutdown`](super::ServerBuilder::on_shutdown)).
//!
//! Start-up is lazy and shared: the first `serve_*` (or in-process call) runs the hooks, in the
//! order they were given; every other caller waits for the same run and gets its result, which
//! is kept — a server whose start-up failed does not serve, whichever transport asks. Shutdown
//! runs once too, in reverse order, when `serve_stdio` or `serve_http` ends or on
//! [`Server::stop`](super::Server::stop); a server serving many connections (`serve_io` per
//! connection) is stopped by its owner, not by one connection's end.

use std::sync::Mutex;

use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use crate::sync::lock;

/// A start-up hook: its failure, as text, stops the server from serving.
pub(crate) type StartupHook = Box<dyn FnOnce() -> BoxFuture<'static, Result<(), String>> + Send>;

/// A shutdown hook.
pub(crate) type ShutdownHook = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// Why a server did not start: the first start-up hook that failed, and what it said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the server's start-up failed: {0}")]
pub struct StartupError(pub String);

/// The hooks, and whether they ran.
#[derive(Default)]
pub(crate) struct Lifespan {
    startup: Mutex<Vec<StartupHook>>,
    started: OnceCell<Result<(), StartupError>>,
    shutdown: Mutex<Vec<ShutdownHook>>,
    stopped: OnceCell<()>,
}

impl std::fmt::Debug for Lifespan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lifespan")
            .field("started", &self.started.get().is_some())
            .field("stopped", &self.stopped.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Lifespan {
    pub(crate) fn new(startup: Vec<StartupHook>, shutdown: Vec<ShutdownHook>) -> Self {
        Self {
            startup: Mutex::new(startup),
            started: OnceCell::new(),
            shutdown: Mutex::new(shutdown),
            stopped: OnceCell::new(),
        }
    }

    /// Runs the start-up hooks once; every caller gets the one result.
    pub(crate) async fn start(&self) -> Result<(), StartupError> {
        self.started
            .get_or_init(|| async {
                let hooks = std::mem::take(&mut *lock(&self.startup));
                for hook in hooks {
                    if let Err(reason) = hook().await {
                        tracing::error!(%reason, "the server's start-up failed");
                        return Err(StartupError(reason));
                    }
                }
                Ok(())
            })
            .await
            .clone()
    }

    /// Runs the shutdown hooks once, the last given first.
    pub(crate) async fn stop(&self) {
        self.stopped
            .get_or_init(|| async {
                let hooks = std::mem::take(&mut *lock(&self.shutdown));
                for hook in hooks.into_iter().rev() {
                    hook().await;
                }
            })
            .await;
    }
}
