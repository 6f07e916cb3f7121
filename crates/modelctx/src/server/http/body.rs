//! Reading request bodies within bounds: the size of one body, the bytes buffered by all requests
//! together, and the pace at which a body must arrive.
//!
//! A per-request limit alone does not bound the server: 64 clients each trickling a body just
//! under 4 MiB would hold 256 MiB. So every buffered byte is charged to one server-wide budget
//! (semaphores counted in KiB) **as it arrives** — never from a declared `Content-Length`, or a
//! few connections that send only headers would hold the whole budget without sending a byte. A
//! byte that does not fit is refused at once with 503 rather than queued: a queued request would
//! still hold its connection and its unread bytes in kernel buffers, and the client can retry.
//! The charge lives until the response is ready (a JSON answer is complete, an event stream has
//! begun), because the decoded request owns a copy of what the body carried until then.
//!
//! Two rules keep uploads that are slow, silent or large from locking small requests out:
//!
//! * **Pace.** A body must start within `body_first_byte_timeout`, and every byte that arrives
//!   buys `1 / body_min_rate` seconds more, up to `body_timeout` in all; then 408, and what it
//!   held goes back. A silent upload is gone after the first-byte timeout, a trickling one as soon
//!   as it falls behind the rate.
//! * **Each connection's share.** A quarter of the budget is a reserve that only the first
//!   [`SHARE`] bytes of a body may draw on (once the rest is spent). Large or stalled uploads
//!   can hold at most three quarters, so ordinary requests — nearly all of them a few KiB — are
//!   still served while they do; locking those out too takes hundreds of connections (256
//!   with the defaults) that each keep up the minimum rate.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, HttpBody as _};
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, header};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::config::HttpConfig;

/// The bytes of each body that may come out of the reserve: every ordinary request fits.
pub(crate) const SHARE: usize = 64 * 1024;

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Over the per-request limit (413).
    TooLarge,
    /// The server-wide budget is spent (503).
    Busy,
    /// The body did not arrive in time, or too slowly (408).
    TimedOut,
    /// The connection failed mid-body (400).
    Unreadable,
}

/// A body read into memory, with its share of the budget.
#[derive(Debug)]
pub(crate) struct HeldBody {
    pub(crate) bytes: Bytes,
    /// Returned to the budget when the request is done.
    pub(crate) reservation: Reservation,
}

/// What one body holds of the budget (returned on drop).
#[derive(Debug, Default)]
pub(crate) struct Reservation {
    shared: Option<OwnedSemaphorePermit>,
    reserve: Option<OwnedSemaphorePermit>,
    units: u32,
}

/// The server-wide budget of buffered request bytes.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    /// Three quarters of the budget, for any byte.
    shared: Arc<Semaphore>,
    /// The last quarter, for the first [`SHARE`] bytes of a body only.
    reserve: Arc<Semaphore>,
    max_body: usize,
    first_byte: Duration,
    min_rate: u64,
    timeout: Duration,
}

/// The budget is counted in KiB so that budgets beyond 4 GiB fit the semaphore's `u32` counts.
const UNIT: usize = 1024;

fn units(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX)
}

fn semaphore(units: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(units.min(Semaphore::MAX_PERMITS)))
}

fn merge(held: &mut Option<OwnedSemaphorePermit>, more: OwnedSemaphorePermit) {
    match held {
        Some(held) => held.merge(more),
        None => *held = Some(more),
    }
}

impl BodyBudget {
    pub(crate) fn new(config: &HttpConfig) -> Self {
        let total = units(config.max_buffered_body_bytes) as usize;
        let reserve = total / 4;
        Self {
            shared: semaphore(total - reserve),
            reserve: semaphore(reserve),
            max_body: config.max_body_size,
            first_byte: config.body_first_byte_timeout,
            min_rate: config.body_min_rate,
            timeout: config.body_timeout,
        }
    }

    /// Reads the whole body, or says why not.
    pub(crate) async fn read(
        &self,
        headers: &HeaderMap,
        mut body: Body,
    ) -> Result<HeldBody, BodyError> {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        if declared.is_some_and(|length| length > self.max_body) {
            return Err(BodyError::TooLarge);
        }
        let started = Instant::now();
        let mut reservation = Reservation::default();
        // A body that arrives as one frame (nearly all do) is kept as it came, without a copy.
        let mut first: Option<Bytes> = None;
        let mut buffer = BytesMut::new();
        let mut received = 0;
        while !body.is_end_stream() {
            let frame =
                match tokio::time::timeout_at(self.deadline(started, received), body.frame()).await
                {
                    Ok(Some(frame)) => frame.map_err(|_| BodyError::Unreadable)?,
                    Ok(None) => break,
                    Err(_) => return Err(BodyError::TimedOut),
                };
            let Ok(data) = frame.into_data() else {
                continue; // trailers carry nothing for us
            };
            received += data.len();
            if received > self.max_body {
                return Err(BodyError::TooLarge);
            }
            self.charge(&mut reservation, received)?;
            match first.take() {
                None if buffer.is_empty() => first = Some(data),
                earlier => {
                    buffer.extend_from_slice(&earlier.unwrap_or_default());
                    buffer.extend_from_slice(&data);
                }
            }
        }
        let bytes = first.unwrap_or_else(|| buffer.freeze());
        Ok(HeldBody { bytes, reservation })
    }

