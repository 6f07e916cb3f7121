//! RFC 6570 URI templates, as far as resource templates need them: expansion-free matching of a
//! concrete URI against `{var}`, `{+var}` (reserved, may contain `/`), `{#var}` and query-style
//! `{?a,b}` expressions.

use std::collections::BTreeMap;

/// The variables a URI matched, by name.
pub type UriVariables = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A simple (`{x}`), reserved (`{+x}`) or fragment (`{#x}`) variable.
    Var {
        name: String,
        reserved: bool,
    },
    /// `{?a,b}`: the query string.
    Query(Vec<String>),
}

/// A compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

/// A template that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct InvalidTemplate {
    /// The template.
    pub template: String,
    /// Why.
    pub reason: &'static str,
}

impl UriTemplate {
    /// Compiles a template.
    ///
    /// # Errors
    /// Unbalanced braces, empty or unsupported expressions, or two adjacent variables (which
    /// would make matching ambiguous).
    pub fn parse(template: &str) -> Result<Self, InvalidTemplate> {
        let invalid = |reason| InvalidTemplate {
            template: template.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or_else(|| invalid("unclosed `{`"))?;
                    let expression = &rest[1..end];
                    let (operator, names) = match expression.chars().next() {
                        Some(c @ ('+' | '#' | '?')) => (Some(c), &expression[1..]),
                        _ => (None, expression),
                    };
                    let names: Vec<String> = names.split(',').map(str::to_owned).collect();
                    if names.iter().any(|n| {
                        n.is_empty()
                            || !n
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    }) {
                        return Err(invalid("bad variable name"));
                    }
                    let part = match operator {
                        Some('?') => Part::Query(names),
                        op if names.len() == 1 => Part::Var {
                            name: names.into_iter().next().unwrap_or_default(),
                            reserved: op.is_some(),
                        },
                        _ => return Err(invalid("lists are supported only in `{?a,b}`")),
                    };
                    if matches!(parts.last(), Some(Part::Var { .. } | Part::Query(_)))
                        && !matches!(part, Part::Query(_))
                    {
                        return Err(invalid("two adjacent variables"));
                    }
                    parts.push(part);
                    rest = &rest[end + 1..];
                }
                Some(i) => {
                    parts.push(Part::Literal(rest[..i].to_owned()));
                    rest = &rest[i..];
                }
                None => {
                    if rest.contains('}') {
                        return Err(invalid("unopened `}`"));
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Ok(Self {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of the template's variables, in order of appearance.
    pub fn variable_names(&self) -> impl Iterator<Item = &str> {
        self.parts
            .iter()
            .flat_map(|part| match part {
                Part::Literal(_) => [].iter(),
                Part::Var { name, .. } => std::slice::from_ref(name).iter(),
                Part::Query(names) => names.iter(),
            })
            .map(String::as_str)
    }

    /// Matches a concrete URI, returning its (percent-decoded) variables.
    pub fn matches(&self, uri: &str) -> Option<UriVariables> {
        let mut variables = UriVariables::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Var { name, reserved } => {
                    // A variable runs to the next literal (or the query), or to the end.
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        Some(Part::Query(_)) => rest.find('?').unwrap_or(rest.len()),
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || (!reserved && value.contains('/')) {
                        return None;
                    }
                    variables.insert(name.clone(), percent_decode(value)?);
                    rest = &rest[end..];
                }
                Part::Query(names) => {
                    let Some(query) = rest.strip_prefix('?') else {
                        if rest.is_empty() {
                            continue;
                        }
                        return None;
                    };
                    for pair in query.split('&').filter(|p| !p.is_empty()) {
                        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                        if names.iter().any(|n| n == key) {
                            variables.insert(key.to_owned(), percent_decode(value)?);
                        }
                    }
                    rest = "";
                }
            }
        }
        rest.is_empty().then_some(variables)
    }
}

fn percent_decode(value: &str) -> Option<String> {
    if !value.contains('%') {
        return Some(value.to_owned());
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template)
            .unwrap()
            .matches(uri)
            .map(|v| v.into_iter().collect())
    }

    #[test]
    fn simple_variables() {
        assert_eq!(
            vars("test://template/{id}/data", "test://template/42/data"),
            Some(vec![("id".into(), "42".into())])
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/42/other"),
            None
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            vars("report://{quarter}", "report://q3"),
            Some(vec![("quarter".into(), "q3".into())])
        );
        assert_eq!(
            vars("file:///{name}", "file:///a/b"),
            None,
            "simple vars exclude `/`"
        );
        assert_eq!(
            vars("file:///{+path}", "file:///a/b%20c"),
            Some(vec![("path".into(), "a/b c".into())])
        );
    }

    #[test]
    fn query_variables() {
        assert_eq!(
            vars(
                "search://{kind}{?q,limit}",
                "search://books?q=rust&limit=5&x=1"
            ),
            Some(vec![
                ("kind".into(), "books".into()),
                ("limit".into(), "5".into()),
                ("q".into(), "rust".into())
            ])
        );
        assert_eq!(
            vars("search://{kind}{?q}", "search://books"),
            Some(vec![("kind".into(), "books".into())])
        );
    }

    #[test]
    fn variable_names_in_order() {
        let template = UriTemplate::parse("file:///{+path}/v{version}{?a,b}").unwrap();
        let names: Vec<&str> = template.variable_names().collect();
        assert_eq!(names, ["path", "version", "a", "b"]);
        assert_eq!(
            UriTemplate::parse("info://hours")
                .unwrap()
                .variable_names()
                .count(),
            0
        );
    }

    #[test]
    fn rejects_bad_templates() {
        for bad in ["a{b", "a}b", "{}", "{a}{b}", "{a,b}", "{a b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
