//! Compact JSON written exactly like Python's `json.dumps(value, separators=(",", ":"))`.
//!
//! Everything the sealing path digests or seals must hash to the same bytes as the Python SDK,
//! so this module reproduces CPython's encoder rather than serde_json's:
//!
//! * output is pure ASCII (`ensure_ascii=True`): every character outside `' '..='~'` becomes a
//!   lowercase `\uXXXX` escape, characters above U+FFFF as a UTF-16 surrogate pair;
//! * `"`, `\`, `\b`, `\f`, `\n`, `\r`, `\t` use their short escapes, other controls `\u00XX`;
//! * floats use Python's `repr`: the shortest digits that round-trip, fixed notation for
//!   decimal exponents -4..=15 (`0.0001`, `1e+16`, `1e-05`, `1.0`, `-0.0`);
//! * integers are written as they are;
//! * [`write_sorted`] orders object keys by code point (`sort_keys=True`) itself, so the result
//!   does not depend on whether serde_json's `preserve_order` feature is enabled anywhere in the
//!   build.
//!
//! [`to_string`] / [`PythonFormatter`] keep serialisation order instead (Python without
//! `sort_keys`), which is what the resolver question digest needs: it hashes pydantic's field
//! order.
//!
//! ```
//! use modelctx_seal::canonical_json;
//! use serde_json::json;
//!
//! let value = json!({"b": [1.0, 1e16, 1e-5, -0.0], "a": "é😀\n"});
//! assert_eq!(
//!     canonical_json::to_string_sorted(&value),
//!     r#"{"a":"\u00e9\ud83d\ude00\n","b":[1.0,1e+16,1e-05,-0.0]}"#
//! );
//! ```

use std::io;

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::Formatter;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `value` to `out` as Python's `json.dumps(value, sort_keys=True, separators=(",",":"))`.
pub fn write_sorted(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_sorted(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            // serde_json's default map is already sorted by code point (UTF-8 byte order equals
            // code point order); only sort when the iteration order is not, so the common case
            // allocates nothing.
            let sorted = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| a.as_str() < b.as_str());
            if sorted {
                for (i, (key, item)) in map.iter().enumerate() {
                    write_member(out, i, key, item);
                }
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    write_member(out, i, key, item);
                }
            }
            out.push(b'}');
        }
    }
}

fn write_member(out: &mut Vec<u8>, index: usize, key: &str, item: &Value) {
    if index > 0 {
        out.push(b',');
    }
    write_str(out, key);
    out.push(b':');
    write_sorted(item, out);
}

/// [`write_sorted`] into a new `String`.
pub fn to_string_sorted(value: &Value) -> String {
    let mut out = Vec::with_capacity(64);
    write_sorted(value, &mut out);
    ascii_string(out)
}

/// Serialises `value` in its own field/iteration order as Python's
/// `json.dumps(value, separators=(",",":"))` would (no key sorting).
///
/// # Errors
/// Whatever `value`'s `Serialize` impl reports (for example a map with non-string keys).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(64);
    write_ordered(value, &mut out)?;
    Ok(ascii_string(out))
}

/// [`to_string`] appending to a byte buffer.
///
/// # Errors
/// Whatever `value`'s `Serialize` impl reports.
pub fn write_ordered<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(out, PythonFormatter);
    value.serialize(&mut ser)
}

