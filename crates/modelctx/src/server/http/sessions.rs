//! The table of handshake-era HTTP sessions, bounded against `initialize` floods.
//!
//! A session id is unguessable, but opening sessions costs nothing, so the table has three
//! defenses: `initialize` is rate-limited per peer address (see `peer_rate`); a session opened
//! by an authenticated principal is usable by that principal only (to anyone else it does not
//! exist); and when the table is full, room is made from sessions that never served a call —
//! oldest first — before any session in use is touched.
//!
//! So a flood of bare `initialize`s evicts its own sessions. A flood that also sends one request
//! on each session makes them in use, and once no unused session is left each new one evicts
//! the session in use least recently (those idle for over an hour all go first): a session
//! survives while it is used more often than the table turns over, every `capacity / rate`
//! seconds at the flood's rate — which the per-address limit caps at 10 sessions a second per
//! IPv4 address or IPv6 /64 by default, so 1 000 s for one address, 10 s for a hundred. The
//! idlest are found by a scan that lists a sixteenth of the table at a time, so a full table
//! costs `O(n / 16)` per `initialize` (amortized), not `O(n)`.
//!
//! A session also ends after `HttpConfig::session_idle_timeout` (30 minutes by default, at least
//! [`MIN_IDLE_TIMEOUT`]) without use: no request naming it, none of its requests in flight, no
//! stream of it open (as the Python SDK counts it). The table hands a session out as an
//! [`InUse`], and the session is in use while one is held; dropping it counts as a use, so the
//! idle time starts when the last request or stream ends, whether or not the server saw any
//! other request meanwhile. Whatever it held (its subscriptions, charged to the server's
//! budget) goes with it. An expired session is refused (404) the moment it is named again; the
//! table drops the others in a sweep when a request comes and a quarter of the timeout has
//! passed since the last one, so an idle server does no work and a table never holds expired
//! sessions for long once requests come.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use modelctx_seal::Principal;

use super::live_stream::SessionStreams;
use crate::server::handshake::HandshakeSession;
use crate::server::in_flight::InFlight;
use crate::server::peer_rate::{PeerRate, RateLimit};
use crate::sync::lock;

/// Sessions in use but idle for longer than this go first when no unused one is left.
const IDLE: Duration = Duration::from_secs(3600);
/// The shortest idle timeout: a shorter one (zero, say) would end sessions between a client's
/// requests, and sweep the whole table on nearly every request.
const MIN_IDLE_TIMEOUT: Duration = Duration::from_secs(1);

/// The live handshake-era sessions of one endpoint.
pub(crate) struct Sessions {
    table: Mutex<Table>,
    /// `initialize` per peer address, when limited.
    opening: Option<PeerRate>,
}

struct Table {
    entries: HashMap<String, Entry>,
    /// How long a session may go unused (`None`: until evicted or deleted).
    idle_timeout: Option<Duration>,
    /// When the next sweep of expired sessions is due.
    next_sweep: Instant,
    /// Ids in the order their sessions were opened, for evicting unused ones oldest first. An id
    /// may have been used or removed since; it is skipped then (and dropped on compaction).
    unused: VecDeque<String>,
    /// The idlest sessions in use at the last scan, idlest last, each with the use it was idle
    /// since: evicted in that order, skipping any used since (a session not listed was used
    /// later than all of them, so this is exactly least-recently-used order).
    idlest: Vec<(Instant, String)>,
    capacity: usize,
}

struct Entry {
    session: Arc<HttpSession>,
    /// Who opened it, when the request was authenticated: nobody else may use it.
    principal: Option<Principal>,
    /// Whether it has served a request or a stream.
    used: bool,
}

