//! The resumable streams of one handshake-era session while they run: each stream's name, the
//! connection it is attached to (none while its client is away), and the session's table of
//! them. Below `sessions` (a session holds its table) and `resumable` (which runs the streams).
//!
//! A stream is named `<tag>.<kind><number>`: `tag` is 128 random bits drawn for the session
//! (not its id, which is a credential and would end up in the store's keys), `kind` is `r` for
//! a request's response stream or `g` for the session's `GET` stream, and numbers count the
//! session's streams. An event's id is `<stream>:<seq>`. A `Last-Event-ID` is honoured only
//! when its tag is the presenting session's own, so one session can never read another's
//! events, whatever ids it collects or guesses.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{Notify, mpsc};

use crate::server::stream_closer::StreamCloser;
use crate::sync::lock;

/// What a stream sends down its connection: an event (with its number, so that a connection
/// that replayed events from the store skips the live copies of them) or a comment.
#[derive(Debug)]
pub(crate) struct Frame {
    /// The event's number; `None` for a keep-alive comment.
    pub(crate) seq: Option<u64>,
    pub(crate) bytes: Bytes,
}

/// The two kinds of resumable stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A POSTed request's response stream: ends with the response.
    Request,
    /// The session's `GET` stream of notifications.
    Get,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Self::Request => 'r',
            Self::Get => 'g',
        }
    }
}

/// A `Last-Event-ID` of one of the presenting session's streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) kind: Kind,
    pub(crate) number: u64,
    /// The stream's name (`<tag>.<kind><number>`).
    pub(crate) stream: String,
    /// The last event the client received.
    pub(crate) seq: u64,
}

/// One running stream: where its events go now.
#[derive(Debug, Default)]
pub(crate) struct Live {
    attached: Mutex<Option<mpsc::Sender<Frame>>>,
    /// Wakes the stream's task when a connection attaches (it watches the new one).
    changed: Notify,
    /// The request's wish to close its connection now.
    pub(crate) closer: StreamCloser,
}

impl Live {
    fn new(closer: StreamCloser) -> Self {
        Self {
            closer,
            ..Self::default()
        }
    }

    /// The connection events go to now.
    pub(crate) fn current(&self) -> Option<mpsc::Sender<Frame>> {
        lock(&self.attached).clone()
    }

    /// Whether a connection that is still open is attached.
    pub(crate) fn is_attached(&self) -> bool {
        lock(&self.attached)
            .as_ref()
            .is_some_and(|sender| !sender.is_closed())
    }

    /// Sends the events from now on down `sender` (a reconnection), closing the connection
    /// attached before, if any.
    pub(crate) fn attach(&self, sender: mpsc::Sender<Frame>) {
        *lock(&self.attached) = Some(sender);
        self.changed.notify_one();
    }

    /// Detaches `sender` if it is still the attached one (a reconnection may have replaced it).
    pub(crate) fn detach_if(&self, sender: &mpsc::Sender<Frame>) {
        let mut attached = lock(&self.attached);
        if attached.as_ref().is_some_and(|s| s.same_channel(sender)) {
            *attached = None;
        }
    }

    /// Detaches whatever is attached: its connection ends once the stream's task lets go.
    pub(crate) fn detach(&self) {
        *lock(&self.attached) = None;
    }

    /// Completes when a connection attaches.
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }
}

/// The running resumable streams of one session.
#[derive(Debug)]
pub(crate) struct SessionStreams {
    tag: String,
    next: AtomicU64,
    live: Mutex<HashMap<u64, (Kind, Arc<Live>)>>,
}

impl SessionStreams {
    /// A session's table, with a fresh tag; `None` when the system has no randomness.
    pub(crate) fn new() -> Option<Self> {
        Some(Self {
            tag: crate::ids::random_hex().ok()?,
            next: AtomicU64::new(1),
            live: Mutex::default(),
        })
    }

    /// Registers a new stream of `kind`: its number, name and state.
    pub(crate) fn open(&self, kind: Kind, closer: StreamCloser) -> (u64, String, Arc<Live>) {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let live = Arc::new(Live::new(closer));
        lock(&self.live).insert(number, (kind, Arc::clone(&live)));
        (number, self.name(kind, number), live)
    }

    /// Forgets a stream whose task ended.
    pub(crate) fn close(&self, number: u64) {
        lock(&self.live).remove(&number);
    }

    /// The running stream `number`, if it still runs.
    pub(crate) fn running(&self, number: u64) -> Option<Arc<Live>> {
        lock(&self.live)
            .get(&number)
            .map(|(_, live)| Arc::clone(live))
    }

    /// The session's running `GET` stream, if any.
    pub(crate) fn running_get(&self) -> Option<Arc<Live>> {
        lock(&self.live)
            .values()
            .find(|(kind, _)| *kind == Kind::Get)
            .map(|(_, live)| Arc::clone(live))
    }

    fn name(&self, kind: Kind, number: u64) -> String {
        format!("{}.{}{number}", self.tag, kind.letter())
    }

    /// Reads a `Last-Event-ID`; `None` unless it names an event of one of this session's
    /// streams (running or not).
    pub(crate) fn position(&self, last_event_id: &str) -> Option<Position> {
        let (stream, seq) = last_event_id.rsplit_once(':')?;
        let rest = stream.strip_prefix(self.tag.as_str())?.strip_prefix('.')?;
        let kind = match rest.as_bytes().first()? {
            b'r' => Kind::Request,
            b'g' => Kind::Get,
            _ => return None,
        };
        let digits = &rest[1..];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if !seq.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Position {
            kind,
            number: digits.parse().ok()?,
            stream: stream.to_owned(),
            seq: seq.parse().ok()?,
        })
    }
}

/// The id of event `seq` of `stream`.
pub(crate) fn event_id(stream: &str, seq: u64) -> String {
    format!("{stream}:{seq}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_reads_only_its_own_event_ids() {
        let ours = SessionStreams::new().unwrap();
        let theirs = SessionStreams::new().unwrap();
        let (number, name, _) = ours.open(Kind::Request, StreamCloser::default());
        let id = event_id(&name, 7);
        assert_eq!(
            ours.position(&id),
            Some(Position {
                kind: Kind::Request,
                number,
                stream: name.clone(),
                seq: 7
            })
        );
        assert_eq!(theirs.position(&id), None, "another session's id");
        let (_, get, _) = ours.open(Kind::Get, StreamCloser::default());
        assert_eq!(ours.position(&event_id(&get, 0)).unwrap().kind, Kind::Get);
        for hostile in [
            "",
            ":1",
            "x:1",
            &format!("{name}:"),
            &format!("{name}:-1"),
            &format!("{name}:1x"),
            &format!("{name}:99999999999999999999999"),
            &format!("{}.x1:1", &name[..32]),
            &format!("{}.r:1", &name[..32]),
            &format!("{}.r1a:1", &name[..32]),
            &format!("{}r1:1", &name[..32]),
        ] {
            assert_eq!(ours.position(hostile), None, "{hostile:?}");
        }
    }

    #[test]
    fn a_reconnection_replaces_the_attached_connection() {
        let live = Live::default();
        let (first, _first_rx) = mpsc::channel(1);
        live.attach(first.clone());
        assert!(live.is_attached());
        let (second, _second_rx) = mpsc::channel(1);
        live.attach(second.clone());
        live.detach_if(&first);
        assert!(live.current().unwrap().same_channel(&second), "kept");
        live.detach_if(&second);
        assert!(!live.is_attached());
    }
}
