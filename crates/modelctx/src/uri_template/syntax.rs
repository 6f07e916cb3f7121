//! The template's syntax (RFC 6570 §2): the parse into literals and expressions, the operators
//! and what each writes, and the refusals with where and why.

/// The longest template [`UriTemplate::parse`](super::UriTemplate::parse) accepts, in bytes.
pub const MAX_TEMPLATE_LENGTH: usize = 8 * 1024;
/// The most variables a template may have.
pub const MAX_VARIABLES: usize = 256;

/// How much of a refused template an [`InvalidTemplate`] keeps, in bytes.
const QUOTED_TEMPLATE: usize = 256;

/// The operator of an expression (RFC 6570 §3.2, the table of Appendix A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    Parameter,
    Query,
    Continuation,
}

impl Operator {
    pub(super) fn of(c: char) -> Option<Self> {
        Some(match c {
            '+' => Self::Reserved,
            '#' => Self::Fragment,
            '.' => Self::Label,
            '/' => Self::Path,
            ';' => Self::Parameter,
            '?' => Self::Query,
            '&' => Self::Continuation,
            _ => return None,
        })
    }

    /// What the expansion starts with.
    pub(super) fn first(self) -> &'static str {
        match self {
            Self::Simple | Self::Reserved => "",
            Self::Fragment => "#",
            Self::Label => ".",
            Self::Path => "/",
            Self::Parameter => ";",
            Self::Query => "?",
            Self::Continuation => "&",
        }
    }

    /// What stands between two variables' expansions.
    pub(super) fn separator(self) -> &'static str {
        match self {
            Self::Simple | Self::Reserved | Self::Fragment => ",",
            Self::Label => ".",
            Self::Path => "/",
            Self::Parameter => ";",
            Self::Query | Self::Continuation => "&",
        }
    }

    /// Whether a variable expands as `name=value`.
    pub(super) fn named(self) -> bool {
        matches!(self, Self::Parameter | Self::Query | Self::Continuation)
    }

    /// Whether reserved characters (and percent-encoded triplets) are kept as they are.
    pub(super) fn allows_reserved(self) -> bool {
        matches!(self, Self::Reserved | Self::Fragment)
    }

    /// Whether a value may hold `/` (and so has no character to end it but a literal).
    pub(super) fn multi_segment(self) -> bool {
        self.allows_reserved()
    }

    /// The characters a (bounded) matched value may not contain.
    pub(super) fn stops(self) -> &'static [u8] {
        match self {
            Self::Simple | Self::Path => b"/",
            Self::Label => b"./",
            Self::Parameter => b";/",
            Self::Query | Self::Continuation => b"&#",
            Self::Reserved | Self::Fragment => b"",
        }
    }
}

/// One `{…}` of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Expression {
    pub(super) operator: Operator,
    pub(super) names: Vec<String>,
    /// Where its `{` is in the template, in bytes (for errors).
    pub(super) at: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Literal(String),
    Expression(Expression),
}

/// A template that does not parse, or that [`UriTemplate::matches`](super::UriTemplate::matches) could not invert.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?} at byte {position}: {reason}")]
pub struct InvalidTemplate {
    /// The template (its first 256 bytes: a hostile template may be huge).
    pub template: String,
    /// Where in the template the problem is, in bytes.
    pub position: usize,
    /// Why.
    pub reason: String,
}

impl InvalidTemplate {
    pub(super) fn new(template: &str, position: usize, reason: impl Into<String>) -> Self {
        let mut end = template.len().min(QUOTED_TEMPLATE);
        while !template.is_char_boundary(end) {
            end -= 1;
        }
        Self {
            template: template[..end].to_owned(),
            position,
            reason: reason.into(),
        }
    }
}

/// Parses `template` into its parts: see [`UriTemplate::parse`](super::UriTemplate::parse) for
/// what is refused (all but what only matching refuses).
pub(super) fn parse(template: &str) -> Result<Vec<Part>, InvalidTemplate> {
    let invalid = |position, reason: String| InvalidTemplate::new(template, position, reason);
    if template.len() > MAX_TEMPLATE_LENGTH {
        return Err(invalid(
            MAX_TEMPLATE_LENGTH,
            format!("longer than {MAX_TEMPLATE_LENGTH} bytes"),
        ));
    }
    let mut parts = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut at = 0;
    while at < template.len() {
        let rest = &template[at..];
        let Some(open) = rest.find('{') else {
            if let Some(close) = rest.find('}') {
                return Err(invalid(at + close, "`}` without a `{`".into()));
            }
            parts.push(Part::Literal(rest.to_owned()));
            break;
        };
        if open > 0 {
            let literal = &rest[..open];
            if let Some(close) = literal.find('}') {
                return Err(invalid(at + close, "`}` without a `{`".into()));
            }
            parts.push(Part::Literal(literal.to_owned()));
        }
        let start = at + open;
        let body_and_rest = &template[start + 1..];
        let close = body_and_rest
            .find('}')
            .ok_or_else(|| invalid(start, "`{` never closed".into()))?;
        let body = &body_and_rest[..close];
        if let Some(nested) = body.find('{') {
            return Err(invalid(
                start + 1 + nested,
                "`{` inside an expression".into(),
            ));
        }
        let expression = parse_expression(body, start, &invalid)?;
        for name in &expression.names {
            if seen.len() == MAX_VARIABLES {
                return Err(invalid(
                    start,
                    format!("more than {MAX_VARIABLES} variables"),
                ));
            }
            if !seen.insert(name.clone()) {
                return Err(invalid(start, format!("variable `{name}` appears twice")));
            }
        }
        parts.push(Part::Expression(expression));
        at = start + 1 + close + 1;
    }
    Ok(parts)
}

fn parse_expression(
    body: &str,
    start: usize,
    invalid: &impl Fn(usize, String) -> InvalidTemplate,
) -> Result<Expression, InvalidTemplate> {
    let mut chars = body.chars();
    let (operator, names) = match chars.next() {
        None => return Err(invalid(start, "empty expression `{}`".into())),
        Some(c @ ('=' | ',' | '!' | '@' | '|')) => {
            return Err(invalid(
                start + 1,
                format!("operator `{c}` is reserved by RFC 6570 for future use"),
            ));
        }
        Some(c) => match Operator::of(c) {
            Some(operator) => (operator, chars.as_str()),
            None => (Operator::Simple, body),
        },
    };
    let mut offset = start + 1 + (body.len() - names.len());
    let mut parsed = Vec::new();
    for name in names.split(',') {
        let reason = if name.is_empty() {
            Some("empty variable name".to_owned())
        } else if name.ends_with('*') {
            Some(format!(
                "the explode modifier in `{name}` is level 4, which is not supported"
            ))
        } else if name.contains(':') {
            Some(format!(
                "the prefix modifier in `{name}` is level 4, which is not supported"
            ))
        } else if !is_variable_name(name) {
            Some(format!(
                "`{}` is not a variable name (letters, digits, `_`, inner single dots)",
                name.escape_debug()
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(invalid(offset, reason));
        }
        parsed.push(name.to_owned());
        offset += name.len() + 1;
    }
    Ok(Expression {
        operator,
        names: parsed,
        at: start,
    })
}

/// RFC 6570 §2.3's `varname`, without percent-encoded characters: `a`, `a_1`, `a.b`.
fn is_variable_name(name: &str) -> bool {
    name.split('.').all(|piece| {
        !piece.is_empty()
            && piece
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}
