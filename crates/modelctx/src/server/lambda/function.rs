//! The function: [`LambdaFunction`], the tower service `lambda_http` runs, over the router of
//! [`Server::http_router`] — the same endpoint, guards and era rules as any HTTP deployment —
//! plus what only Lambda needs: the REST API's stage taken off the path, `subscriptions/listen`
//! refused when responses are buffered, a buffered response held to Lambda's payload limit, and
//! a streamed one ended before the invocation's deadline.

use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use futures::future::BoxFuture;
use http::{HeaderValue, StatusCode, header};
use http_body_util::{BodyExt as _, Limited};
use lambda_http::request::RequestContext as EventContext;
use lambda_http::{RequestExt as _, Service};
use modelctx_types::jsonrpc::{MessageRef, encode_error};
use modelctx_types::methods::SubscriptionsListen;
use modelctx_types::{ErrorObject, Method as _, RequestId};
use tower::ServiceExt as _;

use super::config::{LambdaConfig, Responses, SYNC_PAYLOAD_LIMIT};
use super::fit::{Unfit, check};
use crate::server::Server;
use crate::server::lifespan::StartupError;

/// Room kept in a buffered response's payload for its status, headers and JSON framing.
const RESPONSE_ENVELOPE: usize = 16 * 1024;

/// Why a function did not start, or its runtime stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LambdaError {
    /// The server does not fit a function; each entry names the alternative.
    #[error("this server cannot run as an AWS Lambda function:\n{}", list(.0))]
    Unfit(Vec<Unfit>),
    /// A start-up hook failed.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// The Lambda runtime client failed (the Runtime API unreachable, say).
    #[error("the Lambda runtime: {0}")]
    Runtime(lambda_http::Error),
}

fn list(unfit: &[Unfit]) -> String {
    unfit
        .iter()
        .map(|why| format!("- {why}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A [`Server`] as a Lambda function: a `tower::Service` of `lambda_http` requests (API Gateway
/// REST and HTTP APIs, function URLs), which [`run`] hands to the Lambda runtime. Cheap to
/// clone. Build it with [`LambdaFunction::new`], which refuses what does not fit a function.
#[derive(Clone)]
pub struct LambdaFunction {
    router: axum::Router,
    responses: Responses,
    deadline_margin: Duration,
}

impl std::fmt::Debug for LambdaFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LambdaFunction")
            .field("responses", &self.responses)
            .finish_non_exhaustive()
    }
}

impl LambdaFunction {
    /// The function serving `server` with `config`.
    ///
    /// # Errors
    /// [`LambdaError::Unfit`], listing everything in the server or the settings that a
    /// function cannot serve: keys generated at start-up, tasks or single-use rounds kept in one
    /// instance, the 2024-11-05 HTTP+SSE sessions, a change bus with buffered responses. The
    /// handshake era is refused on every request instead (`-32022`, naming 2026-07-28).
    pub fn new(server: &Server, config: LambdaConfig) -> Result<Self, LambdaError> {
        let unfit = check(server, &config);
        if !unfit.is_empty() {
            return Err(LambdaError::Unfit(unfit));
        }
        let http = config.http.refuse_handshake_era(super::config::NO_SESSIONS);
        Ok(Self {
            router: server.http_router(http),
            responses: config.responses,
            deadline_margin: config.deadline_margin,
        })
    }

    /// How the function hands its responses to Lambda.
    pub fn responses(&self) -> Responses {
        self.responses
    }

    async fn serve(self, request: lambda_http::Request) -> Response {
        let deadline = request.lambda_context_ref().map(|context| context.deadline);
        let stage = stage_of(&request);
        let (mut parts, body) = request.into_parts();
        let bytes = match body {
            lambda_http::Body::Empty => Bytes::new(),
            lambda_http::Body::Text(text) => Bytes::from(text),
            lambda_http::Body::Binary(binary) => Bytes::from(binary),
            _ => Bytes::new(),
        };
        if let Some(stage) = stage {
            without_stage(&mut parts.uri, &stage);
        }
        if self.responses == Responses::Buffered
            && let Some(id) = listen_request(&bytes)
        {
            return json_error(&id, &listen_refused());
        }
        let request = http::Request::from_parts(parts, Body::from(bytes.clone()));
        let response = match self.router.oneshot(request).await {
            Ok(response) => response,
            Err(infallible) => match infallible {},
        };
        match self.responses {
            Responses::Streamed => until_deadline(response, deadline, self.deadline_margin),
            _ => within_payload_limit(response, &bytes).await,
        }
    }
}

impl Service<lambda_http::Request> for LambdaFunction {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: lambda_http::Request) -> Self::Future {
        let function = self.clone();
        Box::pin(async move { Ok(function.serve(request).await) })
    }
}

/// Serves `server` as a Lambda function until the runtime stops: checks that it fits
/// ([`LambdaFunction::new`]), runs its start-up hooks, then takes invocations from the Lambda
/// Runtime API (`AWS_LAMBDA_RUNTIME_API`, set by Lambda and by `cargo lambda watch`), buffered
/// or streamed as `config` says. Its shutdown hooks run when the runtime returns.
///
/// # Errors
/// What does not fit, a failed start-up hook, or the runtime's failure.
pub async fn run(server: &Server, config: LambdaConfig) -> Result<(), LambdaError> {
    let function = LambdaFunction::new(server, config)?;
    server.start().await?;
    let served = match function.responses {
        Responses::Streamed => lambda_http::run_with_streaming_response(function).await,
        _ => lambda_http::run(function).await,
    };
    server.stop().await;
    served.map_err(LambdaError::Runtime)
}

