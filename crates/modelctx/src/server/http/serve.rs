//! Serving the HTTP endpoint on a listener of its own ([`Server::serve_http_on`]), with a
//! shutdown bounded in time.
//!
//! An accept loop of our own rather than `axum::serve`: axum's graceful shutdown waits for the
//! connections without a bound, and dropping its future leaves the connection tasks it spawned
//! running. Here the connections are tasks of a `JoinSet`: on shutdown each is told to finish
//! its requests and close (hyper's graceful shutdown: HTTP/1.1 closes once the request in
//! flight is answered, HTTP/2 sends GOAWAY), and those still open when the grace period is over
//! are aborted, which drops their requests (their handlers' futures, cancelling them). The
//! method returns only once no connection of it runs. Everything else is as axum serves: hyper's
//! automatic HTTP/1.1 or HTTP/2 (prior knowledge) connection, accept errors retried by axum's
//! `Listener`, and the peer's address as `ConnectInfo<L::Addr>` in each request's extensions,
//! the extension a router served by axum with `into_make_service_with_connect_info` gets.
//!
//! Any axum [`Listener`] serves: a `TcpListener` (its peers' `SocketAddr` reach the per-client
//! limits), a `UnixListener` (local peers; no address, so only a principal names a client), or
//! one of the user's own.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Wake, Waker};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::any;
use axum::serve::Listener;
#[cfg(feature = "auth")]
use bytes::Bytes;
use futures::task::AtomicWaker;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::body::BodyBudget;
use super::config::HttpConfig;
#[cfg(doc)]
use super::config::SseConfig;
use super::handler::handle;
#[cfg(feature = "auth")]
use super::responses::json;
use super::sessions::Sessions;
use super::state::HttpState;
use crate::server::Server;
use crate::server::shutdown::Shutdown;

impl Server {
    /// An axum router serving this server at `config.path` (a tower service; mount it in your
    /// app). Serve it with [`Router::into_make_service_with_connect_info`] for [`SocketAddr`](std::net::SocketAddr) (the
    /// `ConnectInfo` [`Server::serve_http_on`] gives its connections too) to give
    /// [`HttpConfig::session_rate`],
    /// [`RequestContext::peer_addr`](crate::server::RequestContext::peer_addr) and the per-client
    /// [`SubscriptionLimits`](crate::server::SubscriptionLimits) the peers' addresses: without it, and
    /// without a principal, no client is known, so no per-client limit holds (only the
    /// server-wide budget).
    ///
    /// With [`HttpConfig::sse`] set, the router also serves the HTTP+SSE transport of 2024-11-05
    /// at [`SseConfig::sse_path`] and [`SseConfig::messages_path`].
    pub fn http_router(&self, config: HttpConfig) -> Router {
        let path = config.path.clone();
        let state = Arc::new(HttpState {
            server: self.clone(),
            bodies: BodyBudget::new(&config),
            sessions: Sessions::new(
                config.session_rate,
                config.session_idle_timeout,
                config.max_sessions,
            ),
            config,
        });
        let router = Router::new().route(&path, any(handle));
        #[cfg(feature = "auth")]
        let router = match &state.config.auth {
            Some(auth) => {
                let document =
                    Bytes::from(serde_json::to_vec(&auth.metadata()).unwrap_or_default());
                let serve = move || {
                    let document = document.clone();
                    async move { json(200, document.to_vec()) }
                };
                let root = "/.well-known/oauth-protected-resource";
                let router = router.route(&auth.metadata_path(), axum::routing::get(serve.clone()));
                // Clients also look at the root location (RFC 9728 §3.1 fallback).
                if auth.metadata_path() == root {
                    router
                } else {
                    router.route(root, axum::routing::get(serve))
                }
            }
            None => router,
        };
        let sse = state.config.sse.is_some().then(|| Arc::clone(&state));
        let router = router.with_state(state);
        match sse {
            Some(state) => router.merge(super::legacy_sse::router(state)),
            None => router,
        }
    }

    /// An axum router serving the HTTP+SSE transport of 2024-11-05 alone (`GET` at
    /// [`SseConfig::sse_path`], `POST` at [`SseConfig::messages_path`]), with the guards and
    /// limits of `config` and the paths of `config.sse` (the defaults when unset). To serve it
    /// beside streamable HTTP on one listener, set [`HttpConfig::sse`] instead: the router of
    /// [`Server::http_router`] then mounts it, sharing the body budget.
    pub fn sse_router(&self, config: HttpConfig) -> Router {
        let state = Arc::new(HttpState {
            server: self.clone(),
            bodies: BodyBudget::new(&config),
            // The streamable transport's sessions, which this router does not serve.
            sessions: Sessions::new(None, None, 1),
            config,
        });
        super::legacy_sse::router(state)
    }

