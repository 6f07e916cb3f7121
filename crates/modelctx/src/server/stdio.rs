//! Serving over a byte stream of newline-delimited JSON: stdio, or any reader/writer pair (the
//! in-memory pipe of tests and embedding).
//!
//! Requests run concurrently (a slow tool does not block the others, and `notifications/cancelled`
//! is read while it runs). One writer task owns the output and coalesces queued messages into
//! few writes. A malformed line gets `-32700` / `-32600` and the server keeps serving; end of
//! input ends the connection's listen streams with their closing result and ends serving once
//! the requests in flight have answered. A connection's end is its own (a child of the server's
//! shutdown token): a `Server` serving several connections, or stdio beside HTTP, keeps serving
//! the others' streams.
//!
//! Served with a shutdown future ([`Server::serve_io_until`]), the server drains when it
//! completes: the connection's listen streams end with their closing result, new requests are
//! refused (`-32603`) while the input is still read (a `notifications/cancelled`, or the answer
//! to a question a request in flight asked), and serving ends once the requests in flight have
//! answered, or when [`StdioConfig::shutdown_grace`] is over, dropping those still running. The
//! grace period bounds every wait of the loop, a peer that stops reading included: a refusal is
//! dropped when the output queue is full, and any other answer waits for room no longer.
//!
//! The era of the connection, fixed by its first request, is `stdio_era`'s.

use std::borrow::Cow;
use std::future::Future;
use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use modelctx_types::NotificationMethod as _;
use modelctx_types::jsonrpc::{Decoded, MessageRef, NotificationRef, ResponseRef, encode_error};
use modelctx_types::methods::Initialized;
use modelctx_types::{Era, ErrorCode, ErrorObject, RequestId};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::Server;
use super::handshake::{self, HandshakeSession};
use super::in_flight::{InFlight, Served, serve_notification};
use super::message::{Incoming, Reply};
use super::middleware::{self, Message};
use super::pipeline;
use super::shutdown::{self, DEFAULT_SHUTDOWN_GRACE, Shutdown};
use super::stdio_era::{self, Connection, Route};
use super::typed_params::{self, OwnedRequest, Received};
use crate::transport::lines::{DEFAULT_MAX_LINE, Frame, KEEP_LINE_CAPACITY, LineReader};

/// Limits of a stream connection.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The largest message accepted, in bytes; longer lines get `-32600` and are skipped.
    pub max_message_size: usize,
    /// How many requests may run at once; reading pauses beyond it.
    pub max_concurrent_requests: usize,
    /// Served with a shutdown future ([`Server::serve_io_until`]): how long the requests in
    /// flight may take to finish once it completes ([`DEFAULT_SHUTDOWN_GRACE`], 5 s); those
    /// still running after it are dropped. `Duration::MAX` waits for them however long they
    /// take.
    pub shutdown_grace: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_message_size: DEFAULT_MAX_LINE,
            max_concurrent_requests: 512,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

impl Server {
    /// Serves on this process's stdin and stdout until stdin closes. Logs must go to stderr.
    ///
    /// # Errors
    /// I/O errors reading stdin.
    #[cfg(feature = "stdio")]
    pub async fn serve_stdio(&self) -> io::Result<()> {
        #[cfg(unix)]
        if let Some((stdin, stdout)) = pipes::stdio_pipes() {
            return self.serve_io(stdin, stdout).await;
        }
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// [`Server::serve_stdio`] until `shutdown` completes too (e.g. [`shutdown_signal`]), then
    /// drains: see [`Server::serve_io_until`].
    ///
    /// [`shutdown_signal`]: super::shutdown_signal
    ///
    /// # Errors
    /// I/O errors reading stdin.
    #[cfg(feature = "stdio")]
    pub async fn serve_stdio_until(
        &self,
        config: StdioConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        #[cfg(unix)]
        if let Some((stdin, stdout)) = pipes::stdio_pipes() {
            return self.serve_io_until(stdin, stdout, config, shutdown).await;
        }
        self.serve_io_until(tokio::io::stdin(), tokio::io::stdout(), config, shutdown)
            .await
    }

    /// Serves on any reader / writer pair (see the module docs).
    ///
    /// # Errors
    /// I/O errors reading `reader`. Write errors (the peer went away) end the output quietly.
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_io_with(reader, writer, StdioConfig::default())
            .await
    }

