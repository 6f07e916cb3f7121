//! The tasks extension (`io.modelcontextprotocol/tasks`): tool calls that outlive the request —
//! and the server instance — that started them.
//!
//! A tool registered as a [`TaskTool`] answers a client that declares the extension with a task
//! handle (`resultType: "task"`) once the task is durably stored. The client then polls
//! `tasks/get` (or listens for `notifications/tasks` on `subscriptions/listen`), answers the
//! task's input requests with `tasks/update` and may `tasks/cancel` it. Any instance sharing
//! the [`TaskStore`] serves any of these steps.
//!
//! # Writing a task handler
//!
//! A handler is a state machine over the answers received so far, like a multi-round-trip
//! handler: it runs with the arguments, its last checkpoint and every answer, and returns the
//! result or more questions. Because a run can be repeated — after a restart, on another
//! instance, when the answers arrive — everything it must not redo goes in a checkpoint
//! ([`TaskContext::checkpoint`], [`TaskStep::with_state`]).
//!
//! ```
//! use modelctx::server::Server;
//! use modelctx::server::tasks::{MemoryTaskStore, TaskContext, TaskInput, TaskStep, TaskTool, Tasks};
//! use modelctx::types::{CallToolResult, ElicitRequestFormParams, InputRequest, Tool};
//!
//! let confirm = InputRequest::elicit(ElicitRequestFormParams::new(
//!     "Delete the backup?",
//!     Default::default(),
//! ));
//! let tool = TaskTool::new(
//!     Tool::new("purge", Tool::empty_input_schema()),
//!     move |ctx: TaskContext, input: TaskInput| {
//!         let confirm = confirm.clone();
//!         async move {
//!             if input.accepted("confirm").is_none() {
//!                 return TaskStep::ask("confirm", confirm);
//!             }
//!             ctx.set_status_message("purging").await.ok();
//!             TaskStep::Complete(CallToolResult::text("purged"))
//!         }
//!     },
//! );
//! let tasks = Tasks::builder(MemoryTaskStore::new()).tool(tool).build();
//! let server = Server::builder("jobs", "1.0.0").tasks(tasks).build()?;
//! # let _ = server;
//! # Ok::<(), modelctx::server::RegistrationError>(())
//! ```
//!
//! # How the calls go
//!
//! * A client that declares the extension gets a task for [`TaskSupport::Optional`] and
//!   [`TaskSupport::Required`] tools; an optional [preflight](TaskTool::preflight) runs first
//!   and may ask through the ordinary `InputRequiredResult` flow, answer at once, or start the
//!   task with an initial checkpoint.
//! * A client that does not gets `-32021` (with `requiredCapabilities.extensions`) for
//!   `Required` tools; `Optional` and `Forbidden` tools run within the request, their questions
//!   becoming `InputRequiredResult`s (2026-07-28) or back-channel requests (handshake era).
//! * A tool error (`isError: true`) ends the task `completed`; a JSON-RPC error from the
//!   handler (or a panic, as `-32603`) ends it `failed`.
//! * `tasks/cancel` is cooperative: the handler sees [`TaskContext::cancelled`]; one that does
//!   not stop within [`TasksBuilder::cancel_grace`] is dropped. Either way the task ends
//!   `cancelled`.
//!
//! # Limits
//!
//! A principal may have at most [`TasksBuilder::max_tasks_per_principal`] unexpired tasks, and
//! the store at most [`TasksBuilder::max_tasks`]; a `tools/call` past either is answered
//! `-32603` with `data.reason = "task_limit"`. Tasks without a principal are held to the
//! store's limit only (bind one per peer on servers open to anonymous clients). The store
//! counts and inserts atomically ([`TaskStore::create`]), so the limits hold across the
//! instances sharing it.
//!
//! # Restarts and several instances
//!
//! The store holds everything: status, checkpoint, outstanding questions, every answer, the
//! result. The instance running a task holds a lease in the store and renews it; a task waiting
//! for input has no worker. When the last answer arrives, the instance that received it runs the
//! handler again. When an instance dies, its leases lapse and the next sweep of any instance
//! claims the tasks and, per [`OrphanPolicy`], runs them again from their last checkpoint
//! (default) or fails them. A restarted instance with a stable [`TasksBuilder::instance_id`]
//! reclaims its own tasks at once.

