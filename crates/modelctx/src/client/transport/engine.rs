//! The line engine: a client over any byte stream carrying newline-delimited JSON-RPC (a
//! spawned server's stdio, an in-memory pipe, a socket).
//!
//! A writer task owns the outgoing stream and writes whole lines from a channel. A reader task
//! owns the incoming stream and routes each message: responses by id to the waiting request,
//! notifications to progress routes or the notification callback, and server requests (the
//! handshake-era back-channel) to the callbacks, whose answers go back through the writer.
//!
//! A request future that is dropped before its response arrived sends
//! `notifications/cancelled` for its id (the stdio cancellation rule), through a drop guard.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx_types::jsonrpc::encode_notification;
use modelctx_types::methods::Cancelled;
use modelctx_types::{CancelledNotificationParams, MessageRef, NotificationMethod, RequestId};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use super::{Outgoing, Reply, TransportKind};
use crate::client::error::{ClientError, TransportError};
use crate::client::shared::Shared;
use crate::sync::lock;
use crate::transport::lines::{Frame, LineReader, LineWriter};

/// How long `close` waits for the writer to flush and close the stream.
const WRITER_CLOSE_WAIT: Duration = Duration::from_secs(5);

enum Command {
    Line(Vec<u8>),
    Shutdown(oneshot::Sender<()>),
}

/// Requests waiting for their response.
#[derive(Debug, Default)]
struct Pending {
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Reply>>>,
    closed: AtomicBool,
}

impl Pending {
    fn insert(&self, id: RequestId, sender: oneshot::Sender<Reply>) -> Result<(), ClientError> {
        let mut waiting = lock(&self.waiting);
        // Checked under the lock so that `close` cannot miss an insertion.
        if self.closed.load(Ordering::Acquire) {
            return Err(TransportError::Closed.into());
        }
        waiting.insert(id, sender);
        Ok(())
    }

    fn take(&self, id: &RequestId) -> Option<oneshot::Sender<Reply>> {
        lock(&self.waiting).remove(id)
    }

    /// Fails every waiting request (their senders drop) and refuses new ones.
    fn close(&self) {
        let mut waiting = lock(&self.waiting);
        self.closed.store(true, Ordering::Release);
        waiting.clear();
    }
}

/// A connected line transport.
#[derive(Debug)]
pub(crate) struct LineTransport {
    out: mpsc::UnboundedSender<Command>,
    pending: Arc<Pending>,
    shared: Arc<Shared>,
    kind: TransportKind,
    #[cfg(feature = "stdio")]
    process: Option<super::stdio::ServerProcess>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Line(line) => write!(f, "Line({} bytes)", line.len()),
            Self::Shutdown(_) => f.write_str("Shutdown"),
        }
    }
}

impl LineTransport {
    /// Starts the reader and writer tasks on the current runtime.
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        shared: Arc<Shared>,
        max_line: usize,
        kind: TransportKind,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, commands) = mpsc::unbounded_channel();
        let pending = Arc::new(Pending::default());
        tokio::spawn(write_loop(writer, commands, Arc::clone(&pending)));
        // The reader holds only a weak sender: when the session goes away the writer task
        // ends, the stream closes, the peer hangs up, and the reader ends too.
        tokio::spawn(read_loop(
            reader,
            max_line,
            Arc::clone(&pending),
            Arc::clone(&shared),
            out.downgrade(),
        ));
        Self {
            out,
            pending,
            shared,
            kind,
            #[cfg(feature = "stdio")]
            process: None,
        }
    }

    /// Attaches the spawned server process, shut down by [`Self::close`].
    #[cfg(feature = "stdio")]
    pub(crate) fn with_process(mut self, process: super::stdio::ServerProcess) -> Self {
        self.process = Some(process);
        self
    }

    pub(crate) fn kind(&self) -> TransportKind {
        self.kind
    }

    pub(crate) async fn request(&self, outgoing: &Outgoing) -> Result<Reply, ClientError> {
        let id = self.shared.next_id();
        outgoing
            .span
            .record("jsonrpc.request.id", tracing::field::display(&id));
        let line = super::encode_request(&id, outgoing.method, &outgoing.params);
        let (sender, receiver) = oneshot::channel();
        self.pending.insert(id.clone(), sender)?;
        let mut guard = InFlight {
            id,
            pending: Arc::clone(&self.pending),
            out: self.out.clone(),
            cancellable: outgoing.cancellable,
            settled: false,
        };
        if self.out.send(Command::Line(line)).is_err() {
            guard.settled = true;
            return Err(TransportError::Closed.into());
        }
        let reply = receiver.await;
        guard.settled = true;
        reply.map_err(|_| TransportError::Closed.into())
    }

    pub(crate) fn notify(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), ClientError> {
        let line = encode_notification(method, params)
            .map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        self.out
            .send(Command::Line(line))
            .map_err(|_| TransportError::Closed.into())
    }

    /// Closes the outgoing stream (stdin of a spawned server), then shuts the process down.
    pub(crate) async fn close(&self) -> Result<(), ClientError> {
        let (done, flushed) = oneshot::channel();
        if self.out.send(Command::Shutdown(done)).is_ok() {
            // A wedged writer (a peer that stopped reading) must not hang close forever.
            let _ = tokio::time::timeout(WRITER_CLOSE_WAIT, flushed).await;
        }
        self.pending.close();
        #[cfg(feature = "stdio")]
        if let Some(process) = &self.process {
            process.shutdown().await?;
        }
        Ok(())
    }
}

