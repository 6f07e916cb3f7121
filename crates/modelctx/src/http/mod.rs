//! Pieces of streamable HTTP shared by the server and the client: the `Mcp-*` headers, their
//! value encoding, the `x-mcp-header` annotations of tool schemas, and server-sent events.

#[cfg(any(feature = "auth", feature = "http-client"))]
pub(crate) mod body;
pub(crate) mod headers;
pub(crate) mod sse;
