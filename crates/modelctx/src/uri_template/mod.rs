//! RFC 6570 URI templates, levels 1 to 3, both ways: [`UriTemplate::expand`] fills a template
//! with values (a client reading a server's resource template, a server listing its own
//! resources), and [`UriTemplate::matches`] is its inverse, the concrete URI of a
//! `resources/read` back to the values it was made from (the server's routing of templated
//! resources).
//!
//! ```
//! use modelctx::uri_template::{UriTemplate, Value};
//! use std::collections::BTreeMap;
//!
//! let template = UriTemplate::parse("file:///docs/{+path}{?rev}")?;
//! let mut values = BTreeMap::new();
//! values.insert("path".to_owned(), Value::from("guide/intro page.md"));
//! values.insert("rev".to_owned(), Value::from("7"));
//! let uri = template.expand(&values);
//! assert_eq!(uri, "file:///docs/guide/intro%20page.md?rev=7");
//!
//! let matched = template.matches(&uri).expect("the expansion matches its template");
//! assert_eq!(matched["path"], "guide/intro page.md");
//! assert_eq!(matched["rev"], "7");
//! # Ok::<(), modelctx::uri_template::InvalidTemplate>(())
//! ```
//!
//! # What is supported
//!
//! Every operator of levels 1 to 3 (`{x}`, `{+x}`, `{#x}`, `{.x}`, `{/x}`, `{;x}`, `{?x}`,
//! `{&x}`), lists of variables in one expression (`{x,y}`), and values that are a string or a
//! list of strings (a list expands comma-separated, as RFC 6570 §3.2.1 says). Level 4's
//! modifiers (`{x:3}`, `{x*}`) are refused at parse with a precise error.
//!
//! # Matching
//!
//! RFC 6570 defines expansion only (§1.4 leaves matching to regular expressions). The matcher
//! here is its inverse for the templates it accepts, in one pass without backtracking: time
//! linear in the URI, which is refused past [`MAX_URI_LENGTH`]. Its rules:
//!
//! * Every variable of the path must be present; a value of `{x}`, `{+x}`, `{#x}`, `{.x}` or
//!   `{/x}` is not empty. Values are percent-decoded and must be UTF-8.
//! * A simple `{x}` and a `{/x}` stop at `/`, a `{.x}` at `.` and `/`, a `{;x}` at `;` and `/`:
//!   a value never spans a literal `/` (an encoded `%2F` decodes to `/`: see
//!   `server::path_safety::resolve_under` before using a value as a path).
//! * `{+x}` and `{#x}` are *multi-segment*: they may hold `/`. A template has at most one of
//!   them, and no two variables without a literal between them (`{a}{b}`, `{+a}{b}`): both
//!   would be ambiguous, so [`UriTemplate::parse`] refuses them. Variables before the
//!   multi-segment one end at the first occurrence of the literal that follows them, those
//!   after it at the last occurrence of the literal before them; the multi-segment variable
//!   takes what is between.
//! * A template that ends in `{?a,b}` (and maybe `{&c}`) matches its query leniently: in any
//!   order, any subset, unknown parameters ignored, the first of a repeated name kept (names
//!   are compared as written, never decoded: `%71=x` is not `q`).
//!
//! Untrusted templates are fine: parsing is bounded ([`MAX_TEMPLATE_LENGTH`],
//! [`MAX_VARIABLES`]) and every error says where and why.

mod expand;
mod matching;
mod syntax;
#[cfg(test)]
mod tests;

pub use expand::{AsValue, Value, ValueRef, Variables};
pub use matching::{MAX_URI_LENGTH, UriVariables};
pub use syntax::{InvalidTemplate, MAX_TEMPLATE_LENGTH, MAX_VARIABLES};

use syntax::Part;

/// A parsed RFC 6570 template (levels 1 to 3): see the [module](self) documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    /// The template as the matcher reads it.
    matcher: matching::Matcher,
}

impl UriTemplate {
    /// Parses a template.
    ///
    /// # Errors
    /// A template longer than [`MAX_TEMPLATE_LENGTH`] or with more than [`MAX_VARIABLES`];
    /// unbalanced or nested braces; an empty expression or variable name; an operator RFC 6570
    /// reserves (`=`, `,`, `!`, `@`, `|`); a level 4 modifier; a variable named twice; and the
    /// templates matching could not invert: two variables with no literal between them, or two
    /// multi-segment variables (`{+x}`, `{#x}`).
    pub fn parse(template: &str) -> Result<Self, InvalidTemplate> {
        let parts = syntax::parse(template)?;
        let matcher = matching::Matcher::new(&parts)
            .map_err(|(position, reason)| InvalidTemplate::new(template, position, reason))?;
        Ok(Self {
            source: template.to_owned(),
            parts,
            matcher,
        })
    }

    /// Expands the template with `variables` (RFC 6570 §3): each value percent-encoded as its
    /// operator says (UTF-8, upper-case hex), undefined variables left out.
    ///
    /// ```
    /// use modelctx::uri_template::UriTemplate;
    ///
    /// let template = UriTemplate::parse("map{?x,y}")?;
    /// assert_eq!(template.expand(&[("x", "1024"), ("y", "768")]), "map?x=1024&y=768");
    /// assert_eq!(template.expand(&[("y", "a b")]), "map?y=a%20b");
    /// # Ok::<(), modelctx::uri_template::InvalidTemplate>(())
    /// ```
    pub fn expand<V: Variables + ?Sized>(&self, variables: &V) -> String {
        expand::expand(&self.parts, self.source.len(), variables)
    }

    /// Matches a concrete URI, returning its variables percent-decoded, or `None` when it does
    /// not match (or is longer than [`MAX_URI_LENGTH`]). See the [module](self) documentation
    /// for the rules.
    ///
    /// ```
    /// use modelctx::uri_template::UriTemplate;
    ///
    /// let template = UriTemplate::parse("logs://{service}/{+file}{?level}")?;
    /// let found = template.matches("logs://api/2026/12/app.log?utm=x&level=warn").unwrap();
    /// assert_eq!(found["service"], "api");
    /// assert_eq!(found["file"], "2026/12/app.log");
    /// assert_eq!(found["level"], "warn");
    /// assert!(template.matches("logs://a/b/c.log").is_some());
    /// assert!(template.matches("other://api/x").is_none());
    /// # Ok::<(), modelctx::uri_template::InvalidTemplate>(())
    /// ```
    pub fn matches(&self, uri: &str) -> Option<UriVariables> {
        self.matcher.matches(uri)
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
                Part::Expression(expression) => expression.names.iter(),
            })
            .map(String::as_str)
    }

    /// Whether `text` has an expression at all (`{`): a resource URI, or a template.
    pub fn is_template(text: &str) -> bool {
        text.contains('{')
    }
}

impl std::fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for UriTemplate {
    type Err = InvalidTemplate;

    fn from_str(template: &str) -> Result<Self, Self::Err> {
        Self::parse(template)
    }
}
