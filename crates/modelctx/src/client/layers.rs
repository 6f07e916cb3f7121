//! Keeps the client's module graph layered (DESIGN.md, "Layers of the client"): every module of
//! `crate::client` may name only modules of a lower layer than its own. The test reads the
//! sources and resolves each `crate::client::…`, `super::…` and `self::…` path outside comments
//! and test modules to the module it names (the reader, `modelctx_test_support::imports`, is
//! shared with the crate-level tests and `modelctx-cli`'s).

use std::path::Path;

use modelctx_test_support::imports::{code_of, layer_violations, named_modules};

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
    // The response cache's leaves: the per-call mode (carried by the session's options), the
    // store and what notifications make stale; its settings above them.
    ("cache/mode", 0),
    ("cache/store", 0),
    ("cache/notifications", 0),
    ("cache/config", 1),
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
    // Extensions: what they advertise, their result claims (resolved on the session), their
    // notification bindings.
    ("extension", 6),
    // Features over the session, registering routes in the core.
    ("back_channel", 7),
    ("listen", 7),
    ("tasks", 7),
    ("tasks_2025", 7),
    // The response cache: a route of the core (invalidation), used by the API.
    ("cache", 7),
    // The public client, its authorization layer, the builder that wires them, flows on top.
    ("api", 8),
    ("auth", 9),
    ("builder", 10),
    ("flows", 11),
    // Several clients as one: over the public client alone.
    ("group", 11),
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

#[test]
fn client_modules_depend_only_on_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/client");
    let problems = layer_violations(&root, "client", layer_of);
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
    let named: Vec<String> = named_modules(&code, "client", &module)
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
