// The guide: chapters of prose and examples, written as markdown beside this file so that they
// read on GitHub as well as on docs.rs, and pulled in here as the docs of empty modules.
//
// Always compiled, never behind `cfg(doc)`: `cargo test --doc` does not collect the doctests of
// `cfg(doc)` items, and a module of docs alone costs the build nothing. Each chapter's text is
// included only when the features its examples use are on (otherwise the module says which to
// enable), so its code blocks compile wherever it is shown and every build of the crate's docs,
// whatever its features, resolves the links between chapters.
//
// Which run: `cargo test` compiles this crate with every feature a chapter needs (its
// dev-dependency on itself turns the non-default ones on), so CI's `cargo test --workspace`
// doc-tests every chapter; the test each chapter carries fails the day that stops being true.
#![doc = include_str!("README.md")]

/// A chapter: the markdown `file` as the docs of module `name` when the `features` its examples
/// need are on, a pointer to the file otherwise; and, in the crate's tests, a check that a
/// default `cargo test` compiles the chapter (so its code blocks run as doctests in CI).
macro_rules! chapter {
    ($name:ident, $file:literal, [$($feature:literal),+ $(,)?]) => {
        #[cfg_attr(all($(feature = $feature),+), doc = include_str!($file))]
        #[cfg_attr(
            not(all($(feature = $feature),+)),
            doc = concat!(
                "This chapter's examples need the crate features",
                $(" `", $feature, "`",)+
                ": build the documentation with them (docs.rs builds it with every feature), or ",
                "read `crates/modelctx/src/guide/", $file, "` in the repository."
            )
        )]
        pub mod $name {
            #[cfg(all(test, feature = "default"))]
            #[test]
            fn is_doc_tested_by_cargo_test() {
                assert!(
                    cfg!(all($(feature = $feature),+)),
                    concat!(
                        "`cargo test` no longer enables every feature of ",
                        $file,
                        ": its examples would silently stop running as doctests (enable them in ",
                        "the crate's dev-dependency on itself)"
                    )
                );
            }
        }
    };
}

chapter!(
    getting_started,
    "getting-started.md",
    ["macros", "client", "stdio", "http-server", "http-client"]
);
chapter!(
    multi_round_trip,
    "multi-round-trip.md",
    ["macros", "client", "stdio", "http-server", "http-client"]
);
chapter!(
    authorization,
    "authorization.md",
    ["macros", "auth", "auth-client"]
);
chapter!(
    tasks_and_flows,
    "tasks-and-flows.md",
    ["macros", "tasks-sqlite", "flows-sqlite"]
);
chapter!(
    deployment,
    "deployment.md",
    [
        "macros",
        "stdio",
        "auth",
        "bus-redis",
        "tasks-redis",
        "flows-redis",
        "single-use-redis",
        "lambda"
    ]
);
chapter!(
    extensions_and_apps,
    "extensions-and-apps.md",
    ["macros", "client", "stdio", "http-server", "http-client"]
);
chapter!(
    coming_from_python,
    "coming-from-python.md",
    ["macros", "client"]
);
chapter!(
    observability,
    "observability.md",
    ["macros", "client", "http-server", "otel"]
);
