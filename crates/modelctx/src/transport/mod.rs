//! Byte-level transports shared by the server and the client.

// The server and the client each use part of it.
#[cfg(any(feature = "server", feature = "client"))]
#[cfg_attr(not(all(feature = "server", feature = "client")), allow(dead_code))]
pub(crate) mod lines;
pub mod memory;