/// A handshake-era session as this transport keeps it: the session the pipeline serves, and
/// what only HTTP knows of it.
struct HttpSession {
    session: Arc<HandshakeSession>,
    /// For idle expiry and eviction (a stdio session lives as long as its pipe). Tokio's
    /// clock, which tests can pause.
    last_used: Mutex<Instant>,
    /// The requests POSTed on the session that its client may cancel (a stdio connection keeps
    /// its own table, for both eras).
    in_flight: Arc<InFlight>,
    /// Whether the session's `GET` stream is open: it may have one at a time.
    get_stream: AtomicBool,
    /// Its resumable streams, made when the first one opens (with an event store only).
    streams: OnceLock<Option<Arc<SessionStreams>>>,
}

impl HttpSession {
    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// When the session was last used (or opened).
    fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }

    /// Whether something outside the table holds the session: a request of it in flight, its
    /// stream open.
    fn is_held(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) > 1 || Arc::strong_count(&self.session) > 1
    }
}

impl Sessions {
    /// The sessions of an endpoint: at most `capacity` (`HttpConfig::max_sessions`).
    pub(crate) fn new(
        rate: Option<RateLimit>,
        idle_timeout: Option<Duration>,
        capacity: usize,
    ) -> Self {
        Self {
            table: Mutex::new(Table {
                entries: HashMap::new(),
                idle_timeout: idle_timeout.map(|timeout| timeout.max(MIN_IDLE_TIMEOUT)),
                next_sweep: Instant::now(),
                unused: VecDeque::new(),
                idlest: Vec::new(),
                capacity,
            }),
            opening: rate.map(PeerRate::new),
        }
    }

    /// Whether `peer` may open a session now (the attempt counts); `Err(wait)` when it opens
    /// them too fast and may try again after `wait`.
    pub(crate) fn admit(&self, peer: Option<IpAddr>) -> Result<(), Duration> {
        match (&self.opening, peer) {
            (Some(rate), Some(peer)) => rate.check(peer),
            _ => Ok(()),
        }
    }

    /// Adds a session opened by `principal` and returns its new id (`None`: no randomness).
    pub(crate) fn insert(
        &self,
        session: Arc<HandshakeSession>,
        principal: Option<Principal>,
    ) -> Option<String> {
        let id = crate::ids::random_hex().ok()?;
        let mut table = lock(&self.table);
        table.sweep_if_due(Instant::now());
        if table.entries.len() >= table.capacity {
            table.evict_one();
        }
        table.entries.insert(
            id.clone(),
            Entry {
                session: Arc::new(HttpSession {
                    session,
                    last_used: Mutex::new(Instant::now()),
                    in_flight: Arc::default(),
                    get_stream: AtomicBool::new(false),
                    streams: OnceLock::new(),
                }),
                principal,
                used: false,
            },
        );
        table.unused.push_back(id.clone());
        if table.unused.len() > 2 * table.capacity {
            let Table {
                entries, unused, ..
            } = &mut *table;
            unused.retain(|id| entries.get(id).is_some_and(|e| !e.used));
        }
        Some(id)
    }

    /// The session `id` as `principal` sees it (another principal's does not exist), marked in
    /// use when `serving` a request or a stream; in use while the answer is held.
    pub(crate) fn get(
        &self,
        id: &str,
        principal: Option<&Principal>,
        serving: bool,
    ) -> Option<InUse> {
        let session = {
            let now = Instant::now();
            let mut table = lock(&self.table);
            table.sweep_if_due(now);
            let timeout = table.idle_timeout;
            let entry = table
                .entries
                .get_mut(id)
                .filter(|e| e.principal.as_ref() == principal)?;
            if entry.expired(timeout, now) {
                table.entries.remove(id);
                return None;
            }
            entry.used |= serving;
            Arc::clone(&entry.session)
        };
        session.touch();
        Some(InUse(session))
    }

    /// Ends the session `id`, if `principal` may see it.
    pub(crate) fn remove(&self, id: &str, principal: Option<&Principal>) -> bool {
        let mut table = lock(&self.table);
        let owned = table
            .entries
            .get(id)
            .is_some_and(|e| e.principal.as_ref() == principal);
        owned && table.entries.remove(id).is_some()
    }
}

