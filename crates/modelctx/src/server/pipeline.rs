//! A request's way through the server, as a transport starts it: its `tracing` span when a
//! subscriber wants one (`server::trace`), the middleware chain when there is one, then
//! dispatch.
//!
//! The entry sits above both the chain and dispatch: the chain ends in dispatch
//! ([`Next::run`](super::middleware::Next::run) calls [`dispatch::run`]), so the choice between the two is
//! made here rather than in dispatch, which would name the chain that names it.

use tokio_util::sync::CancellationToken;

use super::Server;
use super::chain;
use super::dispatch;
use super::message::{Incoming, Reply, error_reply};
use super::notifier::Notifier;

/// Runs one request to its reply, in its `tracing` span when a subscriber wants it
/// (`server::trace`) and through the middleware chain when there is one. Handler panics
/// become `-32603` (the server keeps serving).
///
/// Not an `async fn`: one would add a state machine around [`answer`]'s holding a
/// second copy of `incoming` for the whole request (rustc keeps a moved-from local's
/// storage), which every listen stream carries for its whole life. The HTTP transport's; the
/// stdio loop uses [`dispatch_in_task`].
#[cfg(feature = "http-server")]
pub(crate) fn dispatch<'a>(
    server: &'a Server,
    incoming: Incoming<'a>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> impl Future<Output = Reply> + 'a {
    use futures::future::Either;
    let (span, name) = super::trace::request_span(server, &incoming);
    if span.is_disabled() {
        Either::Left(answer(server, incoming, notifier, cancel))
    } else {
        // Boxed like the chain: the traced path's state stays out of the plain one.
        Either::Right(Box::pin(dispatch_traced(
            server, span, name, incoming, notifier, cancel,
        )))
    }
}

/// [`dispatch`] as an `async fn`, for the stdio loop: its per-request task is boxed and
/// short-lived, so the second copy of `incoming` costs nothing that lasts, while creating
/// the answer future inside this state machine, rather than moving a finished one into the
/// task, saves copying it (about 330 instructions per call, BENCHMARKS.md).
pub(crate) async fn dispatch_in_task(
    server: &Server,
    incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Reply {
    let (span, name) = super::trace::request_span(server, &incoming);
    if !span.is_disabled() {
        return Box::pin(dispatch_traced(
            server, span, name, incoming, notifier, cancel,
        ))
        .await;
    }
    answer(server, incoming, notifier, cancel).await
}

async fn dispatch_traced(
    server: &Server,
    span: tracing::Span,
    name: &str,
    mut incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Reply {
    use tracing::Instrument as _;
    super::trace::record_request(&span, name, &incoming);
    incoming.span = span.clone();
    let reply = answer(server, incoming, notifier, cancel)
        .instrument(span.clone())
        .await;
    super::trace::record_reply(&span, &reply);
    reply
}

/// The reply to one request: through the middleware chain when there is one.
async fn answer(
    server: &Server,
    incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> Reply {
    if chain::has_middleware(server) {
        // Boxed, so that the chain's state does not grow the future of every request
        // served without middleware.
        return Box::pin(chain::dispatch_chained(server, incoming, notifier, cancel)).await;
    }
    let id = incoming.id.clone();
    match dispatch::run(server, &id, incoming, notifier, cancel).await {
        Ok(Some(body)) => Reply::Message { body, error: None },
        Ok(None) => Reply::Nothing,
        Err(error) => error_reply(Some(&id), &error),
    }
}
