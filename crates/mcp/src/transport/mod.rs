//! Byte-level transports shared by the server and the client.

pub mod lines;
pub mod memory;
