//! Running the middleware chain ([`super::middleware`]): the request a transport hands over
//! becomes a [`Request`] with its context, passes the chain, and ends in the server's dispatch
//! or in what the transport does with a message it serves itself. The chain's types sit below
//! the server handle (the handle holds the chain); this module, above dispatch, binds them to
//! it.

use std::panic::AssertUnwindSafe;
#[cfg(feature = "http-server")]
use std::sync::Arc;

use futures::FutureExt as _;
use modelctx_seal::Principal;
use modelctx_types::{Era, ProtocolVersion, RequestId, RequestMeta};
use tokio_util::sync::CancellationToken;

use super::dispatch;
use super::handle::Server;
use super::handshake::HandshakeSession;
use super::ladder::{context, handshake_meta};
use super::message::{self, Incoming, internal, probe_meta};
use super::middleware::{Endpoint, Next, Reply, Request};
use super::notifier::Notifier;
use crate::span_fields::target_of;

/// A message the transport serves itself (a notification, `initialize`), as it hands it to the
/// chain.
pub(crate) struct Message<'a> {
    pub(crate) id: Option<&'a RequestId>,
    pub(crate) method: &'a str,
    /// The params object as JSON text.
    pub(crate) params: Option<&'a str>,
    pub(crate) era: Era,
    /// The handshake-era session the message belongs to, when there is one.
    pub(crate) handshake: Option<&'a HandshakeSession>,
    /// The principal the transport authenticated.
    pub(crate) principal: Option<Principal>,
    #[cfg(feature = "http-server")]
    pub(crate) http: Option<Arc<http::request::Parts>>,
}

/// The `_meta` a middleware sees: the request's own, completed from the session in the
/// handshake era.
fn meta_of(params: Option<&str>, handshake: Option<&HandshakeSession>) -> Option<Box<RequestMeta>> {
    let own = probe_meta(params).ok().flatten();
    match handshake {
        Some(session) => Some(handshake_meta(session, own.map(|meta| *meta))),
        None => own,
    }
}

/// Whether any middleware is registered (the transports skip the chain otherwise).
pub(crate) fn has_middleware(server: &Server) -> bool {
    !server.inner.middleware.is_empty()
}

/// A request through the chain, then dispatch.
pub(crate) async fn dispatch_chained(
    server: &Server,
    mut incoming: Incoming<'_>,
    notifier: Option<Notifier>,
    cancel: CancellationToken,
) -> message::Reply {
    let id = incoming.id.clone();
    let meta = meta_of(incoming.params, incoming.handshake.as_deref());
    let version = match (&incoming.handshake, &meta) {
        (Some(session), _) => session.version.clone(),
        (None, Some(meta)) => meta
            .protocol_version
            .clone()
            .unwrap_or(ProtocolVersion::LATEST),
        (None, None) => ProtocolVersion::LATEST,
    };
    // The principal hook runs here, outside the handler's panic guard: a hook that panics
    // costs its request a -32603, as it does when it runs for the handler.
    let context = std::panic::catch_unwind(AssertUnwindSafe(|| {
        context(
            server,
            &incoming,
            meta.clone().unwrap_or_default(),
            version,
            notifier.clone(),
            cancel.clone(),
        )
    }));
    let Ok(context) = context else {
        tracing::error!(request = %id, "the principal hook panicked");
        return Reply::error(internal("Internal error")).encode(Some(&id));
    };
    // The hook ran: the handler's context takes its answer instead of running it again.
    let transport_principal =
        std::mem::replace(&mut incoming.principal, context.principal().cloned());
    incoming.principal_bound = true;
    let request = Request {
        id: Some(id.clone()),
        method: incoming.method,
        params: incoming.params,
        target: target_of(incoming.method, incoming.params),
        meta,
        context: Some(context.clone()),
        principal: transport_principal,
        era: if incoming.handshake.is_some() {
            Era::Handshake
        } else {
            Era::Modern
        },
        #[cfg(feature = "http-server")]
        http: incoming.http.clone(),
        endpoint: Endpoint::Dispatch(Box::pin(async move {
            let id = incoming.id.clone();
            match dispatch::run(server, &id, incoming, notifier, cancel).await {
                Ok(Some(body)) => Reply::encoded(body),
                Ok(None) => Reply::nothing(),
                Err(error) => Reply::error(error),
            }
        })),
    };
    let reply = chain(server, request, Some(&id)).await;
    context.finish();
    reply.encode(Some(&id))
}

/// A message the transport serves itself, through the chain; `serve` is what the transport
/// does with it (and all it does without middleware). The reply is for the transport to
/// encode ([`Reply::encode`]) with the message's id.
pub(crate) async fn through_middleware(
    server: &Server,
    message: Message<'_>,
    serve: &(dyn Fn() -> Reply + Send + Sync),
) -> Reply {
    let request = Request {
        id: message.id.cloned(),
        method: message.method,
        params: message.params,
        target: target_of(message.method, message.params),
        meta: meta_of(message.params, message.handshake),
        context: None,
        principal: message.principal,
        era: message.era,
        #[cfg(feature = "http-server")]
        http: message.http,
        endpoint: Endpoint::Local(serve),
    };
    chain(server, request, message.id).await
}

/// Runs the chain; a middleware that panics is answered like a handler that panics.
async fn chain(server: &Server, request: Request<'_>, id: Option<&RequestId>) -> Reply {
    let next = Next {
        rest: &server.inner.middleware,
    };
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(reply) => reply,
        Err(_) => {
            tracing::error!(request = ?id, "middleware panicked");
            Reply::error(internal("Internal error"))
        }
    }
}
