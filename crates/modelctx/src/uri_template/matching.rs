//! Matching, the inverse of expansion: a concrete URI back to its variables, in one pass.
//!
//! At parse, the template is flattened into *atoms*: literals (the template's own text, and
//! what each operator writes: `{/a,b}` is `/`, `a`, `/`, `b`; `{?q}` strictly is `?q=`, `q`)
//! and captures. No two captures are adjacent and at most one is multi-segment (`{+x}`,
//! `{#x}`), so each capture has a literal to end on and the matcher never has to choose:
//! captures before the multi-segment one end at the *first* occurrence of the literal after
//! them (a forward scan), those after it start after the *last* occurrence of the literal
//! before them (a backward scan from the end), and the multi-segment capture takes the middle.
//! Each scan resumes where the previous stopped, so the URI is read a bounded number of times:
//! linear time, whatever the input. A trailing `{?…}{&…}` is the *query tail*, matched
//! leniently by name instead.

use std::collections::BTreeMap;

use super::syntax::{Expression, Operator, Part};

/// The variables a URI matched, by name, percent-decoded.
pub type UriVariables = BTreeMap<String, String>;

/// The longest URI [`UriTemplate::matches`](super::UriTemplate::matches) looks at, in bytes;
/// longer ones do not match.
pub const MAX_URI_LENGTH: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Literal(String),
    Capture(Capture),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Capture {
    name: String,
    /// The characters the value may not contain.
    stops: &'static [u8],
    /// `{;x}`: the value is empty, or `=` and the value.
    parameter: bool,
    /// Whether an empty value matches (the named operators: `;x`, `?x=`).
    may_be_empty: bool,
}

/// The template as the matcher reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Matcher {
    atoms: Vec<Atom>,
    /// The index in `atoms` of the multi-segment capture, if any.
    multi: Option<usize>,
    /// The names of the query tail, matched leniently.
    query: Vec<String>,
}

impl Matcher {
    /// Flattens `parts`, refusing what matching could not invert.
    pub(super) fn new(parts: &[Part]) -> Result<Self, (usize, String)> {
        let tail = query_tail_start(parts);
        let mut atoms: Vec<Atom> = Vec::new();
        let mut multi: Option<(usize, &str, usize)> = None;
        let mut previous: Option<&str> = None;
        for part in &parts[..tail] {
            let expression = match part {
                Part::Literal(literal) => {
                    push_literal(&mut atoms, literal);
                    continue;
                }
                Part::Expression(expression) => expression,
            };
            let Expression {
                operator,
                names,
                at,
            } = expression;
            let operator = *operator;
            for (i, name) in names.iter().enumerate() {
                push_literal(
                    &mut atoms,
                    if i == 0 {
                        operator.first()
                    } else {
                        operator.separator()
                    },
                );
                if operator.named() {
                    push_literal(&mut atoms, name);
                    if operator != Operator::Parameter {
                        push_literal(&mut atoms, "=");
                    }
                }
                if let (Some(Atom::Capture(_)), Some(before)) = (atoms.last(), previous) {
                    return Err((
                        *at,
                        format!(
                            "variables `{before}` and `{name}` have no literal between them: \
                             matching could not tell where one ends"
                        ),
                    ));
                }
                // In `{+a,b}` only the last variable may span `/`: the others end at `,`.
                let last = i + 1 == names.len();
                let is_multi = operator.multi_segment() && last;
                if is_multi {
                    if let Some((_, other, _)) = multi {
                        return Err((
                            *at,
                            format!(
                                "`{other}` and `{name}` are both multi-segment (`+` or `#`): \
                                 matching could not tell which one a `/` belongs to"
                            ),
                        ));
                    }
                    multi = Some((atoms.len(), name, *at));
                }
                atoms.push(Atom::Capture(Capture {
                    name: name.clone(),
                    stops: if operator.multi_segment() && !last {
                        b","
                    } else {
                        operator.stops()
                    },
                    parameter: operator == Operator::Parameter,
                    may_be_empty: operator.named(),
                }));
                previous = Some(name);
            }
        }
        let query = parts[tail..]
            .iter()
            .flat_map(|part| match part {
                Part::Expression(expression) => expression.names.clone(),
                Part::Literal(_) => Vec::new(),
            })
            .collect();
        Ok(Self {
            atoms,
            multi: multi.map(|(index, _, _)| index),
            query,
        })
    }
}

