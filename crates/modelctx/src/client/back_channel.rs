//! Limits on the handshake era's back-channel: the server→client requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) a 2025-11-25 server sends over the session.
//!
//! They arrive at any time, each answered in a task of its own, so without bounds a server
//! could make the client run any number of callbacks at once and run the LLM (sampling) without
//! end. The same limits as the input-required loop apply:
//!
//! * at most `max_input_requests` server requests are being answered at a time; a request
//!   beyond that is refused at once with an error response (waiting would let a flood of
//!   requests pile up in memory);
//! * at most `max_concurrent_callbacks` callbacks run at once; the others wait their turn;
//! * sampling is charged to the calls in flight: every `call_tool` / `get_prompt` /
//!   `read_resource` of the client brings a budget of `max_sampling` sampling requests that
//!   lasts while it runs. A sampling request finds no budget left — or no call in flight, as
//!   SEP-2260 asks of servers — is refused with an error response, and the calls in flight then
//!   fail locally with [`ClientError::SamplingBudgetExceeded`].
//!
//! The budget is per outstanding call rather than per connection because a handshake-era
//! connection may live as long as the host does; a per-connection budget would end sampling for
//! good after a few calls. Which call a request belongs to cannot be known on stdio, so a
//! request draws on any call that has budget left.
//!
//! [`ClientError::SamplingBudgetExceeded`]: super::ClientError::SamplingBudgetExceeded

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use modelctx_types::jsonrpc::{Notification, Request, encode_error, encode_result};
use modelctx_types::methods::{CreateMessage, Ping};
use modelctx_types::tasks_2025::{GetTaskPayload, TaskMetadata};
use modelctx_types::{Era, ErrorCode, ErrorObject, Method as _};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, SemaphorePermit};

use super::callbacks::Callbacks;
use super::extension::Observers;
use super::input_loop::LoopLimits;
use super::middleware::{self, Chain};
use super::shared::{Inbound, Shared};
use super::tasks_2025_table::{TABLE_METHODS, TaskTable, created, runs_as_task, task_request};
use crate::sync::lock;

/// The connection's [`Inbound`] handler: the server's requests go to the callbacks within the
/// gate's limits, and the notifications no route took to the extensions' bindings and the
/// notification callback.
pub(crate) struct BackChannel {
    callbacks: Callbacks,
    gate: Arc<BackChannelGate>,
    /// Around every answer (`ClientBuilder::middleware`).
    middleware: Chain,
    /// 2025-11-25 client-side tasks, when opted in (client/tasks_2025_table.rs).
    tasks: Option<Arc<TaskTable>>,
    /// The extensions' notification bindings, when there are any (client/extension.rs).
    observers: Option<Arc<Observers>>,
}

impl BackChannel {
    pub(crate) fn new(
        callbacks: Callbacks,
        gate: Arc<BackChannelGate>,
        middleware: Chain,
        tasks: Option<Arc<TaskTable>>,
        observers: Option<Arc<Observers>>,
    ) -> Self {
        Self {
            callbacks,
            gate,
            middleware,
            tasks,
            observers,
        }
    }

