//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

/// The parameters of a `Bearer` (or `DPoP`, RFC 9449 §7.1) challenge this client acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BearerChallenge {
    /// `resource_metadata` (RFC 9728): where the protected resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs (authoritative, space separated).
    pub(crate) scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub(crate) error: Option<String>,
    /// A `DPoP` challenge says `error="use_dpop_nonce"` (RFC 9449 §9).
    dpop_nonce: bool,
}

impl BearerChallenge {
    /// The `Bearer` challenge among the response's `WWW-Authenticate` headers, else the
    /// `DPoP` one (a server that takes DPoP-bound tokens only challenges with `DPoP`; its
    /// parameters mean the same); default when there is neither.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let mut bearer = None;
        let mut dpop: Option<Self> = None;
        for value in headers.get_all(WWW_AUTHENTICATE) {
            let Ok(text) = value.to_str() else {
                continue;
            };
            for (scheme, params) in parse(text) {
                let slot = if scheme.eq_ignore_ascii_case("bearer") {
                    &mut bearer
                } else if scheme.eq_ignore_ascii_case("dpop") {
                    &mut dpop
                } else {
                    continue;
                };
                if slot.is_none() {
                    *slot = Some(Self::of(params));
                }
            }
        }
        let dpop_nonce = dpop
            .as_ref()
            .is_some_and(|c| c.error.as_deref() == Some(crate::dpop::USE_NONCE_ERROR));
        let mut challenge = bearer.or(dpop).unwrap_or_default();
        challenge.dpop_nonce = dpop_nonce;
        challenge
    }

    fn of(params: Vec<(String, String)>) -> Self {
        let mut challenge = Self::default();
        for (name, value) in params {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                "error" => challenge.error = Some(value),
                _ => {}
            }
        }
        challenge
    }

    /// Whether this is a 403's step-up challenge.
    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// Whether the server wants a DPoP proof with its nonce (`use_dpop_nonce`).
    pub(crate) fn wants_dpop_nonce(&self) -> bool {
        self.dpop_nonce
    }
}

/// A challenge: its scheme and its auth-params (a token68 is skipped).
type Challenge = (String, Vec<(String, String)>);

/// Parses one `WWW-Authenticate` field value into its challenges.
pub(crate) fn parse(header: &str) -> Vec<Challenge> {
    let bytes = header.as_bytes();
    let mut pos = 0;
    let mut challenges: Vec<Challenge> = Vec::new();
    loop {
        skip(bytes, &mut pos, |b| b == b' ' || b == b'\t' || b == b',');
        if pos >= bytes.len() {
            break;
        }
        let start = pos;
        skip(bytes, &mut pos, is_tchar);
        if pos == start {
            // Not a token: skip to the next comma.
            skip(bytes, &mut pos, |b| b != b',');
            continue;
        }
        let name = &header[start..pos];
        let after_name = pos;
        skip(bytes, &mut pos, |b| b == b' ' || b == b'\t');
        if bytes.get(pos) == Some(&b'=') {
            // An auth-param `name = value`, or a token68 ending in `=`.
            pos += 1;
            skip(bytes, &mut pos, |b| b == b' ' || b == b'\t');
            let value = match bytes.get(pos) {
                Some(b'"') => quoted(header, &mut pos),
                Some(b'=' | b',') | None => {
                    // token68 padding: not a parameter.
                    skip(bytes, &mut pos, |b| b != b',');
                    continue;
                }
                Some(_) => {
                    let start = pos;
                    skip(bytes, &mut pos, |b| b != b',' && b != b' ' && b != b'\t');
                    header[start..pos].to_owned()
                }
            };
            if let Some((_, params)) = challenges.last_mut() {
                params.push((name.to_owned(), value));
            }
        } else {
            // A new challenge's scheme.
            pos = after_name;
            challenges.push((name.to_owned(), Vec::new()));
        }
    }
    challenges
}

fn skip(bytes: &[u8], pos: &mut usize, predicate: impl Fn(u8) -> bool) {
    while *pos < bytes.len() && predicate(bytes[*pos]) {
        *pos += 1;
    }
}

/// Reads a quoted-string starting at the opening quote; unescapes `\x`.
fn quoted(header: &str, pos: &mut usize) -> String {
    let mut out = String::new();
    let mut chars = header[*pos + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                *pos += 1 + i + 1;
                return out;
            }
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    out.push(escaped);
                }
            }
            other => out.push(other),
        }
    }
    *pos = header.len();
    out
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bearer_params() {
        let parsed = parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope", error_description="needs \"write\"""#,
        );
        assert_eq!(parsed.len(), 1);
        let (scheme, params) = &parsed[0];
        assert_eq!(scheme, "Bearer");
        assert_eq!(
            params[0].1,
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(params[1].1, "files:read files:write");
        assert_eq!(params[2].1, "insufficient_scope");
        assert_eq!(params[3].1, "needs \"write\"");
    }

    #[test]
    fn several_challenges_and_token68() {
        let parsed = parse(r#"Basic abc==, DPoP algs="ES256", Bearer realm=x,scope=read"#);
        let schemes: Vec<_> = parsed.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(schemes, ["Basic", "DPoP", "Bearer"]);
        assert_eq!(
            parsed[2].1,
            [
                ("realm".to_owned(), "x".to_owned()),
                ("scope".to_owned(), "read".to_owned())
            ]
        );
    }

    #[test]
    fn bearer_from_headers() {
        let mut headers = HeaderMap::new();
        headers.append(WWW_AUTHENTICATE, "Basic realm=\"x\"".parse().unwrap());
        headers.append(
            WWW_AUTHENTICATE,
            "bearer error=\"insufficient_scope\", scope=\"a b\""
                .parse()
                .unwrap(),
        );
        let challenge = BearerChallenge::from_headers(&headers);
        assert!(challenge.is_insufficient_scope());
        assert_eq!(challenge.scope.as_deref(), Some("a b"));
        assert_eq!(challenge.resource_metadata, None);
        assert_eq!(
            BearerChallenge::from_headers(&HeaderMap::new()),
            BearerChallenge::default()
        );
    }

    #[test]
    fn dpop_challenges() {
        let mut headers = HeaderMap::new();
        headers.append(
            WWW_AUTHENTICATE,
            "DPoP error=\"use_dpop_nonce\", resource_metadata=\"https://rs/prm\""
                .parse()
                .unwrap(),
        );
        let challenge = BearerChallenge::from_headers(&headers);
        assert!(challenge.wants_dpop_nonce());
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://rs/prm")
        );
        // Beside a Bearer challenge, the Bearer one's parameters are used; the nonce is seen.
        headers.append(WWW_AUTHENTICATE, "Bearer scope=\"a\"".parse().unwrap());
        let both = BearerChallenge::from_headers(&headers);
        assert!(both.wants_dpop_nonce());
        assert_eq!(both.scope.as_deref(), Some("a"));
        assert_eq!(both.resource_metadata, None);
        let mut plain = HeaderMap::new();
        plain.append(
            WWW_AUTHENTICATE,
            "Bearer error=\"use_dpop_nonce\"".parse().unwrap(),
        );
        assert!(!BearerChallenge::from_headers(&plain).wants_dpop_nonce());
    }
}
