//! Streamable HTTP for 2026-07-28: one POST endpoint, stateless, no sessions.
//!
//! Each POST carries one message. A request is answered with `application/json`, or — as soon as
//! its handler emits a notification (progress, logs, a listen stream) — with
//! `text/event-stream`: the notifications, then the response, then the end of the stream.
//! Closing the stream cancels the request. `GET` and `DELETE` get 405; `Mcp-Session-Id` is
//! never minted nor honoured.
//!
//! Mount it in your own axum app with [`Server::http_router`], or run it alone with
//! [`Server::serve_http`] or [`Server::serve_http_on`], which serve with `TCP_NODELAY` (no Nagle
//! stalls on SSE) and, on a shutdown, drain within [`HttpConfig::shutdown_grace`].
//! Host and Origin are checked against loopback names by default (DNS-rebinding protection).
//! They are separate settings: serving beyond localhost widens [`HttpConfig::allowed_hosts`]
//! (or [`HttpConfig::allow_any_host`]) and keeps the Origin allowlist, which the transport
//! requires servers to validate; list the web origins that may call with
//! [`HttpConfig::allowed_origins`].
//!
//! The transport sits above the server's core (DESIGN.md, "Layers of the server"): it turns a
//! POST into the core's `Incoming` and the core's reply into JSON or an event stream; nothing
//! below it names HTTP. Its files, each one concern: `config` (the settings), `body` (reading
//! bounded bodies), `guards` (what a request head must pass), `state` (what the endpoint shares
//! between requests), `responses` (plain and JSON responses, the head of an event stream),
//! `sse` (answering one request, with JSON or a stream), `handler` (the endpoint), `sessions`
//! and `handshake_era` (2025-11-25 sessions), `event_store`, `live_stream` and `resumable`
//! (their resumable streams, [`HttpConfig::event_store`]), `serve` (the router and the
//! listener's loop), `legacy_sse` (the opt-in HTTP+SSE transport of 2024-11-05,
//! [`SseConfig`]).

#[cfg(doc)]
use super::Server;

mod body;
mod config;
mod era_only;
mod event_store;
mod guards;
mod handler;
mod handshake_era;
mod legacy_sse;
mod live_stream;
mod responses;
mod resumable;
mod serve;
mod sessions;
mod sse;
mod state;

pub use super::peer_rate::RateLimit;
pub use config::{HttpConfig, Resumability, SseConfig};
#[cfg(feature = "events-redis")]
pub use event_store::RedisEventStore;
pub use event_store::{
    EventStore, EventStoreError, MemoryEventStore, MemoryEventStoreLimits, StoredEvent,
};
