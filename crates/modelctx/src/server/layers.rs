//! Keeps the server's module graph layered (DESIGN.md, "Layers of the server"): every module of
//! `crate::server` may name only modules of a lower layer than its own. The test reads the
//! sources and resolves each `crate::server::…`, `super::…` and `self::…` path outside comments
//! and test modules to the module it names (the reader, `modelctx_test_support::imports`, is
//! shared with the crate-level tests and `modelctx-cli`'s).

use std::collections::BTreeSet;
use std::path::Path;

use modelctx_test_support::imports::{
    code_of, layer_violations, module_path, named_modules, sources,
};

/// The layers, lowest first. A directory's files are one module (`tasks`, `http`). `mod.rs` of
/// the server is not checked: it declares the modules and re-exports the public names (see
/// `ROOT_NAMES`).
const LAYERS: &[(&str, u8)] = &[
    // Leaves: plain messages and helpers that know no stage of the pipeline.
    ("change", 0),
    ("notifier", 0),
    ("stream_closer", 0),
    ("deadline", 0),
    ("limit_error", 0),
    ("headers", 0),
    ("path_safety", 0),
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
    // A handshake-era session: its state and the back-channel it asks on.
    ("handshake", 3),
    // The request as handed over, its reply, the errors every stage answers with.
    ("message", 4),
    ("typed_params", 3),
    // What a handler sees (the server it serves held erased: see `context.rs`), the handlers,
    // the registry of them, the middleware chain's types, the tasks extension's seam.
    ("context", 5),
    ("handler", 6),
    ("notification_handler", 6),
    ("registry", 7),
    ("middleware", 7),
    ("task_hook", 7),
    ("lifespan", 7),
    // The server handle (`handle.rs`: `Server` and its shared state, which holds all of the
    // above), beside the extension seam (what an extension contributes: handlers, an
    // interceptor, the task hooks); then what makes it (`builder.rs`, which applies the
    // extensions) and what reads it: the request's span, the handshake era's own methods.
    ("handle", 8),
    ("extension", 8),
    ("builder", 9),
    ("trace", 9),
    ("handshake_methods", 9),
    // The steps every route shares: the ladder, typed params, the context, the stamped result.
    ("ladder", 10),
    // The stages: sealed state and listen streams, the bridge, the three methods that may ask,
    // routing, the chain (which ends in routing), the entry a transport calls (span, chain or
    // routing). Each is free functions over `&Server`, so a call between stages is an import.
    ("mrtr", 11),
    ("listen", 11),
    ("bridge", 12),
    ("mrtr_methods", 13),
    ("dispatch", 14),
    ("chain", 15),
    ("pipeline", 16),
    // The transports, then the features over them.
    ("stdio_era", 17),
    ("stdio_lines", 17),
    ("stdio_drain", 17),
    ("stdio", 18),
    ("in_process", 18),
    // HTTP above stdio: its HTTP+SSE transport of 2024-11-05 runs stdio's line engine per
    // session (`http/legacy_sse.rs`).
    ("http", 19),
    ("tasks", 19),
    ("apps", 19),
    ("mcp_server", 20),
    // AWS Lambda: the HTTP endpoint handed to the Lambda runtime.
    ("lambda", 20),
];

/// What `mod.rs` re-exports, each with the module that defines it.
const ROOT_NAMES: &[(&str, &str)] = &[
    ("Server", "handle"),
    ("ServerBuilder", "builder"),
    ("CachePolicy", "caching"),
    ("Caching", "caching"),
    ("PrincipalHook", "handle"),
    ("KeptState", "handle"),
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
];

fn layer_of(module: &[String]) -> Option<(&'static str, u8)> {
    let one = module.first().map(String::as_str).unwrap_or_default();
    let one = ROOT_NAMES
        .iter()
        .find(|(name, _)| *name == one)
        .map_or(one, |(_, module)| *module);
    LAYERS.iter().find(|(name, _)| *name == one).copied()
}

#[test]
fn server_modules_depend_only_on_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let problems = layer_violations(&root, "server", layer_of);
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
    let named: Vec<Vec<String>> = named_modules(&code, "server", &module);
    let layers: Vec<&str> = named
        .iter()
        .filter_map(|path| layer_of(path).map(|(name, _)| name))
        .collect();
    assert_eq!(layers, ["context", "handle", "message", "tasks"]);
}

/// The files allowed an `impl Server` block: the handle's own (`handle.rs`, and `builder.rs`
/// for `Server::builder`, the constructor beside what it returns) and the transports' public
/// `serve_*` methods, and `Server::in_process`, the entry of the transport without bytes. A
/// stage is free functions over `&Server`, so that a call from one stage into another is an
/// import the layering test sees, not a method call it cannot.
const IMPL_SERVER_FILES: &[&str] = &[
    "handle.rs",
    "builder.rs",
    "stdio.rs",
    "http/serve.rs",
    "in_process.rs",
];

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

/// The features over the core (the top of [`LAYERS`]): the core reaches them only through the
/// extension seam (`extension`, with the tasks extension's hooks, `task_hook`), never by name.
const FEATURES: &[&str] = &["tasks", "apps", "mcp_server", "lambda"];

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
        for named in named_modules(&code, "server", &module) {
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
/// as an extension (`extension`, contributing `task_hook`), so no core file — the handle and the builder
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
