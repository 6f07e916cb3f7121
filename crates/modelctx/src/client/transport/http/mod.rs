//! Streamable HTTP (files moved here from `transport/http.rs` and `transport/http_handshake.rs`;
//! the split along their seams follows).

mod connection;
mod handshake;

pub(crate) use connection::{BuildRequest, HttpConfig, HttpTransport, RequestAuth};
