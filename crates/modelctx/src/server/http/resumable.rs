//! Resumable handshake-era streams ([`super::HttpConfig::event_store`]): a request's response
//! stream and a session's `GET` stream, each fed by a task of its own that numbers its events,
//! keeps them in the store and sends them down whichever connection is attached, so that the
//! stream outlives a broken connection and a client reconnecting with `Last-Event-ID` gets the
//! events it missed, then the rest.
//!
//! A reconnection attaches before it reads the store: every event the task keeps afterwards
//! reaches the new connection live, every one kept before is in what the store returns, and the
//! few in both are skipped by their numbers. A response stream ends with its response (the
//! request goes on while its client is away, as the 2025-11-25 transport asks: a disconnection
//! is not a cancellation); a `GET` stream ends with its session, or once it has had no
//! connection for the reconnection window.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::stream::{self, Stream, StreamExt as _};
use http::{HeaderValue, StatusCode, header};
use modelctx_types::{ErrorCode, ErrorObject};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::DropGuard;

use super::config::Resumability;
use super::event_store::StoredEvent;
use super::live_stream::{Frame, Kind, Live, Position, SessionStreams, event_id};
use super::responses::{event_stream_response, json, keep_alive_timer};
use crate::http::sse;
use crate::server::message::Reply;
use crate::server::stream_closer::StreamCloser;

/// The connection's queue: a slow client holds its stream's task back rather than growing it.
const CONNECTION_QUEUE: usize = 64;

/// Where a stream's messages come from: the work whose end ends the stream (a request's
/// handler, the `GET` stream's forwarding task), and what it sends meanwhile.
pub(crate) struct Source {
    pub(crate) work: futures::future::BoxFuture<'static, Reply>,
    pub(crate) messages: mpsc::Receiver<Vec<u8>>,
}

/// Answers a POSTed request whose work did not finish at once with a resumable stream: a
/// priming event, the request's messages, its response.
pub(crate) fn request_stream(
    streams: &Arc<SessionStreams>,
    closer: StreamCloser,
    settings: &Resumability,
    source: Source,
    cancel_on_drop: DropGuard,
    keep_alive: Duration,
) -> Response {
    // The request no longer ends with its connection: only `notifications/cancelled` (or the
    // session's end) stops it.
    cancel_on_drop.disarm();
    let receiver = start(streams, Kind::Request, closer, settings, source, keep_alive);
    event_stream(Vec::new(), None, receiver)
}

/// Opens a session's `GET` stream as a resumable one, after `replayed` (the events of an ended
/// `GET` stream the client missed).
pub(crate) fn get_stream(
    streams: &Arc<SessionStreams>,
    settings: &Resumability,
    source: Source,
    keep_alive: Duration,
    replayed: Vec<Frame>,
) -> Response {
    let closer = StreamCloser::default();
    let receiver = start(streams, Kind::Get, closer, settings, source, keep_alive);
    event_stream(replayed, None, receiver)
}

/// Registers a stream of `kind`, attaches its first connection and starts the task that feeds
/// it; the connection's end of the queue.
fn start(
    streams: &Arc<SessionStreams>,
    kind: Kind,
    closer: StreamCloser,
    settings: &Resumability,
    source: Source,
    keep_alive: Duration,
) -> mpsc::Receiver<Frame> {
    let (number, name, live) = streams.open(kind, closer);
    let (sender, receiver) = mpsc::channel(CONNECTION_QUEUE);
    live.attach(sender);
    // A response stream lasts as long as its request; a `GET` stream nobody reconnects to
    // ends after the window.
    let window = (kind == Kind::Get).then_some(settings.reconnect_window);
    let retry = settings.retry.map(|retry| retry.as_millis());
    let pump = Pump {
        streams: Arc::clone(streams),
        number,
        name,
        live,
        store: Arc::clone(&settings.store),
        seq: 0,
    };
    tokio::spawn(pump.run(source, retry, keep_alive, window));
    receiver
}

/// Attaches a plain `GET` (no `Last-Event-ID`) to the session's running `GET` stream, when it
/// has one whose client went away; `Err(())` when its client is still connected (409).
pub(crate) fn reattach_get(live: &Live) -> Result<Response, ()> {
    if live.is_attached() {
        return Err(());
    }
    let (sender, receiver) = mpsc::channel(CONNECTION_QUEUE);
    live.attach(sender);
    Ok(event_stream(Vec::new(), None, receiver))
}

/// What a reconnection with `Last-Event-ID` gets.
pub(crate) enum Resumed {
    /// The missed events, then the rest of the stream.
    Stream(Response),
    /// The missed events of a `GET` stream that has ended: a new `GET` stream follows them.
    GetEnded(Vec<Frame>),
}

/// Resumes the stream a `Last-Event-ID` names, of the session `streams` belongs to.
pub(crate) async fn resume(
    streams: &SessionStreams,
    settings: &Resumability,
    last_event_id: &str,
) -> Result<Resumed, Response> {
    let Some(Position {
        kind,
        number,
        stream,
        seq,
    }) = streams.position(last_event_id)
    else {
        return Err(unknown_event_id());
    };
    let live = streams.running(number);
    // Attached first, read second (the module's comment says why).
    let receiver = live.as_ref().map(|live| {
        let (sender, receiver) = mpsc::channel(CONNECTION_QUEUE);
        live.attach(sender);
        receiver
    });
    let missed = match settings.store.after(&stream, seq).await {
        Ok(missed) => missed,
        Err(error) => {
            tracing::warn!(%error, "resuming a stream: the event store failed");
            if let Some(live) = &live {
                live.detach();
            }
            return Err(store_unavailable());
        }
    };
    let replayed = frames_of(&missed, &stream);
    // Live frames at or below what the client has or is about to get are skipped.
    let floor = missed.last().map_or(seq, |event| event.seq.max(seq));
    match (receiver, kind) {
        (Some(receiver), _) => Ok(Resumed::Stream(event_stream(
            replayed,
            Some(floor),
            receiver,
        ))),
        (None, Kind::Get) => Ok(Resumed::GetEnded(replayed)),
        (None, Kind::Request) => {
            // The request is over: what was kept, then the end.
            let (_, receiver) = mpsc::channel(1);
            Ok(Resumed::Stream(event_stream(replayed, None, receiver)))
        }
    }
}

