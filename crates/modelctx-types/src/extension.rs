//! Extension identifiers (SEP-2133): the keys of `capabilities.extensions`, such as
//! `io.modelcontextprotocol/tasks`, checked against their grammar (see [`ExtensionId`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A checked extension identifier: a reverse-DNS vendor prefix, a `/`, and a name — the
/// `_meta` key grammar with the prefix made mandatory, as the Python SDK's
/// `shared/extension.py` checks it:
///
/// ```text
/// id     = label *("." label) "/" name
/// label  = ALPHA [ *(ALPHA / DIGIT / "-") (ALPHA / DIGIT) ]
/// name   = (ALPHA / DIGIT) [ *(ALPHA / DIGIT / "." / "_" / "-") (ALPHA / DIGIT) ]
/// ```
///
/// It holds only identifiers that match, so a server or client that takes one never
/// advertises a key another SDK would refuse, and one decoded from a peer (serde reads it as a
/// string and checks it) is known good. Identifiers are at most [`ExtensionId::MAX_LEN`]
/// bytes: the grammar sets no limit, but a peer's id is hostile input.
///
/// ```
/// use modelctx_types::ExtensionId;
///
/// let id: ExtensionId = "com.example/echo-stamp".parse()?;
/// assert_eq!(id.prefix(), "com.example");
/// assert_eq!(id.name(), "echo-stamp");
/// assert!("echo-stamp".parse::<ExtensionId>().is_err()); // no vendor prefix
/// # Ok::<(), modelctx_types::InvalidExtensionId>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExtensionId(String);

/// Why a string is not an [`ExtensionId`]. The message names the offending part and, where
/// there is one, the byte offset, so that a user sees what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidExtensionId {
    /// Longer than [`ExtensionId::MAX_LEN`] bytes.
    #[error("extension id is {len} bytes long, more than the {max} allowed")]
    TooLong {
        /// The length in bytes.
        len: usize,
        /// [`ExtensionId::MAX_LEN`].
        max: usize,
    },
    /// No `/` between the vendor prefix and the name (the prefix is mandatory).
    #[error(
        "extension id {0:?} has no vendor prefix: expected `vendor-prefix/name`, e.g. `com.example/name`"
    )]
    NoPrefix(String),
    /// A label of the prefix (between dots) that breaks the grammar.
    #[error(
        "extension id {id:?}: prefix label {label:?} must start with a letter, end with a letter \
         or digit, and hold only letters, digits and interior hyphens"
    )]
    BadLabel {
        /// The identifier, cut to 64 characters.
        id: String,
        /// The label (empty for `..`, a leading or a trailing dot).
        label: String,
    },
    /// The name after `/` breaks the grammar.
    #[error(
        "extension id {id:?}: name {name:?} must start and end with a letter or digit, and hold \
         only letters, digits and interior `.`, `_`, `-`"
    )]
    BadName {
        /// The identifier, cut to 64 characters.
        id: String,
        /// The name (empty when nothing follows `/`).
        name: String,
    },
}

impl ExtensionId {
    /// The longest identifier accepted, in bytes.
    pub const MAX_LEN: usize = 256;

    /// Checks `id` against the grammar.
    ///
    /// # Errors
    /// What breaks it ([`InvalidExtensionId`]).
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidExtensionId> {
        let id = id.into();
        check(&id)?;
        Ok(Self(id))
    }

    /// The identifier as sent on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The vendor prefix (before the `/`), e.g. `io.modelcontextprotocol`.
    pub fn prefix(&self) -> &str {
        self.0.split_once('/').map_or("", |(prefix, _)| prefix)
    }

    /// The name (after the `/`), e.g. `tasks`.
    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or("", |(_, name)| name)
    }
}

/// An id cut to 64 characters for an error message (a hostile one may be long).
fn shown(id: &str) -> String {
    id.chars().take(64).collect()
}

fn check(id: &str) -> Result<(), InvalidExtensionId> {
    if id.len() > ExtensionId::MAX_LEN {
        return Err(InvalidExtensionId::TooLong {
            len: id.len(),
            max: ExtensionId::MAX_LEN,
        });
    }
    let Some((prefix, name)) = id.split_once('/') else {
        return Err(InvalidExtensionId::NoPrefix(shown(id)));
    };
    for label in prefix.split('.') {
        if !label_ok(label) {
            return Err(InvalidExtensionId::BadLabel {
                id: shown(id),
                label: shown(label),
            });
        }
    }
    if !name_ok(name) {
        return Err(InvalidExtensionId::BadName {
            id: shown(id),
            name: shown(name),
        });
    }
    Ok(())
}

