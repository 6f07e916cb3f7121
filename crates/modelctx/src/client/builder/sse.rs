//! Connecting over the HTTP+SSE transport of 2024-11-05 (`client/transport/sse.rs`), directly
//! or as the fallback of streamable HTTP the spec describes. A child of the builder, whose
//! settings and connection steps it uses.

use super::{Client, ClientBuilder, ClientError, Mode, TransportKind};

impl ClientBuilder {
    /// Connects to an endpoint of the HTTP+SSE transport of 2024-11-05 (e.g.
    /// `http://127.0.0.1:8000/sse`): a `GET` opens the event stream, whose `endpoint` event
    /// names where messages are POSTed. That endpoint must be on the stream's origin (another
    /// is refused with [`ClientError::Protocol`]: a server must not send our messages and their
    /// headers elsewhere). The transport predates 2026-07-28, so the `initialize` handshake is
    /// used whatever the [`mode`](Self::mode). The [`http_client`](Self::http_client),
    /// [`http_header`](Self::http_header)s and the [`max_message_size`](Self::max_message_size)
    /// (of every event) apply; OAuth does not (send a token with `http_header`). The stream
    /// must name its endpoint within the [`probe_timeout`](Self::probe_timeout).
    ///
    /// # Errors
    /// An invalid URL, an HTTP status, an endpoint on another origin, or the negotiation
    /// failed.
    pub async fn connect_sse(mut self, url: &str) -> Result<Client, ClientError> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| ClientError::InvalidArgument(format!("invalid URL {url:?}: {e}")))?;
        let identity = super::server_identity(&url);
        let (reader, writer) =
            crate::client::transport::sse::open(crate::client::transport::sse::SseSettings {
                client: self.reqwest_client()?,
                url,
                headers: self.http.headers.clone(),
                max_message: self.max_message,
                connect_timeout: self.probe_timeout,
            })
            .await?;
        self.mode = Mode::Handshake;
        self.connect_lines(reader, writer, TransportKind::Sse, Some(identity))
            .await
    }

    /// [`connect_http`](Self::connect_http), falling back to
    /// [`connect_sse`](Self::connect_sse) when the URL answers the old way (the spec's
    /// backwards-compatibility rule: the first POST gets 400, 404 or 405, and a `GET` of the
    /// same URL opens an event stream that names its endpoint). When the `GET` gets an error
    /// status or no event stream, the URL is no SSE endpoint either and the streamable
    /// attempt's error is returned; an SSE endpoint that fails returns its own error.
    ///
    /// # Errors
    /// As [`connect_http`](Self::connect_http) and [`connect_sse`](Self::connect_sse).
    pub async fn connect_http_or_sse(mut self, url: &str) -> Result<Client, ClientError> {
        let (core, transport, identity) = self.http_transport(url)?;
        match Box::pin(self.try_finish(core, transport, Some(identity))).await {
            Ok(client) => Ok(client),
            Err((error, builder)) if crate::client::transport::sse::answers_the_old_way(&error) => {
                tracing::debug!(%error, "the URL answers the old way; trying HTTP+SSE");
                match Box::pin(builder.connect_sse(url)).await {
                    Err(sse) if crate::client::transport::sse::is_no_sse_endpoint(&sse) => {
                        Err(error)
                    }
                    other => other,
                }
            }
            Err((error, _)) => Err(error),
        }
    }
}
