//! The one channel a request's notifications travel on. A leaf of the server: the handshake
//! session's back-channel, the request context, the pipeline and the transports all hold one,
//! and none of them should have to name another to say what it is.

use tokio::sync::mpsc;

/// Where a request's notifications go: the connection's writer (stdio) or the request's own
/// response stream (HTTP). Each item is one encoded JSON-RPC message.
pub(crate) type Notifier = mpsc::Sender<Vec<u8>>;