/// `replayed` events, then `receiver`'s frames (skipping the events numbered at or below
/// `floor`, which the client has or was just sent), as an event stream.
fn event_stream(
    replayed: Vec<Frame>,
    floor: Option<u64>,
    receiver: mpsc::Receiver<Frame>,
) -> Response {
    let live = stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|frame| (frame, receiver))
    })
    .filter(move |frame| {
        std::future::ready(match (frame.seq, floor) {
            (Some(seq), Some(floor)) => seq > floor,
            _ => true,
        })
    });
    let frames = stream::iter(replayed).chain(live);
    let body: std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>> =
        Box::pin(frames.map(|frame| Ok(frame.bytes)));
    event_stream_response(Body::from_stream(body))
}

/// The frames of the events of `stream` the store kept, for a connection that gets them first.
fn frames_of(events: &[StoredEvent], stream: &str) -> Vec<Frame> {
    events
        .iter()
        .map(|event| Frame {
            seq: Some(event.seq),
            bytes: sse::encode_message_with_id(&event_id(stream, event.seq), &event.message),
        })
        .collect()
}

fn unknown_event_id() -> Response {
    let error = ErrorObject::new(
        ErrorCode::INVALID_REQUEST,
        "Unknown or expired Last-Event-ID",
    );
    json(
        StatusCode::NOT_FOUND.as_u16(),
        modelctx_types::jsonrpc::encode_error(None, &error),
    )
}

fn store_unavailable() -> Response {
    let error = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        "Event store unavailable; retry later",
    );
    let mut response = json(
        StatusCode::SERVICE_UNAVAILABLE.as_u16(),
        modelctx_types::jsonrpc::encode_error(None, &error),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The task that feeds one stream.
struct Pump {
    streams: Arc<SessionStreams>,
    number: u64,
    name: String,
    live: Arc<Live>,
    store: Arc<dyn super::event_store::EventStore>,
    seq: u64,
}

impl Pump {
    async fn run(
        mut self,
        Source {
            mut work,
            mut messages,
        }: Source,
        retry_ms: Option<u128>,
        keep_alive: Duration,
        window: Option<Duration>,
    ) {
        let priming = sse::priming(&event_id(&self.name, 0), retry_ms);
        self.deliver(Frame {
            seq: Some(0),
            bytes: priming,
        })
        .await;
        let mut keep_alive = keep_alive_timer(keep_alive);
        let mut away_since: Option<Instant> = None;
        let reply = loop {
            let attached = self.live.current();
            match (&attached, away_since) {
                (Some(_), _) => away_since = None,
                (None, None) => away_since = Some(Instant::now()),
                (None, Some(_)) => {}
            }
            let give_up = window
                .zip(away_since)
                .map(|(window, since)| crate::server::deadline::after_tokio(since, window));
            // A close the handler asked for goes first: what it sends afterwards (its result
            // included) must reach the client through the reconnection, as it expects.
            tokio::select! {
                biased;
                () = self.live.closer.asked() => self.live.detach(),
                reply = &mut work => break reply,
                Some(message) = messages.recv() => self.emit(&message).await,
                () = self.live.changed() => {}
                () = closed(attached.as_ref()) => {
                    if let Some(sender) = &attached {
                        self.live.detach_if(sender);
                    }
                }
                () = sleep_until(give_up) => break Reply::Nothing,
                _ = keep_alive.tick() => {
                    if let Some(sender) = &attached {
                        let _ = sender.try_send(Frame { seq: None, bytes: sse::keep_alive() });
                    }
                }
            }
        };
        // What the work sent before it ended, then its response.
        while let Ok(message) = messages.try_recv() {
            self.emit(&message).await;
        }
        if let Reply::Message { body, .. } = reply {
            self.emit(&body).await;
        }
        self.streams.close(self.number);
        // Dropping the last sender ends the attached connection's body.
        self.live.detach();
    }

    /// Numbers `message`, keeps it and sends it on.
    async fn emit(&mut self, message: &[u8]) {
        self.seq += 1;
        if let Err(error) = self.store.append(&self.name, self.seq, message).await {
            tracing::warn!(%error, "an event of a resumable stream was not kept");
        }
        let bytes = sse::encode_message_with_id(&event_id(&self.name, self.seq), message);
        self.deliver(Frame {
            seq: Some(self.seq),
            bytes,
        })
        .await;
    }

    /// Sends `frame` down the attached connection, if any; a connection that went away is
    /// detached (its events are in the store).
    async fn deliver(&self, frame: Frame) {
        let Some(sender) = self.live.current() else {
            return;
        };
        if sender.send(frame).await.is_err() {
            self.live.detach_if(&sender);
        }
    }
}

async fn closed(sender: Option<&mpsc::Sender<Frame>>) {
    match sender {
        Some(sender) => sender.closed().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
