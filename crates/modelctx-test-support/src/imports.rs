//! Which source file of a crate names which: what the layering tests of `modelctx` and
//! `modelctx-cli` read. Crate-agnostic (it reads files, it links nothing of the SDK), so both
//! crates' tests share one reader instead of one test reaching into the other's modules.
//!
//! A file *names* another when its code — comments and test modules left out ([`code_of`]) —
//! holds a path that starts at `crate::`, `super::` or `self::` and leads into the other file's
//! module, `use` groups included. A path that ends at a name the target only re-exports (`pub
//! use child::Item`, `pub(crate) use crate::x::Item`) is followed to the file that defines it,
//! so a façade ties no file to itself; one that ends at a re-export of another crate
//! (`pub use modelctx_types as types`) names no file of this one. A module's declarations
//! (`mod child;`) are its structure, not arrows; its bare paths into its own children (`use
//! child::Item;`) are arrows like `self::child::Item`, so a `mod.rs` that defines what its
//! children use is seen in the loop it makes.
//!
//! [`import_graph`] reads a crate from its root (`lib.rs`, else `main.rs`) through its `mod`
//! declarations (`#[path]` included); [`ImportGraph::cycles`] lists every set of files that
//! name each other in a loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Whether `line` is a `#[cfg(…)]` whose predicate names `test` (`#[cfg(test)]`,
/// `#[cfg(all(test, feature = "tasks"))]`; not `feature = "test-util"`).
fn is_test_cfg(line: &str) -> bool {
    line.strip_prefix("#[cfg(")
        .and_then(|rest| rest.strip_suffix(")]"))
        .is_some_and(|predicate| {
            predicate
                .split(|c: char| c == '(' || c == ')' || c == ',' || c.is_whitespace())
                .any(|token| token == "test")
        })
}

/// The source without comments and without test modules (`#[cfg(test)]`, `#[cfg(all(test,
/// …))]`): tests may use anything.
pub fn code_of(source: &str) -> String {
    let mut code = String::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if is_test_cfg(trimmed)
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            // Skip the test module: to the line that closes it at its own indentation.
            let indent = line.len() - trimmed.len();
            let opening = lines.next().unwrap_or_default();
            if !opening.trim_end().ends_with(';') {
                for inner in lines.by_ref() {
                    if inner.len() - inner.trim_start().len() == indent
                        && inner.trim_start().starts_with('}')
                    {
                        break;
                    }
                }
            }
            continue;
        }
        code.push_str(without_comment(line));
        code.push('\n');
    }
    code
}

/// The source without comments, its test modules kept: for rules that bind tests too.
pub fn without_comments(source: &str) -> String {
    let mut code = String::new();
    for line in source.lines() {
        code.push_str(without_comment(line));
        code.push('\n');
    }
    code
}

fn without_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// Every `.rs` file under `dir`, at any depth.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn identifier(text: &str) -> String {
    text.chars().take_while(|c| is_ident(*c)).collect()
}

/// The entries of the `{…}` group `group` starts inside of (its top-level commas split them),
/// up to the brace that closes it.
fn group_entries(group: &str) -> Vec<&str> {
    let mut entries = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                entries.push(&group[start..i]);
                return entries;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                entries.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&group[start..]);
    entries
}

/// The identifiers of a path starting at `rest` (`a::b::{c, d::e}` → [a, b] then the group's
/// entries, each as the path it completes), after `prefix`.
pub fn paths_from(rest: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = rest;
    loop {
        let ident = identifier(rest);
        if ident.is_empty() {
            if let Some(group) = rest.strip_prefix('{') {
                for entry in group_entries(group) {
                    if !entry.trim().is_empty() {
                        paths_from(entry.trim(), &path, out);
                    }
                }
                return;
            }
            out.push(path);
            return;
        }
        rest = &rest[ident.len()..];
        path.push(ident);
        match rest.strip_prefix("::") {
            Some(next) => rest = next.trim_start(),
            None => {
                out.push(path);
                return;
            }
        }
    }
}

