//! The task engine: creation, the workers that run handlers, every state transition (as a
//! compare-and-swap on the store), the orphan sweep, and the watch streams behind
//! `notifications/tasks`.
//!
//! Ownership: a `working` task is run by the instance holding its [`Lease`]. A worker renews
//! the lease while the handler runs and reads the record at the same time, which is how a
//! `tasks/cancel` received by another instance reaches it. A task whose lease lapsed (its
//! instance died) is claimed by the next sweep of any instance and, by default, run again from
//! its last checkpoint. A task waiting for input has no worker at all: the instance that
//! receives the last missing answer claims it and starts one.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use futures::FutureExt as _;
use modelctx_types::tasks::{CreateTaskResult, DetailedTask, Task, TaskStatus};
use modelctx_types::{
    ClientCapabilities, ErrorCode, ErrorObject, Extra, InputResponses, ResultType,
};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::handler::{Checkpoints, TaskContext, TaskInput, TaskStep, TaskTool};
use super::options::{OrphanPolicy, TaskOptions};
use super::rules::{cancelled, check_questions, failed, iso8601, millis, now_ms};
use super::store::{Admission, Lease, TaskRecord, TaskStore};
use crate::server::bus::{Bus, Event};
use crate::server::limit_error::limit_reached;
use crate::store::StoreError;
use crate::sync::lock;

/// Why a task operation failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No such task (or expired, or another principal's): `-32602`.
    NotFound,
    /// A JSON-RPC error to return as is.
    Rpc(ErrorObject),
    /// The store failed: `-32603`.
    Store(StoreError),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

impl From<Failure> for ErrorObject {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NotFound => {
                ErrorObject::invalid_params("Failed to retrieve task: Task not found")
            }
            Failure::Rpc(error) => error,
            Failure::Store(error) => {
                tracing::error!(%error, "task store failure");
                ErrorObject::internal("Internal error")
            }
        }
    }
}

struct Worker {
    cancel: CancellationToken,
    abort: AbortHandle,
}

/// How a worker's run ended.
enum Ended {
    /// The handler returned.
    Ran(Result<TaskStep, ErrorObject>),
    /// The handler panicked.
    Panicked,
    /// Cancelled, and the handler did not stop within the grace period.
    Abandoned,
}

/// See the module docs.
pub(crate) struct Runtime {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) tools: HashMap<String, TaskTool>,
    /// Tool names in registration order.
    pub(crate) order: Vec<String>,
    pub(crate) options: TaskOptions,
    pub(crate) instance: String,
    /// Why this runtime cannot run tasks (no instance id: system randomness failed).
    pub(crate) broken: Option<String>,
    running: Mutex<HashMap<String, Worker>>,
    pub(super) updates: broadcast::Sender<String>,
    /// The server's change bus, once a server with one is built on this runtime: updates are
    /// published there too, so listeners on other instances hear them at once.
    pub(super) bus: OnceLock<Arc<Bus>>,
    shutdown: CancellationToken,
    started: AtomicBool,
    this: Weak<Runtime>,
}

