//! What an [`McpServer`] shares with its low-level [`Server`], said explicitly (there is no
//! `Deref`): the ways to serve it, its identity and its run-time announcements. Everything else
//! of the low-level server (run-time registration, capabilities, the sealing policy) is one
//! [`McpServer::server`] away.

use std::io;

use modelctx_types::Implementation;
use tokio::io::{AsyncRead, AsyncWrite};

use super::McpServer;
#[cfg(doc)]
use crate::server::Server;
use crate::server::{Change, StdioConfig};

impl McpServer {
    /// The name and version it reports as `serverInfo` ([`Server::info`]).
    pub fn info(&self) -> &Implementation {
        self.server.info()
    }

    /// Serves on this process's stdin and stdout until stdin closes ([`Server::serve_stdio`]).
    ///
    /// # Errors
    /// I/O errors reading stdin.
    #[cfg(feature = "stdio")]
    pub async fn serve_stdio(&self) -> io::Result<()> {
        self.server.serve_stdio().await
    }

    /// Serves on any reader / writer pair, e.g. an in-memory [`crate::memory::pipe`]
    /// ([`Server::serve_io`]).
    ///
    /// # Errors
    /// I/O errors reading `reader`.
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.server.serve_io(reader, writer).await
    }

    /// [`McpServer::serve_io`] with explicit limits ([`Server::serve_io_with`]).
    ///
    /// # Errors
    /// As [`McpServer::serve_io`].
    pub async fn serve_io_with<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.server.serve_io_with(reader, writer, config).await
    }

    /// Serves on stdin and stdout until stdin closes or `shutdown` completes, then drains
    /// ([`Server::serve_stdio_until`]).
    ///
    /// # Errors
    /// I/O errors reading stdin.
    #[cfg(feature = "stdio")]
    pub async fn serve_stdio_until(
        &self,
        config: StdioConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        self.server.serve_stdio_until(config, shutdown).await
    }

    /// Serves on a reader / writer pair until `shutdown` completes, then drains
    /// ([`Server::serve_io_until`]).
    ///
    /// # Errors
    /// As [`McpServer::serve_io`].
    pub async fn serve_io_until<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.server
            .serve_io_until(reader, writer, config, shutdown)
            .await
    }

    /// An axum router serving it at `config.path` ([`Server::http_router`]).
    #[cfg(feature = "http-server")]
    pub fn http_router(&self, config: crate::server::http::HttpConfig) -> axum::Router {
        self.server.http_router(config)
    }

    /// Binds `addr` and serves streamable HTTP with the default configuration
    /// ([`Server::serve_http`]).
    ///
    /// # Errors
    /// Binding or accept errors.
    #[cfg(feature = "http-server")]
    pub async fn serve_http(&self, addr: impl tokio::net::ToSocketAddrs) -> io::Result<()> {
        self.server.serve_http(addr).await
    }

    /// Serves streamable HTTP on an existing listener until `shutdown` completes, then drains
    /// ([`Server::serve_http_on`]).
    ///
    /// # Errors
    /// As [`Server::serve_http_on`].
    #[cfg(feature = "http-server")]
    pub async fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
        config: crate::server::http::HttpConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        self.server.serve_http_on(listener, config, shutdown).await
    }

    /// Announces a change to the `subscriptions/listen` streams ([`Server::notify`]).
    pub fn notify(&self, change: Change) {
        self.server.notify(change);
    }

    /// Ends every `subscriptions/listen` stream gracefully
    /// ([`Server::shutdown_subscriptions`]).
    pub fn shutdown_subscriptions(&self) {
        self.server.shutdown_subscriptions();
    }
}