    /// [`Server::serve_io`] with explicit limits.
    ///
    /// # Errors
    /// As [`Server::serve_io`].
    pub async fn serve_io_with<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_io_task(reader, writer, config, None).await
    }

    /// [`Server::serve_io_with`] until `shutdown` completes too (e.g.
    /// [`shutdown_signal`](super::shutdown_signal)), then drains: this connection's
    /// `subscriptions/listen` streams end with their closing result (those of the server's other
    /// connections only with [`Server::shutdown_subscriptions`], or their own shutdown); a new
    /// request is answered `-32603` (the server is shutting down) while the input is still read,
    /// for the `notifications/cancelled` and the answers the requests in flight may still need;
    /// and the method returns once those requests have answered and their responses are
    /// written, or when [`StdioConfig::shutdown_grace`] is over, dropping the requests still
    /// running, even if the peer has stopped reading. End of input before or during the drain
    /// ends it as it does without a shutdown, within the same grace period.
    ///
    /// # Errors
    /// As [`Server::serve_io`].
    pub async fn serve_io_until<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shutdown = Shutdown::new(shutdown, config.shutdown_grace);
        self.serve_io_task(reader, writer, config, Some(shutdown))
            .await
    }

    async fn serve_io_task<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
        shutdown: Option<Shutdown>,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        // The loop runs as a task of its own, so that on a multi-thread runtime it is on a
        // worker thread, beside the writer task and the reactor, rather than on the thread that
        // awaits `serve_io` (often `block_on`'s, outside the workers): each request then costs
        // no hop between threads (BENCHMARKS.md, "Measured design choices").
        // Dropping this future stops the loop, as before.
        let server = self.clone();
        let task = AbortOnDropHandle::new(tokio::spawn(async move {
            server.serve_io_loop(reader, writer, config, shutdown).await
        }));
        match task.await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => Ok(()),
        }
    }

    async fn serve_io_loop<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
        mut shutdown: Option<Shutdown>,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, outbox) = mpsc::channel::<Vec<u8>>(1024);
        let writer_task = tokio::spawn(write_lines(writer, outbox));
        let shared = Arc::new(Shared {
            in_flight: InFlight::default(),
            closing: self.inner.shutdown.child_token(),
        });
        // The requests that wait (a slow tool, a back-channel question) run as tasks of their own;
        // reading pauses while `max_concurrent_requests` of them run. A request answered on its
        // first poll is never one of them, so it costs no semaphore permit (an acquire and a
        // release under the semaphore's lock, ~300 of ~23k instructions per call).
        let max_requests = config.max_concurrent_requests.max(1);
        let mut requests = JoinSet::new();
        // Notification chains that wait (a slow middleware) have a bound of their own: a
        // `notifications/cancelled` must never wait for a request's room, which is what it may
        // be about to free.
        let notification_permits = Arc::new(Semaphore::new(max_requests));
        let mut notifications = JoinSet::new();
        let mut lines = LineReader::new(reader, config.max_message_size);
        // The first request fixes the era of the connection (see `Connection`).
        let mut connection = Connection::Unset;
        let mut forwarder = None;
        let result = loop {
            while requests.try_join_next().is_some() {}
            while notifications.try_join_next().is_some() {}
            let frame = match shutdown.as_mut() {
                // Without a shutdown future the loop waits on the input alone, as it always did.
                None => lines.next_frame().await,
                Some(shutdown) => {
                    if shutdown.begun() {
                        // Begun, here or while the loop waited on something else (`bounded`):
                        // this connection's listen streams end with their closing result.
                        if !shared.closing.is_cancelled() {
                            shared.closing.cancel();
                        }
                        if requests.is_empty() {
                            // Drained: every request in flight has answered.
                            break Ok(());
                        }
                    }
                    let deadline = shutdown.deadline();
                    // The input first: a line that is there is served without polling the
                    // rest (the signal, when idle, is polled while the input is not ready).
                    // `next_frame` is cancel safe: a line half read when another branch wins
                    // is kept.
                    tokio::select! {
                        biased;
                        () = shutdown::until(deadline), if deadline.is_some() => break Ok(()),
                        frame = lines.next_frame() => frame,
                        () = shutdown.begins(), if deadline.is_none() => continue,
                        Some(_) = requests.join_next(), if deadline.is_some() => continue,
                    }
                }
            };
            let frame = match frame {
                Ok(Some(frame)) => frame,
                Ok(None) => break Ok(()),
                Err(error) => break Err(error),
            };
            let bytes = match frame {
                Frame::Line(bytes) => bytes,
                Frame::TooLong(size) => {
                    let error = ErrorObject::new(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Invalid request: message of {size} bytes exceeds the limit of {} bytes",
                            config.max_message_size
                        ),
                    );
                    queue(&out, encode_error(None, &error), &mut shutdown).await;
                    continue;
                }
            };
            // A huge request keeps its params raw, to own them in place (`request_in_place`).
            let decoded = if bytes.len() > KEEP_LINE_CAPACITY {
                MessageRef::decode_slice(bytes).map(Decoded::Raw)
            } else {
                typed_params::decode(bytes)
            };
            let decoded = match decoded {
                Ok(Decoded::Typed(request)) => Ok(Line::Request(Received::Typed(request))),
                Ok(Decoded::Raw(MessageRef::Request(request))) => {
                    Ok(Line::Request(Received::Raw(request)))
                }
                Ok(Decoded::Raw(MessageRef::Notification(notification))) => {
                    Ok(Line::Notification(notification))
                }
                Ok(Decoded::Raw(MessageRef::Response(response))) => Ok(Line::Response(response)),
                Err(error) => Err(error),
            };
            match decoded {
                Err(error) => {
                    let reply = encode_error(error.id(), &error.to_error_object());
                    queue(&out, reply, &mut shutdown).await;
                }
                Ok(Line::Request(request)) => {
                    if shutdown.as_ref().is_some_and(Shutdown::begun) {
                        refuse(&out, request.id());
                        continue;
                    }
                    let handshake = match stdio_era::route(self, &mut connection, &request) {
                        Route::Modern => None,
                        Route::Handshake(session, fresh) => {
                            if fresh {
                                forwarder = Some(handshake::forward_changes(
                                    self,
                                    Arc::clone(&session),
                                    out.clone(),
                                    shared.closing.clone(),
                                    (),
                                ));
                            }
                            Some(session)
                        }
                        Route::Refused(reply) => {
                            queue(&out, reply, &mut shutdown).await;
                            continue;
                        }
                        Route::Initialize => {
                            let opening = stdio_era::open_session(self, &mut connection, &request);
                            let Some(opened) = bounded(&mut shutdown, opening).await else {
                                break Ok(());
                            };
                            if let Some(reply) = opened.reply {
                                queue(&out, reply, &mut shutdown).await;
                            }
                            // The connection is the stream: nothing held beside it.
                            if let Some(session) = opened.session
                                && let Some(previous) =
                                    forwarder.replace(handshake::forward_changes(
                                        self,
                                        session,
                                        out.clone(),
                                        shared.closing.clone(),
                                        (),
                                    ))
                            {
                                previous.abort();
                            }
                            continue;
                        }
                    };
                    if requests.len() >= max_requests {
                        let room = async {
                            while requests.len() >= max_requests {
                                let _ = requests.join_next().await;
                            }
                        };
                        if bounded(&mut shutdown, room).await.is_none() {
                            break Ok(());
                        }
                        if shutdown.as_ref().is_some_and(Shutdown::begun) {
                            // It began while the loop waited.
                            refuse(&out, request.id());
                            continue;
                        }
                    }
                    let request = if bytes.len() > KEEP_LINE_CAPACITY {
                        let span = request.params().map(|text| span_in(bytes, text));
                        let id = request.id().clone();
                        let method = Cow::Owned(request.method().to_owned());
                        match request_in_place(id, method, span, &mut lines) {
                            Ok(request) => request,
                            Err((id, error)) => {
                                queue(&out, encode_error(Some(&id), &error), &mut shutdown).await;
                                continue;
                            }
                        }
                    } else {
                        request.into_owned()
                    };
                    let cancel = CancellationToken::new();
                    let key = request.id.clone();
                    let token = cancel.clone();
                    let server = self.clone();
                    let out = out.clone();
                    let shared_for_task = Arc::clone(&shared);
                    let mut task: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
                        let shared = shared_for_task;
                        let incoming = Incoming {
                            id: request.id.clone(),
                            method: &request.method,
                            params: request.params.as_deref(),
                            typed: request.typed,
                            headers: None,
                            principal: None,
                            principal_bound: false,
                            handshake,
                            closing: Some(&shared.closing),
                            #[cfg(feature = "http-server")]
                            http: None,
                            span: tracing::Span::none(),
                        };
                        let reply = pipeline::dispatch_in_task(
                            &server,
                            incoming,
                            Some(out.clone()),
                            cancel.clone(),
                        )
                        .await;
                        shared.in_flight.remove(&request.id);
                        // After a cancellation nothing more is sent for the request.
                        if let (Reply::Message { body, .. }, false) = (reply, cancel.is_cancelled())
                        {
                            let _ = out.send(body).await;
                        }
                    });
                    // Most requests finish without waiting on anything: run them right here
                    // and spawn a task only for those that wait (a slow tool, a back-channel
                    // question). Nothing is read meanwhile, so no cancellation can be missed.
                    if futures::poll!(task.as_mut()).is_pending() {
                        shared.in_flight.insert(key, token);
                        requests.spawn(task);
                    }
                }
                Ok(Line::Notification(notification)) => {
                    let session = connection.session().cloned();
                    if !middleware::has_middleware(self) {
                        serve_own(
                            session.as_deref(),
                            &shared.in_flight,
                            &notification.method,
                            notification.params.map(RawValue::get),
                        );
                        continue;
                    }
                    // A middleware may take its time over a notification (an audit log
                    // writing to disk): run its chain like a request, holding a permit and
                    // spawned only when it waits, so the next line is read meanwhile.
                    // `initialized` keeps its place in the stream: requests after it count on
                    // the session being open.
                    let keep_order = notification.method == Initialized::NAME;
                    let permit = Arc::clone(&notification_permits).acquire_owned();
                    let Some(Ok(permit)) = bounded(&mut shutdown, permit).await else {
                        break Ok(());
                    };
                    let method = notification.method.into_owned();
                    let params: Option<Box<str>> = notification.params.map(|raw| raw.get().into());
                    let server = self.clone();
                    let shared = Arc::clone(&shared);
                    let mut task: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
                        let serve = || {
                            serve_own(
                                session.as_deref(),
                                &shared.in_flight,
                                &method,
                                params.as_deref(),
                            );
                            middleware::Reply::nothing()
                        };
                        let message = Message {
                            id: None,
                            method: &method,
                            params: params.as_deref(),
                            era: if session.is_some() {
                                Era::Handshake
                            } else {
                                Era::Modern
                            },
                            handshake: session.as_deref(),
                            principal: None,
                            #[cfg(feature = "http-server")]
                            http: None,
                        };
                        middleware::through_middleware(&server, message, &serve).await;
                        drop(permit);
                    });
                    if keep_order {
                        if bounded(&mut shutdown, task).await.is_none() {
                            break Ok(());
                        }
                    } else if futures::poll!(task.as_mut()).is_pending() {
                        notifications.spawn(task);
                    }
                }
                Ok(Line::Response(response)) => {
                    // A handshake-era client answering one of our back-channel requests.
                    let answered = match (connection.session(), &response.id) {
                        (Some(session), Some(id)) => {
                            session.answer(id, response.payload.map(|raw| raw.to_owned()))
                        }
                        _ => false,
                    };
                    if !answered {
                        tracing::debug!("ignoring a response to no pending request");
                    }
                }
            }
        };
        // End of input (or a shutdown): this connection's listen streams close (not those of
        // the server's other connections: its child token), requests in flight still answer,
        // within the grace period once a shutdown has begun.
        shared.closing.cancel();
        if let Some(forwarder) = forwarder {
            forwarder.abort();
        }
        let answered = async {
            while requests.join_next().await.is_some() {}
            while notifications.join_next().await.is_some() {}
        };
        let answered = match shutdown.as_mut() {
            None => {
                answered.await;
                true
            }
            Some(shutdown) => shutdown.bound(answered).await.is_some(),
        };
        if !answered {
            tracing::warn!(
                requests = requests.len(),
                "shutdown: the grace period is over; dropping the requests still running"
            );
            requests.shutdown().await;
            notifications.shutdown().await;
        }
        drop(out);
        let mut writer_task = writer_task;
        let written = match shutdown.as_mut() {
            None => Some((&mut writer_task).await),
            // A peer that stopped reading must not hold the shutdown up.
            Some(shutdown) => shutdown.bound(&mut writer_task).await,
        };
        if written.is_none() {
            writer_task.abort();
        }
        result
    }
}

