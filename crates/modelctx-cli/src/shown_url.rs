//! A URL from a server, shown to the user before they consent to open it.
//!
//! The site shown must be the site a browser opens. Browsers parse URLs the WHATWG way, which a
//! hand-written split gets wrong: `\` ends the authority of an http(s) URL as `/` does
//! (`https://evil.example\@bank.example.com/login` opens evil.example), tabs and newlines are
//! dropped wherever they stand, the host is percent-decoded, mapped (IDNA: a full-width dot is a
//! dot, upper case is lower case) and written in punycode. So the URL is parsed with `url::Url`,
//! the same parser as a browser's, and what is shown is its serialization — what the browser
//! would open — with the host highlighted; when the server's text differs from it, the text is
//! shown too, escaped, with a warning.

use std::io::Write as _;

use console::style;
use url::{Position, Url};

use crate::safe_text::line;

/// A URL for display: the URL a browser opens with its host highlighted, and what looks
/// suspicious.
#[derive(Debug, PartialEq)]
pub(crate) struct ShownUrl {
    /// The URL as a browser reads it (its WHATWG serialization), the host styled; the server's
    /// text, escaped, when it cannot be parsed.
    pub(crate) line: String,
    /// The host (and a port other than the scheme's), as the browser would connect to it;
    /// empty when there is none.
    pub(crate) host: String,
    /// Reasons for caution.
    pub(crate) warnings: Vec<String>,
}

/// Parses `url` as a browser does and highlights the host. Control and invisible characters in
/// the server's text earn a warning (they could hide or reorder the URL's tail), as does any
/// difference between that text and what a browser reads.
pub(crate) fn highlight_url(url: &str) -> ShownUrl {
    let escaped = line(url);
    let mut warnings = Vec::new();
    let Ok(parsed) = Url::parse(url) else {
        warnings.push("this is not an absolute URL a browser can open".to_owned());
        if matches!(escaped, std::borrow::Cow::Owned(_)) {
            warnings.push(hidden_characters());
        }
        return ShownUrl {
            line: escaped.into_owned(),
            host: String::new(),
            warnings,
        };
    };
    let host = host_and_port(&parsed);
    if !differs_only_by_a_root_path(url, parsed.as_str()) {
        warnings.push(format!(
            "the server wrote it as {escaped}; a browser reads that as shown above, and the \
             site is {}",
            if host.is_empty() { "none" } else { &host }
        ));
    }
    if matches!(escaped, std::borrow::Cow::Owned(_)) {
        warnings.push(hidden_characters());
    }
    if parsed.scheme() != "https" {
        warnings.push(format!("the URL uses {}, not https", parsed.scheme()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // The serialization is ASCII (the user info is percent-encoded): nothing to escape.
        // (With its `@`: `url` 2.5.8 debug-asserts on `AfterPassword` without a password.)
        let userinfo = &parsed[Position::BeforeUsername..Position::BeforeHost];
        warnings.push(format!(
            "the text before '@' ({userinfo}) is not the site: the site is {host}"
        ));
    }
    if parsed
        .host_str()
        .is_some_and(|h| h.split('.').any(|label| label.starts_with("xn--")))
    {
        warnings.push("the domain uses punycode (it may imitate another name)".to_owned());
    }
    let shown = format!(
        "{}{}{}",
        &parsed[..Position::BeforeHost],
        style(&host).yellow().bold().underlined().for_stderr(),
        &parsed[Position::AfterPort..],
    );
    ShownUrl {
        line: shown,
        host,
        warnings,
    }
}

impl ShownUrl {
    /// Prints the URL, its domain and the warnings on stderr, indented under a question.
    pub(crate) fn print(&self) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "  URL:    {}", self.line);
        let _ = writeln!(
            err,
            "  domain: {}",
            style(&self.host).yellow().bold().underlined().for_stderr()
        );
        for warning in &self.warnings {
            let _ = writeln!(
                err,
                "  {} {warning}",
                style("warning:").red().bold().for_stderr()
            );
        }
    }
}

fn hidden_characters() -> String {
    "the URL contains control or invisible characters (shown as \\u{…})".to_owned()
}

/// `host[:port]` of a parsed URL (the port only when it is not the scheme's default, which the
/// serialization leaves out).
fn host_and_port(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => String::new(),
    }
}

