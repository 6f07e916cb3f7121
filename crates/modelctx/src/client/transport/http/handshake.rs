//! The handshake era's extras on streamable HTTP: the `Mcp-Session-Id` session, server requests
//! answered with a POST, the optional standalone GET stream, resumption of a broken response
//! stream with `Last-Event-ID`, and the `DELETE` that ends the session.

use std::sync::Arc;
use std::time::Duration;

use modelctx_types::RequestId;
use reqwest::header::{ACCEPT, HeaderValue};
use tokio::sync::oneshot;

use super::connection::{HttpInner, Received, content_type};
use crate::client::error::ClientError;
use crate::client::transport::{HttpHeaders, Reply};
use crate::http::headers;
use crate::sync::write;

/// How often in a row a broken stream is resumed without receiving anything new before giving
/// up.
const MAX_RESUMPTIONS: u32 = 2;
/// How often one response stream is resumed in all: a server that polls (closes the stream
/// after each event, SEP-1699) makes progress on each, but not forever.
const MAX_RESUMPTIONS_IN_ALL: u32 = 100;
/// The reconnection delay when the server named none.
const DEFAULT_RETRY_MS: u64 = 1000;
/// An upper bound on a server-chosen reconnection delay.
const MAX_RETRY_MS: u64 = 30_000;
/// How long connecting waits for the GET stream to open.
const GET_STREAM_OPEN_WAIT: Duration = Duration::from_secs(5);

/// Keeps the session id the server minted on `initialize`.
pub(super) fn capture_session_id(inner: &HttpInner, response: &reqwest::Response) {
    let Some(value) = response.headers().get(headers::SESSION_ID) else {
        return;
    };
    match value.to_str() {
        // Visible ASCII only, as the 2025-11-25 transport requires.
        Ok(id) if !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)) => {
            *write(&inner.session_id) = Some(id.to_owned());
        }
        _ => tracing::warn!("ignored a malformed Mcp-Session-Id"),
    }
}

/// Resumes a broken response stream with `GET` + `Last-Event-ID`, waiting the server's
/// `retry` delay first. `Ok(None)` when resumption did not produce the reply.
pub(super) async fn resume(
    inner: &Arc<HttpInner>,
    id: &RequestId,
    elsewhere: &mut oneshot::Receiver<Reply>,
    mut last_event_id: String,
    mut retry_ms: Option<u64>,
    request_headers: &HttpHeaders,
) -> Result<Option<Reply>, ClientError> {
    let mut in_a_row = 0;
    for _ in 0..MAX_RESUMPTIONS_IN_ALL {
        if in_a_row == MAX_RESUMPTIONS {
            break;
        }
        in_a_row += 1;
        let delay = retry_ms.unwrap_or(DEFAULT_RETRY_MS).min(MAX_RETRY_MS);
        // The reply may still arrive elsewhere (e.g. on the GET stream) while we wait.
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(delay)) => {}
            reply = &mut *elsewhere => return Ok(reply.ok()),
        }
        let Some(response) = get(inner, request_headers, Some(&last_event_id)).await? else {
            return Ok(None);
        };
        match inner
            .read_stream(response, Some((id, &mut *elsewhere)))
            .await?
        {
            Received::Reply(reply) => return Ok(Some(reply)),
            Received::Broken {
                last_event_id: last,
                retry_ms: retry,
            } => {
                if let Some(last) = last
                    && last != last_event_id
                {
                    // Progress: the count of fruitless resumptions starts again.
                    last_event_id = last;
                    in_a_row = 0;
                }
                retry_ms = retry.or(retry_ms);
            }
        }
    }
    Ok(None)
}

/// Opens the standalone GET stream (server requests and notifications outside any POST);
/// `None` when the server offers none (405) or does not answer in time.
pub(super) async fn open_get_stream(inner: &HttpInner) -> Option<reqwest::Response> {
    let headers = HttpHeaders {
        protocol_version: inner.shared.version().map(|v| v.to_string()),
        ..HttpHeaders::default()
    };
    match tokio::time::timeout(GET_STREAM_OPEN_WAIT, get(inner, &headers, None)).await {
        Ok(Ok(Some(response))) => Some(response),
        Ok(Ok(None)) => {
            tracing::debug!("the server offers no GET stream");
            None
        }
        Ok(Err(error)) => {
            tracing::debug!(%error, "opening the GET stream failed");
            None
        }
        Err(_) => {
            tracing::debug!("the GET stream did not open in time");
            None
        }
    }
}

/// Reads the standalone GET stream until it ends.
pub(super) async fn read_get_stream(inner: Arc<HttpInner>, response: reqwest::Response) {
    let _ = inner.read_stream(response, None).await;
    tracing::debug!("the GET stream ended");
}

/// Opens a GET event stream; `Ok(None)` when the server offers none.
async fn get(
    inner: &HttpInner,
    request_headers: &HttpHeaders,
    last_event_id: Option<&str>,
) -> Result<Option<reqwest::Response>, ClientError> {
    let mut request = inner
        .authorize(
            reqwest::Method::GET,
            inner
                .config
                .client
                .get(inner.config.url.clone())
                .headers(inner.config.extra_headers.clone()),
        )
        .await
        .header(ACCEPT, "text/event-stream");
    if let Some(version) = &request_headers.protocol_version
        && let Ok(value) = HeaderValue::from_str(version)
    {
        request = request.header(headers::PROTOCOL_VERSION, value);
    }
    if let Some(session) = inner.session_id()
        && let Ok(value) = HeaderValue::from_str(&session)
    {
        request = request.header(headers::SESSION_ID, value);
    }
    if let Some(last) = last_event_id
        && let Ok(value) = HeaderValue::from_str(last)
    {
        request = request.header("last-event-id", value);
    }
    let response = request.send().await?;
    if response.status().is_success() && content_type(&response).starts_with("text/event-stream") {
        Ok(Some(response))
    } else {
        Ok(None)
    }
}

/// Ends a handshake-era session with `DELETE` (any answer is fine; 405 means the server does
/// not support explicit termination).
pub(super) async fn end_session(inner: &HttpInner) {
    let Some(session) = inner.session_id() else {
        return;
    };
    let Ok(value) = HeaderValue::from_str(&session) else {
        return;
    };
    let mut request = inner
        .authorize(
            reqwest::Method::DELETE,
            inner
                .config
                .client
                .delete(inner.config.url.clone())
                .headers(inner.config.extra_headers.clone()),
        )
        .await
        .header(headers::SESSION_ID, value);
    if let Some(version) = inner.shared.version()
        && let Ok(value) = HeaderValue::from_str(version.as_ref())
    {
        request = request.header(headers::PROTOCOL_VERSION, value);
    }
    match tokio::time::timeout(Duration::from_secs(5), request.send()).await {
        Ok(Ok(response)) => tracing::debug!(status = %response.status(), "session ended"),
        Ok(Err(error)) => tracing::debug!(%error, "ending the session failed"),
        Err(_) => tracing::debug!("ending the session timed out"),
    }
    *write(&inner.session_id) = None;
}