/// What a connection's request tasks share with its loop.
struct Shared {
    /// The requests the client may still cancel.
    in_flight: InFlight,
    /// The connection's own end (its end of input, or its drain), a child of the server's
    /// shutdown: it ends this connection's listen streams and nothing of the server's other
    /// connections, while `Server::shutdown_subscriptions` still ends them all.
    closing: CancellationToken,
}

/// What the transport itself does with a notification: `cancelled` cancels the request it
/// names, `initialized` opens the connection's handshake-era `session`.
fn serve_own(
    session: Option<&HandshakeSession>,
    in_flight: &InFlight,
    method: &str,
    params: Option<&str>,
) {
    if serve_notification(in_flight, method, params) == Served::Initialized
        && let Some(session) = session
    {
        session.mark_initialized();
    }
}

/// Runs `work`, the loop waiting on something other than the input (room for a request, a
/// middleware, the writer), bounded by the grace period of a shutdown that has begun or begins
/// meanwhile: `None` when that is over. Without a shutdown future, `work` to its end.
async fn bounded<T>(shutdown: &mut Option<Shutdown>, work: impl Future<Output = T>) -> Option<T> {
    match shutdown {
        None => Some(work.await),
        Some(shutdown) => shutdown.bound(work).await,
    }
}

/// Queues `message` for the writer. A peer that stops reading fills the queue, and the wait
/// for room is [`bounded`]: the message is dropped when the grace period is over.
async fn queue(out: &mpsc::Sender<Vec<u8>>, message: Vec<u8>, shutdown: &mut Option<Shutdown>) {
    let _ = bounded(shutdown, out.send(message)).await;
}