impl Runtime {
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        tools: Vec<TaskTool>,
        options: TaskOptions,
        instance: Result<String, String>,
    ) -> Arc<Self> {
        let (instance, broken) = match instance {
            Ok(id) => (id, None),
            Err(reason) => (String::new(), Some(reason)),
        };
        let order = tools.iter().map(|t| t.tool.name.clone()).collect();
        let tools = tools
            .into_iter()
            .map(|t| (t.tool.name.clone(), t))
            .collect();
        let (updates, _) = broadcast::channel(256);
        Arc::new_cyclic(|this| Self {
            store,
            tools,
            order,
            options,
            instance,
            broken,
            running: Mutex::new(HashMap::new()),
            updates,
            bus: OnceLock::new(),
            shutdown: CancellationToken::new(),
            started: AtomicBool::new(false),
            this: this.clone(),
        })
    }

    pub(super) fn arc(&self) -> Option<Arc<Self>> {
        self.this.upgrade()
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Worker>> {
        lock(&self.running)
    }

    fn is_running(&self, id: &str) -> bool {
        self.running().contains_key(id)
    }

    fn owns(&self, record: &TaskRecord) -> bool {
        record
            .lease
            .as_ref()
            .is_some_and(|lease| lease.owner == self.instance)
    }

    fn lease(&self, now: u64) -> Lease {
        Lease {
            owner: self.instance.clone(),
            until_ms: now.saturating_add(millis(self.options.lease)),
        }
    }

    /// Starts the orphan sweep (once, and only inside a Tokio runtime).
    pub(crate) fn start(&self) {
        if self.broken.is_some() || self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(sweep_loop(self.this.clone()));
            }
            Err(_) => self.started.store(false, Ordering::Release),
        }
    }

    /// Stops the sweep and every local worker at once, writing nothing (as a crash would):
    /// their leases lapse on their own. Returns the ids of the stopped tasks.
    pub(crate) fn halt(&self) -> Vec<String> {
        self.shutdown.cancel();
        let mut running = self.running();
        running
            .drain()
            .map(|(id, worker)| {
                worker.cancel.cancel();
                worker.abort.abort();
                id
            })
            .collect()
    }

    /// Stops the sweep and every local worker, and releases their leases so that another
    /// instance resumes them at once. Nothing else is written: the tasks stay as they are.
    pub(crate) async fn shutdown(&self) {
        let stopped = self.halt();
        for id in stopped {
            let released = self
                .transition(&id, |record| {
                    if !self.owns(record) {
                        return Ok(None);
                    }
                    record.lease = None;
                    Ok(Some(()))
                })
                .await;
            if let Err(Failure::Store(error)) = released {
                tracing::warn!(task = %id, %error, "lease not released; it lapses on its own");
            }
        }
    }

    fn announce(&self, id: &str) {
        if let Some(bus) = self.bus.get() {
            bus.publish(&Event::Task(id.to_owned()));
        }
        // No receivers: nobody listens.
        let _ = self.updates.send(id.to_owned());
    }

    /// A read-modify-write of one task, retried on conflict. `edit` returns `Ok(None)` to leave
    /// the task untouched. A change clients can see bumps `lastUpdatedAt` and is announced to
    /// this instance's listen streams (the others see it on their next poll).
    pub(crate) async fn transition<T>(
        &self,
        id: &str,
        mut edit: impl FnMut(&mut TaskRecord) -> Result<Option<T>, Failure>,
    ) -> Result<Option<(TaskRecord, T)>, Failure> {
        for attempt in 0u32..64 {
            let now = now_ms();
            let current = match self.store.load(id).await? {
                Some(record) if !record.is_expired(now) => record,
                _ => return Err(Failure::NotFound),
            };
            let mut next = current.clone();
            let Some(value) = edit(&mut next)? else {
                return Ok(None);
            };
            next.version = current.version + 1;
            let visible = self.detailed(&current) != self.detailed(&next);
            if visible {
                next.updated_at_ms = now.max(current.updated_at_ms);
            }
            if self.store.swap(&next, current.version).await? {
                if visible {
                    self.announce(id);
                }
                return Ok(Some((next, value)));
            }
            // Lost a race with another writer: reload and try again, not in lock step.
            let jitter = u64::from(attempt.min(8)) * 2 + now % 3;
            tokio::time::sleep(Duration::from_millis(jitter)).await;
        }
        Err(Failure::Store(StoreError::new(format!(
            "task {id}: too many concurrent writers"
        ))))
    }

    /// What `tasks/get` shows of a record.
    pub(crate) fn detailed(&self, record: &TaskRecord) -> DetailedTask {
        let mut task = Task::new(
            record.task_id.clone(),
            record.status.clone(),
            iso8601(record.created_at_ms),
            record.ttl_ms,
        );
        task.last_updated_at = iso8601(record.updated_at_ms);
        task.status_message.clone_from(&record.status_message);
        task.poll_interval_ms = record.poll_interval_ms;
        let mut detailed = DetailedTask::from_task(task);
        if record.status == TaskStatus::INPUT_REQUIRED {
            detailed.input_requests = Some(record.pending.clone());
        } else if record.status == TaskStatus::COMPLETED {
            detailed.result = Some(record.result.clone().unwrap_or_default());
        } else if record.status == TaskStatus::FAILED {
            detailed.error = Some(
                record
                    .error
                    .clone()
                    .unwrap_or_else(|| ErrorObject::internal("Internal error")),
            );
        }
        detailed
    }

    /// Loads a task as `principal` may see it.
    pub(crate) async fn load_visible(
        &self,
        id: &str,
        principal: Option<&str>,
    ) -> Result<TaskRecord, Failure> {
        match self.store.load(id).await? {
            Some(record) if Self::is_visible(&record, principal, now_ms()) => Ok(record),
            _ => Err(Failure::NotFound),
        }
    }

    /// Whether `principal` may see `record` at `now` (Unix milliseconds): its own, unexpired.
    pub(crate) fn is_visible(record: &TaskRecord, principal: Option<&str>, now: u64) -> bool {
        !record.is_expired(now) && record.principal.as_deref() == principal
    }

    /// Creates a task (durably: the store write completes first) unless its principal or the
    /// store is at its limit, starts its worker here, and returns the handle for the client.
    pub(crate) async fn create(
        &self,
        tool: &str,
        arguments: Extra,
        capabilities: ClientCapabilities,
        principal: Option<String>,
        state: Option<serde_json::Value>,
    ) -> Result<CreateTaskResult, Failure> {
        if let Some(reason) = &self.broken {
            tracing::error!(%reason, "no task created");
            return Err(Failure::Rpc(ErrorObject::internal("Internal error")));
        }
        let id = crate::ids::random_hex().map_err(|error| {
            tracing::error!(%error, "no task created: system randomness failed");
            Failure::Rpc(ErrorObject::internal("Internal error"))
        })?;
        let now = now_ms();
        let mut record = TaskRecord::new(id, tool.to_owned(), now);
        record.arguments = arguments;
        record.client_capabilities = capabilities;
        record.principal = principal;
        record.ttl_ms = self.options.ttl.map(millis);
        record.poll_interval_ms = Some(millis(self.options.poll_interval).max(1));
        record.state = state;
        record.lease = Some(self.lease(now));
        let limits = self.options.limits;
        match self.store.create(&record, limits).await? {
            Admission::Created => {}
            Admission::PrincipalLimit => {
                let limit = limits.per_principal.unwrap_or_default();
                tracing::info!(principal = ?record.principal, limit, "task refused: the principal is at its limit");
                return Err(Failure::Rpc(task_limit("principal", limit)));
            }
            Admission::TotalLimit => {
                let limit = limits.total.unwrap_or_default();
                tracing::warn!(limit, "task refused: the server is at its task limit");
                return Err(Failure::Rpc(task_limit("server", limit)));
            }
        }
        self.start();
        self.spawn_worker(&record.task_id);
        Ok(CreateTaskResult::from(self.detailed(&record).task()))
    }

    /// Runs the task's handler on this instance, unless a local worker already does.
    fn spawn_worker(&self, id: &str) {
        let Some(this) = self.arc() else {
            return;
        };
        let mut running = self.running();
        if running.contains_key(id) || self.shutdown.is_cancelled() {
            return;
        }
        let cancel = CancellationToken::new();
        let task_id = id.to_owned();
        let token = cancel.clone();
        let handle = tokio::spawn(async move {
            if let Err(failure) = this.work(&task_id, &token).await {
                tracing::warn!(task = %task_id, ?failure, "task worker stopped");
            }
            this.running().remove(&task_id);
        });
        running.insert(
            id.to_owned(),
            Worker {
                cancel,
                abort: handle.abort_handle(),
            },
        );
    }

    /// One run of the handler, then the transition it leads to.
    async fn work(&self, id: &str, cancel: &CancellationToken) -> Result<(), Failure> {
        let Some(record) = self.store.load(id).await? else {
            return Ok(());
        };
        if record.status != TaskStatus::WORKING || !self.owns(&record) {
            return Ok(());
        }
        if record.cancel_requested {
            cancel.cancel();
        }
        let Some(tool) = self.tools.get(&record.tool) else {
            let error = ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool {:?} is not served by this instance", record.tool),
            );
            return self.settle(id, &Ended::Ran(Err(error))).await;
        };
        let Some(this) = self.arc() else {
            return Ok(());
        };
        let ctx = TaskContext::for_task(
            this,
            id.to_owned(),
            record.client_capabilities.clone(),
            record.principal.clone(),
            cancel.clone(),
        );
        let input = TaskInput {
            arguments: record.arguments.clone(),
            state: record.state.clone(),
            responses: record.answers.clone(),
        };
        let run = AssertUnwindSafe(tool.handler.run(ctx, input)).catch_unwind();
        tokio::pin!(run);
        let watch = self.keep_lease(id, cancel);
        tokio::pin!(watch);
        let mut deadline: Option<tokio::time::Instant> = None;
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
        let ended = loop {
            tokio::select! {
                out = &mut run => break out.map_or(Ended::Panicked, Ended::Ran),
                // The lease is gone (another instance took the task over) or this instance
                // shuts down: drop the run without writing anything.
                () = &mut watch => return Ok(()),
                () = cancel.cancelled(), if deadline.is_none() => {
                    deadline = Some(crate::server::deadline::after_tokio(
                        tokio::time::Instant::now(),
                        self.options.cancel_grace,
                    ));
                }
                () = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                    break Ended::Abandoned;
                }
            }
        };
        self.settle(id, &ended).await
    }

    /// Renews the lease and watches for cancellation while the handler runs; returns when the
    /// lease is lost or the instance shuts down.
    async fn keep_lease(&self, id: &str, cancel: &CancellationToken) {
        let lease = millis(self.options.lease);
        let tick = self
            .options
            .poll_interval
            .min(self.options.lease / 3)
            .max(Duration::from_millis(10));
        loop {
            tokio::select! {
                () = tokio::time::sleep(tick) => {}
                () = self.shutdown.cancelled() => return,
            }
            let record = match self.store.load(id).await {
                Ok(Some(record)) => record,
                Ok(None) => return,
                Err(error) => {
                    // A hiccup is not a lost lease; if it lasts, the lease lapses and another
                    // instance resumes the task.
                    tracing::warn!(task = %id, %error, "lease renewal: store unavailable");
                    continue;
                }
            };
            if record.status != TaskStatus::WORKING || !self.owns(&record) {
                return;
            }
            if record.cancel_requested {
                cancel.cancel();
            }
            let now = now_ms();
            let left = record
                .lease
                .as_ref()
                .map_or(0, |l| l.until_ms.saturating_sub(now));
            if left < lease * 2 / 3 {
                let renewed = self
                    .transition(id, |record| {
                        if record.status != TaskStatus::WORKING || !self.owns(record) {
                            return Ok(None);
                        }
                        record.lease = Some(self.lease(now_ms()));
                        Ok(Some(()))
                    })
                    .await;
                match renewed {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(Failure::NotFound) => return,
                    Err(failure) => tracing::warn!(task = %id, ?failure, "lease not renewed"),
                }
            }
        }
    }

    /// Writes the outcome of a run.
    async fn settle(&self, id: &str, ended: &Ended) -> Result<(), Failure> {
        self.transition(id, |record| {
            if record.status != TaskStatus::WORKING || !self.owns(record) {
                return Ok(None);
            }
            record.lease = None;
            if record.cancel_requested || matches!(ended, Ended::Abandoned) {
                cancelled(record);
                return Ok(Some(()));
            }
            match ended {
                Ended::Panicked => {
                    tracing::error!(task = %record.task_id, "task handler panicked");
                    failed(record, ErrorObject::internal("Internal error"));
                }
                Ended::Ran(Err(error)) => failed(record, error.clone()),
                Ended::Ran(Ok(TaskStep::Complete(result))) => {
                    let mut result = result.clone();
                    result.result_type = Some(ResultType::COMPLETE);
                    match serde_json::to_value(&result) {
                        Ok(serde_json::Value::Object(map)) => {
                            record.status = TaskStatus::COMPLETED;
                            record.result = Some(map);
                            record.pending.clear();
                        }
                        _ => failed(record, ErrorObject::internal("result not encodable")),
                    }
                }
                Ended::Ran(Ok(TaskStep::Ask { requests, state })) => {
                    match check_questions(record, requests) {
                        Err(error) => failed(record, error),
                        Ok(()) => {
                            record.status = TaskStatus::INPUT_REQUIRED;
                            record.issued_keys.extend(requests.keys().cloned());
                            record.pending.clone_from(requests);
                            if state.is_some() {
                                record.state.clone_from(state);
                            }
                        }
                    }
                }
                Ended::Abandoned => cancelled(record),
            }
            Ok(Some(()))
        })
        .await
        .map(|_| ())
    }

    /// Saves a checkpoint and/or a status message for a task this instance runs.
    pub(crate) async fn checkpoint(
        &self,
        id: &str,
        state: Option<serde_json::Value>,
        message: Option<String>,
    ) -> Result<(), ErrorObject> {
        self.transition(id, |record| {
            if record.status != TaskStatus::WORKING || !self.owns(record) {
                return Err(Failure::Rpc(ErrorObject::internal(
                    "this instance no longer runs the task",
                )));
            }
            if state.is_some() {
                record.state.clone_from(&state);
            }
            if message.is_some() {
                record.status_message.clone_from(&message);
            }
            Ok(Some(()))
        })
        .await
        .map(|_| ())
        .map_err(ErrorObject::from)
    }

    /// `tasks/update`: records the answers to outstanding requests; the last one resumes the
    /// task on this instance.
    pub(crate) async fn update(
        &self,
        id: &str,
        principal: Option<&str>,
        responses: &InputResponses,
    ) -> Result<(), Failure> {
        let resumed = self
            .transition(id, |record| {
                if record.principal.as_deref() != principal {
                    return Err(Failure::NotFound);
                }
                if record.status != TaskStatus::INPUT_REQUIRED {
                    // Nothing is outstanding: every answer is ignored.
                    return Ok(None);
                }
                for (key, response) in responses {
                    if let Some(request) = record.pending.get(key) {
                        response.read_for(request).map_err(|e| {
                            Failure::Rpc(ErrorObject::invalid_params(format!(
                                "Invalid request parameters: inputResponses[{key:?}]: {e}"
                            )))
                        })?;
                    }
                }
                let mut accepted = false;
                for (key, response) in responses {
                    if record.pending.remove(key).is_some() {
                        record.answers.insert(key.clone(), response.clone());
                        accepted = true;
                    }
                }
                if !accepted {
                    return Ok(None);
                }
                if !record.pending.is_empty() {
                    return Ok(Some(false));
                }
                record.status = TaskStatus::WORKING;
                record.status_message = None;
                record.lease = Some(self.lease(now_ms()));
                Ok(Some(true))
            })
            .await?;
        if let Some((_, true)) = resumed {
            self.spawn_worker(id);
        }
        Ok(())
    }

    /// `tasks/cancel`: a waiting (or orphaned) task is cancelled at once; a running one is
    /// asked to stop — immediately when it runs here, at its next lease check elsewhere.
    pub(crate) async fn cancel(&self, id: &str, principal: Option<&str>) -> Result<(), Failure> {
        let now = now_ms();
        let outcome = self
            .transition(id, |record| {
                if record.principal.as_deref() != principal {
                    return Err(Failure::NotFound);
                }
                if record.is_terminal() {
                    return Ok(None);
                }
                let live = record.status == TaskStatus::WORKING
                    && record.lease.as_ref().is_some_and(|l| l.until_ms > now);
                if live {
                    if record.cancel_requested {
                        return Ok(None);
                    }
                    record.cancel_requested = true;
                } else {
                    record.lease = None;
                    cancelled(record);
                }
                Ok(Some(()))
            })
            .await?;
        if outcome.is_some()
            && let Some(worker) = self.running().get(id)
        {
            worker.cancel.cancel();
        }
        Ok(())
    }

    /// Claims the orphaned `working` tasks (lease lapsed, or held by this instance with no
    /// worker here) and resumes or fails them per the [`OrphanPolicy`]; purges expired tasks.
    pub(crate) async fn sweep(&self) -> Result<usize, StoreError> {
        if let Some(reason) = &self.broken {
            return Err(StoreError::new(reason.clone()));
        }
        let now = now_ms();
        self.store.purge_expired(now).await?;
        let mut resumed = 0;
        for id in self.store.active().await? {
            if self.is_running(&id) {
                continue;
            }
            let claimed = self
                .transition(&id, |record| {
                    let orphan = record.status == TaskStatus::WORKING
                        && match &record.lease {
                            None => true,
                            Some(lease) => {
                                lease.until_ms <= now
                                    || (lease.owner == self.instance && !self.is_running(&id))
                            }
                        };
                    if !orphan {
                        return Ok(None);
                    }
                    match self.options.orphans {
                        OrphanPolicy::Resume => {
                            record.lease = Some(self.lease(now));
                            Ok(Some(true))
                        }
                        OrphanPolicy::Fail => {
                            record.lease = None;
                            failed(
                                record,
                                ErrorObject::internal(
                                    "The task was interrupted: its server instance stopped",
                                ),
                            );
                            Ok(Some(false))
                        }
                    }
                })
                .await;
            match claimed {
                Ok(Some((_, true))) => {
                    tracing::info!(task = %id, "resuming an orphaned task");
                    self.spawn_worker(&id);
                    resumed += 1;
                }
                Ok(_) | Err(Failure::NotFound) => {}
                Err(Failure::Store(error)) => return Err(error),
                Err(Failure::Rpc(_)) => {}
            }
        }
        Ok(resumed)
    }
}

impl Checkpoints for Runtime {
    fn save<'a>(
        &'a self,
        id: &'a str,
        state: Option<serde_json::Value>,
        message: Option<String>,
    ) -> crate::server::BoxFuture<'a, Result<(), ErrorObject>> {
        Box::pin(self.checkpoint(id, state, message))
    }
}

/// The answer to a `tools/call` that would exceed a task limit: `-32603` with
/// `data.reason = "task_limit"` (see DESIGN.md, "Tasks", for why this code).
fn task_limit(scope: &str, limit: usize) -> ErrorObject {
    let whose = if scope == "principal" {
        "this client has"
    } else {
        "the server has"
    };
    limit_reached(
        "task_limit",
        scope,
        limit,
        format!("Too many tasks: {whose} {limit} unexpired tasks; try again when some expire"),
    )
}

async fn sweep_loop(runtime: Weak<Runtime>) {
    loop {
        let Some(strong) = runtime.upgrade() else {
            return;
        };
        if let Err(error) = strong.sweep().await {
            tracing::warn!(%error, "task sweep failed");
        }
        let interval = strong.options.sweep_interval;
        let shutdown = strong.shutdown.clone();
        drop(strong);
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = shutdown.cancelled() => return,
        }
    }
}
