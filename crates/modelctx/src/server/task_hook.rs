//! The seam through which the tasks extension joins the core: a trait object the extension
//! registers on the builder (`ServerBuilder::tasks`), so that the handle, the listen streams and
//! the bus name no feature. The core asks it only where a task can be involved — the
//! capabilities of `server/discover` and `initialize`, a listen filter's `taskIds`, joining the
//! bus, starting the background sweep — and checks an `Option` first, so a request that is no
//! task call costs nothing more. `tasks/*` methods and task-augmented `tools/call`s need no
//! seam: the extension registers them as method and tool handlers like any other.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use modelctx_types::tasks::DetailedTask;
use modelctx_types::{ErrorObject, ServerCapabilities, SubscriptionFilter};
use tokio::sync::broadcast;

use super::bus::Bus;
use super::context::RequestContext;

/// What the core asks of a tasks runtime (implemented by `server::tasks::Tasks`).
pub(crate) trait TaskHook: Send + Sync + 'static {
    /// Declares the extension in `capabilities` (`extensions["io.modelcontextprotocol/tasks"]`).
    fn declare(&self, capabilities: &mut ServerCapabilities);

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
}
