//! Keeps the server's module graph layered (DESIGN.md, "Layers of the server"): every module of
//! `crate::server` may name only modules of a lower layer than its own. The test reads the
//! sources and resolves each `crate::server::…`, `super::…` and `self::…` path outside comments
//! and test modules to the module it names (the reader, `modelctx_test_support::imports`, is
//! shared with the crate-level tests and `modelctx-cli`'s).

use std::collections::BTreeSet;
use std::path::Path;

use modelctx_test_support::imports::{code_of, named_paths, sources};

/// The layers, lowest first. A directory's files are one module (`tasks`, `http`). `mod.rs` of
/// the server is not checked: it declares the modules and re-exports the public names (see
/// `ROOT_NAMES`). Nor are the handle's own imports ([`HANDLE_FILES`]): see there.
const LAYERS: &[(&str, u8)] = &[
    // Leaves: plain messages and helpers that know no stage of the pipeline.
    ("change", 0),
    ("notifier", 0),
    ("deadline", 0),
    ("limit_error", 0),
    ("headers", 0),
    ("uri_template", 0),
    ("origin", 0),
    ("in_flight", 0),
    ("subscription_limits", 0),
    ("single_use", 0),
    ("caching", 0),
    ("peer_rate", 1),
    ("shutdown", 1),
    // The resource server's token checks: the context reads the `AccessToken` they leave.
    ("auth", 1),
    ("bus", 1),
    ("subscription_budget", 2),
    // The seam the tasks extension joins the core through: what the handle holds of it.
    ("task_hook", 7),
    // The server handle (`handle.rs`: `Server` and its shared state; `builder.rs`:
    // `ServerBuilder`, which makes it).
    ("handle", 3),
    ("builder", 3),
    // A handshake-era session: its state and the back-channel it asks on.
    ("handshake", 4),
    ("typed_params", 4),
    // The request as handed over, its reply, the errors every stage answers with.
    ("message", 5),
    // What a handler sees, the handlers, the registry of them; the request's span.
    ("context", 6),
    ("handler", 7),
    ("registry", 8),
    ("trace", 8),
    // The steps every route shares: the ladder, typed params, the context, the stamped result.
    ("ladder", 9),
    // The stages: sealed state and listen streams, the bridge, the three methods that may ask,
    // routing, the chain (which ends in routing), the entry a transport calls (span, chain or
    // routing). Each is free functions over `&Server`, so a call between stages is an import.
    ("mrtr", 10),
    ("listen", 10),
    ("bridge", 11),
    ("mrtr_methods", 12),
    ("dispatch", 13),
    ("middleware", 14),
    ("pipeline", 15),
    // The transports, then the features over them.
    ("stdio_era", 16),
    ("stdio_lines", 16),
    ("stdio_drain", 16),
    ("stdio", 17),
    ("http", 17),
    ("tasks", 18),
    ("mcp_server", 19),
];

/// What `mod.rs` re-exports, each with the module that defines it.
const ROOT_NAMES: &[(&str, &str)] = &[
    ("Server", "handle"),
    ("ServerBuilder", "builder"),
    ("CachePolicy", "caching"),
    ("Caching", "caching"),
    ("PrincipalHook", "handle"),
    ("RequestContext", "context"),
    ("BoxFuture", "handler"),
    ("CompletionHandler", "handler"),
    ("IntoOutcome", "handler"),
    ("IntoResult", "handler"),
    ("MethodHandler", "handler"),
    ("PromptHandler", "handler"),
    ("ResourceHandler", "handler"),
    ("ResourceTemplateHandler", "handler"),
    ("ToolHandler", "handler"),
    ("Change", "change"),
    ("RegistrationError", "registry"),
    ("DEFAULT_SHUTDOWN_GRACE", "shutdown"),
    ("shutdown_signal", "shutdown"),
    ("StdioConfig", "stdio"),
    ("SubscriptionLimits", "subscription_limits"),
    ("InvalidTemplate", "uri_template"),
    ("UriVariables", "uri_template"),
];

fn layer_of(module: &[String]) -> Option<(&'static str, u8)> {
    let one = module.first().map(String::as_str).unwrap_or_default();
    let one = ROOT_NAMES
        .iter()
        .find(|(name, _)| *name == one)
        .map_or(one, |(_, module)| *module);
    LAYERS.iter().find(|(name, _)| *name == one).copied()
}

/// The module path of a source file under `server/` (`tasks/store.rs` → tasks::store;
/// `http/mod.rs` → http).
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

/// Every module path of `crate::server` that `code` (in module `module`) names, from the
/// server's root.
fn named_modules(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let server = ["server".to_owned()];
    let absolute: Vec<String> = server.iter().chain(module).cloned().collect();
    named_paths(code, &absolute)
        .into_iter()
        .filter_map(|path| path.strip_prefix(&server[..]).map(<[String]>::to_vec))
        .filter(|path| !path.is_empty())
        .collect()
}