fn ascii_string(out: Vec<u8>) -> String {
    // Every byte this module writes is ASCII, so this cannot fail; stay total anyway.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A serde_json [`Formatter`] producing Python's compact, ASCII-only JSON.
///
/// Use it with `serde_json::Serializer::with_formatter` to encode any `Serialize` type the way
/// Python's `json.dumps(..., separators=(",", ":"))` does. Keys keep their serialisation order.
#[derive(Debug, Clone, Copy, Default)]
pub struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        // Python has only doubles; an f32 is encoded as the double it widens to.
        self.write_f64(writer, f64::from(value))
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(FloatRepr::new(value).as_bytes())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // serde_json already escapes quotes, backslashes and C0 controls (with the same escapes
        // Python uses); what is left for us is DEL and everything non-ASCII.
        let mut buf = Vec::new();
        let bytes = fragment.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b < 0x7f {
                continue;
            }
            if (0x80..0xc0).contains(&b) {
                continue; // continuation byte of a character already escaped
            }
            writer.write_all(&bytes[start..i])?;
            let ch = fragment[i..].chars().next().unwrap_or('\u{fffd}');
            buf.clear();
            write_unicode_escape(&mut buf, ch);
            writer.write_all(&buf)?;
            start = i + ch.len_utf8();
        }
        writer.write_all(&bytes[start..])
    }
}

/// Appends `s` as a quoted, ASCII-only JSON string with Python's escapes.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let escaped_len: usize = bytes
        .iter()
        .map(|&b| usize::from(ESCAPED_LEN[usize::from(b)]))
        .sum();
    let start = out.len();
    // Every escape is longer than what it replaces, so equal lengths mean nothing to escape:
    // the common case (methods, names, digests, audiences) is one copy.
    if escaped_len == bytes.len() {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    // Otherwise (typically JSON state written into JSON, a quote every few bytes) size the
    // output exactly once and fill it byte by byte: cheaper than a copy call per short run.
    out.resize(start + escaped_len + 2, 0);
    let dst = &mut out[start..];
    dst[0] = b'"';
    let mut j = 1;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match ESCAPED_LEN[usize::from(b)] {
            1 => {
                dst[j] = b;
                j += 1;
                i += 1;
            }
            2 => {
                dst[j] = b'\\';
                dst[j + 1] = SHORT_ESCAPE[usize::from(b)];
                j += 2;
                i += 1;
            }
            _ if b < 0x80 => {
                put_u16_escape(&mut dst[j..j + 6], u16::from(b));
                j += 6;
                i += 1;
            }
            _ => {
                // `i` is at a character boundary: everything before it was consumed whole.
                let ch = s[i..].chars().next().unwrap_or('\u{fffd}');
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    put_u16_escape(&mut dst[j..j + 6], *unit);
                    j += 6;
                }
                i += ch.len_utf8();
            }
        }
    }
    dst[j] = b'"';
}

/// How many bytes [`write_str`] writes for each byte of a string: 1 for printable ASCII except
/// `"` and `\\`; 2 for the short escapes; 6 for `\\u00XX` (other controls and DEL); for UTF-8, the
/// lead byte counts the whole character (6, or 12 for a surrogate pair above U+FFFF, as Python's
/// `ensure_ascii`) and continuation bytes 0.
const ESCAPED_LEN: [u8; 256] = {
    let mut len = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        len[b] = match b {
            0x08 | 0x09 | 0x0a | 0x0c | 0x0d | 0x22 | 0x5c => 2,
            0x00..=0x1f | 0x7f => 6,
            0x20..=0x7e => 1,
            0x80..=0xbf => 0,
            0xc0..=0xef => 6,
            _ => 12,
        };
        b += 1;
    }
    len
};

/// The letter after the backslash of each short escape (`\\n` …); 0 for the other bytes.
const SHORT_ESCAPE: [u8; 256] = {
    let mut letter = [0u8; 256];
    letter[b'"' as usize] = b'"';
    letter[b'\\' as usize] = b'\\';
    letter[b'\n' as usize] = b'n';
    letter[b'\r' as usize] = b'r';
    letter[b'\t' as usize] = b't';
    letter[0x08] = b'b';
    letter[0x0c] = b'f';
    letter
};

fn put_u16_escape(dst: &mut [u8], unit: u16) {
    dst.copy_from_slice(&[
        b'\\',
        b'u',
        HEX[usize::from(unit >> 12)],
        HEX[usize::from((unit >> 8) & 0xf)],
        HEX[usize::from((unit >> 4) & 0xf)],
        HEX[usize::from(unit & 0xf)],
    ]);
}

