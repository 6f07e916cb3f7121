//! What subscriptions may make the server hold: the limits, and the checks of one request
//! against them. The budget that holds all subscriptions together to them is
//! `subscription_budget`.
//!
//! A `subscriptions/listen` stream lives as long as its client keeps it open, and keeps what it
//! was asked for all that time: the text of its request (a transport owns a request's params
//! for the request's life), the resources it follows, the tasks it watches. A 2025-11-25
//! session keeps the URIs it `resources/subscribe`d for as long as it lives, and its `GET`
//! stream while it is open. The request body budget does not cover either: it is given back
//! once a stream starts. So:
//!
//! * **What one subscription may ask for** ([`SubscriptionLimits`]): a listen request of at most
//!   `max_listen_request` bytes, naming at most `max_resources` distinct URIs, each at most
//!   `max_uri_length` bytes and `max_resource_bytes` in all; a session the same through its
//!   `resources/subscribe`s. Past any of them, `-32602` naming the limit: the request can never
//!   succeed as it is.
//! * **What all of them hold together**: a stream is charged, for its life, an upper estimate of
//!   what it holds ([`SubscriptionLimits::stream_charge`]), and a session each URI it follows
//!   with its entry charge, against one server-wide budget (`max_held_bytes`); one client — a
//!   principal, or else a peer address — may hold at most `max_streams_per_client` streams and
//!   `max_held_bytes_per_client` of the budget. Past any of them, `-32603` with `data.reason =
//!   "subscription_limit"`, as for the task limits: the params are valid, and the same request
//!   succeeds once streams close. A client that opens streams without end is refused, not
//!   served until the server runs out of memory, and a few clients cannot take the whole budget
//!   from the others.
//!
//! Both happen before the acknowledgement, once per stream or subscribe: nothing here runs on
//! an ordinary request.

use modelctx_types::ErrorObject;

/// Bounds on what subscriptions may make the server hold: the resources one listen stream or one
/// 2025-11-25 session follows, and the streams one client and the whole server hold (see
/// [`ServerBuilder::subscription_limits`](super::ServerBuilder::subscription_limits)).
///
/// With the defaults, one stream costs the budget at most [`Self::max_stream_charge`] (461 KiB,
/// most of it for a request of the largest size; a stream following a few resources is charged
/// about 16 KiB), one client at most 16 MiB of it, and all streams and sessions together at
/// most 256 MiB.
///
/// A client is the request's principal ([`ServerBuilder::bind_principal`](super::ServerBuilder::bind_principal), or the authenticated
/// one), or, without one, its peer address (an IPv4 address or an IPv6 /64, on HTTP). Streams
/// of neither count against [`Self::max_held_bytes`] only: those of stdio without a principal
/// (the connection bounds them by its `max_concurrent_requests`), and those of a router from
/// `Server::http_router` served without `into_make_service_with_connect_info::<SocketAddr>()`
/// and without a principal (no address is known): serve it with `ConnectInfo`, or bind a
/// principal, for the per-client limits to hold. Behind a reverse proxy every client has the
/// proxy's address: raise the per-client limits, or bind a principal from a header the proxy
/// sets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubscriptionLimits {
    /// The largest `subscriptions/listen` params, in bytes of JSON text (default 128 KiB): the
    /// stream keeps its request for its whole life. Larger requests get `-32602`.
    pub max_listen_request: usize,
    /// The most distinct resource URIs one listen stream, or one 2025-11-25 session, may follow
    /// (default 1 000).
    pub max_resources: usize,
    /// The longest resource URI one may follow, in bytes (default 4 KiB).
    pub max_uri_length: usize,
    /// The most bytes of URIs one stream or session may follow, all together (default 64 KiB).
    pub max_resource_bytes: usize,
    /// The most streams one client may hold at once (default 256): its listen streams and the
    /// `GET` streams of its 2025-11-25 sessions.
    pub max_streams_per_client: usize,
    /// The most of [`Self::max_held_bytes`] one client's streams and sessions may hold, as
    /// charged (default 16 MiB, a sixteenth of the default budget: 256 streams that follow a
    /// few resources, or 35 of the largest). A 2025-11-25 session counts against the client
    /// that opened it: its authenticated principal, else its address.
    pub max_held_bytes_per_client: usize,
    /// What all listen streams and all sessions' subscriptions together may hold, as charged
    /// (default 256 MiB: over 16 000 streams that follow a few resources each).
    pub max_held_bytes: usize,
}