/// The handle's files, whose own imports are not checked (as `mod.rs`'s were while it held
/// them): `Inner` holds the trait objects of the layers above it — the handlers and their
/// registry, the middleware chain, the principal hook over a `RequestContext`, the task hook —
/// while every stage, and the `RequestContext` itself, hold or take a `Server`. A knot of types,
/// not of calls (no stage is a method of `Server`); untying it (the stages over a core state
/// below the handlers, `Server` a thin handle above them) is what is left of issue 33 point 1.
/// The crate-level `layers::no_files_import_each_other_in_a_loop` lists the loop it makes.
const HANDLE_FILES: &[&str] = &["handle.rs", "builder.rs"];

/// Every dependency between modules of the server that goes to a module of the same or a
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
        if HANDLE_FILES.iter().any(|file| relative == Path::new(file)) {
            continue;
        }
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
                        "{}: {own} names server::{}, which is no module with a layer (name \
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
fn server_modules_depend_only_on_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let problems = violations(&root);
    assert!(
        problems.is_empty(),
        "the server's layering is broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn names_of_the_facade_stand_for_their_modules() {
    let module = vec!["dispatch".to_owned()];
    let code = code_of(
        "use super::{RequestContext, Server};\n\
         use super::message::Incoming;\n\
         let x = crate::server::tasks::Tasks::new();\n\
         // use super::stdio::serve; (a comment)\n",
    );
    let named: Vec<Vec<String>> = named_modules(&code, &module);
    let layers: Vec<&str> = named
        .iter()
        .filter_map(|path| layer_of(path).map(|(name, _)| name))
        .collect();
    assert_eq!(layers, ["context", "handle", "message", "tasks"]);
}

/// The files allowed an `impl Server` block: the handle's own (`handle.rs`, and `builder.rs`
/// for `Server::builder`, the constructor beside what it returns) and the transports' public
/// `serve_*` methods. A stage is free functions over `&Server`, so that a call from one
/// stage into another is an import the layering test sees, not a method call it cannot.
const IMPL_SERVER_FILES: &[&str] = &["handle.rs", "builder.rs", "stdio.rs", "http/serve.rs"];

/// Every file under `root` with an `impl Server` block that is not in [`IMPL_SERVER_FILES`].
fn stray_impl_blocks(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let mut stray = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root");
        let name = relative.to_string_lossy().replace('\\', "/");
        if IMPL_SERVER_FILES.contains(&name.as_str()) || name == "layers.rs" {
            continue;
        }
        let source = std::fs::read_to_string(&file).expect("read a source file");
        let has_impl = code_of(&source).lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("impl Server {") || line.starts_with("impl Server<")
        });
        if has_impl {
            stray.insert(name);
        }
    }
    stray.into_iter().collect()
}

#[test]
fn only_the_handle_and_the_transports_implement_server() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let stray = stray_impl_blocks(&root);
    assert!(
        stray.is_empty(),
        "`impl Server` outside the handle and the transports' serve_* (make the stage free \
         functions over `&Server`): {stray:?}"
    );
}

/// The features over the core (the top of [`LAYERS`]): the core reaches them only through a
/// seam they register on the builder (`task_hook`), never by name.
const FEATURES: &[&str] = &["tasks", "mcp_server"];

/// Every file of the core (neither a feature's nor `mod.rs`, which declares the features'
/// modules) that names a feature's module or is compiled by the feature's gate.
fn core_files_naming_features(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(root, &mut files);
    let mut problems = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root");
        let module = module_path(relative);
        let in_feature = module
            .first()
            .is_some_and(|first| FEATURES.contains(&first.as_str()));
        if in_feature || relative == Path::new("mod.rs") || relative == Path::new("layers.rs") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).expect("read a source file"));
        for feature in FEATURES {
            if code.contains(&format!("feature = \"{feature}\"")) {
                problems.insert(format!(
                    "{}: gated by feature {feature}",
                    relative.display()
                ));
            }
        }
        for named in named_modules(&code, &module) {
            if named
                .first()
                .is_some_and(|first| FEATURES.contains(&first.as_str()))
            {
                problems.insert(format!(
                    "{}: names server::{}",
                    relative.display(),
                    named.join("::")
                ));
            }
        }
    }
    problems.into_iter().collect()
}

/// The core names no feature (DESIGN.md, "Layers of the server"): the tasks extension joins it
/// through `task_hook`, registered on the builder, so no core file — the handle and the builder
/// included — names `tasks` or is compiled differently with it.
#[test]
fn the_core_names_no_feature() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let problems = core_files_naming_features(&root);
    assert!(
        problems.is_empty(),
        "the core names a feature (reach it through a seam the feature registers):\n{}",
        problems.join("\n")
    );
}