fn write_unicode_escape(out: &mut Vec<u8>, ch: char) {
    let mut units = [0u16; 2];
    for unit in ch.encode_utf16(&mut units) {
        write_u16_escape(out, *unit);
    }
}

fn write_u16_escape(out: &mut Vec<u8>, unit: u16) {
    let mut escape = [0u8; 6];
    put_u16_escape(&mut escape, unit);
    out.extend_from_slice(&escape);
}

fn write_number(n: &serde_json::Number, out: &mut Vec<u8>) {
    if let Some(i) = n.as_i64() {
        if i < 0 {
            out.push(b'-');
        }
        write_u64(out, i.unsigned_abs());
    } else if let Some(u) = n.as_u64() {
        write_u64(out, u);
    } else if let Some(f) = n.as_f64() {
        out.extend_from_slice(FloatRepr::new(f).as_bytes());
    } else {
        // Only reachable with serde_json's arbitrary_precision: keep the literal as parsed.
        out.extend_from_slice(n.to_string().as_bytes());
    }
}

/// Appends Python's `repr(value)` of a float (as `json.dumps` writes it).
pub(crate) fn write_f64(out: &mut Vec<u8>, value: f64) {
    out.extend_from_slice(FloatRepr::new(value).as_bytes());
}

/// Appends `n` in decimal (without going through `fmt`, which costs more than the digits).
pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    let digits = Decimal::new(n);
    out.extend_from_slice(digits.as_bytes());
}

/// The decimal digits of a `u64`, rendered on the stack.
struct Decimal {
    buf: [u8; 20],
    start: usize,
}

