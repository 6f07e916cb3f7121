//! Keeps the command's source files out of import loops, as the SDK's crate-level layering test
//! does for its own (`modelctx`'s `layers::no_files_import_each_other_in_a_loop`): no two files
//! under `src/` name each other in a loop through `crate::…`, `super::…` or `self::…` paths,
//! `use` groups included. The reader is `modelctx_test_support::imports`, shared with the SDK.
//! The clap structs (`cli.rs`) sit below the commands and name none of them: what a struct and
//! a command both need (the sign-in clock) is a file of its own, which both name.

use std::path::Path;

use modelctx_test_support::imports::import_graph;

#[test]
fn no_files_import_each_other_in_a_loop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = import_graph(&root).unexpected_cycles(&[]);
    assert!(
        problems.is_empty(),
        "source files of the mcp command import each other in a loop:\n{}",
        problems.join("\n")
    );
}
