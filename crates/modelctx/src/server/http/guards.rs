//! What a request head must pass before its body is read: the Host and Origin allowlists
//! (DNS-rebinding protection), the media types of `Content-Type` and `Accept`, which era the
//! request is for, and, with `auth`, its bearer token. Also how the ladder reads the head's
//! headers ([`HeaderAccess`] for `HeaderMap`).

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};

use super::config::HttpConfig;
use super::responses::plain;
use super::state::HttpState;
use crate::http::headers;
use crate::server::headers::{HeaderAccess, Repeated};

/// The standard MCP headers as `HeaderName`s: a lookup by `&str` parses the name (checks and
/// lower-cases each byte) every time, ~300 instructions a lookup, four lookups a request.
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(headers::PROTOCOL_VERSION);
const METHOD_HEADER: HeaderName = HeaderName::from_static(headers::METHOD);
const NAME_HEADER: HeaderName = HeaderName::from_static(headers::NAME);

impl HeaderAccess for HeaderMap {
    fn single(&self, name: &str) -> Result<Option<&[u8]>, Repeated> {
        let values = match name {
            headers::PROTOCOL_VERSION => self.get_all(PROTOCOL_VERSION_HEADER),
            headers::METHOD => self.get_all(METHOD_HEADER),
            headers::NAME => self.get_all(NAME_HEADER),
            _ => self.get_all(name),
        };
        let mut values = values.iter();
        match (values.next(), values.next()) {
            (None, _) => Ok(None),
            (Some(value), None) => Ok(Some(value.as_bytes())),
            (Some(_), Some(_)) => Err(Repeated),
        }
    }
}

/// The host part of a `Host` header or an origin authority, without port (brackets kept for
/// IPv6 literals). Borrowed: the checks run on every request and must not allocate.
fn host_part(authority: &str) -> &str {
    let authority = authority.trim();
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or_default()
}

fn allowed(list: Option<&Vec<String>>, host: &str) -> bool {
    list.is_none_or(|list| list.iter().any(|h| h.eq_ignore_ascii_case(host)))
}

/// Whether an `Origin` is allowed: an entry with a scheme matches the whole origin, a bare host
/// its host part. An origin that is not `scheme://authority` (`null`, garbage) never is.
fn origin_allowed(list: Option<&Vec<String>>, origin: &HeaderValue) -> bool {
    let Some((origin, authority)) = origin
        .to_str()
        .ok()
        .and_then(|o| Some((o, o.split_once("://")?.1)))
    else {
        return false;
    };
    let host = host_part(authority.split('/').next().unwrap_or_default());
    list.is_none_or(|list| {
        list.iter().any(|entry| {
            if entry.contains("://") {
                entry.trim_end_matches('/').eq_ignore_ascii_case(origin)
            } else {
                entry.eq_ignore_ascii_case(host)
            }
        })
    })
}

