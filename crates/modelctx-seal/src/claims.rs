//! The claims envelope sealed inside every token, written and read exactly like the Python SDK.
//!
//! Written form (compact, ASCII-escaped, this key order):
//! `{"v":1,"iat":<float>,"exp":<float>,"m":<method>,"t":<target>,"a":<args digest>,
//! "s":<state>[,"aud":<audience>][,"p":<principal claim>][,"r":<round>][,"tc":<trace context>]}`.
//! `r` and `tc` are this SDK's own (`crate::lineage`); Python ignores them, and writes neither.
//!
//! Reading is lenient about *types* in the way Python's `dict.get` comparisons are (a claim of
//! the wrong type simply fails its check, a JSON `null` counts as absent for `aud`/`p`) so the
//! rejection reasons line up with the Python SDK's log codes; which claims must be present is
//! decided by the policy.

use std::borrow::Cow;

use crate::canonical_json::{write_f64, write_str, write_u64};

/// Claims for one sealed round.
pub(crate) struct ClaimsOut<'a> {
    pub(crate) iat: f64,
    pub(crate) exp: f64,
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) args: &'a str,
    pub(crate) state: &'a str,
    pub(crate) audience: Option<&'a str>,
    pub(crate) principal: Option<&'a str>,
    /// The round that seals, written only from round 2 on.
    pub(crate) round: Option<u32>,
    pub(crate) trace_context: Option<&'a str>,
}

impl ClaimsOut<'_> {
    /// Appends the envelope JSON to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.reserve(96 + self.method.len() + self.target.len() + self.state.len());
        out.extend_from_slice(b"{\"v\":1,\"iat\":");
        write_f64(out, self.iat);
        out.extend_from_slice(b",\"exp\":");
        write_f64(out, self.exp);
        out.extend_from_slice(b",\"m\":");
        write_str(out, self.method);
        out.extend_from_slice(b",\"t\":");
        write_str(out, self.target);
        out.extend_from_slice(b",\"a\":");
        write_str(out, self.args);
        out.extend_from_slice(b",\"s\":");
        write_str(out, self.state);
        if let Some(audience) = self.audience {
            out.extend_from_slice(b",\"aud\":");
            write_str(out, audience);
        }
        if let Some(principal) = self.principal {
            out.extend_from_slice(b",\"p\":");
            write_str(out, principal);
        }
        if let Some(round) = self.round {
            out.extend_from_slice(b",\"r\":");
            write_u64(out, u64::from(round));
        }
        if let Some(trace_context) = self.trace_context {
            out.extend_from_slice(b",\"tc\":");
            write_str(out, trace_context);
        }
        out.push(b'}');
    }
}

/// One claim as found in an opened envelope.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) enum Field<'a> {
    /// The key was not present.
    #[default]
    Absent,
    /// JSON `null`.
    Null,
    /// A string, borrowed from the payload when it had no escapes.
    Str(Cow<'a, str>),
    /// Any JSON number, as a double (Python compares ints and floats numerically).
    Num(f64),
    /// A boolean, array or object: never a valid value for any claim.
    Other,
}

impl Field<'_> {
    /// `claims.get(key)` is `None` in Python.
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Field::Absent | Field::Null)
    }

    /// The key was missing (Python's `claims[key]` would raise).
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn as_num(&self) -> Option<f64> {
        match self {
            Field::Num(n) => Some(*n),
            _ => None,
        }
    }
}

/// The claims of an opened envelope; unknown members are ignored, a repeated member keeps its
/// last value (Python's `json.loads`).
#[derive(Debug, Default)]
pub(crate) struct ClaimsIn<'a> {
    pub(crate) v: Field<'a>,
    pub(crate) iat: Field<'a>,
    pub(crate) exp: Field<'a>,
    pub(crate) m: Field<'a>,
    pub(crate) t: Field<'a>,
    pub(crate) a: Field<'a>,
    pub(crate) s: Field<'a>,
    pub(crate) aud: Field<'a>,
    pub(crate) p: Field<'a>,
    pub(crate) r: Field<'a>,
    pub(crate) tc: Field<'a>,
}

impl<'a> ClaimsIn<'a> {
    /// Parses an envelope; anything but one JSON object (RFC 8259, UTF-8) is an error.
    pub(crate) fn parse(payload: &'a [u8]) -> Result<Self, Malformed> {
        let text = std::str::from_utf8(payload).map_err(|_| Malformed)?;
        let mut reader = Reader {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        };
        let claims = reader.claims()?;
        reader.skip_ws();
        if reader.pos != reader.bytes.len() {
            return Err(Malformed);
        }
        Ok(claims)
    }
}

