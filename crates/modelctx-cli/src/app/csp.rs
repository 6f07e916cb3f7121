//! The app's sandbox: the Content-Security-Policy its document is served with, and the browser
//! permissions its iframe is given, built from the UI resource's `_meta.ui` (`csp`,
//! `permissions`).
//!
//! The server declares which origins its app may reach (`connectDomains` → `connect-src`,
//! `resourceDomains` → `script-src`/`style-src`/`img-src`/`font-src`/`media-src`,
//! `frameDomains` → `frame-src`, `baseUriDomains` → `base-uri`); everything else is denied
//! (`default-src 'none'`, no objects, no form submissions, only our host page may frame it).
//! The server is hostile: a declared "domain" is pasted into a header, where `;` would start a
//! directive of its own, `'unsafe-eval'` or `*` would open everything, and a space would add a
//! source. So each one is parsed, not quoted: it must be an http(s)/ws(s) origin or a host
//! pattern — `https://api.example.com`, `https://*.example.com:8443`, `cdn.example.com` — and is
//! written back from its parts, lower-cased; anything else refuses the app, naming the entry.

use serde_json::{Map, Value};

use crate::safe_text::{clip, line};

/// At most this many domains per list: a policy is a header, and browsers cap headers.
const MAX_DOMAINS: usize = 32;

/// The longest declared domain (a DNS name is at most 253 characters, plus scheme and port).
const MAX_DOMAIN_LEN: usize = 300;

/// The lists of `_meta.ui.csp`, each validated and written back as CSP sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeclaredDomains {
    /// `connectDomains`: fetch, XHR, WebSocket.
    pub(crate) connect: Vec<String>,
    /// `resourceDomains`: scripts, styles, images, fonts, media.
    pub(crate) resource: Vec<String>,
    /// `frameDomains`: nested iframes.
    pub(crate) frame: Vec<String>,
    /// `baseUriDomains`: `<base href>`.
    pub(crate) base_uri: Vec<String>,
}

/// A browser permission an app may ask for (`_meta.ui.permissions`), by its Permissions Policy
/// name.
const PERMISSIONS: [(&str, &str); 4] = [
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboardWrite", "clipboard-write"),
];

/// What the app is allowed: its declared domains and the permissions it asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sandbox {
    pub(crate) domains: DeclaredDomains,
    /// `_meta.ui.permissions` keys granted (`camera`, `clipboardWrite`, …), in a fixed order.
    pub(crate) permissions: Vec<&'static str>,
}

impl Sandbox {
    /// Reads `_meta.ui` (the merged `ui` object of the resource); an entry that is not a valid
    /// origin or host pattern is an error naming it.
    pub(crate) fn from_ui_meta(ui: &Map<String, Value>) -> Result<Self, String> {
        let csp = match ui.get("csp") {
            None | Some(Value::Null) => &Map::new(),
            Some(Value::Object(csp)) => csp,
            Some(_) => return Err("_meta.ui.csp is not an object".to_owned()),
        };
        let list = |name: &str| domains(csp, name);
        let domains = DeclaredDomains {
            connect: list("connectDomains")?,
            resource: list("resourceDomains")?,
            frame: list("frameDomains")?,
            base_uri: list("baseUriDomains")?,
        };
        let asked = ui.get("permissions").and_then(Value::as_object);
        let permissions = PERMISSIONS
            .iter()
            .filter(|(key, _)| {
                asked
                    .and_then(|a| a.get(*key))
                    .is_some_and(Value::is_object)
            })
            .map(|(key, _)| *key)
            .collect();
        Ok(Self {
            domains,
            permissions,
        })
    }

    /// The `Content-Security-Policy` of the app's document. `host_origin` (our host page) is
    /// the only page that may frame it.
    pub(crate) fn content_security_policy(&self, host_origin: &str) -> String {
        let d = &self.domains;
        let with = |fixed: &str, extra: &[String]| {
            let mut sources = fixed.to_owned();
            for source in extra {
                sources.push(' ');
                sources.push_str(source);
            }
            sources
        };
        let or_none = |extra: &[String]| {
            if extra.is_empty() {
                "'none'".to_owned()
            } else {
                extra.join(" ")
            }
        };
        [
            "default-src 'none'".to_owned(),
            format!("script-src {}", with("'self' 'unsafe-inline'", &d.resource)),
            format!("style-src {}", with("'self' 'unsafe-inline'", &d.resource)),
            format!("img-src {}", with("'self' data:", &d.resource)),
            format!("font-src {}", with("'self'", &d.resource)),
            format!("media-src {}", with("'self' data:", &d.resource)),
            format!("connect-src {}", or_none(&d.connect)),
            format!("frame-src {}", or_none(&d.frame)),
            "object-src 'none'".to_owned(),
            format!(
                "base-uri {}",
                if d.base_uri.is_empty() {
                    "'self'".to_owned()
                } else {
                    d.base_uri.join(" ")
                }
            ),
            "form-action 'none'".to_owned(),
            format!("frame-ancestors {host_origin}"),
        ]
        .join("; ")
    }