/// `ALPHA [ *(ALPHA / DIGIT / "-") (ALPHA / DIGIT) ]`
fn label_ok(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

/// `(ALPHA / DIGIT) [ *(ALPHA / DIGIT / "." / "_" / "-") (ALPHA / DIGIT) ]` (a second `/`
/// is refused here, as any other character outside the set).
fn name_ok(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        }
        _ => false,
    }
}

impl FromStr for ExtensionId {
    type Err = InvalidExtensionId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        check(s)?;
        Ok(Self(s.to_owned()))
    }
}

impl TryFrom<&str> for ExtensionId {
    type Error = InvalidExtensionId;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl TryFrom<String> for ExtensionId {
    type Error = InvalidExtensionId;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl AsRef<str> for ExtensionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExtensionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ExtensionId> for String {
    fn from(value: ExtensionId) -> Self {
        value.0
    }
}

impl Serialize for ExtensionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ExtensionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        Self::new(id).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_of_the_grammar_are_accepted() {
        for good in [
            "io.modelcontextprotocol/tasks",
            "io.modelcontextprotocol/ui",
            "com.example/echo-stamp",
            "a/b",
            "x/1",
            "a1-b.c/n.a_m-e",
            "Com.Example-Corp/Name9",
            "ex/0.1",
        ] {
            let id = ExtensionId::new(good).unwrap_or_else(|e| panic!("{good}: {e}"));
            assert_eq!(id.as_str(), good);
            assert_eq!(format!("{}/{}", id.prefix(), id.name()), good);
        }
    }

    #[test]
    fn hostile_identifiers_are_refused_precisely() {
        let no_prefix = ExtensionId::new("tasks").unwrap_err();
        assert_eq!(no_prefix, InvalidExtensionId::NoPrefix("tasks".into()));
        assert!(
            no_prefix.to_string().contains("vendor prefix"),
            "{no_prefix}"
        );
        for (bad, label) in [
            ("/name", ""),
            ("1com/name", "1com"),
            ("com-/name", "com-"),
            ("-com/name", "-com"),
            ("com..example/name", ""),
            (".com/name", ""),
            ("com./name", ""),
            ("co_m/name", "co_m"),
            ("com example/name", "com example"),
            ("cöm/name", "cöm"),
        ] {
            assert_eq!(
                ExtensionId::new(bad),
                Err(InvalidExtensionId::BadLabel {
                    id: bad.into(),
                    label: label.into()
                }),
                "{bad}"
            );
        }
        for (bad, name) in [
            ("com/", ""),
            ("com/-name", "-name"),
            ("com/name-", "name-"),
            ("com/.name", ".name"),
            ("com/name_", "name_"),
            ("com/a/b", "a/b"),
            ("com/na me", "na me"),
            ("com/name\n", "name\n"),
            ("com/na\u{0}me", "na\u{0}me"),
            ("com/naïve", "naïve"),
        ] {
            assert_eq!(
                ExtensionId::new(bad),
                Err(InvalidExtensionId::BadName {
                    id: bad.into(),
                    name: name.into()
                }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_huge_identifier_is_refused_by_length_and_its_error_stays_short() {
        let huge = format!("com.example/{}", "a".repeat(10_000));
        assert_eq!(
            ExtensionId::new(huge),
            Err(InvalidExtensionId::TooLong {
                len: 10_012,
                max: ExtensionId::MAX_LEN
            })
        );
        let long_label = format!("{}-/x", "a".repeat(200));
        let error = ExtensionId::new(long_label).unwrap_err().to_string();
        assert!(error.len() < 400, "{error}");
    }

    #[test]
    fn parsing_and_serde_go_through_the_same_check() {
        let id: ExtensionId = "com.example/echo-stamp".parse().expect("valid");
        assert_eq!(
            ExtensionId::try_from("com.example/echo-stamp"),
            Ok(id.clone())
        );
        assert_eq!(
            serde_json::to_string(&id).expect("serializes"),
            r#""com.example/echo-stamp""#
        );
        let back: ExtensionId =
            serde_json::from_str(r#""com.example/echo-stamp""#).expect("deserializes");
        assert_eq!(back, id);
        let refused = serde_json::from_str::<ExtensionId>(r#""no-prefix""#).unwrap_err();
        assert!(
            refused.to_string().contains("no vendor prefix"),
            "{refused}"
        );
        assert!(serde_json::from_str::<ExtensionId>("17").is_err());
        assert_eq!(
            crate::TASKS_EXTENSION
                .parse::<ExtensionId>()
                .map(String::from),
            Ok(crate::TASKS_EXTENSION.to_owned())
        );
    }
}
