//! Attribute macros of the [`modelctx`](https://docs.rs/modelctx) crate's high-level server. Use them
//! through `modelctx` (`modelctx::tool`, `modelctx::prompt`, `modelctx::resource`, `modelctx::resolver`): the generated
//! code names everything through `::modelctx::__private`, so it compiles whatever you imported.
//!
//! Each macro keeps the function as written and adds a braced struct of the same name — it
//! lives in the type namespace, next to the function in the value namespace — implementing the
//! registration trait:
//!
//! | macro | on | generates | register with |
//! |---|---|---|---|
//! | `#[tool]` | `async fn` | `ToolDefinition` | `.tool::<name>()` |
//! | `#[prompt]` | `async fn` | `PromptDefinition` | `.prompt::<name>()` |
//! | `#[resource("uri")]` | `async fn` | `ResourceDefinition` | `.resource::<name>()` |
//! | `#[resolver]` | `async fn` | `Resolver` | `#[resolve(name)]` on a parameter |
//!
//! Options: `#[tool(name = "…", title = "…", description = "…", read_only, destructive,
//! idempotent, open_world)]`, `#[prompt(name, title, description)]`,
//! `#[resource("uri", name, title, description, mime_type)]`. Descriptions default to the doc
//! comment.
//!
//! What the compiler reports (each has a UI test in `tests/ui/fail`):
//!
//! * `#[resolve]` parameters together with a return type naming `Outcome` or
//!   `InputRequiredResult` (a call has one input channel);
//! * a static resource (no `{var}` in its URI) that uses resolvers or may return an
//!   `InputRequiredResult`; a template parameter that is not one of its variables;
//! * a resolver parameter taken by name that the consumer does not have (a failed constant
//!   evaluation naming the resolver and the parameter);
//! * a resolver dependency cycle (E0391, a cycle between the resolvers' `INFO` constants);
//! * methods, generic functions, non-name patterns and unknown attributes or options.
//!
//! ```
//! use modelctx::server::{Elicit, McpServer};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema, Clone)]
//! struct Budget {
//!     amount: u32,
//! }
//!
//! #[modelctx::resolver]
//! async fn ask_budget(city: String) -> Elicit<Budget> {
//!     Elicit::new(format!("Budget (EUR) for {city}?"))
//! }
//!
//! /// Plan a trip.
//! #[modelctx::tool]
//! async fn plan_trip(city: String, #[resolve(ask_budget)] budget: Budget) -> String {
//!     format!("Trip to {city}: budget {} EUR.", budget.amount)
//! }
//!
//! let server = McpServer::builder("travel", "1.0.0").tool::<plan_trip>().build()?;
//! # let _ = server;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// On docs.rs (nightly, `--cfg docsrs`), each item behind a `cfg` says which feature or
// platform it needs; a stable `cargo doc` never sets the cfg.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod common;
mod handler;
mod prompt;
mod resolver;
mod resource;
mod tool;

use proc_macro::TokenStream;

type Expand = fn(&common::Options, syn::ItemFn) -> syn::Result<proc_macro2::TokenStream>;

fn run(attr: TokenStream, item: TokenStream, expand: Expand) -> TokenStream {
    let options = match syn::parse::<common::Options>(attr) {
        Ok(options) => options,
        Err(error) => return error.to_compile_error().into(),
    };
    let item = match syn::parse::<syn::ItemFn>(item) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error().into(),
    };
    expand(&options, item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// A tool: the function's parameters are its arguments (except a `Context` and
/// `#[resolve(..)]` parameters), its doc comment the description, its return type any
/// `IntoToolResult`. See the crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    run(attr, item, tool::expand)
}

/// A prompt: the function's parameters are its arguments (`String`, or `Option<String>` when
/// optional), except a `Context` and `#[resolve(..)]` parameters.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    run(attr, item, prompt::expand)
}

/// A resource (`#[resource("scheme://path")]`) or resource template
/// (`#[resource("scheme://{var}")]`, whose variables are the parameters).
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    run(attr, item, resource::expand)
}

/// A resolver: a function run before a tool, prompt or template body to fill a
/// `#[resolve(name)]` parameter; it may return a question for the client. Its question goes
/// under the function's name as the input-request key (`region`), so two resolvers of one name
/// cannot serve the same consumer (a compile error).
#[proc_macro_attribute]
pub fn resolver(attr: TokenStream, item: TokenStream) -> TokenStream {
    run(attr, item, resolver::expand)
}