    /// The iframe's `allow` attribute: the Permissions Policy features granted.
    pub(crate) fn allow_attribute(&self) -> String {
        PERMISSIONS
            .iter()
            .filter(|(key, _)| self.permissions.contains(key))
            .map(|(_, feature)| *feature)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// What the host approved, as `hostCapabilities.sandbox` of `ui/initialize` says it.
    pub(crate) fn approved(&self) -> Value {
        let d = &self.domains;
        let permissions: Map<String, Value> = self
            .permissions
            .iter()
            .map(|key| ((*key).to_owned(), Value::Object(Map::new())))
            .collect();
        serde_json::json!({
            "permissions": permissions,
            "csp": {
                "connectDomains": d.connect,
                "resourceDomains": d.resource,
                "frameDomains": d.frame,
                "baseUriDomains": d.base_uri,
            },
        })
    }

    /// One line for the user (the spec's audit trail): where the app may connect and load
    /// from, and what it may use.
    pub(crate) fn summary(&self) -> String {
        let d = &self.domains;
        let list = |sources: &[String]| {
            if sources.is_empty() {
                "nowhere".to_owned()
            } else {
                sources.join(" ")
            }
        };
        let mut said = format!(
            "the app may connect to {}; load from {}; frame {}",
            list(&d.connect),
            list(&d.resource),
            list(&d.frame)
        );
        if !d.base_uri.is_empty() {
            said.push_str(&format!("; use a <base> on {}", d.base_uri.join(" ")));
        }
        if !self.permissions.is_empty() {
            said.push_str(&format!("; it is granted {}", self.allow_attribute()));
        }
        said
    }
}

/// The list `name` of `_meta.ui.csp`, validated.
fn domains(csp: &Map<String, Value>, name: &str) -> Result<Vec<String>, String> {
    let entries = match csp.get(name) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err(format!("_meta.ui.csp.{name} is not a list")),
    };
    if entries.len() > MAX_DOMAINS {
        return Err(format!(
            "_meta.ui.csp.{name} lists {} domains; at most {MAX_DOMAINS} are accepted",
            entries.len()
        ));
    }
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let text = entry.as_str().unwrap_or_default();
            source(text).ok_or_else(|| {
                format!(
                    "_meta.ui.csp.{name}[{index}] {} is not an http(s) origin or host pattern \
                     (such as https://api.example.com or https://*.example.com)",
                    line(&clip(&entry.to_string(), 80))
                )
            })
        })
        .collect()
}

/// A declared domain as a CSP source, or `None` when it is not `[scheme://]host[:port][/]` with
/// scheme http, https, ws or wss, host a DNS name (optionally `*.` and at least two labels) or
/// an IPv4 address, and port a number. Written back from its parts, lower-cased.
pub(crate) fn source(declared: &str) -> Option<String> {
    if declared.is_empty() || declared.len() > MAX_DOMAIN_LEN || !declared.is_ascii() {
        return None;
    }
    let lower = declared.to_ascii_lowercase();
    let (scheme, rest) = match lower.split_once("://") {
        Some((scheme, rest)) if ["http", "https", "ws", "wss"].contains(&scheme) => {
            (Some(scheme), rest)
        }
        Some(_) => return None,
        None => (None, lower.as_str()),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    if let Some(port) = port
        && !port.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return None;
    }
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host),
    };
    let labels: Vec<&str> = name.split('.').collect();
    let is_ipv4 = !wildcard
        && labels.len() == 4
        && labels
            .iter()
            .all(|label| label.parse::<u8>().is_ok() && !label.starts_with('+'));
    let is_dns = labels.iter().all(|label| dns_label(label))
        && (!wildcard || labels.len() >= 2)
        // A name whose last label is a number is an IP address a browser parses, not a name.
        && labels.last().is_some_and(|last| !last.bytes().all(|b| b.is_ascii_digit()));
    if !is_ipv4 && !is_dns {
        return None;
    }
    let mut source = String::new();
    if let Some(scheme) = scheme {
        source.push_str(scheme);
        source.push_str("://");
    }
    if wildcard {
        source.push_str("*.");
    }
    source.push_str(name);
    if let Some(port) = port {
        source.push(':');
        source.push_str(port);
    }
    Some(source)
}

