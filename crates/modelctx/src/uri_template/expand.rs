//! Expansion (RFC 6570 §3.2, the algorithm of Appendix A): values in, a URI out.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::hash::BuildHasher;

use super::syntax::{Operator, Part};

/// A variable's value: a string, or a list of strings (expanded comma-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// One string.
    String(String),
    /// A list; an empty list counts as undefined (RFC 6570 §2.3).
    List(Vec<String>),
}

/// A borrowed [`Value`]: what [`Variables`] hands to the expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueRef<'a> {
    /// One string.
    String(&'a str),
    /// A list of strings.
    List(&'a [String]),
}

impl From<&str> for Value {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl From<String> for Value {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

impl From<Vec<String>> for Value {
    fn from(values: Vec<String>) -> Self {
        Self::List(values)
    }
}

impl From<Vec<&str>> for Value {
    fn from(values: Vec<&str>) -> Self {
        Self::List(values.into_iter().map(str::to_owned).collect())
    }
}

impl Value {
    fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Self::String(value) => ValueRef::String(value),
            Self::List(values) => ValueRef::List(values),
        }
    }
}

/// Where [`UriTemplate::expand`](super::UriTemplate::expand) finds the values: maps from names to `String` (as
/// [`UriVariables`](super::UriVariables), what a match returns) or to [`Value`], and slices of
/// pairs. A name it does not find is undefined, and its expression leaves it out.
pub trait Variables {
    /// The value of `name`, if defined.
    fn value(&self, name: &str) -> Option<ValueRef<'_>>;
}

/// The values a map or a pair may hold.
pub trait AsValue {
    /// The value, borrowed.
    fn as_value(&self) -> ValueRef<'_>;
}

impl AsValue for String {
    fn as_value(&self) -> ValueRef<'_> {
        ValueRef::String(self)
    }
}

impl AsValue for &str {
    fn as_value(&self) -> ValueRef<'_> {
        ValueRef::String(self)
    }
}

impl AsValue for Value {
    fn as_value(&self) -> ValueRef<'_> {
        self.as_ref()
    }
}

impl AsValue for Vec<String> {
    fn as_value(&self) -> ValueRef<'_> {
        ValueRef::List(self)
    }
}

impl<V: AsValue> Variables for BTreeMap<String, V> {
    fn value(&self, name: &str) -> Option<ValueRef<'_>> {
        self.get(name).map(AsValue::as_value)
    }
}

impl<V: AsValue, S: BuildHasher> Variables for HashMap<String, V, S> {
    fn value(&self, name: &str) -> Option<ValueRef<'_>> {
        self.get(name).map(AsValue::as_value)
    }
}

impl<K: AsRef<str>, V: AsValue> Variables for [(K, V)] {
    fn value(&self, name: &str) -> Option<ValueRef<'_>> {
        self.iter()
            .find(|(key, _)| key.as_ref() == name)
            .map(|(_, value)| value.as_value())
    }
}

impl<K: AsRef<str>, V: AsValue, const N: usize> Variables for [(K, V); N] {
    fn value(&self, name: &str) -> Option<ValueRef<'_>> {
        self.as_slice().value(name)
    }
}

/// [`UriTemplate::expand`](super::UriTemplate::expand): `capacity` is a first guess at the
/// length (the template's).
pub(super) fn expand<V: Variables + ?Sized>(
    parts: &[Part],
    capacity: usize,
    variables: &V,
) -> String {
    let mut out = String::with_capacity(capacity);
    for part in parts {
        match part {
            Part::Literal(literal) => encode_literal(literal, &mut out),
            Part::Expression(expression) => {
                let operator = expression.operator;
                let mut first = true;
                for name in &expression.names {
                    let value = match variables.value(name) {
                        None | Some(ValueRef::List([])) => continue,
                        Some(value) => value,
                    };
                    out.push_str(if first {
                        operator.first()
                    } else {
                        operator.separator()
                    });
                    first = false;
                    if operator.named() {
                        out.push_str(name);
                        if matches!(value, ValueRef::String("")) {
                            if matches!(operator, Operator::Query | Operator::Continuation) {
                                out.push('=');
                            }
                            continue;
                        }
                        out.push('=');
                    }
                    match value {
                        ValueRef::String(value) => encode(value, operator, &mut out),
                        ValueRef::List(items) => {
                            for (i, item) in items.iter().enumerate() {
                                if i > 0 {
                                    out.push(',');
                                }
                                encode(item, operator, &mut out);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// RFC 3986 `unreserved`.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 `reserved` (`gen-delims` and `sub-delims`).
fn reserved(b: u8) -> bool {
    b":/?#[]@!$&'()*+,;=".contains(&b)
}

/// Appends `value` percent-encoded: all but `unreserved`, or for `+` and `#` all but
/// `unreserved`, `reserved` and percent-encoded triplets already there (§3.2.1).
fn encode(value: &str, operator: Operator, out: &mut String) {
    let keep_reserved = operator.allows_reserved();
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let triplet = keep_reserved
            && b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if triplet {
            out.push_str(&value[i..i + 3]);
            i += 3;
            continue;
        }
        if unreserved(b) || (keep_reserved && reserved(b)) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        i += 1;
    }
}

/// Appends a literal: the characters a URI allows as they are, the others (spaces, quotes,
/// non-ASCII, …) percent-encoded (§3.1).
fn encode_literal(literal: &str, out: &mut String) {
    if literal
        .bytes()
        .all(|b| unreserved(b) || reserved(b) || b == b'%')
    {
        out.push_str(literal);
        return;
    }
    for b in literal.bytes() {
        if unreserved(b) || reserved(b) || b == b'%' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}
