//! The plain responses of the endpoint: text for what the transport refuses, JSON for a
//! JSON-RPC message, `202 Accepted` for what needs no answer; the head of an event stream and
//! its keep-alive timer.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use modelctx_types::ErrorCode;

use super::body::BodyError;

/// The HTTP status of a JSON-RPC response: 400 for malformed requests, 404 for unknown methods,
/// 200 for a result and any other error (the JSON-RPC error body carries the detail).
pub(crate) fn http_status(error: Option<ErrorCode>) -> u16 {
    match error {
        Some(
            ErrorCode::PARSE_ERROR
            | ErrorCode::INVALID_REQUEST
            | ErrorCode::INVALID_PARAMS
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ) => 400,
        Some(ErrorCode::METHOD_NOT_FOUND) => 404,
        _ => 200,
    }
}

pub(crate) fn body_refused(error: &BodyError) -> Response {
    match error {
        BodyError::TooLarge => plain(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large"),
        BodyError::TimedOut => plain(
            StatusCode::REQUEST_TIMEOUT,
            "The request body did not arrive in time",
        ),
        BodyError::Unreadable => plain(StatusCode::BAD_REQUEST, "Could not read the request body"),
        BodyError::Busy => {
            let mut response = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many request bytes in flight; retry shortly",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

pub(crate) fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

pub(crate) fn json(status: u16, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `202 Accepted` with no body: a notification or a response taken.
pub(crate) fn accepted() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// The keep-alive comments of a stream, the first one `period` from now (checked: a huge
/// `HttpConfig::keep_alive` means none, not a panic; so does zero, which tokio refuses as a
/// period).
pub(crate) fn keep_alive_timer(period: Duration) -> tokio::time::Interval {
    let period = if period.is_zero() {
        Duration::MAX
    } else {
        period
    };
    let first = crate::server::deadline::after_tokio(tokio::time::Instant::now(), period);
    tokio::time::interval_at(first, period)
}

/// A response carrying an event stream: the content type, and no caching or proxy buffering.
pub(crate) fn event_stream_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