    /// [`Self::answer`] through the middleware chain.
    async fn answer_through_middleware(&self, core: &Shared, request: Request) -> Vec<u8> {
        let (id, method, params) = (
            request.id.clone(),
            request.method.clone(),
            request.params.clone(),
        );
        let head = middleware::Request::new(
            middleware::Kind::Answer,
            &method,
            Some(&id),
            params.as_deref().map(serde_json::value::RawValue::get),
            core.era(),
        );
        let send: middleware::Endpoint<'_> = Box::new(move || {
            Box::pin(
                async move { Ok(middleware::Reply::encoded(self.answer(core, request).await)) },
            )
        });
        match self.middleware.run(head, send).await {
            Ok(reply) => reply.into_answer(&id),
            Err(error) => encode_error(Some(&id), &ErrorObject::internal(error.to_string())),
        }
    }

    /// Only the handshake era has server→client requests; on a 2026-07-28 connection they are
    /// a protocol violation and get an error. The gate's limits apply; `ping` is answered
    /// regardless.
    async fn answer(&self, core: &Shared, request: Request) -> Vec<u8> {
        if core.era() == Some(Era::Modern) {
            let error =
                ErrorObject::method_not_found(&request.method).with_data(serde_json::Value::from(
                    "2026-07-28 has no server-to-client requests; ask with InputRequiredResult",
                ));
            return encode_error(Some(&request.id), &error);
        }
        let version = core.version();
        if request.method == Ping::NAME {
            return self.callbacks.answer_server_request(request, version).await;
        }
        // 2025-11-25 client-side tasks: `tasks/get`, `tasks/list` and `tasks/cancel` are
        // answered at once from the table; `tasks/result` waits, so it is admitted like a
        // question.
        let table = self.tasks.as_ref();
        if let Some(table) = table
            && TABLE_METHODS.contains(&request.method.as_str())
            && request.method != GetTaskPayload::NAME
        {
            return table.answer(&request).await;
        }
        let gate = &self.gate;
        let admitted = match gate.admit() {
            Ok(permit) => permit,
            Err(error) => return encode_error(Some(&request.id), &error),
        };
        if let Some(table) = table
            && request.method == GetTaskPayload::NAME
        {
            let response = table.answer(&request).await;
            drop(admitted);
            return response;
        }
        if let Some(table) = table
            && runs_as_task(&request.method)
            && let Some(meta) = task_request(&request)
        {
            drop(admitted);
            return self.start_task(table, request, &meta, version);
        }
        if let Err(error) = self.charge(&request) {
            return encode_error(Some(&request.id), &error);
        }
        let _running = gate.run().await;
        let response = self.callbacks.answer_server_request(request, version).await;
        drop(admitted);
        response
    }
}

impl BackChannel {
    /// Charges a sampling request to a call in flight (see the module docs).
    fn charge(&self, request: &Request) -> Result<(), ErrorObject> {
        if request.method == CreateMessage::NAME && self.callbacks.sampling.is_some() {
            self.gate.charge_sampling()
        } else {
            Ok(())
        }
    }

    /// Runs a task-augmented request as a client-side task: answers with its handle at once and
    /// runs the callback in the background, within the gate's callback slots.
    fn start_task(
        &self,
        table: &Arc<TaskTable>,
        request: Request,
        meta: &TaskMetadata,
        version: Option<modelctx_types::ProtocolVersion>,
    ) -> Vec<u8> {
        let id = request.id.clone();
        // A full table refuses before any budget is spent.
        let task = match table.create(meta) {
            Ok(task) => task,
            Err(error) => return encode_error(Some(&id), &error),
        };
        let task_id = task.task_id.clone();
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| ErrorObject::internal("no runtime"));
        let runtime = match self.charge(&request).and(runtime) {
            Ok(runtime) => runtime,
            Err(error) => {
                table.discard(&task_id);
                return encode_error(Some(&id), &error);
            }
        };
        let (callbacks, gate, tasks) = (
            self.callbacks.clone(),
            Arc::clone(&self.gate),
            Arc::clone(table),
        );
        let running = runtime.spawn(async move {
            let outcome = {
                let _slot = gate.run().await;
                callbacks.server_request_result(request, version).await
            };
            tasks.finish(&task_id, outcome);
        });
        table.running(&task.task_id, running.abort_handle());
        encode_result(&id, &created(task))
            .unwrap_or_else(|e| encode_error(Some(&id), &ErrorObject::internal(e.to_string())))
    }
}

impl Inbound for BackChannel {
    fn notification(&self, notification: &Notification) {
        if let Some(observers) = &self.observers {
            observers.observe(notification);
        }
        self.callbacks.notify(notification);
    }