/// The module path of a source file under a module's folder (`tasks/store.rs` → tasks::store;
/// `http/mod.rs` → http).
pub fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// Every module path under the top-level module `top` (`crate::top`) that `code` (in module
/// `module`, its path from `top`) names, from `top`'s root.
pub fn named_modules(code: &str, top: &str, module: &[String]) -> Vec<Vec<String>> {
    let top = [top.to_owned()];
    let absolute: Vec<String> = top.iter().chain(module).cloned().collect();
    named_paths(code, &absolute)
        .into_iter()
        .filter_map(|path| path.strip_prefix(&top[..]).map(<[String]>::to_vec))
        .filter(|path| !path.is_empty())
        .collect()
}

/// Every dependency between modules of the top-level module `top` (its folder `root`) that goes
/// to a module of the same or a higher layer, as `file: module (layer) → module (layer)`;
/// `layer_of` places a module path (from `top`) in its layer. `top`'s `mod.rs` (its façade) and
/// `layers.rs` (the test) are not checked.
pub fn layer_violations(
    root: &Path,
    top: &str,
    layer_of: impl Fn(&[String]) -> Option<(&'static str, u8)>,
) -> Vec<String> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let mut problems = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root");
        if relative == Path::new("mod.rs") || relative == Path::new("layers.rs") {
            continue;
        }
        let module = module_path(relative);
        let Some((own, own_layer)) = layer_of(&module) else {
            problems.insert(format!(
                "{}: module {} has no layer in LAYERS",
                relative.display(),
                module.join("::")
            ));
            continue;
        };
        let source = std::fs::read_to_string(&file).expect("read a source file");
        for named in named_modules(&code_of(&source), top, &module) {
            match layer_of(&named) {
                Some((target, _)) if target == own => {}
                Some((_, layer)) if layer < own_layer => {}
                Some((target, layer)) => {
                    problems.insert(format!(
                        "{}: {own} (layer {own_layer}) uses {target} (layer {layer})",
                        relative.display()
                    ));
                }
                None => {
                    problems.insert(format!(
                        "{}: {own} names {top}::{}, which is no module with a layer (name \
                         the defining module, not a re-export)",
                        relative.display(),
                        named.join("::")
                    ));
                }
            }
        }
    }
    problems.into_iter().collect()
}

/// Every path `code` (of the module `module`, its path from the crate root) names through
/// `crate::…`, `super::…` or `self::…`, as a path from the crate root.
pub fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    paths_in(code, module, &BTreeSet::new())
}

/// [`named_paths`], and the bare paths into the module's own `children` (`use handler::X;`
/// in a `mod.rs` that declares `mod handler;`) outside its re-exports: a module that defines
/// items its children use, and uses theirs, ties a loop like any other file. Its re-exports of
/// its children (`pub use child::Item;`) are its public face, not a use.
pub fn named_paths_with_children(
    code: &str,
    module: &[String],
    children: &BTreeSet<String>,
) -> Vec<Vec<String>> {
    let mut found = named_paths(code, module);
    if !children.is_empty() {
        found.extend(
            paths_in(&without_re_exports(code), module, children)
                .into_iter()
                .filter(|path| {
                    path.len() > module.len()
                        && path[..module.len()] == *module
                        && children.contains(&path[module.len()])
                }),
        );
    }
    found
}

/// `code` with its `pub use …;` items (any visibility) blanked out.
fn without_re_exports(code: &str) -> String {
    let mut kept = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("pub") {
        let starts_item = rest[..at].trim_end().is_empty()
            || rest[..at].trim_end().ends_with([';', '{', '}', ']']);
        let after = &rest[at + 3..];
        let after = match after.strip_prefix('(') {
            Some(scope) => scope.split_once(')').map_or("", |(_, tail)| tail),
            None => after,
        };
        let is_use = after.trim_start().starts_with("use ");
        match rest[at..].find(';') {
            Some(end) if starts_item && is_use => {
                kept.push_str(&rest[..at]);
                rest = &rest[at + end + 1..];
            }
            _ => {
                kept.push_str(&rest[..at + 3]);
                rest = &rest[at + 3..];
            }
        }
    }
    kept.push_str(rest);
    kept
}

