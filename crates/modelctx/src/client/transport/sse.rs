//! The HTTP+SSE transport of 2024-11-05, client side: a `GET` opens an event stream whose first
//! event, `endpoint`, names where to POST messages; every message of the server (responses,
//! its requests, notifications) arrives on that stream as a `message` event.
//!
//! It is carried by the line engine: [`open`] returns a reader and a writer of newline-
//! delimited JSON, and a relay task turns each line the engine writes into a POST and each
//! `message` event into a line it reads. So requests, cancellation and the back-channel work
//! as over stdio. The relay ends with the stream (the engine then sees the end of its input)
//! or with the engine's output (the client closed), whichever comes first, and ends the other.
//!
//! Every byte is the peer's: the `endpoint` must be on the origin of the stream's URL (a
//! hostile server must not send our messages, and the headers that sign them in, elsewhere),
//! it must come within a few events, and no event may be larger than the largest message.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::io::{AsyncWriteExt as _, DuplexStream};

use crate::client::error::{ClientError, TransportError};
use crate::http::sse::{Event, Parser};
use crate::transport::lines::{Frame, LineReader};

/// How many events may come before `endpoint`.
const EVENTS_BEFORE_ENDPOINT: usize = 16;
/// How the error of a `GET` answered with something else than an event stream ends.
const NOT_AN_EVENT_STREAM: &str = "did not answer with an event stream";
/// What each direction of the in-memory pipes holds before the writer waits.
const PIPE_BYTES: usize = 64 * 1024;

/// How to open the stream.
pub(crate) struct SseSettings {
    pub(crate) client: reqwest::Client,
    pub(crate) url: reqwest::Url,
    pub(crate) headers: HeaderMap,
    /// The largest message (and so the largest event) accepted.
    pub(crate) max_message: usize,
    /// How long the stream may take to answer and name its endpoint.
    pub(crate) connect_timeout: Duration,
}

/// Opens the event stream at `settings.url` and waits for its endpoint; returns the engine's
/// reader and writer, served by a relay task from then on.
pub(crate) async fn open(
    settings: SseSettings,
) -> Result<(DuplexStream, DuplexStream), ClientError> {
    let opening = async {
        let response = settings
            .client
            .get(settings.url.clone())
            .headers(settings.headers.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .send()
            .await?;
        let response = successful(response).await?;
        let event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if !event_stream {
            return Err(ClientError::Protocol(format!(
                "{} {NOT_AN_EVENT_STREAM}",
                settings.url
            )));
        }
        let mut stream = EventStream::new(response, settings.max_message);
        let endpoint = endpoint(&mut stream, &settings.url).await?;
        Ok((stream, endpoint))
    };
    let (stream, endpoint) = tokio::time::timeout(settings.connect_timeout, opening)
        .await
        .map_err(|_| ClientError::Timeout {
            operation: "opening the SSE stream",
            after: settings.connect_timeout,
        })??;
    let (engine_reader, to_engine) = tokio::io::duplex(PIPE_BYTES);
    let (from_engine, engine_writer) = tokio::io::duplex(PIPE_BYTES);
    let poster = Poster {
        client: settings.client,
        endpoint,
        headers: settings.headers,
    };
    tokio::spawn(relay(
        stream,
        to_engine,
        from_engine,
        poster,
        settings.max_message,
    ));
    Ok((engine_reader, engine_writer))
}

/// Waits for the `endpoint` event and resolves it against `url`, on `url`'s origin only.
async fn endpoint(
    stream: &mut EventStream,
    url: &reqwest::Url,
) -> Result<reqwest::Url, ClientError> {
    for _ in 0..EVENTS_BEFORE_ENDPOINT {
        let Some(event) = stream.next().await? else {
            return Err(TransportError::Closed.into());
        };
        if event.event.as_deref() != Some("endpoint") {
            continue;
        }
        let endpoint = url.join(event.data.trim()).map_err(|e| {
            ClientError::Protocol(format!(
                "the SSE endpoint {:?} is not a URL: {e}",
                event.data
            ))
        })?;
        if endpoint.origin() != url.origin() {
            return Err(ClientError::Protocol(format!(
                "refused the SSE endpoint {endpoint}: it is not on the origin of {url}"
            )));
        }
        return Ok(endpoint);
    }
    Err(ClientError::Protocol(format!(
        "{url} sent no endpoint event within its first {EVENTS_BEFORE_ENDPOINT} events"
    )))
}

/// Moves messages both ways until the stream or the engine's output ends.
async fn relay(
    mut stream: EventStream,
    mut to_engine: DuplexStream,
    from_engine: DuplexStream,
    poster: Poster,
    max_message: usize,
) {
    let inbound = async {
        loop {
            let event = match stream.next().await {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(error) => {
                    tracing::warn!(%error, "the SSE stream failed");
                    break;
                }
            };
            // `message` is also the default name of an event.
            if !matches!(event.event.as_deref(), None | Some("message")) || event.data.is_empty() {
                continue;
            }
            // A line break inside the data would split the message for the engine: JSON has
            // none outside whitespace.
            let line = event.data.replace(['\n', '\r'], " ");
            if to_engine.write_all(line.as_bytes()).await.is_err()
                || to_engine.write_all(b"\n").await.is_err()
            {
                break;
            }
        }
    };
    let outbound = async {
        let mut lines = LineReader::new(from_engine, max_message);
        while let Ok(Some(frame)) = lines.next_frame().await {
            let Frame::Line(line) = frame else { continue };
            if let Err(error) = poster.post(line.to_vec()).await {
                // The message is lost: the connection is closed rather than left to wait for
                // answers that will not come.
                tracing::warn!(%error, "posting a message on the SSE transport failed");
                break;
            }
        }
    };
    tokio::select! {
        () = inbound => {}
        () = outbound => {}
    }
}

/// Where and how messages are POSTed.
struct Poster {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
}

impl Poster {
    async fn post(&self, body: Vec<u8>) -> Result<(), ClientError> {
        let response = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .send()
            .await?;
        successful(response).await.map(drop)
    }
}

/// The events of a response body, each at most the largest message plus its framing.
struct EventStream {
    response: reqwest::Response,
    parser: Parser,
    ready: std::collections::VecDeque<Event>,
    /// Bytes fed since the last complete event: an event growing past the bound is refused
    /// even when each of its lines is short.
    pending: usize,
    max_event: usize,
}

impl EventStream {
    fn new(response: reqwest::Response, max_message: usize) -> Self {
        let max_event = max_message.saturating_add(1024);
        Self {
            response,
            parser: Parser::new(max_event),
            ready: std::collections::VecDeque::new(),
            pending: 0,
            max_event,
        }
    }

    /// The next event; `None` at the end of the stream.
    async fn next(&mut self) -> Result<Option<Event>, ClientError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            let Some(chunk) = self.response.chunk().await? else {
                return Ok(None);
            };
            self.pending = self.pending.saturating_add(chunk.len());
            let events = self
                .parser
                .feed(&chunk)
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
            if events.is_empty() {
                if self.pending > self.max_event {
                    return Err(ClientError::Protocol(format!(
                        "a server-sent event exceeds {} bytes",
                        self.max_event
                    )));
                }
            } else {
                self.pending = 0;
            }
            if events.iter().any(|e| e.data.len() > self.max_event) {
                return Err(ClientError::Protocol(format!(
                    "a server-sent event exceeds {} bytes",
                    self.max_event
                )));
            }
            self.ready.extend(events);
        }
    }
}