#[cfg(feature = "test-util")]
pub mod contract;
mod handler;
mod methods;
mod options;
#[cfg(feature = "tasks-redis")]
mod redis;
mod rules;
mod runtime;
#[cfg(feature = "tasks-sqlite")]
mod sqlite;
mod store;
mod watch;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt as _};
use modelctx_types::tasks::{CancelTask, tasks_capability};
use modelctx_types::tasks::{
    DetailedTask, GetTask, TASK_IDS_FILTER, TaskIdsFilter as _, UpdateTask,
};
use modelctx_types::{ErrorObject, ExtensionId, Method, SubscriptionFilter};

pub use handler::{
    IntoPreflight, IntoTaskStep, Preflight, PreflightHandler, TaskContext, TaskHandler, TaskInput,
    TaskStep, TaskSupport, TaskTool,
};
pub use options::OrphanPolicy;
#[cfg(feature = "tasks-redis")]
pub use redis::RedisTaskStore;
#[cfg(feature = "tasks-sqlite")]
pub use sqlite::SqliteTaskStore;
pub use store::{Admission, Lease, MemoryTaskStore, TaskLimits, TaskRecord, TaskStore};

use methods::{TaskMethod, TaskMethodHandler, TaskToolHandler};
use options::TaskOptions;
use runtime::Runtime;

use super::extension::{Contributions, Extension, MethodBinding};
use super::task_hook::TaskHook;
use super::{RequestContext, ServerBuilder};
use crate::store::StoreError;

/// The task runtime of a server: its store, its task tools and this instance's workers. Give it
/// to [`ServerBuilder::tasks`]. Cheap to clone.
#[derive(Clone)]
pub struct Tasks {
    runtime: Arc<Runtime>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("instance", &self.runtime.instance)
            .field("tools", &self.runtime.order)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// Starts configuring a runtime on `store`.
    pub fn builder(store: impl TaskStore) -> TasksBuilder {
        Self::builder_shared(Arc::new(store))
    }

    /// [`Tasks::builder`] with a store shared with other code (or other runtimes in tests).
    pub fn builder_shared(store: Arc<dyn TaskStore>) -> TasksBuilder {
        TasksBuilder {
            store,
            tools: Vec::new(),
            options: TaskOptions::default(),
            instance: None,
        }
    }

    /// This instance's id (the owner of the leases it takes).
    pub fn instance_id(&self) -> &str {
        &self.runtime.instance
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.runtime.store)
    }

    /// A task as `tasks/get` would show it, for operators (no principal check).
    ///
    /// # Errors
    /// The store failed.
    pub async fn task(&self, task_id: &str) -> Result<Option<DetailedTask>, StoreError> {
        Ok(self
            .runtime
            .store
            .load(task_id)
            .await?
            .map(|record| self.runtime.detailed(&record)))
    }

    /// Starts the background sweep (orphaned tasks, expired tasks). Building a server inside a
    /// Tokio runtime does it; so does the first task.
    pub fn start(&self) {
        self.runtime.start();
    }

    /// Runs one sweep now; returns how many orphaned tasks this instance resumed.
    ///
    /// # Errors
    /// The store failed.
    pub async fn sweep(&self) -> Result<usize, StoreError> {
        self.runtime.sweep().await
    }

    /// Stops this instance's workers and sweep and releases their leases, so that another
    /// instance (or this one, restarted) resumes the tasks at once. The tasks themselves are
    /// untouched.
    pub async fn shutdown(&self) {
        self.runtime.shutdown().await;
    }

    /// Stops this instance's workers and sweep at once without writing anything, as a crash
    /// would: their tasks resume elsewhere once their leases lapse ([`TasksBuilder::lease`]).
    /// For fail-fast exits and tests.
    pub fn halt(&self) {
        self.runtime.halt();
    }
}

/// The core hooks the tasks extension contributes (`Extension::contribute`, below).
impl TaskHook for Tasks {
    fn start(&self) {
        self.runtime.start();
    }

    fn store_scope(&self) -> crate::store::StateScope {
        self.runtime.store.scope()
    }

    /// Publishes this runtime's task updates on `bus` (the first server built with a bus on
    /// this runtime wins), and returns the channel the bus delivers other instances' into.
    fn join_bus(
        &self,
        bus: &Arc<crate::server::bus::Bus>,
    ) -> tokio::sync::broadcast::Sender<String> {
        let _ = self.runtime.bus.set(Arc::clone(bus));
        self.runtime.updates.clone()
    }