/// The paths of `code` from `crate::`, `super::`, `self::`, and, when `children` is not
/// empty, from those children alone (bare paths).
fn paths_in(code: &str, module: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for (at, _) in code.match_indices("::") {
        // Find the start of the path this `::` belongs to; handle each path once, at its
        // first `::`.
        let start = code[..at]
            .rfind(|c: char| !is_ident(c) && c != ':')
            .map_or(0, |i| i + 1);
        if code[start..at].contains("::") || (start > 0 && bytes[start - 1] == b'$') {
            continue; // Not the first `::`, or `$crate::` in a macro.
        }
        let path_text = &code[start..];
        let (base, rest): (Vec<String>, &str) = if !children.is_empty() {
            if children.contains(&identifier(path_text))
                && (start < 2 || &code[start - 2..start] != "::")
            {
                (module.to_vec(), path_text)
            } else {
                continue;
            }
        } else if let Some(rest) = path_text.strip_prefix("crate::") {
            (Vec::new(), rest)
        } else if path_text.starts_with("super::") || path_text.starts_with("self::") {
            let mut base = module.to_vec();
            let mut rest = path_text;
            loop {
                if let Some(next) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = next;
                } else if let Some(next) = rest.strip_prefix("self::") {
                    rest = next;
                } else {
                    break;
                }
            }
            (base, rest)
        } else {
            continue;
        };
        paths_from(rest, &base, &mut found);
    }
    found
}

/// The names a `use` tree binds (`a::{b as c, d::{self, e}}` → c: a::b, d: a::d, e: a::d::e),
/// each with the path as written.
fn use_bindings(tree: &str, prefix: &[String], out: &mut BTreeMap<String, Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = tree.trim();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            for entry in group_entries(group) {
                use_bindings(entry, &path, out);
            }
            return;
        }
        let ident = identifier(rest);
        if ident.is_empty() {
            return; // A glob, or a path from the extern prelude (`::x`).
        }
        rest = rest[ident.len()..].trim_start();
        if let Some(next) = rest.strip_prefix("::") {
            path.push(ident);
            rest = next.trim_start();
            continue;
        }
        let name = if ident == "self" {
            path.last().cloned().unwrap_or_default()
        } else {
            path.push(ident.clone());
            ident
        };
        let alias = rest
            .strip_prefix("as")
            .filter(|after| after.starts_with(char::is_whitespace))
            .map(|after| identifier(after.trim_start()));
        let name = alias.unwrap_or(name);
        if !name.is_empty() && name != "_" {
            out.insert(name, path);
        }
        return;
    }
}

/// Every name the `use` declarations of `code` bind.
fn bindings_of(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut bindings = BTreeMap::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end();
        let starts_item = before.is_empty()
            || before.ends_with([';', '{', '}', ']', ')'])
            || before.ends_with("pub")
                && !before[..before.len() - 3].ends_with(|c: char| is_ident(c));
        if !starts_item || code[..at].ends_with(|c: char| is_ident(c)) {
            continue;
        }
        let tree = &code[at + "use ".len()..];
        let end = tree.find(';').unwrap_or(tree.len());
        use_bindings(&tree[..end], &[], &mut bindings);
    }
    bindings
}

/// One source file of the crate.
#[derive(Debug)]
struct SourceFile {
    /// Its path under the source root (`client/flows/mod.rs`).
    relative: String,
    /// Its module's path from the crate root.
    module: Vec<String>,
    /// Its code ([`code_of`]).
    code: String,
    /// The modules it declares (`mod child;`, and inline `mod child { … }`).
    children: BTreeSet<String>,
    /// The names its `use` declarations bind, with the paths as written.
    bindings: BTreeMap<String, Vec<String>>,
}

/// The `mod` declarations of `code`: each name, whether it is inline (`mod x { … }`), and its
/// `#[path]` if it has one.
fn declarations(code: &str) -> Vec<(String, bool, Option<String>)> {
    let mut found = Vec::new();
    let mut path_attribute = None;
    for line in code.lines() {
        let line = line.trim();
        if let Some(path) = line
            .strip_prefix("#[path = \"")
            .and_then(|rest| rest.strip_suffix("\"]"))
        {
            path_attribute = Some(path.to_owned());
            continue;
        }
        if line.starts_with("#[") {
            continue; // Other attributes between `#[path]` and its `mod`.
        }
        let item = line
            .strip_prefix("pub")
            .map_or(line, |rest| match rest.strip_prefix('(') {
                Some(scope) => scope.split_once(')').map_or("", |(_, after)| after),
                None => rest,
            })
            .trim_start();
        if let Some(rest) = item.strip_prefix("mod ") {
            let name = identifier(rest.trim_start());
            let after = rest.trim_start()[name.len()..].trim_start();
            if !name.is_empty() && (after.starts_with(';') || after.starts_with('{')) {
                found.push((name, after.starts_with('{'), path_attribute.take()));
            }
        }
        path_attribute = None;
    }
    found
}