/// A session handed out by the table for a request or a stream. The session is in use while
/// this is held (the table never expires a session referenced outside it), and dropping this
/// counts as a use: a request or stream that outlasts the idle timeout, on a server no other
/// request reaches meanwhile, leaves a session idle from its end, not one already expired.
pub(crate) struct InUse(Arc<HttpSession>);

impl InUse {
    /// The session, to hand to what serves the request (which keeps it no longer than this).
    pub(crate) fn session(&self) -> &Arc<HandshakeSession> {
        &self.0.session
    }

    /// The session's requests its client may cancel.
    pub(crate) fn in_flight(&self) -> &Arc<InFlight> {
        &self.0.in_flight
    }

    /// Marks the session's `GET` stream open; false when one already is.
    pub(crate) fn open_get_stream(&self) -> bool {
        !self.0.get_stream.swap(true, Ordering::AcqRel)
    }

    /// The session's resumable streams; `None` when the system had no randomness for their
    /// tag.
    pub(crate) fn streams(&self) -> Option<&Arc<SessionStreams>> {
        self.0
            .streams
            .get_or_init(|| SessionStreams::new().map(Arc::new))
            .as_ref()
    }

    /// Marks the session's `GET` stream closed.
    pub(crate) fn close_get_stream(&self) {
        self.0.get_stream.store(false, Ordering::Release);
    }
}

impl Deref for InUse {
    type Target = HandshakeSession;

    fn deref(&self) -> &HandshakeSession {
        &self.0.session
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.touch();
    }
}

impl Entry {
    /// Whether the session went unused for `timeout` by `now`. One referenced outside the
    /// table — a request of it in flight, its stream open — is in use, however long ago it was
    /// named.
    fn expired(&self, timeout: Option<Duration>, now: Instant) -> bool {
        timeout.is_some_and(|timeout| {
            !self.session.is_held()
                && now.saturating_duration_since(self.session.last_used()) >= timeout
        })
    }
}

impl Table {
    /// Drops the expired sessions, when a sweep is due (a quarter of the timeout after the
    /// last). A session in use is kept; its idle time starts when its use ends ([`InUse`]).
    fn sweep_if_due(&mut self, now: Instant) {
        let Some(timeout) = self.idle_timeout else {
            return;
        };
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = crate::server::deadline::after_tokio(now, timeout / 4);
        self.entries
            .retain(|_, entry| !entry.expired(Some(timeout), now));
    }

    /// Makes room for one session: the oldest never used, else the least recently used (every
    /// session idle for over an hour first).
    fn evict_one(&mut self) {
        while let Some(id) = self.unused.pop_front() {
            if self.entries.get(&id).is_some_and(|e| !e.used) {
                self.entries.remove(&id);
                return;
            }
        }
        while let Some((since, id)) = self.idlest.pop() {
            if self
                .entries
                .get(&id)
                .is_some_and(|e| e.session.last_used() == since)
            {
                self.entries.remove(&id);
                return;
            }
        }
        if self.scan_idlest()
            && let Some((_, id)) = self.idlest.pop()
        {
            // Just listed as the idlest: evicted without a second look, so that a session
            // touched between the scan and here cannot make this loop.
            self.entries.remove(&id);
        }
    }