/// The API's stage, when the path carries it (a REST API's `/prod/mcp`); the `$default` stage
/// of an HTTP API is not in the path.
fn stage_of(request: &lambda_http::Request) -> Option<String> {
    let stage = match request.request_context_ref()? {
        EventContext::ApiGatewayV1(context) => context.stage.clone(),
        EventContext::ApiGatewayV2(context) => context.stage.clone(),
        _ => None,
    };
    stage.filter(|stage| stage != "$default" && !stage.is_empty())
}

/// Takes `/{stage}` off the front of the path, so the endpoint's path is the one the API
/// routes, whatever stage it is deployed to.
fn without_stage(uri: &mut http::Uri, stage: &str) {
    let path = uri.path();
    let Some(rest) = path
        .strip_prefix('/')
        .and_then(|path| path.strip_prefix(stage))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    else {
        return;
    };
    let rest = if rest.is_empty() { "/" } else { rest };
    let path_and_query = match uri.query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    if let Ok(path_and_query) = path_and_query.parse() {
        let mut parts = uri.clone().into_parts();
        parts.path_and_query = Some(path_and_query);
        if let Ok(stripped) = http::Uri::from_parts(parts) {
            *uri = stripped;
        }
    }
}

/// The id of a `subscriptions/listen` request in `body` (the method's name is looked for before
/// the body is parsed, so other requests cost a byte search).
fn listen_request(body: &[u8]) -> Option<RequestId> {
    memchr::memmem::find(body, SubscriptionsListen::NAME.as_bytes())?;
    match MessageRef::decode_slice(body) {
        Ok(MessageRef::Request(request)) if request.method == SubscriptionsListen::NAME => {
            Some(request.id)
        }
        _ => None,
    }
}

fn listen_refused() -> ErrorObject {
    let mut error = ErrorObject::method_not_found(SubscriptionsListen::NAME);
    error.message = "subscriptions/listen is not served by this function: its responses are \
        buffered (sent when the invocation ends), so a listener would see nothing; the server \
        can be served with response streaming (LambdaConfig::streamed())"
        .to_owned();
    error
}

/// A buffered response, or a `-32603` error in its place when it would not fit Lambda's
/// payload (the body travels JSON-escaped inside the payload, hence [`escaped_len`]).
async fn within_payload_limit(response: Response, request: &[u8]) -> Response {
    let (parts, body) = response.into_parts();
    let limit = SYNC_PAYLOAD_LIMIT - RESPONSE_ENVELOPE;
    let collected = Limited::new(body, limit).collect().await;
    match collected.map(http_body_util::Collected::to_bytes) {
        Ok(bytes) if escaped_len(&bytes) <= limit => Response::from_parts(parts, Body::from(bytes)),
        _ => {
            let id = match MessageRef::decode_slice(request) {
                Ok(MessageRef::Request(request)) => Some(request.id),
                _ => None,
            };
            let error = ErrorObject::internal(
                "The response exceeds AWS Lambda's 6 MB payload limit of a buffered response; \
                 ask for less, or serve the function with response streaming",
            );
            tracing::warn!("a response over Lambda's payload limit was replaced by an error");
            match id {
                Some(id) => json_error(&id, &error),
                None => {
                    let mut response = Response::new(Body::empty());
                    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                    response
                }
            }
        }
    }
}

/// The length of `body` as a JSON string's contents: quotes and backslashes take two bytes,
/// other control characters six (`\u00XX`; `\n` and its kind take two, so this is an upper
/// bound).
fn escaped_len(body: &[u8]) -> usize {
    body.iter()
        .map(|byte| match byte {
            b'"' | b'\\' => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

/// A streamed response whose body ends `margin` before the invocation's deadline: Lambda would
/// cut it at the timeout and report the invocation failed; ended by us, a listen stream's
/// client sees its stream end and listens again.
fn until_deadline(response: Response, deadline_ms: Option<u64>, margin: Duration) -> Response {
    let Some(deadline_ms) = deadline_ms else {
        return response;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let left = Duration::from_millis(deadline_ms)
        .saturating_sub(now)
        .saturating_sub(margin);
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().take_until(tokio::time::sleep(left));
    Response::from_parts(parts, Body::from_stream(stream))
}

fn json_error(id: &RequestId, error: &ErrorObject) -> Response {
    let status = match error.code {
        modelctx_types::ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    };
    let mut response = Response::new(Body::from(encode_error(Some(id), error)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage_comes_off_the_path_and_nothing_else() {
        let cases = [
            ("/prod/mcp", "/mcp"),
            ("/prod/mcp?x=1", "/mcp?x=1"),
            ("/prod", "/"),
            ("/production/mcp", "/production/mcp"),
            ("/mcp", "/mcp"),
        ];
        for (path, expected) in cases {
            let mut uri: http::Uri = path.parse().expect("a path");
            without_stage(&mut uri, "prod");
            assert_eq!(uri.to_string(), expected, "{path}");
        }
    }

    #[test]
    fn escaping_is_counted_as_json_strings_take_it() {
        let body = br#"{"a":"b\c"}"#;
        let json = serde_json::to_string(std::str::from_utf8(body).expect("utf-8"))
            .expect("a string encodes");
        // The quotes around the string are the envelope's.
        assert_eq!(escaped_len(body), json.len() - 2);
        assert_eq!(escaped_len(b"\x01"), 6);
    }

    #[test]
    fn only_a_listen_request_is_found() {
        let listen = br#"{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{}}"#;
        assert_eq!(listen_request(listen), Some(RequestId::Number(7)));
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"subscriptions/listen"}}"#;
        assert_eq!(listen_request(call), None);
    }
}