/// Which file of a crate names which, and through which names.
#[derive(Debug, Default)]
pub struct ImportGraph {
    /// For each file (its path under the source root), the files it names and the names it
    /// takes from each.
    pub arrows: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

struct Reader {
    files: Vec<SourceFile>,
    /// Each module's path from the crate root → its file.
    modules: BTreeMap<Vec<String>, usize>,
}

impl Reader {
    /// Reads `file` (the module `module`) and, through its declarations, its children.
    fn read(&mut self, root: &Path, file: &Path, module: &[String]) {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|error| panic!("read {}: {error}", file.display()));
        let code = code_of(&source);
        let index = self.files.len();
        let declared = declarations(&code);
        let relative = file
            .strip_prefix(root)
            .expect("a file under the source root")
            .to_string_lossy()
            .into_owned();
        self.modules.insert(module.to_vec(), index);
        self.files.push(SourceFile {
            relative,
            module: module.to_vec(),
            bindings: bindings_of(&code),
            children: declared.iter().map(|(name, ..)| name.clone()).collect(),
            code,
        });
        let dir = file.parent().expect("a file in a directory");
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let children_dir = if ["mod", "lib", "main"].contains(&stem) {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        for (name, inline, path_attribute) in declared {
            let mut child = module.to_vec();
            child.push(name.clone());
            if inline {
                self.modules.insert(child, index);
                continue;
            }
            let path = match path_attribute {
                Some(path) => dir.join(path),
                None => {
                    let flat = children_dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        children_dir.join(&name).join("mod.rs")
                    }
                }
            };
            self.read(root, &path, &child);
        }
    }

