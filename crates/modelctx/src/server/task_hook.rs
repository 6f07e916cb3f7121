//! The core hooks of the tasks extension: a trait object the extension contributes through the
//! extension seam (`extension::Contributions::task_hook`, crate-private), so that the handle, the
//! listen streams and the bus name no feature. The core asks it only where a task can be
//! involved — a listen filter's `taskIds`, joining the bus, starting the background sweep — and
//! checks an `Option` first, so a request that is no task call costs nothing more. Its
//! advertisement, its `tasks/*` methods and its task tools need no hook: they are the
//! extension's settings, method bindings and tools, as any extension's are.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use modelctx_types::tasks::DetailedTask;
use modelctx_types::{ErrorObject, SubscriptionFilter};
use tokio::sync::broadcast;

use super::bus::Bus;
use super::context::RequestContext;
use crate::state_scope::StateScope;

/// What the core asks of a tasks runtime (implemented by `server::tasks::Tasks`).
pub(crate) trait TaskHook: Send + Sync + 'static {
    /// Starts the background sweep (it needs a Tokio runtime; otherwise it starts with the
    /// first task).
    fn start(&self);

    /// Publishes the runtime's task updates on `bus`, and returns the channel the bus delivers
    /// other instances' into.
    fn join_bus(&self, bus: &Arc<Bus>) -> broadcast::Sender<String>;

    /// The distinct `taskIds` of a listen filter, taken out of it (`None` when it names none),
    /// or the error that refuses the stream.
    fn listen_ids(
        &self,
        ctx: &RequestContext,
        filter: &mut SubscriptionFilter,
    ) -> Result<Option<Vec<String>>, ErrorObject>;

    /// The task notifications of a listen stream following `ids`; the honoured ids go into
    /// `honored`.
    fn listen<'a>(
        &'a self,
        ctx: &'a RequestContext,
        ids: Vec<String>,
        honored: &'a mut SubscriptionFilter,
    ) -> BoxFuture<'a, BoxStream<'static, DetailedTask>>;

    /// Who shares the runtime's tasks: its store's scope.
    fn store_scope(&self) -> StateScope;
}