/// DNS-rebinding protection: `Host` must name an allowed host, and `Origin`, when present, an
/// allowed origin.
pub(crate) fn check_host_and_origin(
    request: &Request,
    config: &HttpConfig,
) -> Result<(), Box<Response>> {
    let headers = request.headers();
    if config.allowed_hosts.is_some() {
        let host = request_authority(request)?.map(host_part);
        if !host.is_some_and(|h| allowed(config.allowed_hosts.as_ref(), h)) {
            return Err(Box::new(plain(
                StatusCode::MISDIRECTED_REQUEST,
                "Invalid Host header",
            )));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(config.allowed_origins.as_ref(), origin)
    {
        return Err(Box::new(plain(
            StatusCode::FORBIDDEN,
            "Invalid Origin header",
        )));
    }
    Ok(())
}

/// The authority the request asked for: the `Host` header, or over HTTP/2 the `:authority`
/// pseudo-header (the request's URI), where a `Host` header is there only if the client added
/// one. Over HTTP/2 the check reads `:authority` whenever there is one, which is what the
/// client connected for, and a `Host` that names another authority makes the request malformed
/// (RFC 9113, 8.3.1): 400, rather than a check of whichever of the two suits the sender.
fn request_authority(request: &Request) -> Result<Option<&str>, Box<Response>> {
    let host = request.headers().get(header::HOST);
    if request.version() != http::Version::HTTP_2 {
        return Ok(host.and_then(|host| host.to_str().ok()));
    }
    let Some(authority) = request.uri().authority().map(http::uri::Authority::as_str) else {
        return Ok(host.and_then(|host| host.to_str().ok()));
    };
    match host {
        Some(host) if !host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) => {
            Err(Box::new(plain(
                StatusCode::BAD_REQUEST,
                "Host header does not match :authority",
            )))
        }
        _ => Ok(Some(authority)),
    }
}

/// The media types listed in a header (parameters dropped), without allocating.
fn media_types(headers: &HeaderMap, name: HeaderName) -> impl Iterator<Item = &[u8]> {
    // Bytes, not `str` patterns: these run on every request, and `split(char)` plus `trim` were
    // ~1.7k instructions of a ~51k-instruction HTTP call. `to_str` still drops a value with
    // non-visible bytes whole, as before; what is left is ASCII, so `trim_ascii` is `trim`.
    headers
        .get_all(name)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(|t| {
            let end = t.iter().position(|&b| b == b';').unwrap_or(t.len());
            t[..end].trim_ascii()
        })
}

/// Whether `Content-Type` is JSON.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    if let Some(value) = headers.get(header::CONTENT_TYPE)
        && value.as_bytes() == b"application/json"
    {
        return true;
    }
    media_types(headers, header::CONTENT_TYPE).any(|t| t.eq_ignore_ascii_case(b"application/json"))
}

/// The `Accept` values clients send (the spec's own, in either order): compared whole before
/// parsing the list, which cost ~1k instructions a request.
const ACCEPT_BOTH: [&[u8]; 4] = [
    b"application/json, text/event-stream",
    b"text/event-stream, application/json",
    b"application/json,text/event-stream",
    b"text/event-stream,application/json",
];

/// `Accept` must cover both JSON and event streams (an absent header is tolerated).
pub(crate) fn accepts_both(headers: &HeaderMap) -> bool {
    let mut all = headers.get_all(header::ACCEPT).iter();
    if let (Some(value), None) = (all.next(), all.next())
        && ACCEPT_BOTH.contains(&value.as_bytes())
    {
        return true;
    }
    let (mut any, mut json, mut sse) = (false, false, false);
    for media in media_types(headers, header::ACCEPT) {
        any = true;
        let (kind, sub) = match media.iter().position(|&b| b == b'/') {
            Some(slash) => (&media[..slash], &media[slash + 1..]),
            None => (media, &b""[..]),
        };
        let wild = sub == b"*";
        let all = wild && kind == b"*";
        json |= all
            || (kind.eq_ignore_ascii_case(b"application")
                && (wild || sub.eq_ignore_ascii_case(b"json")));
        sse |= all
            || (kind.eq_ignore_ascii_case(b"text")
                && (wild || sub.eq_ignore_ascii_case(b"event-stream")));
    }
    !any || (json && sse)
}

/// Whether a request takes the 2026-07-28 path: its `MCP-Protocol-Version` header names a
/// version that is not a handshake-era one. Anything else (no header, `2025-11-25`, …) is served
/// by the handshake-era transport on the same endpoint.
pub(crate) fn is_modern(headers: &HeaderMap) -> bool {
    headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .is_some_and(|v| {
            modelctx_types::ProtocolVersion::era_of(v) != Some(modelctx_types::Era::Handshake)
        })
}

