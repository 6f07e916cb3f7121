//! Checks of a consumer's resolver graph made before anything runs: at compile time for the
//! code `#[tool]`, `#[prompt]` and `#[resource]` generate (a `const` that panics), at `build()`
//! for hand-written definitions.
//!
//! Two rules: every argument a resolver (or one of its dependencies) takes by name is an
//! argument of the consumer, and no two different resolvers of the graph share a key (keys are
//! resolver names, so two functions of the same name in different modules would put their
//! questions, answers and state under one key).

use std::collections::BTreeSet;

use super::error::BuildError;
use super::resolve::ResolverInfo;

/// The compile error of two resolvers sharing a key (a `const` panic takes one `&str`).
const KEY_CLASH: &str = "two different resolvers of the same name are used by one tool, prompt \
    or resource template: their questions would share one input-request key; rename one";

/// Compile-time check of a consumer's resolver graph: every argument a resolver (or one of its
/// dependencies) takes by name must be one of `names`, and resolver keys must be unique.
/// Panics — a compile error in the generated `const` — with the resolver's message otherwise.
pub const fn check_resolvers(resolvers: &[&ResolverInfo], names: &[&str]) {
    check_arguments(resolvers, names);
    check_keys(resolvers, resolvers);
}

const fn check_arguments(resolvers: &[&ResolverInfo], names: &[&str]) {
    let mut i = 0;
    while i < resolvers.len() {
        let info = resolvers[i];
        let mut j = 0;
        while j < info.arguments.len() {
            let mut found = false;
            let mut k = 0;
            while k < names.len() {
                if str_eq(names[k], info.arguments[j].name) {
                    found = true;
                }
                k += 1;
            }
            if !found {
                panic!("{}", info.arguments[j].error);
            }
            j += 1;
        }
        check_arguments(info.dependencies, names);
        i += 1;
    }
}

/// Compares every resolver of `list` (and below) with every resolver of the graph `roots`.
/// The same resolver reached twice (a diamond) has the same path, which is fine. Graphs are a
/// handful of resolvers, so the pairwise walk costs nothing worth a set.
const fn check_keys(roots: &[&ResolverInfo], list: &[&ResolverInfo]) {
    let mut i = 0;
    while i < list.len() {
        if clashes(roots, list[i]) {
            panic!("{}", KEY_CLASH);
        }
        check_keys(roots, list[i].dependencies);
        i += 1;
    }
}

/// Whether a resolver of the graph `list` has `info`'s key but is another function.
const fn clashes(list: &[&ResolverInfo], info: &ResolverInfo) -> bool {
    let mut i = 0;
    while i < list.len() {
        let other = list[i];
        if (str_eq(other.key(), info.key()) && !str_eq(other.path, info.path))
            || clashes(other.dependencies, info)
        {
            return true;
        }
        i += 1;
    }
    false
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The same checks at `build()`, for definitions written by hand: the first problem of the
/// graph of consumer `name` (a `kind`), if any. `names` are its arguments, when known.
pub(super) fn problem(
    kind: &'static str,
    name: &str,
    resolvers: &[&ResolverInfo],
    names: Option<&BTreeSet<String>>,
) -> Option<BuildError> {
    if let Some(message) = names.and_then(|names| unknown_argument(resolvers, names)) {
        return Some(BuildError::UnknownResolverArgument {
            kind,
            name: name.to_owned(),
            message,
        });
    }
    let mut seen: Vec<&ResolverInfo> = Vec::new();
    clash(resolvers, &mut seen).map(|(first, second)| BuildError::ResolverKeyClash {
        kind,
        name: name.to_owned(),
        key: first.key().to_owned(),
        paths: [first.path.to_owned(), second.path.to_owned()],
    })
}

/// Names a by-name argument no consumer offers, walking the resolver graph.
fn unknown_argument(resolvers: &[&ResolverInfo], names: &BTreeSet<String>) -> Option<String> {
    resolvers.iter().find_map(|info| {
        info.arguments
            .iter()
            .find(|a| !names.contains(a.name))
            .map(|a| a.error.to_owned())
            .or_else(|| unknown_argument(info.dependencies, names))
    })
}

/// Two resolvers of the graph with one key and different paths, walking depth first.
fn clash<'a>(
    resolvers: &[&'a ResolverInfo],
    seen: &mut Vec<&'a ResolverInfo>,
) -> Option<(&'a ResolverInfo, &'a ResolverInfo)> {
    for info in resolvers {
        if let Some(other) = seen
            .iter()
            .find(|other| other.key() == info.key() && other.path != info.path)
        {
            return Some((other, info));
        }
        seen.push(info);
        if let Some(found) = clash(info.dependencies, seen) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    static REGION: ResolverInfo = ResolverInfo::new("region", "a::region");
    static OTHER_REGION: ResolverInfo = ResolverInfo::new("region", "b::region");
    static PLACEMENT: ResolverInfo =
        ResolverInfo::new("placement", "a::placement").with_dependencies(&[&OTHER_REGION]);
    static SAME_TWICE: ResolverInfo =
        ResolverInfo::new("both", "a::both").with_dependencies(&[&REGION, &REGION]);

    #[test]
    fn one_resolver_reached_twice_is_fine() {
        check_resolvers(&[&SAME_TWICE, &REGION], &[]);
        assert_eq!(problem("tool", "t", &[&SAME_TWICE, &REGION], None), None);
    }

    #[test]
    #[should_panic(expected = "their questions would share one input-request key")]
    fn two_resolvers_of_one_name_do_not_compile() {
        check_resolvers(&[&REGION, &PLACEMENT], &[]);
    }

    #[test]
    fn two_resolvers_of_one_name_do_not_build() {
        assert_eq!(
            problem("tool", "deploy", &[&REGION, &PLACEMENT], None),
            Some(BuildError::ResolverKeyClash {
                kind: "tool",
                name: "deploy".to_owned(),
                key: "region".to_owned(),
                paths: ["a::region".to_owned(), "b::region".to_owned()],
            })
        );
    }
}