    /// Drops the sessions idle for over an hour and, if the table is still full, lists its
    /// idlest sixteenth in `idlest`. Returns whether one must still go.
    fn scan_idlest(&mut self) -> bool {
        self.entries.retain(|_, e| e.session.idle_for() < IDLE);
        if self.entries.len() < self.capacity {
            return false;
        }
        let batch = (self.capacity / 16).max(1);
        // Compare the instants, not `elapsed()`: elapsed times read one after another drift by
        // the time the scan takes, which can exceed the gap between two sessions' uses.
        let mut by_use: Vec<(Instant, &String)> = self
            .entries
            .iter()
            .map(|(id, e)| (e.session.last_used(), id))
            .collect();
        if by_use.len() > batch {
            by_use.select_nth_unstable(batch - 1);
            by_use.truncate(batch);
        }
        by_use.sort_unstable_by(|a, b| b.cmp(a));
        self.idlest = by_use
            .into_iter()
            .map(|(since, id)| (since, id.clone()))
            .collect();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(sessions: &Sessions, principal: Option<&str>) -> String {
        sessions
            .insert(
                Arc::new(HandshakeSession::uninitialized()),
                principal.map(Principal::new),
            )
            .unwrap()
    }

    #[test]
    fn a_flood_of_unused_sessions_evicts_its_own_oldest_first() {
        let sessions = Sessions::new(None, None, 8);
        let live = open(&sessions, None);
        assert!(sessions.get(&live, None, true).is_some());
        let idle_but_used = open(&sessions, None);
        assert!(sessions.get(&idle_but_used, None, true).is_some());
        let first_unused = open(&sessions, None);
        for _ in 0..1000 {
            open(&sessions, None);
        }
        assert!(sessions.get(&live, None, false).is_some());
        assert!(sessions.get(&idle_but_used, None, false).is_some());
        assert!(sessions.get(&first_unused, None, false).is_none());
        let table = lock(&sessions.table);
        assert_eq!(table.entries.len(), 8);
        assert!(table.unused.len() <= 16, "the queue is compacted");
    }

    #[test]
    fn when_every_session_is_in_use_the_idlest_goes() {
        let sessions = Sessions::new(None, None, 3);
        let ids: Vec<String> = (0..3).map(|_| open(&sessions, None)).collect();
        for id in &ids {
            assert!(sessions.get(id, None, true).is_some());
        }
        // The first is touched again: the second is now the idlest.
        assert!(sessions.get(&ids[0], None, true).is_some());
        let newest = open(&sessions, None);
        assert!(sessions.get(&ids[1], None, false).is_none());
        for id in [&ids[0], &ids[2], &newest] {
            assert!(sessions.get(id, None, false).is_some());
        }
    }

    /// Sessions in use go in least-recently-used order, one scan listing several: a listed
    /// session used again before its turn is skipped, and the next scan finds the next idlest.
    #[test]
    fn sessions_in_use_go_least_recently_used_first() {
        let sessions = Sessions::new(None, None, 32);
        let open_used = || {
            let id = open(&sessions, None);
            assert!(sessions.get(&id, None, true).is_some());
            id
        };
        let ids: Vec<String> = (0..32).map(|_| open_used()).collect();
        let present = |id: &String| lock(&sessions.table).entries.contains_key(id);
        let first = open_used();
        assert!(!present(&ids[0]));
        assert_eq!(lock(&sessions.table).idlest.len(), 1, "one scan listed two");
        // The second idlest, listed, is used again: the next eviction skips it.
        assert!(sessions.get(&ids[1], None, true).is_some());
        let second = open_used();
        assert!(!present(&ids[2]), "rescanned: the next idlest");
        let third = open_used();
        assert!(!present(&ids[3]));
        for id in ids[4..].iter().chain([&ids[1], &first, &second, &third]) {
            assert!(present(id));
        }
        assert_eq!(lock(&sessions.table).entries.len(), 32);
    }

    /// Sessions end after the idle timeout unless in use (a request in flight, a stream open),
    /// and an idle session's end gives back what it held; without a timeout none ends by time.
    #[tokio::test(start_paused = true)]
    async fn idle_sessions_expire_and_sessions_in_use_do_not() {
        let hour = Duration::from_secs(3600);
        let sessions = Sessions::new(None, Some(hour), 10_000);
        let idle = open(&sessions, None);
        let streaming = open(&sessions, None);
        let stream = sessions.get(&streaming, None, true).unwrap();
        let held = Arc::downgrade(sessions.get(&idle, None, true).unwrap().session());
        tokio::time::advance(hour - Duration::from_secs(1)).await;
        assert!(
            sessions.get(&idle, None, false).is_some(),
            "not idle long enough"
        );
        tokio::time::advance(hour).await;
        assert!(
            sessions.get(&idle, None, false).is_none(),
            "idle for the timeout"
        );
        assert!(held.upgrade().is_none(), "dropped with everything it held");
        assert!(
            sessions.get(&streaming, None, false).is_some(),
            "its stream is open"
        );
        // The stream closes: the session's idle time starts then, and the next sweep after the
        // timeout drops it unnamed.
        drop(stream);
        let others = open(&sessions, None);
        tokio::time::advance(2 * hour).await;
        let _ = open(&sessions, None);
        {
            let table = lock(&sessions.table);
            assert!(!table.entries.contains_key(&streaming));
            assert!(!table.entries.contains_key(&others));
            assert_eq!(table.entries.len(), 1);
        }

        let forever = Sessions::new(None, None, 10_000);
        let kept = open(&forever, None);
        tokio::time::advance(100 * hour).await;
        assert!(forever.get(&kept, None, false).is_some());
    }

    /// A use that outlasts the timeout on a quiet server — a `GET` stream held open, a long
    /// call, and no other request reaching the server meanwhile, so no sweep saw the session
    /// in use — leaves the session idle from the moment the use ends: it is still there when
    /// named next, and expires a whole timeout later.
    #[tokio::test(start_paused = true)]
    async fn a_use_outlasting_the_timeout_on_a_quiet_server_keeps_its_session() {
        let hour = Duration::from_secs(3600);
        let sessions = Sessions::new(None, Some(hour), 10_000);
        let id = open(&sessions, None);
        let stream = sessions.get(&id, None, true).unwrap();
        tokio::time::advance(2 * hour).await;
        drop(stream);
        tokio::time::advance(hour - Duration::from_secs(1)).await;
        assert!(
            sessions.get(&id, None, false).is_some(),
            "idle for less than the timeout since its stream closed"
        );
        tokio::time::advance(hour).await;
        assert!(
            sessions.get(&id, None, false).is_none(),
            "then idle too long"
        );
    }

    /// An idle timeout of zero (or any below the floor) is the floor: a session is usable
    /// between its client's requests, and the table is not swept on every request.
    #[tokio::test(start_paused = true)]
    async fn an_idle_timeout_below_the_floor_is_the_floor() {
        let sessions = Sessions::new(None, Some(Duration::ZERO), 10_000);
        let id = open(&sessions, None);
        tokio::time::advance(MIN_IDLE_TIMEOUT / 2).await;
        assert!(
            sessions.get(&id, None, true).is_some(),
            "usable when opened"
        );
        let next_sweep = lock(&sessions.table).next_sweep;
        assert!(sessions.get(&id, None, true).is_some());
        assert_eq!(
            lock(&sessions.table).next_sweep,
            next_sweep,
            "no sweep on the next request"
        );
        tokio::time::advance(MIN_IDLE_TIMEOUT).await;
        assert!(
            sessions.get(&id, None, false).is_none(),
            "idle past the floor"
        );
    }

    #[test]
    fn a_session_belongs_to_the_principal_that_opened_it() {
        let sessions = Sessions::new(None, None, 10_000);
        let alice = Principal::new("alice");
        let bob = Principal::new("bob");
        let id = open(&sessions, Some("alice"));
        assert!(sessions.get(&id, Some(&bob), true).is_none());
        assert!(sessions.get(&id, None, true).is_none());
        assert!(!sessions.remove(&id, Some(&bob)));
        assert!(sessions.get(&id, Some(&alice), true).is_some());
        let anonymous = open(&sessions, None);
        assert!(sessions.get(&anonymous, Some(&alice), true).is_none());
        assert!(sessions.remove(&id, Some(&alice)));
        assert!(sessions.get(&id, Some(&alice), false).is_none());
    }
}