    /// Binds `addr` and serves the endpoint with the default [`HttpConfig`] until the process
    /// ends. Use a loopback address (`127.0.0.1:3000`) unless you also configure hosts.
    ///
    /// # Errors
    /// Binding or accept errors.
    pub async fn serve_http(&self, addr: impl ToSocketAddrs) -> std::io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.serve_http_on(listener, HttpConfig::default(), std::future::pending())
            .await
    }

    /// Serves the endpoint on an existing listener until `shutdown` completes (e.g.
    /// [`shutdown_signal`](crate::server::shutdown_signal)), then drains.
    ///
    /// The listener is any axum [`Listener`]: a [`TcpListener`] (its connections get
    /// `TCP_NODELAY`, and each request the peer's [`SocketAddr`](std::net::SocketAddr) as
    /// [`ConnectInfo`], which the per-client limits and
    /// [`RequestContext::peer_addr`](crate::server::RequestContext::peer_addr) read), a
    /// `tokio::net::UnixListener` for local clients, or one of your own (each request gets
    /// `ConnectInfo<L::Addr>`).
    ///
    /// On shutdown the listener closes, and `subscriptions/listen` streams end at once with
    /// their closing result, as do the `GET` streams of 2025-11-25 sessions
    /// ([`Server::shutdown_subscriptions`]), so that their clients listen again elsewhere and
    /// the shutdown does not wait for them to hang up. The requests in flight then have
    /// [`HttpConfig::shutdown_grace`] to finish; each connection closes once its requests are
    /// answered, and those still open when the grace period is over are closed, dropping their
    /// requests. The method returns when no connection is left. A 2025-11-25 request that waits
    /// for its client's answer to a question cannot get it during the drain (the answer would
    /// come on a new request), so it ends with the grace period. Connections still waiting in
    /// the kernel's accept backlog are reset, so a rolling restart behind a load balancer should
    /// drain the instance at the balancer before triggering `shutdown`.
    ///
    /// The start-up hooks run first ([`Server::start`]), and the shutdown hooks when the drain
    /// is over ([`Server::stop`]).
    ///
    /// # Errors
    /// A failed start-up. Accept errors are logged and retried (as `axum::serve` does).
    pub async fn serve_http_on<L>(
        &self,
        listener: L,
        config: HttpConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()>
    where
        L: Listener,
        L::Addr: Clone + Send + Sync + 'static,
    {
        self.start().await.map_err(std::io::Error::other)?;
        let mut shutdown = Shutdown::new(shutdown, config.shutdown_grace);
        let router = self.http_router(config);
        let closing = CancellationToken::new();
        let mut connections = JoinSet::new();
        let mut listener = listener;
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => accepted,
                () = shutdown.begins() => break,
            };
            // Reaped here, so that the set holds the open connections only.
            while connections.try_join_next().is_some() {}
            // Without it, an SSE response waits on Nagle + delayed ACK (~40 ms per request).
            // A type check resolved when the loop is compiled for a listener, not at run time.
            if let Some(tcp) = (&stream as &dyn Any).downcast_ref::<TcpStream>()
                && let Err(error) = tcp.set_nodelay(true)
            {
                tracing::debug!(%error, "could not set TCP_NODELAY");
            }
            // The token is shared: a connection takes its lock when it registers its wake-up and
            // when it goes, not at each of its wake-ups (`serve_connection`).
            connections.spawn(serve_connection(
                stream,
                peer,
                router.clone(),
                closing.clone(),
            ));
        }
        drop(listener);
        self.shutdown_subscriptions();
        closing.cancel();
        let closed = async { while connections.join_next().await.is_some() {} };
        if shutdown.bound(closed).await.is_none() {
            tracing::warn!(
                connections = connections.len(),
                "shutdown: the grace period is over; closing the connections still serving"
            );
            connections.shutdown().await;
        }
        self.stop().await;
        Ok(())
    }
}

/// Serves one connection until it closes, or until `closing` asks it to finish (then it closes
/// once its requests are answered).
async fn serve_connection<Io, Addr>(
    stream: Io,
    peer: Addr,
    router: Router,
    closing: CancellationToken,
) where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    Addr: Clone + Send + Sync + 'static,
{
    let service = hyper::service::service_fn(move |mut request| {
        // The peer's address, as `into_make_service_with_connect_info` gives it (one extension
        // insert a request; see DESIGN.md, "Transports").
        request.extensions_mut().insert(ConnectInfo(peer.clone()));
        // A `Router` is always ready (its `poll_ready` is `Ready`); a clone is an `Arc` clone.
        tower::Service::call(&mut router.clone(), request)
    });
    let builder = Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    // The shutdown's wake-up is registered once, with a waker of its own (`Closing`), and the
    // shutdown future is polled again only when that waker fires. Polled beside the connection
    // at each of its wake-ups (a `select!`), it took two locks a poll (the token's and its
    // `Notify`'s), ~330 instructions a `tools/call` (two wake-ups); now a wake-up costs an
    // `AtomicWaker` check and a flag read.
    let signal = Arc::new(Closing::default());
    let signal_waker = Waker::from(Arc::clone(&signal));
    let mut cancelled = std::pin::pin!(closing.cancelled_owned());
    let mut shutting_down = false;
    let served = std::future::poll_fn(|cx| {
        signal.task.register(cx.waker());
        // `fired` is set before the task is woken (`Closing::wake_by_ref`), and the first poll
        // of `cancelled` (here, `fired` starts true) registers its waker.
        if !shutting_down
            && signal.fired.load(Ordering::Relaxed)
            && signal.fired.swap(false, Ordering::AcqRel)
            && cancelled
                .as_mut()
                .poll(&mut Context::from_waker(&signal_waker))
                .is_ready()
        {
            shutting_down = true;
            connection.as_mut().graceful_shutdown();
        }
        connection.as_mut().poll(cx)
    })
    .await;
    if let Err(error) = served {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// The waker of a connection's shutdown future: it notes that the shutdown may have begun and
/// wakes the connection's task.
struct Closing {
    /// Set by a wake-up: the shutdown future is to be polled again.
    fired: AtomicBool,
    /// The connection's task, as of its last poll.
    task: AtomicWaker,
}

impl Default for Closing {
    fn default() -> Self {
        Self {
            // The shutdown future has not been polled yet: the first poll registers it.
            fired: AtomicBool::new(true),
            task: AtomicWaker::new(),
        }
    }
}

impl Wake for Closing {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake();
    }
}