/// A DNS label: 1–63 letters, digits and inner hyphens.
fn dns_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sandbox(ui: Value) -> Result<Sandbox, String> {
        let Value::Object(ui) = ui else {
            panic!("not an object")
        };
        Sandbox::from_ui_meta(&ui)
    }

    #[test]
    fn origins_and_host_patterns_are_accepted_and_normalised() {
        for (declared, source_) in [
            ("https://api.example.com", "https://api.example.com"),
            ("https://API.Example.com/", "https://api.example.com"),
            ("wss://realtime.service.com", "wss://realtime.service.com"),
            ("https://*.cloudflare.com", "https://*.cloudflare.com"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("cdn.example.com", "cdn.example.com"),
            ("*.example.com:8443", "*.example.com:8443"),
            ("localhost:3000", "localhost:3000"),
        ] {
            assert_eq!(source(declared).as_deref(), Some(source_), "{declared}");
        }
    }

    /// Each of these, pasted into the header, would add a directive, a source or a keyword, or
    /// match more than one site.
    #[test]
    fn hostile_domains_are_refused() {
        for hostile in [
            "",
            "*",
            "'self'",
            "'unsafe-eval'",
            "'nonce-abc'",
            "'sha256-abc='",
            "https:",
            "data:",
            "blob:",
            "https://*",
            "*.com",
            "https://*.com",
            "https://example.com; script-src *",
            "https://example.com;",
            "https://example.com 'unsafe-eval'",
            "https://example.com\t*",
            "https://example.com,https://evil.example",
            "\"https://example.com\"",
            "javascript://example.com",
            "file:///etc/passwd",
            "https://user@example.com",
            "https://example.com/path",
            "https://example.com?q=1",
            "https://example.com#x",
            "https://example.com:0",
            "https://example.com:99999",
            "https://example.com:*",
            "https://ex*ample.com",
            "https://*.*.example.com",
            "https://exa_mple.com",
            "https://-example.com",
            "https://[::1]:8080",
            "https://1.2.3.4.5",
            "https://999.1.1.1",
            "https://bänk.example",
            "https://example.com\u{202e}",
            "https://example..com",
            "https://.example.com",
        ] {
            assert_eq!(source(hostile), None, "{hostile:?} was accepted");
        }
        let long = format!("https://{}.com", "a.".repeat(200));
        assert_eq!(source(&long), None);
    }

    #[test]
    fn a_bad_entry_refuses_the_app_and_is_named_escaped() {
        let error = sandbox(json!({"csp": {"connectDomains": [
            "https://ok.example", "https://x.example; script-src *\u{1b}[2J"
        ]}}))
        .unwrap_err();
        assert!(
            error.starts_with("_meta.ui.csp.connectDomains[1] \"https://x.example; script-src *"),
            "{error}"
        );
        assert!(!error.contains('\u{1b}'), "{error}");
        assert!(sandbox(json!({"csp": {"resourceDomains": [7]}})).is_err());
        assert!(sandbox(json!({"csp": {"frameDomains": "https://x.example"}})).is_err());
        assert!(sandbox(json!({"csp": "default-src *"})).is_err());
        let flood: Vec<String> = (0..33).map(|i| format!("https://h{i}.example")).collect();
        assert!(sandbox(json!({"csp": {"connectDomains": flood}})).is_err());
    }

    #[test]
    fn nothing_declared_denies_everything_but_the_document_itself() {
        let policy = sandbox(json!({}))
            .unwrap()
            .content_security_policy("http://127.0.0.1:4000");
        assert_eq!(
            policy,
            "default-src 'none'; script-src 'self' 'unsafe-inline'; \
             style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
             media-src 'self' data:; connect-src 'none'; frame-src 'none'; \
             object-src 'none'; base-uri 'self'; form-action 'none'; \
             frame-ancestors http://127.0.0.1:4000"
        );
    }

    #[test]
    fn declared_domains_go_to_their_directives_only() {
        let app = sandbox(json!({
            "csp": {
                "connectDomains": ["https://api.example.com", "wss://live.example.com"],
                "resourceDomains": ["https://cdn.example.com"],
                "frameDomains": ["https://www.youtube.com"],
                "baseUriDomains": ["https://base.example.com"],
            },
            "permissions": {"camera": {}, "clipboardWrite": {}, "microphone": false, "usb": {}},
        }))
        .unwrap();
        let policy = app.content_security_policy("http://127.0.0.1:4000");
        let directive = |name: &str| {
            policy
                .split("; ")
                .find(|d| d.starts_with(&format!("{name} ")))
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            directive("connect-src"),
            "connect-src https://api.example.com wss://live.example.com"
        );
        assert_eq!(
            directive("script-src"),
            "script-src 'self' 'unsafe-inline' https://cdn.example.com"
        );
        assert_eq!(
            directive("img-src"),
            "img-src 'self' data: https://cdn.example.com"
        );
        assert_eq!(directive("frame-src"), "frame-src https://www.youtube.com");
        assert_eq!(directive("base-uri"), "base-uri https://base.example.com");
        assert_eq!(directive("default-src"), "default-src 'none'");
        assert!(!policy.contains("api.example.com; script"), "{policy}");
        // Only the known permissions asked for with an object.
        assert_eq!(app.allow_attribute(), "camera; clipboard-write");
        assert_eq!(
            app.approved()["permissions"],
            json!({"camera": {}, "clipboardWrite": {}})
        );
        assert!(app.summary().contains("granted camera; clipboard-write"));
    }
}