impl Default for SubscriptionLimits {
    fn default() -> Self {
        Self {
            max_listen_request: 128 * 1024,
            max_resources: 1_000,
            max_uri_length: 4 * 1024,
            max_resource_bytes: 64 * 1024,
            max_streams_per_client: 256,
            max_held_bytes_per_client: 16 * 1024 * 1024,
            max_held_bytes: 256 * 1024 * 1024,
        }
    }
}

impl SubscriptionLimits {
    /// What a stream is charged besides its request and what it follows: an upper estimate of
    /// its request future, context, notification queue and encoded notifications (measured
    /// 7.7 KiB a stream over HTTP/2; HTTP/1.1 adds hyper's buffers of the stream's own
    /// connection, about 15 KiB resident — RELIABILITY.md, "Change bus"). A 2025-11-25 `GET`
    /// stream is charged this alone: what its session follows is charged to the session.
    pub const STREAM_CHARGE: usize = 16 * 1024;

    /// What each resource or task a subscription follows is charged beside its bytes: the
    /// string's header, its allocation's rounding and the entry in the set or the watch.
    pub const ENTRY_CHARGE: usize = 128;

    /// What a listen stream is charged for its life: [`Self::STREAM_CHARGE`], twice its
    /// request's params text of `request_bytes` (the text, and what was decoded out of it), and
    /// the `followed_bytes` of the URIs and task ids it follows with [`Self::ENTRY_CHARGE`] for
    /// each of those `entries`.
    pub fn stream_charge(request_bytes: usize, entries: usize, followed_bytes: usize) -> usize {
        Self::STREAM_CHARGE
            .saturating_add(request_bytes.saturating_mul(2))
            .saturating_add(followed_bytes)
            .saturating_add(entries.saturating_mul(Self::ENTRY_CHARGE))
    }

    /// The most a listen stream can be charged under these limits, tasks aside (each task a
    /// stream watches adds its id and [`Self::ENTRY_CHARGE`]; a stream watches at most as many
    /// tasks as its client may have): [`Self::stream_charge`] of a request of the largest size
    /// following the most URIs, of the most bytes.
    pub fn max_stream_charge(&self) -> usize {
        Self::stream_charge(
            self.max_listen_request,
            self.max_resources,
            self.max_resource_bytes,
        )
    }

    /// Sets [`Self::max_listen_request`].
    #[must_use]
    pub fn max_listen_request(mut self, bytes: usize) -> Self {
        self.max_listen_request = bytes;
        self
    }

    /// Sets [`Self::max_resources`].
    #[must_use]
    pub fn max_resources(mut self, count: usize) -> Self {
        self.max_resources = count;
        self
    }

    /// Sets [`Self::max_uri_length`].
    #[must_use]
    pub fn max_uri_length(mut self, bytes: usize) -> Self {
        self.max_uri_length = bytes;
        self
    }

    /// Sets [`Self::max_resource_bytes`].
    #[must_use]
    pub fn max_resource_bytes(mut self, bytes: usize) -> Self {
        self.max_resource_bytes = bytes;
        self
    }

    /// Sets [`Self::max_streams_per_client`].
    #[must_use]
    pub fn max_streams_per_client(mut self, streams: usize) -> Self {
        self.max_streams_per_client = streams;
        self
    }

