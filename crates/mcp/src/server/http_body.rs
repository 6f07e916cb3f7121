//! Reading request bodies within three bounds: the size of one body, the bytes buffered by all
//! requests together, and the time one body may take to arrive.
//!
//! A per-request limit alone does not bound the server: 64 clients each trickling a body just
//! under 4 MiB would hold 256 MiB. So every buffered byte is charged to one server-wide budget
//! (a semaphore counted in KiB), reserved from `Content-Length` before a byte is read, or chunk
//! by chunk for a chunked body. A request that does not fit is refused at once with 503 rather
//! than queued: a queued request would still hold its connection and its unread bytes in kernel
//! buffers, and the client can retry elsewhere. The reservation lives until the response is
//! ready (a JSON answer is complete, an event stream has begun), because the decoded request owns
//! a copy of what the body carried until then.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, header};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Over the per-request limit (413).
    TooLarge,
    /// The server-wide budget is spent (503).
    Busy,
    /// The body did not arrive in time (408).
    TimedOut,
    /// The connection failed mid-body (400).
    Unreadable,
}

/// A body read into memory, with its share of the budget.
#[derive(Debug)]
pub(crate) struct HeldBody {
    pub(crate) bytes: Bytes,
    /// Returned to the budget when the request is done.
    pub(crate) reservation: Option<OwnedSemaphorePermit>,
}

/// The server-wide budget of buffered request bytes.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    kib: Arc<Semaphore>,
    max_body: usize,
    timeout: Duration,
}

/// The budget is counted in KiB so that budgets beyond 4 GiB fit the semaphore's `u32` counts.
const UNIT: usize = 1024;

fn units(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX)
}

impl BodyBudget {
    pub(crate) fn new(total: usize, max_body: usize, timeout: Duration) -> Self {
        let total = units(total) as usize;
        Self {
            kib: Arc::new(Semaphore::new(total.min(Semaphore::MAX_PERMITS))),
            max_body,
            timeout,
        }
    }

    /// Reads the whole body, or says why not.
    pub(crate) async fn read(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<HeldBody, BodyError> {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        if declared.is_some_and(|length| length > self.max_body) {
            return Err(BodyError::TooLarge);
        }
        let mut reservation = self.reserve(None, declared.unwrap_or(0))?;
        let mut reserved = declared.unwrap_or(0).div_ceil(UNIT) * UNIT;
        let read = async {
            let mut body = body;
            let mut buffer = BytesMut::with_capacity(declared.unwrap_or(0));
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|_| BodyError::Unreadable)?;
                let Ok(data) = frame.into_data() else {
                    continue; // trailers carry nothing for us
                };
                let length = buffer.len() + data.len();
                if length > self.max_body {
                    return Err(BodyError::TooLarge);
                }
                if length > reserved {
                    // Chunked (or lying about its length): charge the budget as it comes.
                    let more = length - reserved;
                    reservation = self.reserve(reservation.take(), more)?;
                    reserved += more.div_ceil(UNIT) * UNIT;
                }
                buffer.extend_from_slice(&data);
            }
            Ok(buffer.freeze())
        };
        let bytes = tokio::time::timeout(self.timeout, read)
            .await
            .map_err(|_| BodyError::TimedOut)??;
        Ok(HeldBody { bytes, reservation })
    }

    /// Adds `bytes` to a reservation, or refuses at once when the budget cannot cover them.
    fn reserve(
        &self,
        held: Option<OwnedSemaphorePermit>,
        bytes: usize,
    ) -> Result<Option<OwnedSemaphorePermit>, BodyError> {
        if bytes == 0 {
            return Ok(held);
        }
        let more = Arc::clone(&self.kib)
            .try_acquire_many_owned(units(bytes))
            .map_err(|_| BodyError::Busy)?;
        Ok(Some(match held {
            Some(mut held) => {
                held.merge(more);
                held
            }
            None => more,
        }))
    }

    /// Bytes of budget not reserved by any request (for tests).
    #[cfg(test)]
    fn available(&self) -> usize {
        self.kib.available_permits() * UNIT
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    use super::*;

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

    #[tokio::test]
    async fn a_declared_body_reserves_its_length_until_dropped() {
        let budget = BodyBudget::new(8 * UNIT, 4 * UNIT, Duration::from_secs(5));
        let body = vec![b'x'; 3 * UNIT];
        let held = budget
            .read(&declared(body.len()), Body::from(body.clone()))
            .await
            .unwrap();
        assert_eq!(held.bytes, body);
        assert_eq!(budget.available(), 5 * UNIT);
        // A second body of the same size does not fit in what is left... until the first goes.
        let refused = budget
            .read(&declared(6 * UNIT), Body::from(vec![b'y'; 6 * UNIT]))
            .await;
        assert_eq!(refused.unwrap_err(), BodyError::TooLarge);
        let second = budget
            .read(&declared(3 * UNIT), Body::from(vec![b'y'; 3 * UNIT]))
            .await
            .unwrap();
        let third = budget
            .read(&declared(3 * UNIT), Body::from(vec![b'z'; 3 * UNIT]))
            .await;
        assert_eq!(third.unwrap_err(), BodyError::Busy);
        drop((held, second));
        assert_eq!(budget.available(), 8 * UNIT);
        assert!(
            budget
                .read(&declared(3 * UNIT), Body::from(vec![b'z'; 3 * UNIT]))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_chunked_body_is_charged_as_it_arrives() {
        let budget = BodyBudget::new(2 * UNIT, 4 * UNIT, Duration::from_secs(5));
        let held = budget
            .read(&HeaderMap::new(), chunked(&[b"{\"a\":", b"1}"]))
            .await
            .unwrap();
        assert_eq!(&held.bytes[..], b"{\"a\":1}");
        assert_eq!(budget.available(), UNIT);
        let big: &'static [u8] = Box::leak(vec![b'x'; 2 * UNIT].into_boxed_slice());
        let refused = budget.read(&HeaderMap::new(), chunked(&[big])).await;
        assert_eq!(refused.unwrap_err(), BodyError::Busy);
        // Over the per-request limit whatever the budget says.
        let huge: &'static [u8] = Box::leak(vec![b'x'; 5 * UNIT].into_boxed_slice());
        let budget = BodyBudget::new(64 * UNIT, 4 * UNIT, Duration::from_secs(5));
        let refused = budget.read(&HeaderMap::new(), chunked(&[huge])).await;
        assert_eq!(refused.unwrap_err(), BodyError::TooLarge);
        assert_eq!(
            budget.available(),
            64 * UNIT,
            "a refused body keeps nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stalls_times_out_and_returns_its_reservation() {
        let budget = BodyBudget::new(8 * UNIT, 4 * UNIT, Duration::from_secs(30));
        let stalled = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from("{")) })
            .chain(futures::stream::pending());
        let headers = declared(2 * UNIT);
        let read = budget.read(&headers, Body::from_stream(stalled));
        assert_eq!(read.await.unwrap_err(), BodyError::TimedOut);
        assert_eq!(budget.available(), 8 * UNIT);
    }
}
