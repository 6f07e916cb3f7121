//! `mcp bridge URL` (issue 36, shape 1) and `mcp serve demo --protocol` (one era only), end to
//! end on 127.0.0.1: the hosts are our own client over stdio in either era and the TypeScript
//! SDK v1 1.32.2 client (what hosts ship, installed by `scripts/ts-sdk-env.sh`); the upstreams
//! are the demo served one era only (`demo_upstream`) and a small server of our own that shows
//! what reaches it (`own_upstream`: cancellation, timeouts, list changes, logs, completions).

mod demo_upstream;
mod host;
mod own_upstream;