/// Checks the bearer token when the endpoint is protected, and puts the token and its principal
/// in the request extensions (sealed state is bound to the principal).
#[allow(
    clippy::unused_async,
    reason = "without the auth feature there is nothing to await"
)]
pub(crate) async fn authenticate(
    state: &HttpState,
    parts: &mut http::request::Parts,
) -> Result<(), Response> {
    #[cfg(feature = "auth")]
    if let Some(auth) = &state.config.auth {
        let token = auth
            .authenticate(parts)
            .await
            .map_err(crate::server::auth::AuthRejection::into_response)?;
        parts.extensions.insert(token.principal());
        parts.extensions.insert(token);
    }
    #[cfg(not(feature = "auth"))]
    let _ = (state, parts);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static [u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn media_type_checks_read_lists_parameters_case_and_whitespace() {
        for (accept, both) in [
            (&[][..], true),
            (&[&b"application/json, text/event-stream"[..]][..], true),
            (&[&b"text/event-stream, application/json"[..]][..], true),
            (&[&b"application/json,text/event-stream"[..]][..], true),
            (&[&b"text/event-stream,application/json"[..]][..], true),
            (&[&b"application/json, text/event-stream "[..]][..], true),
            (
                &[
                    &b"application/json, text/event-stream"[..],
                    &b"text/html"[..],
                ][..],
                true,
            ),
            (&[&b"application/json, text/event-streams"[..]][..], false),
            (
                &[&b" Application/JSON ;q=0.9 ,TEXT/Event-Stream"[..]][..],
                true,
            ),
            (
                &[&b"application/json"[..], &b"text/event-stream"[..]][..],
                true,
            ),
            (&[&b"*/*"[..]][..], true),
            (&[&b"application/*, text/*;q=0.1"[..]][..], true),
            (&[&b"application/json"[..]][..], false),
            (&[&b"text/event-stream"[..]][..], false),
            (&[&b"application/jsonx, text/event-stream"[..]][..], false),
            (&[&b"*/json, text/event-stream"[..]][..], false),
            // A value with a non-visible byte is ignored whole, as if absent.
            (&[&b"application/json, \xff"[..]][..], true),
        ] {
            let map = headers(&accept.iter().map(|v| ("accept", *v)).collect::<Vec<_>>());
            assert_eq!(accepts_both(&map), both, "{accept:?}");
        }
        for (content_type, json) in [
            (&b"application/json"[..], true),
            (b"Application/JSON; charset=utf-8", true),
            (b"text/plain, application/json", true),
            (b"application/json-seq", false),
            (b"text/plain", false),
        ] {
            let map = headers(&[("content-type", content_type)]);
            assert_eq!(is_json(&map), json, "{content_type:?}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }

    /// The ladder's lookups of the standard headers go through `HeaderName` constants; any
    /// other name, and a repeated header, read as before.
    #[test]
    fn the_standard_headers_are_read_by_their_constant_names() {
        use crate::http::headers::{METHOD, NAME, PROTOCOL_VERSION, SESSION_ID};
        let map = headers(&[
            ("mcp-protocol-version", b"2026-07-28"),
            ("mcp-method", b"tools/call"),
            ("mcp-name", b"echo"),
            ("mcp-name", b"again"),
            ("mcp-param-region", b"eu"),
        ]);
        assert_eq!(
            map.single(PROTOCOL_VERSION).unwrap(),
            Some(&b"2026-07-28"[..])
        );
        assert_eq!(map.single(METHOD).unwrap(), Some(&b"tools/call"[..]));
        assert!(map.single(NAME).is_err(), "repeated");
        assert_eq!(map.single("mcp-param-region").unwrap(), Some(&b"eu"[..]));
        assert_eq!(map.single(SESSION_ID).unwrap(), None);
        assert!(is_modern(&map));
    }

    #[test]
    fn the_modern_path_is_any_version_header_but_a_handshake_one() {
        assert!(!is_modern(&HeaderMap::new()));
        for (version, modern) in [
            (&b"2026-07-28"[..], true),
            (b"2025-11-25", false),
            (b" 2025-06-18 ", false),
            (b"2024-11-05", false),
            (b"2099-01-01", true),
        ] {
            let map = headers(&[("mcp-protocol-version", version)]);
            assert_eq!(is_modern(&map), modern, "{version:?}");
        }
    }
}
