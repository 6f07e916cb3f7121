//! Where a request comes from, as the transport knows it: the peer's address that the HTTP
//! layer finds in the request head. Below the request context and the middleware chain, which
//! answer `peer_addr` from it, so that neither names the HTTP transport above them.

use std::net::SocketAddr;

/// The peer's address, when the service was made with
/// `into_make_service_with_connect_info::<SocketAddr>()`, or the connection is served by
/// [`Server::serve_http_on`](super::Server::serve_http_on) (which inserts the same `ConnectInfo`).
pub(crate) fn peer_addr(parts: &http::request::Parts) -> Option<SocketAddr> {
    let connected = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>();
    connected.map(|info| info.0)
}