    fn request<'a>(&'a self, core: &'a Shared, request: Request) -> BoxFuture<'a, Vec<u8>> {
        if self.middleware.is_empty() {
            Box::pin(self.answer(core, request))
        } else {
            Box::pin(self.answer_through_middleware(core, request))
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct BackChannelGate {
    admitted: Arc<Semaphore>,
    running: Semaphore,
    max_requests: usize,
    max_sampling: u32,
    grants: Mutex<Vec<Arc<Grant>>>,
}

/// The sampling budget of one call in flight.
#[derive(Debug)]
pub(crate) struct Grant {
    /// Changed only under the gate's lock.
    left: AtomicU32,
    exceeded: AtomicBool,
    notify: Notify,
}

impl Grant {
    /// Resolves once the server asked for more sampling than the calls in flight allow.
    pub(crate) async fn exceeded(&self) {
        while !self.exceeded.load(Ordering::Acquire) {
            self.notify.notified().await;
        }
    }
}

/// A call's grant, withdrawn when the call ends.
#[derive(Debug)]
pub(crate) struct GrantGuard {
    gate: Arc<BackChannelGate>,
    pub(crate) grant: Arc<Grant>,
}

impl Drop for GrantGuard {
    fn drop(&mut self) {
        lock(&self.gate.grants).retain(|grant| !Arc::ptr_eq(grant, &self.grant));
    }
}

impl BackChannelGate {
    pub(crate) fn new(limits: &LoopLimits) -> Self {
        let max_requests = limits.max_input_requests.max(1);
        Self {
            admitted: Arc::new(Semaphore::new(max_requests)),
            running: Semaphore::new(limits.max_concurrent_callbacks.max(1)),
            max_requests,
            max_sampling: limits.max_sampling,
            grants: Mutex::new(Vec::new()),
        }
    }

    /// Registers a call in flight with its sampling budget.
    pub(crate) fn grant(gate: &Arc<Self>) -> GrantGuard {
        let grant = Arc::new(Grant {
            left: AtomicU32::new(gate.max_sampling),
            exceeded: AtomicBool::new(false),
            notify: Notify::new(),
        });
        lock(&gate.grants).push(Arc::clone(&grant));
        GrantGuard {
            gate: Arc::clone(gate),
            grant,
        }
    }

    /// Admits one more server request, or refuses it when `max_requests` are being answered.
    pub(crate) fn admit(&self) -> Result<OwnedSemaphorePermit, ErrorObject> {
        Arc::clone(&self.admitted).try_acquire_owned().map_err(|_| {
            tracing::warn!(
                max = self.max_requests,
                "refused a server request: too many are being answered"
            );
            ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Too many concurrent requests: this client answers at most {} at a time",
                    self.max_requests
                ),
            )
        })
    }

    /// Waits for a callback slot.
    pub(crate) async fn run(&self) -> Option<SemaphorePermit<'_>> {
        self.running.acquire().await.ok()
    }

    /// Charges one sampling request to a call in flight; when none has budget left, tells the
    /// calls in flight and refuses the request.
    pub(crate) fn charge_sampling(&self) -> Result<(), ErrorObject> {
        let grants = lock(&self.grants);
        for grant in grants.iter() {
            let left = grant.left.load(Ordering::Relaxed);
            if left > 0 {
                grant.left.store(left - 1, Ordering::Relaxed);
                return Ok(());
            }
        }
        for grant in grants.iter() {
            grant.exceeded.store(true, Ordering::Release);
            grant.notify.notify_one();
        }
        tracing::warn!(
            calls = grants.len(),
            max = self.max_sampling,
            "refused a sampling request: no call in flight has sampling budget left"
        );
        Err(ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            if grants.is_empty() {
                "Sampling refused: no request of this client is in progress".to_owned()
            } else {
                format!(
                    "Sampling budget exhausted: at most {} sampling requests per client request",
                    self.max_sampling
                )
            },
        ))
    }
}