/// Whether the server's text is the serialization, but for the `/` a browser adds to an empty
/// path (`https://example.com` → `https://example.com/`): not worth a warning.
fn differs_only_by_a_root_path(raw: &str, serialized: &str) -> bool {
    raw == serialized || serialized.strip_suffix('/') == Some(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(shown: &ShownUrl) -> String {
        console::strip_ansi_codes(&shown.line).into_owned()
    }

    #[test]
    fn urls_show_the_host() {
        let shown = highlight_url("https://auth.example.com/connect?session=1");
        assert_eq!(shown.host, "auth.example.com");
        assert!(shown.warnings.is_empty(), "{:?}", shown.warnings);
        assert_eq!(plain(&shown), "https://auth.example.com/connect?session=1");
        assert!(
            highlight_url("https://auth.example.com")
                .warnings
                .is_empty()
        );

        let tricky = highlight_url("http://accounts.example.com@evil.test:8080/login");
        assert_eq!(tricky.host, "evil.test:8080");
        assert_eq!(tricky.warnings.len(), 2, "{:?}", tricky.warnings);
        assert!(tricky.warnings[1].contains("(accounts.example.com@)"));

        assert_eq!(highlight_url("not a url").warnings.len(), 1);
        assert_eq!(highlight_url("not a url").host, "");
    }

    /// Item 10 of issue 32: the host a browser (a WHATWG parser) opens, whatever the raw text.
    #[test]
    fn the_host_is_the_one_a_browser_opens() {
        let host = |url: &str| highlight_url(url).host;
        // `\` is `/` in special schemes: the site is evil.example, not bank.example.com.
        assert_eq!(
            host("https://evil.example\\@bank.example.com/login"),
            "evil.example"
        );
        // Tabs and newlines are removed wherever they stand.
        assert_eq!(host("https://bank.example.com\t@evil.te\nst/"), "evil.test");
        // Percent-encoding in the host, a full-width dot, upper case.
        assert_eq!(host("https://%65vil.test/"), "evil.test");
        assert_eq!(
            host("https://bank.example.com\u{ff0e}evil.test/"),
            "bank.example.com.evil.test"
        );
        assert_eq!(host("HTTPS://EVIL.TEST:8443/x"), "evil.test:8443");
        // IDN: the punycode the browser resolves.
        assert_eq!(host("https://b\u{430}nk.example/"), "xn--bnk-6cd.example");
    }

    /// What is shown is what a browser opens; the server's own text, when it differs, comes
    /// with a warning (escaped), and so do user info, punycode and hidden characters.
    #[test]
    fn a_url_a_browser_reads_otherwise_is_shown_both_ways_with_warnings() {
        let backslash = highlight_url("https://evil.example\\@bank.example.com/login");
        assert_eq!(
            plain(&backslash),
            "https://evil.example/@bank.example.com/login"
        );
        assert_eq!(backslash.warnings.len(), 1, "{:?}", backslash.warnings);
        assert!(
            backslash.warnings[0].contains(r"wrote it as https://evil.example\@bank.example.com")
                && backslash.warnings[0].ends_with("the site is evil.example"),
            "{:?}",
            backslash.warnings
        );

        let tab = highlight_url("https://bank.example.com\t@evil.te\nst/");
        assert_eq!(plain(&tab), "https://bank.example.com@evil.test/");
        let joined = tab.warnings.join(" | ");
        assert!(joined.contains(r"evil.te\u{a}st/"), "{joined}");
        assert!(
            joined.contains("control or invisible characters"),
            "{joined}"
        );
        assert!(
            joined.contains("(bank.example.com@) is not the site: the site is evil.test"),
            "{joined}"
        );

        let idn = highlight_url("https://b\u{430}nk.example/login");
        assert_eq!(plain(&idn), "https://xn--bnk-6cd.example/login");
        assert!(
            idn.warnings.iter().any(|w| w.contains("punycode")),
            "{:?}",
            idn.warnings
        );

        // A bidi override in the path: percent-encoded in what is shown, escaped in the
        // server's text.
        let bidi = highlight_url("https://bank.example.com/\u{202e}moc.live");
        assert_eq!(plain(&bidi), "https://bank.example.com/%E2%80%AEmoc.live");
        assert!(bidi.warnings[0].contains(r"/\u{202e}moc.live"));

        // Not http(s): no host, a warning; nothing that parses is shown raw.
        let script = highlight_url("javascript:alert(1)");
        assert_eq!(script.host, "");
        assert!(
            script
                .warnings
                .iter()
                .any(|w| w.contains("javascript, not https"))
        );
        let unparsable = highlight_url("https://exa mple.com/\u{1b}[2J");
        assert_eq!(unparsable.line, r"https://exa mple.com/\u{1b}[2J");
        assert_eq!(unparsable.warnings.len(), 2, "{:?}", unparsable.warnings);
    }
}
