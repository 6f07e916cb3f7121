//! Keeps the client's module graph layered (DESIGN.md, "Layers of the client"): every module of
//! `crate::client` may name only modules of a lower layer than its own. The test reads the
//! sources and resolves each `crate::client::…`, `super::…` and `self::…` path outside comments
//! and test modules to the module it names (the reader, `modelctx_test_support::imports`, is
//! shared with the crate-level tests and `modelctx-cli`'s).

use std::collections::BTreeSet;
use std::path::Path;

use modelctx_test_support::imports::{code_of, named_paths, sources};

/// The layers, lowest first. A directory's files are one module (`auth`), except where a file
/// of it has an entry of its own (`auth/error`, which `ClientError` wraps). `mod.rs` of the
/// client is the public façade (re-exports only) and is not checked.
const LAYERS: &[(&str, u8)] = &[
    // Leaves: plain types and helpers.
    ("auth/error", 0),
    // The bounded queue from the notification router to a subscription.
    ("listen_queue", 0),
    ("pause", 0),
    ("tool_index", 0),
    ("error", 1),
    ("callbacks", 2),
    // The request and call spans: named from plain data, used by the session and the API.
    ("trace", 2),
    // The core: ids, negotiated state, progress tokens, routes; knows no feature.
    ("shared", 3),
    ("transport", 4),
    // Around every message sent: above the core, below the session that runs it.
    ("middleware", 4),
    ("session", 5),
    ("input_loop", 6),
    ("negotiate", 6),
    // 2025-11-25 client-side tasks: a table the back-channel answers from.
    ("tasks_2025_table", 6),
    // One cancel-on-abandon guard for both task protocols.
    ("task_cancel", 6),
    // Features over the session, registering routes in the core.
    ("back_channel", 7),
    ("listen", 7),
    ("tasks", 7),
    ("tasks_2025", 7),
    // The public client, its authorization layer, the builder that wires them, flows on top.
    ("api", 8),
    ("auth", 9),
    ("builder", 10),
    ("flows", 11),
];

fn layer_of(module: &[String]) -> Option<(&'static str, u8)> {
    let two = module.iter().take(2).cloned().collect::<Vec<_>>().join("/");
    let one = module.first().map(String::as_str).unwrap_or_default();
    LAYERS
        .iter()
        .find(|(name, _)| *name == two)
        .or_else(|| LAYERS.iter().find(|(name, _)| *name == one))
        .copied()
}

/// The module path of a source file under `client/` (`auth/flow/endpoints.rs` → auth::flow::
/// endpoints; `transport/mod.rs` → transport).
fn module_path(relative: &Path) -> Vec<String> {
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

/// Every module path of `crate::client` that `code` (in module `module`) names, from the
/// client's root.
fn named_modules(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let client = ["client".to_owned()];
    let absolute: Vec<String> = client.iter().chain(module).cloned().collect();
    named_paths(code, &absolute)
        .into_iter()
        .filter_map(|path| path.strip_prefix(&client[..]).map(<[String]>::to_vec))
        .filter(|path| !path.is_empty())
        .collect()
}

/// Every dependency between modules of the client that goes to a module of the same or a
/// higher layer, as `file: module (layer) → module (layer)`.
fn violations(root: &Path) -> Vec<String> {
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
        for named in named_modules(&code_of(&source), &module) {
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
                        "{}: {own} names client::{}, which is no module with a layer (name \
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

#[test]
fn client_modules_depend_only_on_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/client");
    let problems = violations(&root);
    assert!(
        problems.is_empty(),
        "the client's layering is broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_scanner_sees_every_form_of_path() {
    let module = vec!["tasks".to_owned()];
    let code = code_of(
        "use super::api::Client;\n\
         use super::{builder::ClientBuilder, error};\n\
         let x = crate::client::flows::FlowStore::new();\n\
         // use super::auth::OAuthClient; (a comment)\n\
         #[cfg(test)]\nmod tests {\n    use super::super::negotiate::Mode;\n}\n",
    );
    let named: Vec<String> = named_modules(&code, &module)
        .iter()
        .map(|path| path.join("::"))
        .collect();
    assert_eq!(
        named,
        [
            "api::Client",
            "builder::ClientBuilder",
            "error",
            "flows::FlowStore::new"
        ]
    );
}