    /// The path from the crate root that `written` (a path as the file `from` writes it)
    /// means; `None` when it leads out of the crate.
    fn absolute(&self, from: usize, written: &[String], depth: usize) -> Option<Vec<String>> {
        let file = &self.files[from];
        let (first, rest) = written.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => {
                let mut base = file.module.clone();
                let mut rest = written;
                while let Some((segment, after)) = rest.split_first() {
                    match segment.as_str() {
                        "super" => {
                            base.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = after;
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            child if file.children.contains(child) => {
                let mut base = file.module.clone();
                base.push(child.to_owned());
                base
            }
            bound if depth < 8 => {
                let through = file.bindings.get(bound)?;
                if through.len() == 1 && through[0] == *bound {
                    return None;
                }
                self.absolute(from, through, depth + 1)?
            }
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what `path` (from the crate root) names, and the name; `None`
    /// when it is defined outside the crate.
    fn resolve(&self, path: &[String], depth: usize) -> Option<(usize, String)> {
        let (length, file) = (0..=path.len())
            .rev()
            .find_map(|length| self.modules.get(&path[..length]).map(|f| (length, *f)))?;
        let Some(name) = path.get(length) else {
            return Some((file, path.last().cloned().unwrap_or_default()));
        };
        match self.files[file].bindings.get(name) {
            Some(through) if depth < 8 => {
                let mut target = self.absolute(file, through, depth)?;
                target.extend(path[length + 1..].iter().cloned());
                self.resolve(&target, depth + 1)
            }
            _ => Some((file, name.clone())),
        }
    }
}

/// The import graph of the crate whose sources are under `root` (its `src`).
pub fn import_graph(root: &Path) -> ImportGraph {
    let entry = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("no lib.rs or main.rs under {}", root.display()));
    let mut reader = Reader {
        files: Vec::new(),
        modules: BTreeMap::new(),
    };
    reader.read(root, &entry, &[]);
    let mut graph = ImportGraph::default();
    for (index, file) in reader.files.iter().enumerate() {
        let arrows = graph.arrows.entry(file.relative.clone()).or_default();
        for path in named_paths_with_children(&file.code, &file.module, &file.children) {
            if let Some((target, name)) = reader.resolve(&path, 0)
                && target != index
            {
                arrows
                    .entry(reader.files[target].relative.clone())
                    .or_default()
                    .insert(name);
            }
        }
    }
    graph
}

impl ImportGraph {
    /// Every set of two or more files that name each other in a loop (the strongly connected
    /// components of the graph), each sorted, in order.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        // Tarjan's algorithm, iteratively.
        let names: Vec<&String> = self.arrows.keys().collect();
        let index_of: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let next: Vec<Vec<usize>> = names
            .iter()
            .map(|name| {
                self.arrows[*name]
                    .keys()
                    .filter_map(|target| index_of.get(target).copied())
                    .collect()
            })
            .collect();
        let mut order = vec![usize::MAX; names.len()];
        let mut low = vec![0; names.len()];
        let mut on_stack = vec![false; names.len()];
        let mut stack = Vec::new();
        let mut counter = 0;
        let mut found = Vec::new();
        for start in 0..names.len() {
            if order[start] != usize::MAX {
                continue;
            }
            let mut work = vec![(start, 0usize)];
            order[start] = counter;
            low[start] = counter;
            counter += 1;
            stack.push(start);
            on_stack[start] = true;
            while let Some(&mut (node, ref mut edge)) = work.last_mut() {
                if let Some(&target) = next[node].get(*edge) {
                    *edge += 1;
                    if order[target] == usize::MAX {
                        order[target] = counter;
                        low[target] = counter;
                        counter += 1;
                        stack.push(target);
                        on_stack[target] = true;
                        work.push((target, 0));
                    } else if on_stack[target] {
                        low[node] = low[node].min(order[target]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[node]);
                }
                if low[node] == order[node] {
                    let mut component = Vec::new();
                    while let Some(member) = stack.pop() {
                        on_stack[member] = false;
                        component.push(names[member].clone());
                        if member == node {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort();
                        found.push(component);
                    }
                }
            }
        }
        found.sort();
        found
    }

    /// The arrows between the files of `cycle`, a line each: `a.rs -> b.rs: Name, Other`.
    pub fn describe(&self, cycle: &[String]) -> String {
        let mut lines = Vec::new();
        for from in cycle {
            for (to, names) in self.arrows.get(from).into_iter().flatten() {
                if cycle.contains(to) {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    lines.push(format!("  {from} -> {to}: {}", names.join(", ")));
                }
            }
        }
        lines.join("\n")
    }

    /// What a test reports for every cycle of the graph that is not in `known` (each an exact
    /// set of files), and for every entry of `known` that is no cycle any more; empty when
    /// there is none.
    pub fn unexpected_cycles(&self, known: &[&[&str]]) -> Vec<String> {
        let cycles = self.cycles();
        let mut problems = Vec::new();
        for cycle in &cycles {
            let listed = known.iter().any(|files| {
                let mut files: Vec<&str> = files.to_vec();
                files.sort_unstable();
                files == cycle.iter().map(String::as_str).collect::<Vec<_>>()
            });
            if !listed {
                problems.push(format!(
                    "a cycle of {} files:\n{}",
                    cycle.len(),
                    self.describe(cycle)
                ));
            }
        }
        for files in known {
            let mut files: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
            files.sort();
            if !cycles.contains(&files) {
                problems.push(format!(
                    "no cycle any more (remove it from the known ones): {}",
                    files.join(", ")
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn test_modules_and_comments_are_left_out() {
        let code = code_of(
            "#[cfg(feature = \"test-util\")]\nmod contract;\nuse crate::store::x; // crate::y\n\
             #[cfg(all(test, feature = \"tasks\"))]\nmod tests {\n    use crate::server::y;\n}\n",
        );
        assert!(code.contains("mod contract;"), "{code}");
        assert!(!code.contains("server"), "{code}");
        assert!(!code.contains("crate::y"), "{code}");
    }

    #[test]
    fn every_form_of_path_is_seen() {
        let module = strings(&["client", "tasks"]);
        let code = code_of(
            "use super::api::Client;\n\
             use super::{builder::ClientBuilder, error};\n\
             use crate::{sync::lock, ids};\n\
             let x = crate::client::flows::FlowStore::new();\n\
             let y = $crate::server::Server::new();\n\
             let z = modelctx::server::Server::new();\n\
             use self::inner::Thing;\n",
        );
        let named: Vec<String> = named_paths(&code, &module)
            .iter()
            .map(|path| path.join("::"))
            .collect();
        assert_eq!(
            named,
            [
                "client::api::Client",
                "client::builder::ClientBuilder",
                "client::error",
                "sync::lock",
                "ids",
                "client::flows::FlowStore::new",
                "client::tasks::inner::Thing",
            ]
        );
    }

    #[test]
    fn use_declarations_bind_their_last_names_or_aliases() {
        let bindings = bindings_of(
            "pub(crate) use crate::store::now_ms;\n\
             pub use runner::{DeferToFlows, FlowRunner as Runner};\n\
             use super::{pause, error::{self, AuthError}};\n\
             pub use modelctx_types as types;\n\
             use std::io::Write as _;\n\
             fn f() { reuse (x); }\n",
        );
        let shown: Vec<String> = bindings
            .iter()
            .map(|(name, path)| format!("{name}={}", path.join("::")))
            .collect();
        assert_eq!(
            shown,
            [
                "AuthError=super::error::AuthError",
                "DeferToFlows=runner::DeferToFlows",
                "Runner=runner::FlowRunner",
                "error=super::error",
                "now_ms=crate::store::now_ms",
                "pause=super::pause",
                "types=modelctx_types",
            ]
        );
    }

    /// A crate of a few files in a temporary directory.
    fn crate_of(files: &[(&str, &str)]) -> crate::tempdir::TempDir {
        let dir = crate::tempdir::TempDir::new("imports");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn re_exports_are_followed_and_cycles_found() {
        let dir = crate_of(&[
            (
                "lib.rs",
                "pub use modelctx_types as types;\nmod a;\nmod b;\n#[path = \"c_file.rs\"]\nmod c;\n",
            ),
            // A façade: its re-export leads to a/inner.rs.
            ("a/mod.rs", "mod inner;\npub use inner::Thing;\n"),
            ("a/inner.rs", "pub struct Thing;\nuse crate::b::helper;\n"),
            ("b.rs", "pub fn helper() { let _ = crate::a::Thing; }\n"),
            (
                "c_file.rs",
                "use crate::types::Tool;\nuse crate::a::Thing;\n#[cfg(test)]\nmod tests {\n    use crate::b::helper;\n}\n",
            ),
        ]);
        let graph = import_graph(dir.path());
        let arrows: Vec<String> = graph
            .arrows
            .iter()
            .flat_map(|(from, to)| {
                to.iter().map(move |(to, names)| {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    format!("{from} -> {to}: {}", names.join(","))
                })
            })
            .collect();
        assert_eq!(
            arrows,
            [
                "a/inner.rs -> b.rs: helper",
                "b.rs -> a/inner.rs: Thing",
                "c_file.rs -> a/inner.rs: Thing",
            ]
        );
        assert_eq!(graph.cycles(), [strings(&["a/inner.rs", "b.rs"])]);
        assert!(
            graph
                .unexpected_cycles(&[&["b.rs", "a/inner.rs"]])
                .is_empty()
        );
        let problems = graph.unexpected_cycles(&[&["c_file.rs", "b.rs"]]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("a/inner.rs -> b.rs: helper"),
            "{problems:?}"
        );
        assert!(problems[1].starts_with("no cycle any more"), "{problems:?}");
    }

    #[test]
    fn a_module_that_defines_what_its_children_use_is_in_their_loop() {
        // `hub/mod.rs` holds `Hub`, whose field is a child's type; the child names `Hub` back.
        let dir = crate_of(&[
            ("lib.rs", "mod hub;\n"),
            (
                "hub/mod.rs",
                "mod part;\nuse part::Part;\npub struct Hub { part: Part }\n",
            ),
            (
                "hub/part.rs",
                "pub struct Part { hub: Option<Box<super::Hub>> }\n",
            ),
        ]);
        let graph = import_graph(dir.path());
        assert_eq!(
            graph.cycles(),
            [strings(&["hub/mod.rs", "hub/part.rs"])],
            "{:?}",
            graph.arrows
        );
        // A path that merely ends in a child's name (`other::part::X`) is not a bare path.
        let children: BTreeSet<String> = [String::from("part")].into();
        let named = named_paths_with_children(
            "use other::part::X;\npub use part::Z;\npub(crate) use part::{V, W};\nlet y = part::Y;\n",
            &strings(&["hub"]),
            &children,
        );
        assert_eq!(named, [strings(&["hub", "part", "Y"])]);
    }
}