/// Where the query tail starts in `parts` (`parts.len()` when there is none): the trailing
/// `{?…}` and `{&…}` expressions, the first a `{?…}`, when no literal, `{?…}` or `{#…}` before
/// them writes a `?` or `#` of its own, so that the URI's first `?` is where the query starts.
/// A `{+…}` before them is let through although its value may hold a raw `?`: such a value
/// does not round-trip (RFC 6570 §1.4), and refusing the tail would cost every
/// `file:///{+path}{?rev}` its lenient query.
fn query_tail_start(parts: &[Part]) -> usize {
    let mut start = parts.len();
    while let Some(Part::Expression(expression)) = start.checked_sub(1).map(|i| &parts[i]) {
        if !matches!(
            expression.operator,
            Operator::Query | Operator::Continuation
        ) {
            break;
        }
        start -= 1;
    }
    let opens_with_query = matches!(
        parts.get(start),
        Some(Part::Expression(Expression {
            operator: Operator::Query,
            ..
        }))
    );
    let path_holds_query = parts[..start].iter().any(|part| match part {
        Part::Literal(literal) => literal.contains(['?', '#']),
        Part::Expression(expression) => {
            matches!(expression.operator, Operator::Query | Operator::Fragment)
        }
    });
    if opens_with_query && !path_holds_query {
        start
    } else {
        parts.len()
    }
}

fn push_literal(atoms: &mut Vec<Atom>, text: &str) {
    if text.is_empty() {
        return;
    }
    match atoms.last_mut() {
        Some(Atom::Literal(literal)) => literal.push_str(text),
        _ => atoms.push(Atom::Literal(text.to_owned())),
    }
}

impl Matcher {
    /// [`UriTemplate::matches`](super::UriTemplate::matches).
    pub(super) fn matches(&self, uri: &str) -> Option<UriVariables> {
        if uri.len() > MAX_URI_LENGTH {
            return None;
        }
        let mut variables = UriVariables::new();
        let path = if self.query.is_empty() {
            uri
        } else {
            let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
            let query = query.split_once('#').map_or(query, |(query, _)| query);
            for pair in query.split('&') {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                if let Some(name) = self.query.iter().find(|n| *n == name)
                    && !variables.contains_key(name)
                {
                    variables.insert(name.clone(), percent_decode(value)?);
                }
            }
            path
        };
        self.scan(path, &mut variables)?;
        Some(variables)
    }
}

impl Matcher {
    fn scan(&self, uri: &str, variables: &mut UriVariables) -> Option<()> {
        let atoms = &self.atoms;
        let middle = self.multi.unwrap_or(atoms.len());
        // Forward, up to the multi-segment capture: each capture ends at the first occurrence
        // of the literal after it (or at the end of the URI when it is the last atom).
        let mut start = 0;
        for (i, atom) in atoms[..middle].iter().enumerate() {
            match atom {
                Atom::Literal(literal) => {
                    if !uri[start..].starts_with(literal.as_str()) {
                        return None;
                    }
                    start += literal.len();
                }
                Atom::Capture(capture) => {
                    let end = match atoms.get(i + 1) {
                        Some(Atom::Literal(next)) => start + uri[start..].find(next.as_str())?,
                        _ => uri.len(),
                    };
                    capture.take(&uri[start..end], variables)?;
                    start = end;
                }
            }
        }
        let Some(middle) = self.multi else {
            return (start == uri.len()).then_some(());
        };
        // Backward, from the end to the multi-segment capture: each capture starts after the
        // last occurrence of the literal before it.
        let mut end = uri.len();
        for i in (middle + 1..atoms.len()).rev() {
            match &atoms[i] {
                Atom::Literal(literal) => {
                    if !uri[start..end].ends_with(literal.as_str()) {
                        return None;
                    }
                    end -= literal.len();
                }
                Atom::Capture(capture) => {
                    let Atom::Literal(before) = &atoms[i - 1] else {
                        return None; // never: adjacent captures are refused at parse
                    };
                    let from = start + uri[start..end].rfind(before.as_str())? + before.len();
                    capture.take(&uri[from..end], variables)?;
                    end = from;
                }
            }
        }
        let Atom::Capture(capture) = &atoms[middle] else {
            return None;
        };
        capture.take(&uri[start..end], variables)
    }
}

impl Capture {
    /// Checks a matched value and records it decoded.
    fn take(&self, raw: &str, variables: &mut UriVariables) -> Option<()> {
        if raw.bytes().any(|b| self.stops.contains(&b)) {
            return None;
        }
        let raw = if self.parameter && !raw.is_empty() {
            raw.strip_prefix('=')?
        } else {
            raw
        };
        if raw.is_empty() && !self.may_be_empty {
            return None;
        }
        variables.insert(self.name.clone(), percent_decode(raw)?);
        Some(())
    }
}

/// Decodes `%XX` triplets; `None` for a broken triplet (`%`, `%4`, `%zz`) or bytes that are
/// not UTF-8.
pub(crate) fn percent_decode(value: &str) -> Option<String> {
    if !value.contains('%') {
        return Some(value.to_owned());
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let high = hex(*bytes.get(i + 1)?)?;
            let low = hex(*bytes.get(i + 2)?)?;
            out.push(high << 4 | low);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}