    /// When the body must be complete, given the bytes received so far.
    fn deadline(&self, started: Instant, received: usize) -> Instant {
        let allowed = match self.min_rate {
            0 => self.timeout,
            rate => {
                let earned = Duration::from_millis(
                    u64::try_from(received)
                        .unwrap_or(u64::MAX)
                        .saturating_mul(1000)
                        / rate,
                );
                self.timeout.min(self.first_byte.saturating_add(earned))
            }
        };
        // Checked: `body_timeout(Duration::MAX)` with no minimum rate means "no deadline".
        crate::server::deadline::after_tokio(started, allowed)
    }

    /// Grows a body's charge to `received` bytes, or refuses at once when the budget cannot
    /// cover them: from the shared part, or from the reserve while the body is within its share.
    fn charge(&self, held: &mut Reservation, received: usize) -> Result<(), BodyError> {
        let target = units(received);
        let more = target.saturating_sub(held.units);
        if more == 0 {
            return Ok(());
        }
        if let Ok(permit) = Arc::clone(&self.shared).try_acquire_many_owned(more) {
            merge(&mut held.shared, permit);
        } else if received <= SHARE {
            let permit = Arc::clone(&self.reserve)
                .try_acquire_many_owned(more)
                .map_err(|_| BodyError::Busy)?;
            merge(&mut held.reserve, permit);
        } else {
            return Err(BodyError::Busy);
        }
        held.units = target;
        Ok(())
    }

