//! What the workspace's integration tests share, in one unpublished crate instead of
//! `tests/*_support/mod.rs` files compiled into every test binary.
//!
//! The crate-agnostic helpers (`json`, `tempdir`, `process`, `redis`, `cli`, `mcp_app`,
//! `imports`) are always on; the fixtures built on the SDK need feature `mcp`, the in-memory
//! OpenTelemetry exporters feature `otel`, the hostile-input runner feature `hostile`, the
//! official-schema validators feature `spec`, the OTLP receiver feature `otlp`, the 2025-11-25
//! tasks server alone feature `tasks-2025`, headless Chromium feature `browser`.
//! A test target takes it as a dev-dependency; for crate `modelctx` that is a dev-dependency cycle,
//! which cargo resolves to the one `modelctx` library the test links, so the fixtures' types are the
//! test's types.

pub mod cli;
pub mod imports;
pub mod json;
pub mod mcp_app;
pub mod process;
pub mod redis;
pub mod tempdir;

#[cfg(feature = "mcp")]
pub mod client;
#[cfg(feature = "mcp")]
pub mod flows;
#[cfg(feature = "mcp")]
pub mod listen;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "mcp")]
pub mod server;
#[cfg(feature = "mcp")]
pub mod tasks;
#[cfg(feature = "tasks-2025")]
pub mod tasks_2025;

#[cfg(feature = "browser")]
pub mod browser;
#[cfg(feature = "hostile")]
pub mod hostile;
#[cfg(feature = "otlp")]
pub mod otlp;
#[cfg(feature = "spec")]
pub mod spec;