    /// The distinct `taskIds` of a listen filter, taken out of it, in the order first named
    /// (`None` when it names none, or not as an array of strings: an unknown member then).
    /// Refused before the store is read: `-32021` when the request did not declare the
    /// extension, `-32602` when it names more tasks than its client may have (the principal's
    /// task limit, or the store's for a request without one): such a stream would follow ids
    /// that cannot all exist, and each costs a store read when the stream starts and every poll
    /// interval after.
    fn listen_ids(
        &self,
        ctx: &RequestContext,
        filter: &mut SubscriptionFilter,
    ) -> Result<Option<Vec<String>>, ErrorObject> {
        let Some(value) = filter.extra.remove(TASK_IDS_FILTER) else {
            return Ok(None);
        };
        let Ok(asked) = serde_json::from_value::<Vec<String>>(value) else {
            return Ok(None);
        };
        ctx.require_capabilities(&tasks_capability())?;
        let limits = self.runtime.options.limits;
        let most = match ctx.principal() {
            Some(_) => limits.per_principal.or(limits.total),
            None => limits.total,
        }
        .unwrap_or(usize::MAX);
        let mut seen = HashSet::new();
        let mut ids = Vec::new();
        for id in asked {
            if seen.contains(&id) {
                continue;
            }
            if ids.len() == most {
                return Err(ErrorObject::invalid_params(format!(
                    "Invalid params: taskIds names more than {most} distinct tasks, the most \
                     this client may have"
                )));
            }
            seen.insert(id.clone());
            ids.push(id);
        }
        Ok(Some(ids))
    }

    /// The task notifications of a listen stream following `ids` (distinct, within the
    /// caller's limit: `TaskHook::listen_ids`): the honoured ids — those of existing tasks the
    /// caller may see, read from the store in batches — go into `honored`, and the states
    /// those reads found are the stream's first (each task read once to start).
    fn listen<'a>(
        &'a self,
        ctx: &'a RequestContext,
        ids: Vec<String>,
        honored: &'a mut SubscriptionFilter,
    ) -> BoxFuture<'a, BoxStream<'static, DetailedTask>> {
        Box::pin(self.listen_to(ctx, ids, honored))
    }
}

impl Tasks {
    /// [`TaskHook::listen`], as the future it boxes.
    async fn listen_to(
        &self,
        ctx: &RequestContext,
        ids: Vec<String>,
        honored: &mut SubscriptionFilter,
    ) -> BoxStream<'static, DetailedTask> {
        let principal = ctx.principal().map(|p| p.as_str().to_owned());
        let visible = self.runtime.visible(ids, principal.as_deref()).await;
        honored.set_task_ids(Some(visible.ids.clone()));
        if visible.ids.is_empty() {
            return futures::stream::pending().boxed();
        }
        self.runtime
            .watch(visible, principal)
            .chain(futures::stream::pending())
            .boxed()
    }
}

/// Configures a [`Tasks`] runtime.
pub struct TasksBuilder {
    store: Arc<dyn TaskStore>,
    tools: Vec<TaskTool>,
    options: TaskOptions,
    instance: Option<String>,
}