    /// Bytes of budget not held by any request (for tests).
    #[cfg(test)]
    fn available(&self) -> usize {
        (self.shared.available_permits() + self.reserve.available_permits()) * UNIT
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    use super::*;

    const KIB: usize = UNIT;

    fn budget(total: usize, max_body: usize) -> BodyBudget {
        BodyBudget::new(
            &HttpConfig::default()
                .max_buffered_body_bytes(total)
                .max_body_size(max_body),
        )
    }

    fn declared(length: usize) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, length.into());
        headers
    }

    fn chunked(parts: &[&'static [u8]]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    /// A body whose chunks the test sends one by one.
    fn fed() -> (
        futures::channel::mpsc::UnboundedSender<Result<Bytes, std::io::Error>>,
        Body,
    ) {
        let (feed, chunks) = futures::channel::mpsc::unbounded();
        (feed, Body::from_stream(chunks))
    }

    #[tokio::test]
    async fn the_budget_is_charged_as_bytes_arrive_not_from_the_declared_length() {
        let budget = budget(64 * KIB, 64 * KIB);
        let (feed, body) = fed();
        let headers = declared(40 * KIB);
        let read = budget.read(&headers, body);
        tokio::pin!(read);
        // Headers alone hold nothing, whatever length they declare.
        assert!(futures::poll!(&mut read).is_pending());
        assert_eq!(budget.available(), 64 * KIB);
        feed.unbounded_send(Ok(Bytes::from(vec![b'a'; 10 * KIB])))
            .unwrap();
        assert!(futures::poll!(&mut read).is_pending());
        assert_eq!(budget.available(), 54 * KIB);
        feed.unbounded_send(Ok(Bytes::from(vec![b'b'; 30 * KIB])))
            .unwrap();
        drop(feed);
        let held = read.await.unwrap();
        assert_eq!(held.bytes.len(), 40 * KIB);
        assert_eq!(&held.bytes[10 * KIB - 1..10 * KIB + 1], b"ab");
        assert_eq!(budget.available(), 24 * KIB);
        drop(held);
        assert_eq!(budget.available(), 64 * KIB);
    }

    #[tokio::test]
    async fn large_bodies_leave_the_reserve_to_small_ones() {
        // 1 MiB: 768 KiB shared, a 256 KiB reserve.
        let budget = budget(1024 * KIB, 1024 * KIB);
        let large = budget
            .read(&declared(768 * KIB), Body::from(vec![b'x'; 768 * KIB]))
            .await
            .unwrap();
        // The shared part is spent: a large body is refused, though the reserve could hold it...
        let refused = budget
            .read(&declared(200 * KIB), Body::from(vec![b'y'; 200 * KIB]))
            .await;
        assert_eq!(refused.unwrap_err(), BodyError::Busy);
        // ...which ordinary requests draw on.
        let mut small = Vec::new();
        for _ in 0..4 {
            small.push(
                budget
                    .read(&declared(SHARE), Body::from(vec![b'z'; SHARE]))
                    .await
                    .unwrap(),
            );
        }
        let over = budget
            .read(&declared(SHARE), Body::from(vec![b'z'; SHARE]))
            .await;
        assert_eq!(
            over.unwrap_err(),
            BodyError::Busy,
            "the reserve is bounded too"
        );
        drop((large, small));
        assert_eq!(budget.available(), 1024 * KIB, "everything comes back");
    }

    #[tokio::test]
    async fn a_chunked_body_is_charged_as_it_arrives() {
        let budget = budget(4 * KIB, 4 * KIB);
        let held = budget
            .read(&HeaderMap::new(), chunked(&[b"{\"a\":", b"1}"]))
            .await
            .unwrap();
        assert_eq!(&held.bytes[..], b"{\"a\":1}");
        assert_eq!(budget.available(), 3 * KIB);
        let big: &'static [u8] = Box::leak(vec![b'x'; 4 * KIB].into_boxed_slice());
        let refused = budget.read(&HeaderMap::new(), chunked(&[big])).await;
        assert_eq!(refused.unwrap_err(), BodyError::Busy);
        // Over the per-request limit whatever the budget says.
        let huge: &'static [u8] = Box::leak(vec![b'x'; 5 * KIB].into_boxed_slice());
        let budget = self::budget(64 * KIB, 4 * KIB);
        let refused = budget.read(&HeaderMap::new(), chunked(&[b"{", huge])).await;
        assert_eq!(refused.unwrap_err(), BodyError::TooLarge);
        let refused = budget.read(&declared(5 * KIB), Body::empty()).await;
        assert_eq!(
            refused.unwrap_err(),
            BodyError::TooLarge,
            "declared too large"
        );
        assert_eq!(budget.available(), 64 * KIB, "a refused body keeps nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn silent_and_trickling_bodies_time_out_before_the_body_timeout() {
        let config = HttpConfig::default()
            .body_timeout(Duration::from_secs(600))
            .body_first_byte_timeout(Duration::from_secs(10))
            .body_min_rate(1024);
        let budget = BodyBudget::new(&config);
        let total = budget.available();
        // Headers only.
        let started = Instant::now();
        let silent = budget
            .read(
                &declared(2 * KIB),
                Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>()),
            )
            .await;
        assert_eq!(silent.unwrap_err(), BodyError::TimedOut);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(10),
            "the first-byte timeout"
        );
        // One byte a second, where 1 KiB/s is the least.
        let trickle = futures::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((Ok::<_, std::io::Error>(Bytes::from_static(b" ")), ()))
        });
        let started = Instant::now();
        let slow = budget
            .read(&declared(4 * KIB), Body::from_stream(trickle))
            .await;
        assert_eq!(slow.unwrap_err(), BodyError::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(11),
            "{:?}",
            started.elapsed()
        );
        // A body that keeps the pace is read, however long it takes within the body timeout.
        let steady = futures::stream::unfold(0, |sent| async move {
            (sent < 20).then_some(())?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((
                Ok::<_, std::io::Error>(Bytes::from(vec![b' '; KIB])),
                sent + 1,
            ))
        });
        let held = budget
            .read(&declared(20 * KIB), Body::from_stream(steady))
            .await
            .unwrap();
        assert_eq!(held.bytes.len(), 20 * KIB);
        drop(held);
        assert_eq!(budget.available(), total, "a timed-out body keeps nothing");
    }

    #[tokio::test]
    async fn an_unbounded_body_timeout_is_no_deadline_not_a_panic() {
        let config = HttpConfig::default()
            .body_timeout(Duration::MAX)
            .body_min_rate(0);
        let budget = BodyBudget::new(&config);
        let held = budget
            .read(&declared(2), chunked(&[b"{", b"}"]))
            .await
            .unwrap();
        assert_eq!(&held.bytes[..], b"{}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stalls_times_out_and_returns_its_reservation() {
        let budget = BodyBudget::new(&HttpConfig::default().body_timeout(Duration::from_secs(30)));
        let total = budget.available();
        let stalled = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from("{")) })
            .chain(futures::stream::pending());
        let headers = declared(2 * KIB);
        let read = budget.read(&headers, Body::from_stream(stalled));
        assert_eq!(read.await.unwrap_err(), BodyError::TimedOut);
        assert_eq!(budget.available(), total);
    }
}
