//! Text from a server, made safe to print on a terminal.
//!
//! Everything a server says — elicitation messages, field titles, URLs, tool descriptions,
//! results, error messages, task status lines — reaches the user's terminal. Printed raw, an
//! escape sequence could erase the consent prompt and draw another ("Verified by your bank"), a
//! carriage return could overwrite a line, and a bidi override or an invisible character could
//! hide or reorder a URL's tail. So every such string goes through [`line`] or [`block`] before
//! it is printed: control characters (C0, DEL, C1), format characters (Unicode category Cf:
//! bidi overrides and isolates, zero-width spaces, the BOM, tag characters, …), line and
//! paragraph separators, and the blank Hangul fillers are shown visibly as `\u{1b}`.
//! Tabs stay; newlines stay only in [`block`] text, where the layout expects them. The zero-width
//! joiner and non-joiner stay too: they shape scripts and emoji, and neither hides nor moves
//! text.
//!
//! [`json`] writes JSON the same way: such characters in strings become `\uXXXX` escapes, so the
//! output is still valid JSON of the same value.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Serialize;
use unicode_general_category::{GeneralCategory, get_general_category};

/// One line of server text: newlines are shown as `\u{a}` too.
pub(crate) fn line(text: &str) -> Cow<'_, str> {
    escape(text, false, show_as_rust_escape)
}

/// Server text that may span lines (descriptions, results): newlines are kept, a carriage
/// return never is.
pub(crate) fn block(text: &str) -> Cow<'_, str> {
    escape(text, true, show_as_rust_escape)
}

/// Compact JSON on one line, escaped as [`json`] escapes.
pub(crate) fn json_line(value: &impl Serialize) -> String {
    let Ok(compact) = serde_json::to_string(value) else {
        return String::new();
    };
    // Compact JSON has no layout newlines; serde_json escapes those inside strings.
    escape(&compact, false, show_as_json_escape).into_owned()
}

/// Pretty JSON with every character [`line`] would escape written as a `\uXXXX` escape.
pub(crate) fn json(value: &impl Serialize) -> String {
    let Ok(pretty) = serde_json::to_string_pretty(value) else {
        return String::new();
    };
    // Outside its strings, pretty JSON holds only ASCII punctuation, digits, literals, spaces
    // and layout newlines, none of them hidden; inside them serde_json already escapes newlines
    // and the other C0 controls. So every hidden character left stands in a string, where its
    // `\uXXXX` escape is the same JSON value.
    escape(&pretty, true, show_as_json_escape).into_owned()
}

/// At most `max_chars` characters of `text`, and `…` when some were left out: for a peer's text
/// that could be of any length (escape it too, with [`line`] or [`block`]).
pub(crate) fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

/// `text` with every [`hidden`] character written by `show`.
fn escape(text: &str, keep_newlines: bool, show: fn(&mut String, char)) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c, keep_newlines) {
            show(&mut shown, c);
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// `\u{1b}`: how Rust writes the character, readable in plain text.
fn show_as_rust_escape(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
}

/// `\u001b`, or a surrogate pair beyond the BMP: how JSON writes the character.
fn show_as_json_escape(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        let _ = write!(out, "\\u{unit:04x}");
    }
}

/// Whether `c` could act on the terminal, or hide or reorder text, instead of showing.
fn hidden(c: char, keep_newlines: bool) -> bool {
    match c {
        '\n' => !keep_newlines,
        '\t' | '\u{200c}' | '\u{200d}' => false,
        // C0, DEL and C1.
        c if c.is_control() => true,
        // Separators some terminals break lines at; blank "letters" that render as nothing.
        '\u{2028}' | '\u{2029}' | '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}' => true,
        c => get_general_category(c) == GeneralCategory::Format,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn controls_and_invisibles_are_shown() {
        assert_eq!(
            line("ok\u{1b}[2J\u{1b}[HVerified by your bank\r\n"),
            "ok\\u{1b}[2J\\u{1b}[HVerified by your bank\\u{d}\\u{a}"
        );
        assert_eq!(block("two\nlines\r"), "two\nlines\\u{d}");
        assert_eq!(
            line("https://bank.example\u{202e}moc.live\u{2066}x\u{2069}"),
            "https://bank.example\\u{202e}moc.live\\u{2066}x\\u{2069}"
        );
        assert_eq!(
            line("\u{7f}\u{9b}\u{85}\u{200b}\u{feff}\u{ad}\u{e0041}\u{3164}"),
            "\\u{7f}\\u{9b}\\u{85}\\u{200b}\\u{feff}\\u{ad}\\u{e0041}\\u{3164}"
        );
        // Ordinary text, tabs, accents, other scripts and joiners are left alone.
        let plain = "Région\tnaïve 東京 مرحبا क्‍ष 👩\u{200d}💻";
        assert!(matches!(line(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn long_text_is_clipped_at_a_character() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("héllo", 5), "héllo");
        assert!(matches!(clip("short", 80), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_valid_and_equal() {
        let value = json!({"t\u{202e}": "a\u{1b}[31mb\u{9b}c\u{e0041}\"\\\n", "n": [1, 2.5]});
        let text = json(&value);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'));
        assert!(!text.contains('\u{9b}') && !text.contains('\u{e0041}'));
        assert!(
            text.contains("\\u202e") && text.contains("\\udb40\\udc41"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        assert_eq!(
            json(&json!({"a": [1]})),
            serde_json::to_string_pretty(&json!({"a": [1]})).unwrap()
        );
    }
}