    /// Sets [`Self::max_held_bytes_per_client`].
    #[must_use]
    pub fn max_held_bytes_per_client(mut self, bytes: usize) -> Self {
        self.max_held_bytes_per_client = bytes;
        self
    }

    /// Sets [`Self::max_held_bytes`].
    #[must_use]
    pub fn max_held_bytes(mut self, bytes: usize) -> Self {
        self.max_held_bytes = bytes;
        self
    }
}

impl SubscriptionLimits {
    /// `-32602` for a listen request whose params text is larger than a stream may keep.
    pub(crate) fn check_listen_request(&self, bytes: usize) -> Result<(), ErrorObject> {
        if bytes > self.max_listen_request {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: a subscriptions/listen request of {bytes} bytes exceeds the \
                 limit of {} bytes (a stream keeps its request for its life)",
                self.max_listen_request
            )));
        }
        Ok(())
    }

    /// The distinct URIs of a listen request, sorted (a stream finds a changed resource by
    /// binary search), or the `-32602` naming the limit they pass. Counted as sent, before
    /// anything is sorted: a long list of duplicates is refused for its length, so that no
    /// request makes the server sort more than `max_resources` strings.
    pub(crate) fn stream_resources(
        &self,
        mut uris: Vec<String>,
    ) -> Result<Vec<String>, ErrorObject> {
        if uris.len() > self.max_resources {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: resourceSubscriptions lists {} URIs; a listen stream may \
                 follow at most {}",
                uris.len(),
                self.max_resources
            )));
        }
        let mut total = 0usize;
        for uri in &uris {
            self.check_uri_length(uri)?;
            total = total.saturating_add(uri.len());
        }
        if total > self.max_resource_bytes {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: resourceSubscriptions holds {total} bytes of URIs; a listen \
                 stream may follow at most {} bytes of them",
                self.max_resource_bytes
            )));
        }
        uris.sort_unstable();
        uris.dedup();
        uris.shrink_to_fit();
        Ok(uris)
    }

    /// `-32602` for a URI longer than may be followed.
    pub(crate) fn check_uri_length(&self, uri: &str) -> Result<(), ErrorObject> {
        if uri.len() > self.max_uri_length {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: a resource URI of {} bytes exceeds the limit of {} bytes",
                uri.len(),
                self.max_uri_length
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_request_is_checked_before_anything_is_sorted() {
        let limits = SubscriptionLimits::default()
            .max_resources(3)
            .max_uri_length(4)
            .max_resource_bytes(8);
        let uris = |list: &[&str]| list.iter().map(|u| (*u).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            limits.stream_resources(uris(&["b", "a", "b"])).unwrap(),
            ["a", "b"]
        );
        for (list, says) in [
            (&["a", "a", "a", "a"][..], "lists 4 URIs"),
            (&["abcde"][..], "a resource URI of 5 bytes"),
            (&["abcd", "efgh", "i"][..], "holds 9 bytes"),
        ] {
            let error = limits.stream_resources(uris(list)).unwrap_err();
            assert!(error.message.contains(says), "{list:?}: {}", error.message);
        }
        assert!(limits.check_listen_request(128 * 1024).is_ok());
        assert!(limits.check_listen_request(128 * 1024 + 1).is_err());
    }

    /// The bound counts everything a stream is charged: the largest request following the
    /// most URIs of the most bytes — their bytes included — is charged the bound, 461 KiB with
    /// the defaults (the figure the docs give).
    #[test]
    fn the_bound_counts_every_part_of_the_charge() {
        let limits = SubscriptionLimits::default();
        let largest = SubscriptionLimits::STREAM_CHARGE
            + 2 * limits.max_listen_request
            + limits.max_resource_bytes
            + limits.max_resources * SubscriptionLimits::ENTRY_CHARGE;
        assert_eq!(limits.max_stream_charge(), largest);
        assert_eq!(largest.div_ceil(1024), 461);
    }
}