impl Decimal {
    fn new(mut n: u64) -> Self {
        let mut buf = [0u8; 20];
        let mut start = buf.len();
        loop {
            start -= 1;
            // `n % 10 < 10`, so the cast cannot truncate.
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                return Self { buf, start };
            }
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Python's `float.__repr__`, rendered on the stack.
struct FloatRepr {
    buf: [u8; 48],
    len: usize,
}

impl FloatRepr {
    fn new(value: f64) -> Self {
        let mut repr = Self {
            buf: [0; 48],
            len: 0,
        };
        if value.is_nan() {
            repr.push(b"NaN");
        } else if value.is_infinite() {
            repr.push(if value > 0.0 {
                b"Infinity".as_slice()
            } else {
                b"-Infinity".as_slice()
            });
        } else if value == 0.0 {
            repr.push(if value.is_sign_negative() {
                b"-0.0".as_slice()
            } else {
                b"0.0".as_slice()
            });
        } else {
            repr.layout(value);
        }
        repr
    }

    fn layout(&mut self, value: f64) {
        // zmij (Schubfach) yields the shortest digits that round-trip, the closest to the exact
        // value when several are equally short: the same digits CPython's repr picks. Only the
        // layout differs, so decompose its output into digits and a decimal exponent.
        let mut shortest = zmij::Buffer::new();
        let text = shortest.format_finite(value.abs()).as_bytes();
        if value.is_sign_negative() {
            self.push(b"-");
        }
        // zmij writes fixed notation for decimal exponents -5..=15, CPython for -4..=15, both
        // with the same digits (`12.34`, `100.0`, `0.001234`): inside the common range zmij's
        // text already is repr's (every timestamp `iat`/`exp` takes this path).
        if !text.contains(&b'e') && !text.starts_with(b"0.0000") {
            self.push(text);
            return;
        }
        self.layout_digits(text);
    }

    /// CPython's layout of zmij's shortest digits, for any exponent.
    fn layout_digits(&mut self, text: &[u8]) {
        let (digits, exp) = decompose(text);
        let digits = &digits.buf[..digits.len];
        // CPython: fixed notation iff -4 <= exponent < 16, otherwise d.ddde±XX.
        if (-4..16).contains(&exp) {
            let point = exp + 1; // digits before the decimal point
            if point <= 0 {
                self.push(b"0.");
                for _ in 0..(-point) {
                    self.push(b"0");
                }
                self.push(digits);
            } else {
                let point = point.unsigned_abs() as usize;
                if point >= digits.len() {
                    self.push(digits);
                    for _ in digits.len()..point {
                        self.push(b"0");
                    }
                    self.push(b".0");
                } else {
                    self.push(&digits[..point]);
                    self.push(b".");
                    self.push(&digits[point..]);
                }
            }
        } else {
            self.push(&digits[..1]);
            if digits.len() > 1 {
                self.push(b".");
                self.push(&digits[1..]);
            }
            self.push(if exp < 0 { b"e-" } else { b"e+" });
            let magnitude = exp.unsigned_abs();
            if magnitude < 10 {
                self.push(b"0");
            }
            self.push(Decimal::new(u64::from(magnitude)).as_bytes());
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let end = (self.len + bytes.len()).min(self.buf.len());
        let take = end - self.len;
        self.buf[self.len..end].copy_from_slice(&bytes[..take]);
        self.len = end;
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Significant digits (no leading or trailing zeros) of a positive decimal literal.
struct Digits {
    buf: [u8; 32],
    len: usize,
}

/// Splits a positive decimal literal (`123.45`, `1e16`, `1.5e-7`, `0.001`) into its significant
/// digits and the decimal exponent of the first one (`1.2345e2` → `"12345"`, 2).
fn decompose(text: &[u8]) -> (Digits, i32) {
    let mut digits = Digits {
        buf: [0; 32],
        len: 0,
    };
    let (mantissa, exponent) = match text.iter().position(|&b| b == b'e' || b == b'E') {
        Some(e) => (&text[..e], &text[e + 1..]),
        None => (text, &b""[..]),
    };
    let mut exp_value = 0i32;
    let mut exp_negative = false;
    for &b in exponent {
        match b {
            b'-' => exp_negative = true,
            b'0'..=b'9' => {
                exp_value = exp_value
                    .saturating_mul(10)
                    .saturating_add(i32::from(b - b'0'));
            }
            _ => {}
        }
    }
    if exp_negative {
        exp_value = -exp_value;
    }
    // Position of the decimal point relative to the first digit kept.
    let mut point = 0i32;
    let mut seen_point = false;
    for &b in mantissa {
        match b {
            b'.' => seen_point = true,
            b'0'..=b'9' => {
                if digits.len == 0 && b == b'0' {
                    // A leading zero: after the point it shifts the first significant digit right.
                    if seen_point {
                        point -= 1;
                    }
                    continue;
                }
                if !seen_point {
                    point += 1;
                }
                if digits.len < digits.buf.len() {
                    digits.buf[digits.len] = b;
                    digits.len += 1;
                }
            }
            _ => {}
        }
    }
    while digits.len > 1 && digits.buf[digits.len - 1] == b'0' {
        digits.len -= 1;
    }
    if digits.len == 0 {
        digits.buf[0] = b'0';
        digits.len = 1;
        point = 1;
    }
    (digits, point - 1 + exp_value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repr(v: f64) -> String {
        String::from_utf8(FloatRepr::new(v).as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn decompose_handles_every_layout() {
        for (text, digits, exp) in [
            ("1.2345e2", "12345", 2),
            ("123.45", "12345", 2),
            ("0.00123", "123", -3),
            ("1e16", "1", 16),
            ("1e+16", "1", 16),
            ("1.5e-7", "15", -7),
            ("100.0", "1", 2),
            ("5e-324", "5", -324),
        ] {
            let (d, e) = decompose(text.as_bytes());
            assert_eq!((&d.buf[..d.len], e), (digits.as_bytes(), exp), "{text}");
        }
    }

    #[test]
    fn float_repr_matches_cpython() {
        // Expected strings are CPython 3.11's repr() of the same doubles.
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (0.00012345, "0.00012345"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5e-7, "-2.5e-07"),
            (1796005576.8783715, "1796005576.8783715"),
            (9_007_199_254_740_992.0, "9007199254740992.0"),
            (1234567890123456.7, "1234567890123456.8"),
            (100.0, "100.0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (value, expected) in cases {
            assert_eq!(repr(*value), *expected, "repr of {value:e}");
        }
    }

    #[test]
    fn zmij_fixed_notation_is_repr_where_used_as_is() {
        // The fast path of `layout` hands zmij's fixed notation through unchanged; it must be
        // exactly what the general layout makes of the same digits, across the whole range.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut checked = 0;
        for i in 0..200_000u64 {
            // xorshift over all bit patterns, plus values around every power of ten in range.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = if i % 2 == 0 {
                f64::from_bits(state).abs()
            } else {
                let exp = i32::try_from((i / 2) % 24).unwrap() - 6;
                10f64.powi(exp) * (1.0 + f64::from(u32::try_from(state % 10_000).unwrap()) / 1e4)
            };
            if !value.is_finite() || value == 0.0 {
                continue;
            }
            let mut shortest = zmij::Buffer::new();
            let text = shortest.format_finite(value).as_bytes();
            if text.contains(&b'e') || text.starts_with(b"0.0000") {
                continue;
            }
            let mut general = FloatRepr {
                buf: [0; 48],
                len: 0,
            };
            general.layout_digits(text);
            assert_eq!(repr(value).as_bytes(), general.as_bytes(), "{value:e}");
            checked += 1;
        }
        assert!(checked > 50_000, "{checked}");
    }

    proptest::proptest! {
        /// `write_str` (sized escaping) against the serde_json formatter path, which escapes
        /// independently; both must be Python's `ensure_ascii` output.
        #[test]
        fn write_str_matches_the_formatter(s in "(\\PC|[\\x00-\\x1f\\x7f\"\\\\]){0,40}") {
            let mut out = Vec::new();
            write_str(&mut out, &s);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), to_string(&s).unwrap());
        }
    }

    #[test]
    fn strings_are_ascii_with_python_escapes() {
        let mut out = Vec::new();
        write_str(
            &mut out,
            "a\"b\\c\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}é\u{ffff}😀/",
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"b\\c\n\r\t\b\f\u0001\u001f\u007f\u00e9\uffff\ud83d\ude00/""#
        );
    }

    #[test]
    fn integers_are_written_as_they_are() {
        let value = json!([
            0,
            7,
            -1,
            10,
            1000,
            -90,
            i64::MIN,
            i64::MAX,
            u64::MAX,
            1u64 << 63
        ]);
        assert_eq!(to_string_sorted(&value), value.to_string());
        assert_eq!(repr(1e100), "1e+100");
        assert_eq!(repr(2.5e-300), "2.5e-300");
    }

    #[test]
    fn sorted_output_ignores_map_order() {
        let value =
            json!({"b": 1, "a": {"z": null, "é": true, "A": [false, -3, 18446744073709551615u64]}});
        assert_eq!(
            to_string_sorted(&value),
            r#"{"a":{"A":[false,-3,18446744073709551615],"z":null,"\u00e9":true},"b":1}"#
        );
    }

    #[test]
    fn formatter_matches_sorted_writer_on_sorted_input() {
        let value = json!({"a": "é\u{7f}\n😀", "b": [1.0, 0.5, 1e22, -7], "c": {}});
        assert_eq!(to_string(&value).unwrap(), to_string_sorted(&value));
    }

    #[test]
    fn formatter_keeps_field_order() {
        #[derive(Serialize)]
        struct Params<'a> {
            mode: &'a str,
            message: &'a str,
        }
        let text = to_string(&Params {
            mode: "form",
            message: "Ça?",
        })
        .unwrap();
        assert_eq!(text, r#"{"mode":"form","message":"\u00c7a?"}"#);
    }
}
