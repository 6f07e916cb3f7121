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
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use modelctx_types::NotificationMethod as _;
use modelctx_types::jsonrpc::encode_error;
use modelctx_types::methods::Initialized;
use modelctx_types::{Era, ErrorCode, ErrorObject};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::Server;
use super::chain::{self, Message};
use super::handshake::HandshakeSession;
use super::handshake_methods;
use super::in_flight::{InFlight, Served, serve_notification};
use super::message::{Incoming, Reply};
use super::middleware;
use super::notifier::Notifier;
use super::pipeline;
use super::shutdown::{self, DEFAULT_SHUTDOWN_GRACE, Shutdown};
use super::stdio_drain::{bounded, drain, queue, refuse};
use super::stdio_era::{self, Connection, Route};
#[cfg(all(unix, feature = "stdio"))]
use super::stdio_lines::pipes;
use super::stdio_lines::{Line, decode_line, request_in_place, span_in, write_lines};
use super::typed_params::OwnedRequest;
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
        let served = match pipes::stdio_pipes() {
            Some((stdin, stdout)) => self.serve_io(stdin, stdout).await,
            None => self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await,
        };
        #[cfg(not(unix))]
        let served = self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await;
        // The process's one connection has ended: so has the server.
        self.stop().await;
        served
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
        let served = match pipes::stdio_pipes() {
            Some((stdin, stdout)) => self.serve_io_until(stdin, stdout, config, shutdown).await,
            None => {
                self.serve_io_until(tokio::io::stdin(), tokio::io::stdout(), config, shutdown)
                    .await
            }
        };
        #[cfg(not(unix))]
        let served = self
            .serve_io_until(tokio::io::stdin(), tokio::io::stdout(), config, shutdown)
            .await;
        self.stop().await;
        served
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
        self.start().await.map_err(io::Error::other)?;
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
            let decoded = decode_line(bytes);
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
                                forwarder = Some(handshake_methods::forward_changes(
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
                                    forwarder.replace(handshake_methods::forward_changes(
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
                    let mut task = request_work(
                        self.clone(),
                        request,
                        handshake,
                        out.clone(),
                        Arc::clone(&shared),
                        cancel,
                    );
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
                    if !chain::has_middleware(self) {
                        serve_own(
                            self,
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
                    let mut task = notification_work(
                        self.clone(),
                        session,
                        notification.method.into_owned(),
                        notification.params.map(|raw| raw.get().into()),
                        Arc::clone(&shared),
                        permit,
                    );
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
        drain(
            &shared.closing,
            forwarder,
            requests,
            notifications,
            shutdown,
            out,
            writer_task,
        )
        .await;
        result
    }
}

/// What a request of the connection runs: the pipeline, then its answer on `out` unless the
/// client cancelled it. The loop polls it once in place and spawns it only if it waits.
fn request_work(
    server: Server,
    request: OwnedRequest,
    handshake: Option<Arc<HandshakeSession>>,
    out: Notifier,
    shared: Arc<Shared>,
    cancel: CancellationToken,
) -> Work {
    Box::pin(async move {
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
        let reply =
            pipeline::dispatch_in_task(&server, incoming, Some(out.clone()), cancel.clone()).await;
        shared.in_flight.remove(&request.id);
        // After a cancellation nothing more is sent for the request.
        if let (Reply::Message { body, .. }, false) = (reply, cancel.is_cancelled()) {
            let _ = out.send(body).await;
        }
    })
}

/// What a notification runs when middleware is registered: its chain, ending in what the
/// transport itself does with it ([`serve_own`]), holding `permit` meanwhile.
fn notification_work(
    server: Server,
    session: Option<Arc<HandshakeSession>>,
    method: String,
    params: Option<Box<str>>,
    shared: Arc<Shared>,
    permit: OwnedSemaphorePermit,
) -> Work {
    Box::pin(async move {
        let serve = || {
            serve_own(
                &server,
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
        chain::through_middleware(&server, message, &serve).await;
        drop(permit);
    })
}

/// A request's or a notification's work, boxed so that the loop can poll it in place first.
type Work = Pin<Box<dyn Future<Output = ()> + Send>>;

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
/// Then the application's handler for it runs, if it has one.
fn serve_own(
    server: &Server,
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
    let era = if session.is_some() {
        Era::Handshake
    } else {
        Era::Modern
    };
    server.deliver_notification(method, params, era, None);
}