/// A request on the wire. Dropped before its response arrived, it withdraws the request and
/// tells the server with `notifications/cancelled`.
struct InFlight {
    id: RequestId,
    pending: Arc<Pending>,
    out: mpsc::UnboundedSender<Command>,
    cancellable: bool,
    settled: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        // Still waiting means the response has not arrived: the server may be working on it.
        if self.pending.take(&self.id).is_some() && self.cancellable {
            let params = CancelledNotificationParams::new(
                self.id.clone(),
                Some("the client abandoned the request".to_owned()),
            );
            if let Ok(line) = encode_notification(Cancelled::NAME, Some(&params)) {
                let _ = self.out.send(Command::Line(line));
            }
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut commands: mpsc::UnboundedReceiver<Command>,
    pending: Arc<Pending>,
) {
    let writer = LineWriter::new(writer);
    while let Some(command) = commands.recv().await {
        match command {
            Command::Line(line) => {
                if let Err(error) = writer.send(&line).await {
                    tracing::warn!(%error, "writing to the server failed; closing the connection");
                    pending.close();
                    return;
                }
            }
            Command::Shutdown(done) => {
                let _ = writer.shutdown().await;
                // Dropping the writer is what closes a child's stdin.
                drop(writer);
                let _ = done.send(());
                return;
            }
        }
    }
    let _ = writer.shutdown().await;
}

async fn read_loop<R: AsyncRead + Unpin>(
    reader: R,
    max_line: usize,
    pending: Arc<Pending>,
    shared: Arc<Shared>,
    out: mpsc::WeakUnboundedSender<Command>,
) {
    let mut lines = LineReader::new(reader, max_line);
    loop {
        match lines.next_frame().await {
            Ok(Some(Frame::Line(line))) => route(line, &pending, &shared, &out),
            Ok(Some(Frame::TooLong(length))) => {
                tracing::warn!(length, "discarded a message longer than the line limit");
            }
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(%error, "reading from the server failed");
                break;
            }
        }
    }
    pending.close();
}

fn route(
    line: &[u8],
    pending: &Pending,
    shared: &Arc<Shared>,
    out: &mpsc::WeakUnboundedSender<Command>,
) {
    match MessageRef::decode_slice(line) {
        Ok(MessageRef::Response(response)) => {
            let Some(id) = response.id else {
                let detail = response.payload.err().map(|e| e.to_string());
                tracing::warn!(
                    ?detail,
                    "the server reported an error about an unreadable message"
                );
                return;
            };
            match pending.take(&id) {
                Some(sender) => {
                    let _ = sender.send(response.payload.map(ToOwned::to_owned));
                }
                None => tracing::debug!(%id, "response for a request nobody waits for"),
            }
        }
        Ok(MessageRef::Notification(notification)) => {
            let notification = modelctx_types::jsonrpc::Notification {
                method: notification.method.into_owned(),
                params: notification.params.map(ToOwned::to_owned),
            };
            shared.route_notification(&notification);
        }
        Ok(MessageRef::Request(request)) => {
            let request = request.to_owned_request();
            let Some(out) = out.upgrade() else { return };
            let shared = Arc::clone(shared);
            tokio::spawn(async move {
                let response = shared.answer_server_request(request).await;
                let _ = out.send(Command::Line(response));
            });
        }
        Err(error) => tracing::warn!(%error, "undecodable message from the server"),
    }
}
