//! The host page: ours, small, and strict. It shows the app in a sandboxed iframe on the app's
//! origin and relays between the app and `mcp` (`host_page.html`: its script accepts only what
//! its own iframe's window sends from the app's origin, in the protocol's shapes). It is served
//! with a policy of its own: its one script and style run by a per-response nonce, it connects
//! only to its own origin (the channel), frames only the app's origin, and nothing may frame it.

use std::fmt::Write as _;

/// The page, with `{{…}}` placeholders.
const TEMPLATE: &str = include_str!("host_page.html");

/// The largest message the page relays from the app (and the channel takes).
pub(crate) const MAX_MESSAGE: usize = 1 << 20;

/// What the page shows and where its app is.
#[derive(Debug, Clone)]
pub(crate) struct HostPage {
    /// The tool's name (the server's text).
    pub(crate) title: String,
    /// The server's name and version (the server's text).
    pub(crate) server: String,
    /// The app's origin, `http://127.0.0.1:PORT`.
    pub(crate) app_origin: String,
    /// The app document's URL on that origin.
    pub(crate) app_url: String,
    /// The iframe's `allow` attribute (`camera; clipboard-write`; from a fixed list).
    pub(crate) allow: String,
    /// Whether the app asked for a border (`_meta.ui.prefersBorder`; the default is one).
    pub(crate) border: bool,
}

impl HostPage {
    /// The page's HTML, its script and style bound to `nonce`.
    pub(crate) fn html(&self, nonce: &str) -> String {
        let title = escape_html(&self.title);
        TEMPLATE
            .replace("{{TITLE}}", &title)
            .replace("{{SERVER}}", &escape_html(&self.server))
            .replace("{{NONCE}}", nonce)
            .replace("{{BODY_CLASS}}", if self.border { "border" } else { "" })
            .replace("{{ALLOW}}", &escape_html(&self.allow))
            .replace("{{APP_ORIGIN}}", &self.app_origin)
            .replace("{{APP_URL}}", &self.app_url)
            .replace("{{MAX_MESSAGE}}", &MAX_MESSAGE.to_string())
    }

    /// The page's `Content-Security-Policy` for a response whose nonce is `nonce`.
    pub(crate) fn content_security_policy(&self, nonce: &str) -> String {
        format!(
            "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
             connect-src 'self'; frame-src {}; img-src 'none'; base-uri 'none'; \
             form-action 'none'; frame-ancestors 'none'",
            self.app_origin
        )
    }
}

/// Text for an HTML element or attribute value: `& < > " '` as character references.
pub(crate) fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c if c.is_control() => {
                let _ = write!(escaped, "&#{};", u32::from(c));
            }
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> HostPage {
        HostPage {
            title: "get-time</title><script>alert(1)</script>".to_owned(),
            server: "Evil \"server\" 1.0".to_owned(),
            app_origin: "http://127.0.0.1:4001".to_owned(),
            app_url: "http://127.0.0.1:4001/abc/app".to_owned(),
            allow: "camera".to_owned(),
            border: true,
        }
    }

    #[test]
    fn the_server_s_names_are_text_and_every_placeholder_is_filled() {
        let html = page().html("N0nce");
        assert!(!html.contains("{{"), "{html}");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("get-time&lt;/title&gt;&lt;script&gt;alert(1)"));
        assert!(html.contains("Evil &quot;server&quot; 1.0"));
        assert_eq!(html.matches("nonce=\"N0nce\"").count(), 2);
        assert!(html.contains(r#"const APP_ORIGIN = "http://127.0.0.1:4001";"#));
        assert!(html.contains(r#"<body class="border">"#));
        assert!(html.contains(r#"allow="camera""#));
        assert_eq!(escape_html("a\u{1b}b'"), "a&#27;b&#39;");
    }

    #[test]
    fn the_page_runs_only_its_own_script_and_frames_only_the_app() {
        let policy = page().content_security_policy("N0nce");
        assert!(policy.starts_with("default-src 'none'; script-src 'nonce-N0nce'; "));
        assert!(policy.contains("frame-src http://127.0.0.1:4001;"));
        assert!(policy.contains("connect-src 'self';"));
        assert!(policy.ends_with("frame-ancestors 'none'"));
        assert!(!policy.contains("unsafe"));
    }
}
