//! How a question reaches the client ([`Asker`]): collected into an `InputRequiredResult` on
//! 2026-07-28, or sent at once over a handshake-era session's [`BackChannel`].
//!
//! A leaf: the handler's [`Context`](super::Context) carries an asker and the resolution uses
//! it, so neither names the other for it.

use std::sync::Arc;

use modelctx_types::{ErrorObject, InputRequest};
use serde_json::Value;

use crate::server::BoxFuture;

/// Answers questions on a handshake-era session: sends the rendered request as a server→client
/// JSON-RPC request and returns the client's result (or its error).
///
/// This is the hook the handshake-era transport implements: give the [`Context`](super::Context) a back-channel
/// and every resolver asks through it, mid-call, instead of through an `InputRequiredResult`.
pub trait BackChannel: Send + Sync + 'static {
    /// Sends `request` to the client and awaits its answer.
    fn ask(&self, request: InputRequest) -> BoxFuture<'static, Result<Value, ErrorObject>>;
}

/// Decides how a question reaches the client. Crate-private: the handler's [`Context`](super::Context)
/// picks it (a back-channel given or found on the request, or none), and no user code names it.
#[derive(Clone)]
pub(crate) enum Asker {
    /// 2026-07-28: collect into one `InputRequiredResult`; answers arrive on the retry.
    InputRequired,
    /// Handshake era: send each question now and await the answer.
    BackChannel(Arc<dyn BackChannel>),
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InputRequired => f.write_str("InputRequired"),
            Self::BackChannel(_) => f.write_str("BackChannel"),
        }
    }
}