/// Answers a request that arrives while the server drains with `-32603`. Not awaited: a peer
/// that writes but no longer reads fills the queue, and waiting for room there held the drain
/// past its grace period; the refusal is dropped then, as that peer would not read it anyway.
fn refuse(out: &mpsc::Sender<Vec<u8>>, id: &RequestId) {
    let error = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        "Server shutting down: the request was not served",
    );
    let _ = out.try_send(encode_error(Some(id), &error));
}

/// Where `raw`, borrowed from `line`, lies in it.
fn span_in(line: &[u8], raw: &str) -> Range<usize> {
    let start = (raw.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
    start..start + raw.len()
}

/// A huge request, owned without a second copy of its params: they stay in the bytes already
/// read, shifted to the front of the line's own buffer, so serving it holds one copy of the
/// message fewer. A request without params gives the buffer up before it is served. `Err`
/// (unreachable: the decoder read these bytes as JSON text) carries the error to answer.
fn request_in_place<R: AsyncRead + Unpin>(
    id: RequestId,
    method: Cow<'static, str>,
    span: Option<Range<usize>>,
    lines: &mut LineReader<R>,
) -> Result<OwnedRequest, (RequestId, ErrorObject)> {
    let Some(span) = span else {
        lines.release_large_buffer();
        return Ok(OwnedRequest {
            id,
            method,
            params: None,
            typed: None,
        });
    };
    match params_in_place(lines.take_line(), span) {
        Some(params) => Ok(OwnedRequest {
            id,
            method,
            params: Some(params),
            typed: None,
        }),
        None => Err((
            id,
            ErrorObject::new(
                ErrorCode::PARSE_ERROR,
                "Parse error: params are not JSON text",
            ),
        )),
    }
}

/// The params at `span` of `line`, moved to the front of the line's buffer (no allocation).
/// `None` if those bytes are not JSON text.
fn params_in_place(mut line: Vec<u8>, span: Range<usize>) -> Option<Box<str>> {
    if span.end > line.len() {
        return None;
    }
    line.truncate(span.end);
    line.drain(..span.start);
    let text = String::from_utf8(line).ok()?;
    RawValue::from_string(text).ok().map(Box::<str>::from)
}

/// A decoded line: a request (typed or raw), a notification or a response.
enum Line<'a> {
    Request(Received<'a>),
    Notification(NotificationRef<'a>),
    Response(ResponseRef<'a>),
}

/// Drains the outbox, writing whatever is queued before each flush.
async fn write_lines<W: AsyncWrite + Unpin>(writer: W, mut outbox: mpsc::Receiver<Vec<u8>>) {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(message) = outbox.recv().await {
        if write_line(&mut writer, &message).await.is_err() {
            return;
        }
        while let Ok(message) = outbox.try_recv() {
            if write_line(&mut writer, &message).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &mut BufWriter<W>,
    message: &[u8],
) -> io::Result<()> {
    writer.write_all(message).await?;
    writer.write_all(b"\n").await
}

/// Stdin and stdout as non-blocking pipes on the reactor, instead of tokio's `Stdin`/`Stdout`,
/// which run every read and write as a job on the blocking thread pool (BENCHMARKS.md,
/// "Measured design choices").
#[cfg(all(unix, feature = "stdio"))]
mod pipes {
    use std::fs::File;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    use tokio::net::unix::pipe::{OpenOptions, Receiver, Sender};

    fn metadata(fd: &OwnedFd) -> Option<std::fs::Metadata> {
        let file = File::from(fd.try_clone().ok()?);
        file.metadata().ok()
    }

    /// Both ends as non-blocking pipes, when both are pipes (the reactor then reads and writes
    /// them without a blocking thread).
    ///
    /// Non-blocking mode belongs to the open file description, which a plain `dup` shares with
    /// everyone holding it: the process's own fds 0 and 1, its children (a tool spawning a
    /// command), sometimes the parent. So the pipes are first reopened through `/proc/self/fd`
    /// (Linux): a new description of the same pipe, whose mode is ours alone. Where that is not
    /// possible the shared description is used, except when stdout is the same file as stderr
    /// (logs written there could then fail with `EAGAIN`).
    pub(super) fn stdio_pipes() -> Option<(Receiver, Sender)> {
        let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
        let (input, output) = (metadata(&stdin)?, metadata(&stdout)?);
        if !input.file_type().is_fifo() || !output.file_type().is_fifo() {
            return None;
        }
        if let (Ok(receiver), Ok(sender)) = (
            OpenOptions::new().open_receiver("/proc/self/fd/0"),
            OpenOptions::new().open_sender("/proc/self/fd/1"),
        ) {
            return Some((receiver, sender));
        }
        let stderr = std::io::stderr().as_fd().try_clone_to_owned().ok()?;
        if let Some(err) = metadata(&stderr)
            && err.dev() == output.dev()
            && err.ino() == output.ino()
        {
            return None;
        }
        let receiver = Receiver::from_owned_fd(stdin).ok()?;
        let sender = Sender::from_owned_fd(stdout).ok()?;
        Some((receiver, sender))
    }
}

#[cfg(test)]
mod tests {
    use modelctx_types::jsonrpc::MessageRef;

    use super::{params_in_place, span_in};

    #[test]
    fn params_are_taken_from_the_line_in_place() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"caf\u00e9 \"x\""}}}"#.to_vec();
        let MessageRef::Request(request) = MessageRef::decode_slice(&line).unwrap() else {
            panic!("a request")
        };
        let raw = request.params.unwrap();
        let expected = raw.get().to_owned();
        let span = span_in(&line, raw.get());
        let params = params_in_place(line, span).unwrap();
        assert_eq!(&*params, expected);
        // Bytes that are not JSON text are refused, not passed on.
        assert!(params_in_place(b"{\"a\":".to_vec(), 0..5).is_none());
        assert!(params_in_place(b"{}".to_vec(), 0..9).is_none());
    }
}
