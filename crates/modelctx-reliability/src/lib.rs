//! The reliability suite of the `modelctx` SDK (see `RELIABILITY.md` at the repository root).
//!
//! * `reliability-server` — the conformance fixtures plus an `echo` tool, served over stdio or
//!   HTTP on 127.0.0.1 (announces its port, shuts down gracefully on SIGTERM);
//! * `tests/hostile_*.rs` — hostile input over stdio and HTTP against that server process;
//! * `mcp-load` — many concurrent SDK clients against one server (`scripts/load.sh`);
//! * `mcp-fleet` — multi-round-trip flows through nginx across two instances, with shared,
//!   per-process and rotating keys, then change notifications across the instances on a Redis
//!   bus (`scripts/fleet.sh`).
//!
//! This library holds what they share: the request envelope, server processes, `/proc`
//! memory readings, a raw HTTP/1.1 client and latency statistics.

pub mod bus_phase;
pub mod procfs;
pub mod rawhttp;
pub mod server;
pub mod stats;
pub mod wire;