/// The payload is not a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// The bytes that end a run of plain string content: `"`, `\\` and the C0 controls (which
/// JSON strings must escape).
const STRING_STOP: [bool; 256] = {
    let mut stop = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stop[b] = true;
        b += 1;
    }
    stop[b'"' as usize] = true;
    stop[b'\\' as usize] = true;
    stop
};

/// Nesting limit, the same as serde_json's default (the top-level object counts).
const MAX_DEPTH: usize = 128;

/// A small, strict JSON reader specialised for the flat claims object.
///
/// Hand-written because the claims are parsed on every retried request and a generic
/// deserializer costs several times more; it accepts exactly RFC 8259 (as serde_json does, which
/// the fuzz target checks differentially) and never panics. Numbers are read with Rust's
/// correctly rounded `f64` parser, so they equal Python's `json.loads` values.
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn bump(&mut self) -> Result<u8, Malformed> {
        let b = self.peek().ok_or(Malformed)?;
        self.pos += 1;
        Ok(b)
    }

    fn expect(&mut self, byte: u8) -> Result<(), Malformed> {
        if self.bump()? == byte {
            Ok(())
        } else {
            Err(Malformed)
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn claims(&mut self) -> Result<ClaimsIn<'a>, Malformed> {
        let mut claims = ClaimsIn::default();
        self.skip_ws();
        self.expect(b'{')?;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(claims);
        }
        loop {
            self.skip_ws();
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let slot = match key.as_ref() {
                "v" => &mut claims.v,
                "iat" => &mut claims.iat,
                "exp" => &mut claims.exp,
                "m" => &mut claims.m,
                "t" => &mut claims.t,
                "a" => &mut claims.a,
                "s" => &mut claims.s,
                "aud" => &mut claims.aud,
                "p" => &mut claims.p,
                "r" => &mut claims.r,
                "tc" => &mut claims.tc,
                _ => {
                    self.skip_value(1)?;
                    if self.end_of_member()? {
                        return Ok(claims);
                    }
                    continue;
                }
            };
            // A repeated member keeps its last value, as with Python's json.loads.
            *slot = self.field()?;
            if self.end_of_member()? {
                return Ok(claims);
            }
        }
    }

    /// Consumes `,` (more members follow: false) or `}` (true).
    fn end_of_member(&mut self) -> Result<bool, Malformed> {
        self.skip_ws();
        match self.bump()? {
            b',' => Ok(false),
            b'}' => Ok(true),
            _ => Err(Malformed),
        }
    }

    fn field(&mut self) -> Result<Field<'a>, Malformed> {
        match self.peek().ok_or(Malformed)? {
            b'"' => self.string().map(Field::Str),
            b'-' | b'0'..=b'9' => self.number().map(Field::Num),
            b'n' => self.literal(b"null").map(|()| Field::Null),
            _ => self.skip_value(1).map(|()| Field::Other),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Malformed> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Malformed)
        }
    }

    /// Skips any JSON value nested `depth` levels below the top-level object.
    fn skip_value(&mut self, depth: usize) -> Result<(), Malformed> {
        match self.peek().ok_or(Malformed)? {
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            open @ (b'[' | b'{') => {
                if depth + 1 > MAX_DEPTH {
                    return Err(Malformed);
                }
                self.pos += 1;
                let close = if open == b'[' { b']' } else { b'}' };
                self.skip_ws();
                if self.peek() == Some(close) {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    self.skip_ws();
                    if open == b'{' {
                        self.string()?;
                        self.skip_ws();
                        self.expect(b':')?;
                        self.skip_ws();
                    }
                    self.skip_value(depth + 1)?;
                    self.skip_ws();
                    match self.bump()? {
                        b',' => {}
                        b if b == close => return Ok(()),
                        _ => return Err(Malformed),
                    }
                }
            }
            _ => Err(Malformed),
        }
    }

    /// Reads a number per the JSON grammar and converts it with a correctly rounded parser.
    fn number(&mut self) -> Result<f64, Malformed> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.bump()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return Err(Malformed),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.require_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.require_digits()?;
        }
        let value: f64 = self.text[start..self.pos].parse().map_err(|_| Malformed)?;
        // serde_json refuses numbers beyond the double range; so do we.
        if value.is_finite() {
            Ok(value)
        } else {
            Err(Malformed)
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn require_digits(&mut self) -> Result<(), Malformed> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            Err(Malformed)
        } else {
            Ok(())
        }
    }

    /// Reads a string, borrowing it from the payload when it contains no escapes.
    fn string(&mut self) -> Result<Cow<'a, str>, Malformed> {
        self.expect(b'"')?;
        let start = self.pos;
        let run = self.run_to_stop()?;
        self.pos += run + 1;
        match self.bytes[start + run] {
            b'"' => return Ok(Cow::Borrowed(&self.text[start..start + run])),
            b'\\' => {}
            _ => return Err(Malformed),
        }
        // Escapes present (typically JSON state inside JSON, a quote every few bytes): decode
        // into one buffer sized once. Escapes only shrink the text, so the string's scanned
        // part plus the rest of the payload bounds it; filling by index costs less than a copy
        // call (or a capacity check) per short run.
        let mut owned = vec![0u8; run + (self.bytes.len() - self.pos)];
        owned[..run].copy_from_slice(&self.bytes[start..start + run]);
        let mut len = run;
        loop {
            len = self.escape(&mut owned, len)?;
            loop {
                let b = self.bump()?;
                if !STRING_STOP[usize::from(b)] {
                    *owned.get_mut(len).ok_or(Malformed)? = b;
                    len += 1;
                    continue;
                }
                match b {
                    b'"' => {
                        owned.truncate(len);
                        // Unescaped bytes come from valid UTF-8 text and escapes are encoded
                        // whole, so this never fails; stay total anyway.
                        return String::from_utf8(owned)
                            .map(Cow::Owned)
                            .map_err(|_| Malformed);
                    }
                    b'\\' => break,
                    _ => return Err(Malformed),
                }
            }
        }
    }

    /// Length of the run of plain string bytes at the cursor, up to the next `"`, `\\` or control
    /// byte (which must exist).
    fn run_to_stop(&self) -> Result<usize, Malformed> {
        self.bytes[self.pos..]
            .iter()
            .position(|&b| STRING_STOP[usize::from(b)])
            .ok_or(Malformed)
    }

    /// Decodes one escape sequence as UTF-8 into `out[len..]` and returns the new length; the
    /// backslash is already consumed.
    fn escape(&mut self, out: &mut [u8], len: usize) -> Result<usize, Malformed> {
        let byte = match self.bump()? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = self.hex4()?;
                let ch = match unit {
                    0xd800..=0xdbff => {
                        // A high surrogate must be followed by an escaped low surrogate; lone
                        // surrogates cannot be represented and are refused (as serde_json does).
                        self.expect(b'\\')?;
                        self.expect(b'u')?;
                        let low = self.hex4()?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return Err(Malformed);
                        }
                        let code = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                        char::from_u32(code).ok_or(Malformed)?
                    }
                    0xdc00..=0xdfff => return Err(Malformed),
                    _ => char::from_u32(unit).ok_or(Malformed)?,
                };
                let end = len + ch.len_utf8();
                let dst = out.get_mut(len..end).ok_or(Malformed)?;
                ch.encode_utf8(dst);
                return Ok(end);
            }
            _ => return Err(Malformed),
        };
        *out.get_mut(len).ok_or(Malformed)? = byte;
        Ok(len + 1)
    }

    fn hex4(&mut self) -> Result<u32, Malformed> {
        let mut value = 0u32;
        for _ in 0..4 {
            let digit = char::from(self.bump()?).to_digit(16).ok_or(Malformed)?;
            value = value * 16 + digit;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_python_layout() {
        let mut out = Vec::new();
        ClaimsOut {
            iat: 1796005576.8783715,
            exp: 1796005578.8783715,
            method: "tools/call",
            target: "manual_irr",
            args: "Ey8lUoApKugLEhHi5PR-xw",
            state: "manual:7",
            audience: Some("PeerBookshop"),
            principal: None,
            round: None,
            trace_context: None,
        }
        .write(&mut out);
        // Decrypted from a real Python 2.3.0 token (python-sdk-reference.md section 5).
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"v":1,"iat":1796005576.8783715,"exp":1796005578.8783715,"m":"tools/call","t":"manual_irr","a":"Ey8lUoApKugLEhHi5PR-xw","s":"manual:7","aud":"PeerBookshop"}"#
        );
    }

    #[test]
    fn writes_and_reads_round_claims_last() {
        let mut out = Vec::new();
        ClaimsOut {
            iat: 1.0,
            exp: 2.0,
            method: "tools/call",
            target: "t",
            args: "d",
            state: "s",
            audience: None,
            principal: Some("p"),
            round: Some(12),
            trace_context: Some("00-\"x"),
        }
        .write(&mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"v":1,"iat":1.0,"exp":2.0,"m":"tools/call","t":"t","a":"d","s":"s","p":"p","r":12,"tc":"00-\"x"}"#
        );
        let c = ClaimsIn::parse(&out).unwrap();
        assert_eq!((c.r.as_num(), c.tc.as_str()), (Some(12.0), Some("00-\"x")));
    }

    #[test]
    fn parses_leniently_like_python() {
        let c = ClaimsIn::parse(
            br#"{"v":1,"iat":5,"exp":6.5,"m":"a\"b","t":null,"a":[1,{"x":2}],"s":"","x":{},"s":"last"}"#,
        )
        .unwrap();
        assert_eq!(c.v, Field::Num(1.0));
        assert_eq!(c.exp.as_num(), Some(6.5));
        assert_eq!(c.m.as_str(), Some("a\"b"));
        assert!(c.t.is_none() && c.aud.is_none());
        assert_eq!(c.a, Field::Other);
        assert_eq!(c.s.as_str(), Some("last"));
        for bad in [
            &b"[1]"[..],
            b"\"v\"",
            b"{",
            b"",
            b"{}x",
            b"{\"a\":01}",
            b"{\"a\":1.}",
            b"{\"a\":.5}",
            b"{\"a\":1e}",
            b"{\"a\":-}",
            b"{\"a\":1e999}",
            b"{\"a\":\"\\ud800\"}",
            b"{\"a\":\"\\udc00\"}",
            b"{\"a\":\"\\x\"}",
            b"{\"a\":\"\n\"}",
            b"{\"a\":tru}",
            b"{\"a\":[1,]}",
            b"{\"a\":{\"b\"}}",
            b"{\"a\":1,}",
            b"{,}",
            b"\xef\xbb\xbf{}",
            b"{\"a\":\"\xff\"}",
        ] {
            assert!(
                ClaimsIn::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep_ok = format!("{{\"x\":{}{}}}", "[".repeat(127), "]".repeat(127));
        assert!(ClaimsIn::parse(deep_ok.as_bytes()).is_ok());
        let too_deep = format!("{{\"x\":{}{}}}", "[".repeat(128), "]".repeat(128));
        assert!(ClaimsIn::parse(too_deep.as_bytes()).is_err());
        let c = ClaimsIn::parse(
            " {\"s\" : \"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\\"\\\\ é\" ,\"t\":true, \"v\":-0 } ".as_bytes(),
        )
        .unwrap();
        assert_eq!(c.s.as_str(), Some("é😀/\u{8}\u{c}\n\r\t\"\\ é"));
        assert_eq!(c.t, Field::Other);
        assert_eq!(c.v.as_num(), Some(0.0));
    }
}

#[cfg(test)]
mod string_tests {
    use super::*;

    fn state_of(payload: &str) -> Result<String, Malformed> {
        let claims = ClaimsIn::parse(payload.as_bytes())?;
        Ok(claims.s.as_str().unwrap_or("<not a string>").to_owned())
    }

    #[test]
    fn escaped_strings_decode_and_round_trip() {
        assert_eq!(
            state_of(r#"{"s":"a\"b\\c\/\b\f\n\r\t\u00e9\ud83d\ude00x\u0041"}"#).unwrap(),
            "a\"b\\c/\u{8}\u{c}\n\r\t\u{e9}\u{1f600}xA"
        );
        assert_eq!(state_of(r#"{"s":"\"\""}"#).unwrap(), "\"\"");
        assert_eq!(state_of(r#"{"s":"plain é"}"#).unwrap(), "plain é");
        // Whatever the writer escapes, the reader restores.
        let state = "{\"v\":3,\"q\":\"\u{1}\u{7f}é😀\\\"\"}";
        let mut payload = b"{\"s\":".to_vec();
        write_str(&mut payload, state);
        payload.push(b'}');
        assert_eq!(
            state_of(std::str::from_utf8(&payload).unwrap()).unwrap(),
            state
        );
    }

    #[test]
    fn bad_strings_are_malformed() {
        for bad in [
            "{\"s\":\"a\\\"}",
            "{\"s\":\"a\\x\"}",
            "{\"s\":\"a\\\"b\nc\"}",
            "{\"s\":\"a\\\"b",
            "{\"s\":\"\\ud83d\"}",
            "{\"s\":\"\\ude00\"}",
            "{\"s\":\"\\ud83d\\u0041\"}",
            "{\"s\":\"\\u12\"}",
            "{\"s\":\"a\u{1}\"}",
        ] {
            assert_eq!(state_of(bad), Err(Malformed), "{bad}");
        }
    }
}
