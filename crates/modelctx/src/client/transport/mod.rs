//! The client's transports: newline-delimited JSON over a byte stream (a spawned server's
//! stdio, or an in-memory pipe), streamable HTTP, and the HTTP+SSE transport of 2024-11-05 (carried
//! by the line engine).
//!
//! A transport moves one request and brings back its reply; the session above it owns the
//! protocol (envelopes, negotiation, the input-required loop). Request ids are minted by the
//! transport, so a request that has to be re-issued (a broken HTTP stream) gets a new one.

pub(crate) mod engine;
#[cfg(feature = "http-client")]
pub(crate) mod http;
#[cfg(feature = "http-client")]
pub(crate) mod sse;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;

mod message;

pub use message::TransportKind;
pub(crate) use message::{HttpHeaders, Outgoing, Reply, encode_request};

use serde_json::value::RawValue;

use super::error::ClientError;

/// A connected transport.
#[derive(Debug)]
pub(crate) enum Transport {
    /// Newline-delimited JSON (stdio child or caller streams).
    Lines(Box<engine::LineTransport>),
    /// Streamable HTTP.
    #[cfg(feature = "http-client")]
    Http(http::HttpTransport),
}

impl Transport {
    pub(crate) fn kind(&self) -> TransportKind {
        match self {
            Self::Lines(t) => t.kind(),
            #[cfg(feature = "http-client")]
            Self::Http(_) => TransportKind::Http,
        }
    }

    /// The clock of the OAuth client, whose paused time request bounds do not count.
    #[cfg(feature = "auth-client")]
    pub(crate) fn pause_clock(&self) -> Option<&crate::client::pause::PauseClock> {
        match self {
            Self::Lines(_) => None,
            Self::Http(t) => t.pause_clock(),
        }
    }

    /// Sends a request and waits for its reply.
    pub(crate) async fn request(&self, outgoing: &Outgoing) -> Result<Reply, ClientError> {
        match self {
            Self::Lines(t) => t.request(outgoing).await,
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.request(outgoing).await,
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), ClientError> {
        match self {
            Self::Lines(t) => t.notify(method, params),
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.notify(method, params).await,
        }
    }

    /// Called once the era is known (HTTP opens the optional handshake GET stream).
    pub(crate) async fn on_negotiated(&self) {
        match self {
            Self::Lines(_) => {}
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.on_negotiated().await,
        }
    }

    /// Closes the connection (stdio: close stdin, wait, terminate; HTTP: end a handshake session).
    pub(crate) async fn close(&self) -> Result<(), ClientError> {
        match self {
            Self::Lines(t) => t.close().await,
            #[cfg(feature = "http-client")]
            Self::Http(t) => t.close().await,
        }
    }
}
