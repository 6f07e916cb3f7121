//! A request's way to close its resumable response stream early (SEP-1699's polling, as the
//! Python SDK's `close_sse_stream`): the handler asks, the transport closes the connection, the
//! client reconnects with `Last-Event-ID` after the stream's `retry` delay and the request goes
//! on meanwhile. A leaf: the context hands the request to it, the HTTP transport acts on it.

use std::sync::Arc;

use tokio::sync::Notify;

/// Put in a request's HTTP extensions when its response stream can be resumed.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamCloser(Arc<Notify>);

impl StreamCloser {
    /// Asks the transport to close the stream's current connection (remembered when no stream
    /// is open yet: the stream then closes right after its first event).
    pub(crate) fn close(&self) {
        self.0.notify_one();
    }

    /// Completes when a close was asked.
    pub(crate) async fn asked(&self) {
        self.0.notified().await;
    }
}