impl std::fmt::Debug for TasksBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasksBuilder")
            .field("tools", &self.tools)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TasksBuilder {
    /// Adds a task tool (listed in `tools/list` in registration order, after the server's
    /// ordinary tools registered before [`ServerBuilder::tasks`]).
    #[must_use]
    pub fn tool(mut self, tool: TaskTool) -> Self {
        self.tools.push(tool);
        self
    }

    /// How long a task is kept after creation (`ttlMs`); `None` keeps it forever. Default 24 h.
    #[must_use]
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.options.ttl = ttl;
        self
    }

    /// The polling interval suggested to clients (`pollIntervalMs`), also how often listen
    /// streams and workers look at the store for changes made elsewhere. Default 1 s.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.options.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How long a worker's claim on a task lasts without renewal: after a crash, its tasks
    /// resume elsewhere within about this long (plus a sweep interval). Default 30 s.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// How often the sweep looks for orphaned and expired tasks. Default 10 s.
    #[must_use]
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.options.sweep_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long a cancelled handler may take to stop before it is dropped. Default 5 s.
    #[must_use]
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.options.cancel_grace = grace;
        self
    }

    /// What happens to the tasks of a dead instance. Default [`OrphanPolicy::Resume`].
    #[must_use]
    pub fn orphans(mut self, policy: OrphanPolicy) -> Self {
        self.options.orphans = policy;
        self
    }

    /// The most unexpired tasks one principal may have (default 1 000; `None`: no limit). A
    /// `tools/call` past it is answered `-32603` with `data: {"reason": "task_limit", "scope":
    /// "principal", "limit": n}`. Finished tasks count until their [TTL](Self::ttl) elapses:
    /// their results are kept that long.
    ///
    /// Tasks without a principal (no authentication, no
    /// [`bind_principal`](crate::server::ServerBuilder::bind_principal) hook) are held to
    /// [`Self::max_tasks`] only: there is no identity to be fair to, and one shared count would
    /// let a single anonymous client lock every other out for a TTL. A server open to anonymous
    /// clients should bind a principal per peer
    /// ([`RequestContext::peer_addr`](crate::server::RequestContext::peer_addr); behind a proxy,
    /// a header it sets), or lower [`Self::max_tasks`] to what one such client may hold.
    #[must_use]
    pub fn max_tasks_per_principal(mut self, limit: Option<usize>) -> Self {
        self.options.limits.per_principal = limit;
        self
    }

    /// The most unexpired tasks in the store (default 10 000; `None`: no limit), counted over
    /// every instance sharing it. Past it, `-32603` with `data.scope = "server"`.
    #[must_use]
    pub fn max_tasks(mut self, limit: Option<usize>) -> Self {
        self.options.limits.total = limit;
        self
    }

    /// A stable id for this instance (e.g. the host name): after a restart it reclaims the
    /// tasks it ran at once, instead of waiting for their leases to lapse. Default: random per
    /// process. Two live instances must never share an id.
    #[must_use]
    pub fn instance_id(mut self, id: impl Into<String>) -> Self {
        self.instance = Some(id.into());
        self
    }

    /// Builds the runtime. Without an [instance id](Self::instance_id) it draws a random one;
    /// if the system has no randomness, the server given this runtime fails to build
    /// ([`super::RegistrationError::Tasks`]) and the runtime creates no task.
    pub fn build(self) -> Tasks {
        let instance = match self.instance {
            Some(id) => Ok(id),
            None => crate::ids::random_hex()
                .map_err(|e| format!("no instance id: system randomness failed: {e}")),
        };
        Tasks {
            runtime: Runtime::new(self.store, self.tools, self.options, instance),
        }
    }
}

impl ServerBuilder {
    /// Serves the tasks extension: registers the runtime's task tools, answers `tasks/get`,
    /// `tasks/update` and `tasks/cancel`, declares `io.modelcontextprotocol/tasks` in
    /// `server/discover`, and sends `notifications/tasks` on listen streams that ask for them.
    /// The same as [`ServerBuilder::extension`] with the runtime, which is an [`Extension`].
    #[must_use]
    pub fn tasks(self, tasks: Tasks) -> Self {
        self.extension(tasks)
    }
}

/// The tasks extension on the extension seam: its task tools, its three methods, and the core
/// hooks (`TaskHook`) the listen streams, the bus and the sweep ask.
impl Extension for Tasks {
    fn id(&self) -> ExtensionId {
        ExtensionId::new(modelctx_types::TASKS_EXTENSION)
            .expect("the tasks extension's id is valid")
    }

    fn contribute(&self, contributions: &mut Contributions) {
        let runtime = &self.runtime;
        if let Some(reason) = &runtime.broken {
            contributions.refuse(super::RegistrationError::Tasks(reason.clone()));
        }
        for name in &runtime.order {
            let tool = runtime.tools[name].tool.clone();
            let handler = TaskToolHandler {
                runtime: Arc::clone(runtime),
                name: name.clone(),
            };
            contributions.tool(tool, handler);
        }
        for (name, method) in [
            (GetTask::NAME, TaskMethod::Get),
            (UpdateTask::NAME, TaskMethod::Update),
            (CancelTask::NAME, TaskMethod::Cancel),
        ] {
            let handler = TaskMethodHandler {
                runtime: Arc::clone(runtime),
                method,
            };
            match MethodBinding::new(name, handler) {
                Ok(binding) => contributions.method(binding),
                Err(refused) => {
                    contributions.refuse(super::RegistrationError::Tasks(refused.to_string()))
                }
            };
        }
        contributions.task_hook(Arc::new(self.clone()));
    }
}
