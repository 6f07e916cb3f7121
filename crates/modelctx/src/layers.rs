//! Keeps the crate's module graph layered (DESIGN.md, "Layers"): each top-level module of the
//! crate names (`crate::…`) only modules of a lower layer than its own; the server and the
//! client, one layer, never name each other. The client's own modules are layered too
//! (`client::layers`). Below the modules, no two source files name each other in a loop
//! (`no_files_import_each_other_in_a_loop`).

use std::collections::BTreeSet;
use std::path::Path;

use modelctx_test_support::imports::{
    code_of, import_graph, named_paths, sources, without_comments,
};

/// The layers, lowest first. A top-level module is its file or its directory (a `dir/file`
/// entry would give one file of a directory a layer of its own; none needs one).
const LAYERS: &[(&str, u8)] = &[
    // The guide: chapters of documentation, no code. The lowest layer keeps it so: its examples
    // are doctests, which use the crate from outside, and its links are not imports.
    ("guide", 0),
    // Leaves: helpers with no protocol knowledge (`sync` below the connections that lock).
    ("sync", 0),
    // RFC 6570 templates: the server matches them, a client expands them.
    ("uri_template", 0),
    // How many pages a listing follows, on either side.
    ("paging", 0),
    // How far state is shared: the stores, the replay guards and the deployments read it.
    ("state_scope", 0),
    ("ids", 1),
    ("schema_check", 1),
    ("sqlite", 1),
    ("redis_link", 1),
    // What the server's and the client's request spans record alike.
    ("span_fields", 1),
    // DPoP (RFC 9449): the proof and JWK pieces the client and the resource server share.
    ("dpop", 1),
    // Byte-level plumbing both sides share: HTTP headers and SSE, line framing, in-memory pipes.
    ("http", 2),
    ("transport", 2),
    // OpenTelemetry (feature `otel`): trace context in `_meta` for both sides, the metrics layer.
    ("otel", 2),
    // The versioned record store under tasks and flows.
    ("store", 3),
    // The two runtimes: peers that never name each other.
    ("server", 4),
    ("client", 4),
    // Above both: the macros' support, the fuzz hooks, the crate root.
    ("private", 5),
];

