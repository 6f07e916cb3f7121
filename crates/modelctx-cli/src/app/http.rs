//! The two origins `mcp app` serves, each on an ephemeral port of 127.0.0.1:
//!
//! * **the host page's** (origin A): `/{token}/` the page, `/{token}/channel` where it POSTs
//!   what the app sends, `/{token}/events` the event stream of what `mcp` sends back;
//! * **the app's** (origin B): `/{app token}/app.html`, the app's HTML under the policy built
//!   from its `_meta.ui` (`csp.rs`), and nothing else.
//!
//! Two origins because the app is the server's code: on an origin of its own, in a sandboxed
//! iframe, it cannot read the host page, call its channel or learn its token (the page is served
//! with `Referrer-Policy: no-referrer`). Each token is 128 random bits, fresh per run, so no
//! other page in the browser and no other local user can reach the channel; every request must
//! name the exact `Host` we listen on (a DNS-rebound name is refused), and the channel takes
//! only same-origin requests (`Origin`, `Sec-Fetch-Site`) of JSON, at most
//! [`MAX_MESSAGE`] bytes.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse as _, Response};
use base64::Engine as _;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::app::channel::{Channel, Outbound, Refused};
use crate::app::csp::Sandbox;
use crate::app::host_page::{HostPage, MAX_MESSAGE};

/// How often the event stream says it is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The two servers, running until dropped.
#[derive(Debug)]
pub(crate) struct Served {
    /// The host page's URL, token included: what the browser opens.
    pub(crate) page_url: String,
    servers: [JoinHandle<()>; 2],
}

impl Drop for Served {
    fn drop(&mut self) {
        for server in &self.servers {
            server.abort();
        }
    }
}

/// What the host page says about the app: names from the server, shown as text.
#[derive(Debug, Clone)]
pub(crate) struct PageText {
    /// The tool's name.
    pub(crate) title: String,
    /// The server's name and version.
    pub(crate) server: String,
    /// `_meta.ui.prefersBorder` (a border unless it is `false`).
    pub(crate) border: bool,
}

/// Serves the host page and the app's `html` under `sandbox`'s policy; the page relays through
/// `channel`.
pub(crate) async fn serve(
    html: String,
    sandbox: &Sandbox,
    text: PageText,
    channel: Arc<Channel>,
) -> std::io::Result<Served> {
    let page_listener = TcpListener::bind("127.0.0.1:0").await?;
    let app_listener = TcpListener::bind("127.0.0.1:0").await?;
    let page_host = page_listener.local_addr()?.to_string();
    let app_host = app_listener.local_addr()?.to_string();
    let (page_token, app_token) = (token()?, token()?);
    let page_origin = format!("http://{page_host}");
    let app_origin = format!("http://{app_host}");
    let page = HostPage {
        title: text.title,
        server: text.server,
        app_url: format!("{app_origin}/{app_token}/app.html"),
        app_origin,
        allow: sandbox.allow_attribute(),
        border: text.border,
    };
    let app = Arc::new(AppOrigin {
        host: app_host,
        token: app_token,
        html,
        policy: sandbox.content_security_policy(&page_origin),
    });
    let page_url = format!("{page_origin}/{page_token}/");
    let host_page = Arc::new(PageOrigin {
        host: page_host,
        origin: page_origin,
        token: page_token,
        page,
        channel,
    });
    let page_router = Router::new()
        .fallback(page_origin_request)
        .with_state(host_page);
    let app_router = Router::new().fallback(app_origin_request).with_state(app);
    let servers = [
        tokio::spawn(async move {
            let _ = axum::serve(page_listener, page_router).await;
        }),
        tokio::spawn(async move {
            let _ = axum::serve(app_listener, app_router).await;
        }),
    ];
    Ok(Served { page_url, servers })
}

/// 128 random bits, URL-safe.
fn token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The host page's origin.
#[derive(Debug)]
struct PageOrigin {
    /// `127.0.0.1:PORT`, the only `Host` accepted.
    host: String,
    /// `http://127.0.0.1:PORT`, the only `Origin` the channel accepts.
    origin: String,
    token: String,
    page: HostPage,
    channel: Arc<Channel>,
}

/// The app's origin.
#[derive(Debug)]
struct AppOrigin {
    host: String,
    token: String,
    html: String,
    /// Its `Content-Security-Policy`.
    policy: String,
}

/// A request to the host page's origin.
async fn page_origin_request(State(origin): State<Arc<PageOrigin>>, request: Request) -> Response {
    if !host_is(request.headers(), &origin.host) {
        return refuse(StatusCode::MISDIRECTED_REQUEST, "wrong host");
    }
    let Some(rest) = under_token(request.uri().path(), &origin.token) else {
        return refuse(StatusCode::NOT_FOUND, "not found");
    };
    match (request.method(), rest) {
        (&Method::GET, "") => page(&origin.page),
        (&Method::POST, "channel") => {
            if !same_origin(request.headers(), &origin.origin, true) {
                return refuse(StatusCode::FORBIDDEN, "cross-origin");
            }
            relay(&origin.channel, request).await
        }
        (&Method::GET, "events") => {
            if !same_origin(request.headers(), &origin.origin, false) {
                return refuse(StatusCode::FORBIDDEN, "cross-origin");
            }
            events(&origin.channel)
        }
        _ => refuse(StatusCode::NOT_FOUND, "not found"),
    }
}