/// The response if its status is a success; otherwise the status and the beginning of its
/// body as the error.
async fn successful(response: reqwest::Response) -> Result<reqwest::Response, ClientError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    Err(ClientError::HttpStatus {
        status: status.as_u16(),
        body: snippet(response).await,
    })
}

/// The beginning of a refusal's body, for the error.
async fn snippet(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= 1024 {
            break;
        }
    }
    body.truncate(1024);
    String::from_utf8_lossy(&body).into_owned()
}

/// Whether `error` says the URL is no SSE endpoint at all (an HTTP error status, or an answer
/// that is not an event stream), rather than one that failed.
pub(crate) fn is_no_sse_endpoint(error: &ClientError) -> bool {
    match error {
        ClientError::HttpStatus { .. } => true,
        ClientError::Protocol(message) => message.ends_with(NOT_AN_EVENT_STREAM),
        _ => false,
    }
}

/// Whether an answer to the streamable transport's first POST means an endpoint of the
/// HTTP+SSE era (the spec's backwards-compatibility rule: 400, 404 or 405).
pub(crate) fn answers_the_old_way(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::HttpStatus {
            status: 400 | 404 | 405,
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_old_ways_statuses_fall_back() {
        let status = |status| ClientError::HttpStatus {
            status,
            body: String::new(),
        };
        assert!(answers_the_old_way(&status(405)));
        assert!(answers_the_old_way(&status(404)));
        assert!(answers_the_old_way(&status(400)));
        assert!(!answers_the_old_way(&status(401)));
        assert!(!answers_the_old_way(&status(500)));
    }

    #[test]
    fn an_endpoint_is_on_the_streams_origin_or_refused() {
        let url = reqwest::Url::parse("http://127.0.0.1:8000/sse").unwrap();
        for (data, same) in [
            ("/messages?session_id=1", true),
            ("messages/?session_id=1", true),
            ("http://127.0.0.1:8000/m", true),
            ("http://127.0.0.1:8001/m", false),
            ("https://127.0.0.1:8000/m", false),
            ("//evil.example/m", false),
            ("http://evil.example/m", false),
        ] {
            let endpoint = url.join(data).unwrap();
            assert_eq!(endpoint.origin() == url.origin(), same, "{data}");
        }
    }
}