fn layer_of(relative: &Path) -> Option<(&'static str, u8)> {
    let parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    let two = parts.iter().take(2).cloned().collect::<Vec<_>>().join("/");
    LAYERS
        .iter()
        .find(|(name, _)| *name == two)
        .or_else(|| LAYERS.iter().find(|(name, _)| *name == parts[0]))
        .copied()
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules `code` names as `crate::module` or within `crate::{…}`.
fn named_top_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::` in a macro, or an identifier ending in "crate".
        }
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            // `crate::{a::x, b}`: the first identifier of each entry at the group's top level.
            Some(group) => {
                let mut depth = 0usize;
                let mut entry = Some(0);
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => entry = Some(i + 1),
                        c if c.is_whitespace() => {
                            if entry == Some(i) {
                                entry = Some(i + c.len_utf8());
                            }
                        }
                        _ => {
                            if entry == Some(i) {
                                found.insert(identifier(&group[i..]));
                            }
                            entry = None;
                        }
                    }
                }
            }
            None => {
                found.insert(identifier(rest));
            }
        }
    }
    found
}

fn violations(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let mut problems = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root");
        if relative == Path::new("lib.rs") || relative == Path::new("layers.rs") {
            continue;
        }
        let Some((own, own_layer)) = layer_of(relative) else {
            problems.insert(format!("{}: no layer in LAYERS", relative.display()));
            continue;
        };
        let source = std::fs::read_to_string(&file).expect("read a source file");
        for named in named_top_modules(&code_of(&source)) {
            // Re-exports at the root (`crate::memory`, `crate::types`, `crate::seal`) resolve to
            // a layer-1 module and to the wire and sealing crates below this one.
            let target = match named.as_str() {
                "memory" => "transport",
                "types" | "seal" | "BoxFuture" => continue,
                other => other,
            };
            match layer_of(Path::new(target)) {
                Some((name, _)) if name == own || own.starts_with(&format!("{name}/")) => {}
                Some((_, layer)) if layer < own_layer => {}
                Some((name, layer)) => {
                    problems.insert(format!(
                        "{}: {own} (layer {own_layer}) names crate::{name} (layer {layer})",
                        relative.display()
                    ));
                }
                None => {
                    problems.insert(format!(
                        "{}: names crate::{named}, which has no layer",
                        relative.display()
                    ));
                }
            }
        }
    }
    problems.into_iter().collect()
}

#[test]
fn top_level_modules_depend_only_on_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = violations(&root);
    assert!(
        problems.is_empty(),
        "the crate's layering is broken:\n{}",
        problems.join("\n")
    );
}

/// The module path of a source file under `src/` (`store/mod.rs` → store, `store/memory.rs` →
/// store::memory).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts
}

/// Every path to the runtimes that a file under `store/` names, tests included.
fn store_names_of_runtimes(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(&root.join("store"), &mut files);
    let mut problems = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root");
        let source = std::fs::read_to_string(&file).expect("read a source file");
        for path in named_paths(&without_comments(&source), &module_of(relative)) {
            if path
                .first()
                .is_some_and(|top| top == "server" || top == "client")
            {
                problems.push(format!(
                    "{}: names crate::{}",
                    relative.display(),
                    path.join("::")
                ));
            }
        }
    }
    problems
}

/// The store kernel sits below both runtimes (DESIGN.md, "Store kernel"): no file under
/// `store/` — its tests and its contract included — names `server` or `client`. The task and
/// flow contracts live beside the rules they check, and the kernel's own runs over a record it
/// defines.
#[test]
fn the_store_kernel_names_no_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = store_names_of_runtimes(&root);
    assert!(
        problems.is_empty(),
        "the store kernel reaches up:\n{}",
        problems.join("\n")
    );
}

/// The import cycles of more than one file that the crate is known to have, each as the exact
/// set of its files (under `src/`). The server's core cycle of 14 files (dispatch, the HTTP
/// transport, the handshake era, middleware, MRTR, tracing) went with its layering (issue 33,
/// point 1; DESIGN.md, "Layers of the server"). One is left, and known: the server handle's
/// knot of types. `Server` and its shared state (`server/handle.rs`) hold the trait objects of
/// the layers above — the handlers and their registry, the middleware chain, the principal hook
/// over a `RequestContext`, the task hook — while the stages and `RequestContext` take or hold
/// a `Server`. While `server/mod.rs` defined the handle, its imports were a module's paths into
/// its own children and no test saw the loop; in a file of its own it is seen, and listed here
/// until the stages run over a core state below the handlers. A new cycle anywhere fails the
/// test, and so does an entry here that is no cycle.
const KNOWN_SERVER_CYCLES: &[&[&str]] = &[];

/// No source files of the crate name each other in a loop (a file names another through a
/// `crate::…`, `super::…` or `self::…` path, `use` groups included, followed through
/// re-exports to the file that defines the name): a loop of files is one concept spread over
/// several, which nobody can read, test or move one at a time.
#[test]
fn no_files_import_each_other_in_a_loop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = import_graph(&root).unexpected_cycles(KNOWN_SERVER_CYCLES);
    assert!(
        problems.is_empty(),
        "source files import each other in a loop:\n{}",
        problems.join("\n")
    );
}

#[test]
fn test_modules_are_skipped_and_feature_gates_are_not() {
    let code = code_of(
        "#[cfg(feature = \"test-util\")]\nmod contract;\nuse crate::store::x;\n\
         #[cfg(all(test, feature = \"tasks\"))]\nmod tests {\n    use crate::server::y;\n}\n",
    );
    assert!(code.contains("mod contract;"), "{code}");
    assert_eq!(
        named_top_modules(&code).into_iter().collect::<Vec<_>>(),
        ["store"]
    );
}

#[test]
fn the_scanner_sees_crate_paths_only() {
    let code = code_of(
        "use crate::server::Server;\n\
         let x = $crate::client::Client::new();\n\
         use crate::{sync::lock, ids};\n\
         // crate::store::x in a comment\n",
    );
    assert_eq!(
        named_top_modules(&code).into_iter().collect::<Vec<_>>(),
        ["ids", "server", "sync"]
    );
}