/// A request to the app's origin: its document, and nothing else.
async fn app_origin_request(State(origin): State<Arc<AppOrigin>>, request: Request) -> Response {
    if !host_is(request.headers(), &origin.host) {
        return refuse(StatusCode::MISDIRECTED_REQUEST, "wrong host");
    }
    if request.method() != Method::GET
        || under_token(request.uri().path(), &origin.token) != Some("app.html")
    {
        return refuse(StatusCode::NOT_FOUND, "not found");
    }
    let mut response = origin.html.clone().into_response();
    let headers = response.headers_mut();
    set(headers, header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(headers, header::CONTENT_SECURITY_POLICY, &origin.policy);
    common_headers(headers);
    response
}

/// The host page, with a fresh nonce for its script and style.
fn page(page: &HostPage) -> Response {
    let Ok(nonce) = token() else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let mut response = page.html(&nonce).into_response();
    let headers = response.headers_mut();
    set(headers, header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        &page.content_security_policy(&nonce),
    );
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    common_headers(headers);
    response
}

/// A message the page relays from the app.
async fn relay(channel: &Channel, request: Request) -> Response {
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, "expected JSON");
    }
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_MESSAGE).await else {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "too large");
    };
    let Ok(message) = serde_json::from_slice(&body) else {
        return refuse(StatusCode::BAD_REQUEST, "not JSON");
    };
    match channel.receive(message) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(Refused::Shape) => refuse(StatusCode::BAD_REQUEST, "not a message of the protocol"),
        Err(Refused::Busy) => refuse(StatusCode::SERVICE_UNAVAILABLE, "too many messages"),
    }
}

/// The page's event stream: `app` events (messages for the app) and `host` events (commands
/// for the page).
fn events(channel: &Channel) -> Response {
    let outbound = channel.attach_page();
    let stream = futures::stream::unfold(outbound, |mut outbound| async move {
        let next = outbound.recv().await?;
        let (kind, data) = match next {
            Outbound::App(message) => ("app", message),
            Outbound::Host(command) => ("host", command),
        };
        let event = Event::default().event(kind).data(data.to_string());
        Some((Ok::<_, Infallible>(event), outbound))
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    common_headers(response.headers_mut());
    response
}

/// The path's part after `/{token}/`, if it starts so (the token compared in constant time).
fn under_token<'a>(path: &'a str, token: &str) -> Option<&'a str> {
    let rest = path.strip_prefix('/')?;
    let (given, rest) = rest.split_once('/')?;
    let same = given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0;
    same.then_some(rest)
}

/// Whether the request names `host` (exactly) in its `Host` header.
fn host_is(headers: &HeaderMap, host: &str) -> bool {
    headers
        .get(header::HOST)
        .is_some_and(|given| given.as_bytes() == host.as_bytes())
}

/// Whether a request comes from the page's own origin: `Origin` is the page's (required when
/// `origin_required`, as browsers send it on every POST), and `Sec-Fetch-Site`, when sent, is
/// `same-origin`.
fn same_origin(headers: &HeaderMap, origin: &str, origin_required: bool) -> bool {
    let origin_ok = match headers.get(header::ORIGIN) {
        Some(given) => given.as_bytes() == origin.as_bytes(),
        None => !origin_required,
    };
    let site_ok = headers
        .get(HeaderName::from_static("sec-fetch-site"))
        .is_none_or(|site| site.as_bytes() == b"same-origin");
    origin_ok && site_ok
}

/// Headers of every answer: nothing cached, sniffed or referred.
fn common_headers(headers: &mut HeaderMap) {
    set(headers, header::CACHE_CONTROL, "no-store");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
}

fn set(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
}

/// A refusal: a status and a word, as plain text.
fn refuse(status: StatusCode, why: &'static str) -> Response {
    let mut response = (status, Body::from(why)).into_response();
    let headers = response.headers_mut();
    set(headers, header::CONTENT_TYPE, "text/plain; charset=utf-8");
    common_headers(headers);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_opens_a_path() {
        assert_eq!(under_token("/abc/", "abc"), Some(""));
        assert_eq!(under_token("/abc/channel", "abc"), Some("channel"));
        assert_eq!(under_token("/abd/channel", "abc"), None);
        assert_eq!(under_token("/ab/channel", "abc"), None);
        assert_eq!(under_token("/abcd/channel", "abc"), None);
        assert_eq!(under_token("/abc", "abc"), None);
        assert_eq!(under_token("/", "abc"), None);
    }

    #[test]
    fn the_channel_takes_same_origin_requests_only() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        let origin = "http://127.0.0.1:4000";
        assert!(same_origin(&headers(&[("origin", origin)]), origin, true));
        assert!(!same_origin(&headers(&[]), origin, true));
        assert!(same_origin(&headers(&[]), origin, false));
        assert!(!same_origin(
            &headers(&[("origin", "http://127.0.0.1:4001")]),
            origin,
            false
        ));
        assert!(!same_origin(&headers(&[("origin", "null")]), origin, true));
        assert!(!same_origin(
            &headers(&[("origin", origin), ("sec-fetch-site", "same-site")]),
            origin,
            true
        ));
        assert!(host_is(
            &headers(&[("host", "127.0.0.1:4000")]),
            "127.0.0.1:4000"
        ));
        assert!(!host_is(
            &headers(&[("host", "evil.example:4000")]),
            "127.0.0.1:4000"
        ));
        assert!(!host_is(&headers(&[]), "127.0.0.1:4000"));
    }
}
