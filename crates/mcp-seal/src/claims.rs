//! The claims envelope sealed inside every token, written and read exactly like the Python SDK.
//!
//! Written form (compact, ASCII-escaped, this key order):
//! `{"v":1,"iat":<float>,"exp":<float>,"m":<method>,"t":<target>,"a":<args digest>,
//! "s":<state>[,"aud":<audience>][,"p":<principal claim>]}`.
//!
//! Reading is lenient about *types* in the way Python's `dict.get` comparisons are (a claim of
//! the wrong type simply fails its check, a JSON `null` counts as absent for `aud`/`p`) so the
//! rejection reasons line up with the Python SDK's log codes; which claims must be present is
//! decided by the policy.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::canonical_json::{write_f64, write_str};

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
}

impl<'a> ClaimsIn<'a> {
    /// Parses an envelope; any JSON that is not an object is an error.
    pub(crate) fn parse(payload: &'a [u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(payload)
    }
}

impl<'de> Deserialize<'de> for ClaimsIn<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ClaimsVisitor)
    }
}

struct ClaimsVisitor;

impl<'de> Visitor<'de> for ClaimsVisitor {
    type Value = ClaimsIn<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request-state claims object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut claims = ClaimsIn::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let slot = match key.0.as_ref() {
                "v" => &mut claims.v,
                "iat" => &mut claims.iat,
                "exp" => &mut claims.exp,
                "m" => &mut claims.m,
                "t" => &mut claims.t,
                "a" => &mut claims.a,
                "s" => &mut claims.s,
                "aud" => &mut claims.aud,
                "p" => &mut claims.p,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<Field<'de>>()?;
        }
        Ok(claims)
    }
}

/// A map key, borrowed when possible.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Field<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Owned(v)))
    }

    #[allow(
        clippy::cast_precision_loss,
        reason = "Python compares numbers as doubles"
    )]
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Field::Num(v as f64))
    }

    #[allow(
        clippy::cast_precision_loss,
        reason = "Python compares numbers as doubles"
    )]
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Field::Num(v as f64))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Field::Num(v))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Field::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Field::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Field::Other)
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
        }
        .write(&mut out);
        // Decrypted from a real Python 2.3.0 token (python-sdk-reference.md section 5).
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"v":1,"iat":1796005576.8783715,"exp":1796005578.8783715,"m":"tools/call","t":"manual_irr","a":"Ey8lUoApKugLEhHi5PR-xw","s":"manual:7","aud":"PeerBookshop"}"#
        );
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
        assert!(ClaimsIn::parse(b"[1]").is_err());
        assert!(ClaimsIn::parse(b"\"v\"").is_err());
        assert!(ClaimsIn::parse(b"{").is_err());
    }
}
