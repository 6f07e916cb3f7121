//! The era of a stream connection (stdio, or any reader/writer pair), fixed by its first
//! request: one carrying the 2026-07-28 envelope makes it modern, anything else (normally
//! `initialize`) makes the whole connection one handshake-era session. Afterwards `initialize`
//! on a modern connection gets `-32022`, and an enveloped request on a handshake-era one gets
//! `-32600`.
//!
//! `initialize` is answered here (through the middleware chain, in its own span), not by a
//! handler: it opens the session.

use std::sync::{Arc, Mutex};

use modelctx_types::jsonrpc::encode_error;
use modelctx_types::methods::Initialize;
use modelctx_types::{Era, ErrorObject, Method as _};
use tracing::Instrument as _;

use super::Server;
use super::chain::{Message, has_middleware, through_middleware};
use super::handshake::{self, HandshakeSession};
use super::handshake_methods::initialize;
use super::message::{Reply, decode_params};
use super::middleware;
use super::typed_params::Received;
use crate::sync::lock;

/// The era of a stream connection, fixed by its first request.
pub(crate) enum Connection {
    /// No request yet.
    Unset,
    /// 2026-07-28: every request carries its own envelope.
    Modern,
    /// The handshake era: one session for the whole connection.
    Handshake(Arc<HandshakeSession>),
}

impl Connection {
    /// The connection's handshake-era session, if it is one.
    pub(crate) fn session(&self) -> Option<&Arc<HandshakeSession>> {
        match self {
            Self::Handshake(session) => Some(session),
            _ => None,
        }
    }
}

/// What to do with a request, era-wise.
pub(crate) enum Route {
    /// Dispatch on the stateless path.
    Modern,
    /// Dispatch in this session (`true` when the session was just opened).
    Handshake(Arc<HandshakeSession>, bool),
    /// `initialize`: answer it with [`Server::open_session`].
    Initialize,
    /// Refused by the era rules: answer with this error.
    Refused(Vec<u8>),
}

/// Applies the era rules of a stream connection to `request` (see the module docs). Never
/// waits: `initialize`, which does, is left to [`Server::open_session`].
// Inlined into the connection loop (another codegen unit); see `stdio_lines::decode_line`.
#[inline]
pub(crate) fn route(server: &Server, connection: &mut Connection, request: &Received<'_>) -> Route {
    let initialize = request.method() == Initialize::NAME;
    // The path of nearly every request, an established modern connection, is this test alone:
    // the rest stays out of line so that this inlines into the loop.
    if !initialize && matches!(connection, Connection::Modern) {
        return Route::Modern;
    }
    route_by_rules(server, connection, request, initialize)
}

/// [`route`] past its fast path: the era rules proper.
#[inline(never)]
fn route_by_rules(
    server: &Server,
    connection: &mut Connection,
    request: &Received<'_>,
    initialize: bool,
) -> Route {
    // A server of one era (`ServerBuilder::only_era`): a modern-only connection is modern from
    // the start; a handshake-only one never reads the envelope, as a 2025-11-25 server would not.
    let only = server.only_era();
    if only == Some(Era::Modern) && matches!(connection, Connection::Unset) {
        *connection = Connection::Modern;
    }
    // Only looked for where it decides (not on a modern connection's every request).
    let enveloped =
        || only != Some(Era::Handshake) && handshake::has_modern_envelope(request.params());
    match connection {
        Connection::Modern if initialize => {
            let requested = decode_params::<modelctx_types::Extra>(request.params())
                .ok()
                .and_then(|p| {
                    p.get("protocolVersion")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            let error = handshake::initialize_on_modern(&requested, server.supported_versions());
            Route::Refused(encode_error(Some(request.id()), &error))
        }
        Connection::Modern => Route::Modern,
        Connection::Handshake(_) | Connection::Unset if initialize => Route::Initialize,
        Connection::Handshake(session) => {
            if enveloped() {
                let error = handshake::era_mismatch_handshake();
                return Route::Refused(encode_error(Some(request.id()), &error));
            }
            Route::Handshake(Arc::clone(session), false)
        }
        Connection::Unset if enveloped() => {
            *connection = Connection::Modern;
            Route::Modern
        }
        Connection::Unset => {
            let session = Arc::new(HandshakeSession::uninitialized());
            *connection = Connection::Handshake(Arc::clone(&session));
            Route::Handshake(session, true)
        }
    }
}

/// What answering `initialize` gave: the reply to write, and the session it opened.
pub(crate) struct Opened {
    pub(crate) reply: Option<Vec<u8>>,
    pub(crate) session: Option<Arc<HandshakeSession>>,
}

/// Answers `initialize` (through the middleware chain) and makes the connection a
/// handshake-era session.
pub(crate) async fn open_session(
    server: &Server,
    connection: &mut Connection,
    request: &Received<'_>,
) -> Opened {
    let opened = Mutex::new(None);
    let serve = || match decode_params::<modelctx_types::InitializeRequestParams>(request.params())
    {
        Ok(params) => {
            // One session per connection, whose principal (if any) is bound per
            // request: its subscriptions count against the server's budget only.
            let (session, result) = initialize(server, params, None);
            *lock(&opened) = Some(session);
            middleware::Reply::result(&result)
        }
        Err(error) => middleware::Reply::error(ErrorObject::invalid_params(format!(
            "Invalid params: {error}"
        ))),
    };
    let message = Message {
        id: Some(request.id()),
        method: request.method(),
        params: request.params(),
        era: Era::Handshake,
        handshake: None,
        principal: None,
        #[cfg(feature = "http-server")]
        http: None,
    };
    let span = super::trace::initialize_span(
        server,
        request.id(),
        request.method(),
        request.params(),
        false,
    );
    let reply = async {
        if has_middleware(server) {
            through_middleware(server, message, &serve).await
        } else {
            serve()
        }
    }
    .instrument(span.clone())
    .await;
    // A middleware that refused `initialize` after the server answered it opens no session.
    let refused = reply.as_error().is_some();
    let reply = reply.encode(Some(request.id()));
    let version = lock(&opened)
        .as_ref()
        .map(|session| session.version.clone());
    super::trace::record_initialize(&span, &reply, version.as_ref().filter(|_| !refused));
    // Ended before the reply goes out, like the span of every other request.
    drop(span);
    let reply = match reply {
        Reply::Message { body, .. } => Some(body),
        Reply::Nothing => None,
    };
    let session = match opened.into_inner() {
        Ok(Some(session)) if !refused => {
            *connection = Connection::Handshake(Arc::clone(&session));
            Some(session)
        }
        _ => None,
    };
    Opened { reply, session }
}
