//! What one request may carry besides its params ([`RequestOptions`]: progress, timeout, cache
//! mode), and what one round of it ends with ([`RoundOutcome`]).

use std::sync::Arc;
use std::time::Duration;

use modelctx_types::InputRequiredResult;

use crate::client::cache::mode::CacheMode;
use crate::client::callbacks::{ProgressCallback, Task2025StatusCallback, TaskStatusCallback};

/// The outcome of one round of a request that may ask for input.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundOutcome<T> {
    /// The final result.
    Complete(T),
    /// The server needs input: answer `inputRequests`, then retry the same request with
    /// `inputResponses` and the `requestState` echoed byte for byte.
    InputRequired(InputRequiredResult),
}

impl<T> RoundOutcome<T> {
    /// The final result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Self::Complete(t) => Some(t),
            Self::InputRequired(_) => None,
        }
    }

    /// The input-required result, if this is one.
    pub fn input_required(self) -> Option<InputRequiredResult> {
        match self {
            Self::InputRequired(i) => Some(i),
            Self::Complete(_) => None,
        }
    }
}

/// Options for one request.
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(crate) progress: Option<ProgressCallback>,
    pub(crate) timeout: Option<Duration>,
    /// The tasks extension: changes of the task a `tools/call` becomes (client/tasks.rs).
    pub(crate) task_status: Option<TaskStatusCallback>,
    /// 2025-11-25: call an `optional` task tool as a task (client/tasks_2025.rs).
    pub(crate) task_2025: bool,
    /// 2025-11-25: the statuses of the task a `tools/call` runs as.
    pub(crate) task_2025_status: Option<Task2025StatusCallback>,
    /// How the call uses the response cache (client/cache).
    pub(crate) cache: CacheMode,
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .field("task_status", &self.task_status.is_some())
            .field("task_2025", &self.task_2025)
            .field("task_2025_status", &self.task_2025_status.is_some())
            .field("cache", &self.cache)
            .finish()
    }
}

impl RequestOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for progress notifications (a `progressToken` is added to `_meta`) and hands them
    /// to `callback`, which runs on the transport's reader task.
    #[must_use]
    pub fn on_progress(
        mut self,
        callback: impl Fn(modelctx_types::ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }

    /// Bounds each round trip of this request (overrides the client's request timeout).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How a cacheable call (the listings, `resources/read`) uses the client's response cache
    /// (default [`CacheMode::Use`]; see [`cache`](crate::client::cache)). A call with a progress
    /// callback always reaches the server.
    #[must_use]
    pub fn cache(mut self, mode: CacheMode) -> Self {
        self.cache = mode;
        self
    }

    /// The cache mode the call runs with: a progress callback expects a request on the wire.
    pub(crate) fn cache_mode(&self) -> CacheMode {
        match self.cache {
            CacheMode::Use if self.progress.is_some() => CacheMode::Refresh,
            mode => mode,
        }
    }
}
