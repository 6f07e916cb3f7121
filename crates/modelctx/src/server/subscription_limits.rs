//! What subscriptions may make the server hold, and the budget that holds them to it.
//!
//! A `subscriptions/listen` stream lives as long as its client keeps it open, and keeps what it
//! was asked for all that time: the text of its request (a transport owns a request's params
//! for the request's life), the resources it follows, the tasks it watches. A 2025-11-25
//! session keeps the URIs it `resources/subscribe`d for as long as it lives. The request body
//! budget does not cover either: it is given back once a stream starts. So:
//!
//! * **What one subscription may ask for** ([`SubscriptionLimits`]): a listen request of at most
//!   `max_listen_request` bytes, naming at most `max_resources` distinct URIs, each at most
//!   `max_uri_length` bytes and `max_resource_bytes` in all; a session the same through its
//!   `resources/subscribe`s. Past any of them, `-32602` naming the limit: the request can never
//!   succeed as it is.
//! * **What all of them hold together**: a stream is charged, for its life, an upper estimate of
//!   what it holds ([`SubscriptionLimits::STREAM_CHARGE`], twice its request's text, and
//!   [`SubscriptionLimits::ENTRY_CHARGE`] per resource and task it follows), and a session each
//!   URI it follows with its entry charge, against one server-wide budget
//!   (`max_held_bytes`); one client — a principal, or else a peer address — may hold at most
//!   `max_streams_per_client` streams. Past either, `-32603` with `data.reason =
//!   "subscription_limit"`, as for the task limits: the params are valid, and the same request
//!   succeeds once streams close. A client that opens streams without end is refused, not
//!   served until the server runs out of memory.
//!
//! Both happen before the acknowledgement, once per stream or subscribe: nothing here runs on
//! an ordinary request.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use modelctx_seal::Principal;
use modelctx_types::ErrorObject;

use super::{RequestContext, ServerBuilder};
use crate::sync::lock;

/// Bounds on what subscriptions may make the server hold: the resources one listen stream or one
/// 2025-11-25 session follows, and the streams one client and the whole server hold (see
/// [`ServerBuilder::subscription_limits`]).
///
/// With the defaults, one stream costs the budget at most [`Self::max_stream_charge`] (about
/// 400 KiB, most of it for a request of the largest size; a stream following a few resources is
/// charged about 16 KiB), and all streams and sessions together at most 256 MiB.
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
    /// The most listen streams one client may hold at once (default 256). A client is the
    /// request's principal ([`ServerBuilder::bind_principal`], or the authenticated one), or,
    /// without one, its peer address (an IPv4 address or an IPv6 /64, on HTTP). Streams with
    /// neither (stdio without a principal) count against [`Self::max_held_bytes`] only. Behind
    /// a reverse proxy every client has the proxy's address: raise this, or bind a principal
    /// from a header the proxy sets.
    pub max_streams_per_client: usize,
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
            max_held_bytes: 256 * 1024 * 1024,
        }
    }
}

impl SubscriptionLimits {
    /// What a listen stream is charged besides its request and what it follows: an upper
    /// estimate of its request future, context, notification queue and encoded notifications
    /// (measured 7.7 KiB a stream over HTTP/2; HTTP/1.1 adds hyper's buffers of the stream's own
    /// connection, about 15 KiB resident — RELIABILITY.md, "Change bus").
    pub const STREAM_CHARGE: usize = 16 * 1024;

    /// What each resource or task a subscription follows is charged beside its bytes: the
    /// string's header, its allocation's rounding and the entry in the set or the watch.
    pub const ENTRY_CHARGE: usize = 128;

    /// The most a listen stream can be charged under these limits, tasks aside (each task a
    /// stream watches adds its id and [`Self::ENTRY_CHARGE`]; a stream watches at most as many
    /// tasks as its client may have).
    pub fn max_stream_charge(&self) -> usize {
        Self::STREAM_CHARGE
            .saturating_add(self.max_listen_request.saturating_mul(2))
            .saturating_add(self.max_resources.saturating_mul(Self::ENTRY_CHARGE))
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

    /// Sets [`Self::max_held_bytes`].
    #[must_use]
    pub fn max_held_bytes(mut self, bytes: usize) -> Self {
        self.max_held_bytes = bytes;
        self
    }

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

impl ServerBuilder {
    /// Bounds what listen streams and 2025-11-25 sessions' subscriptions may make the server
    /// hold (see [`SubscriptionLimits`] for each limit and its default).
    #[must_use]
    pub fn subscription_limits(mut self, limits: SubscriptionLimits) -> Self {
        self.subscription_limits = limits;
        self
    }
}

/// Who a stream is counted against for [`SubscriptionLimits::max_streams_per_client`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Client {
    Principal(Principal),
    #[cfg(feature = "http-server")]
    Peer(std::net::IpAddr),
}

impl Client {
    fn of(ctx: &RequestContext) -> Option<Self> {
        if let Some(principal) = ctx.principal() {
            return Some(Self::Principal(principal.clone()));
        }
        #[cfg(feature = "http-server")]
        if let Some(peer) = ctx.peer_addr() {
            return Some(Self::Peer(super::peer_rate::peer_key(peer.ip())));
        }
        None
    }
}

/// The server-wide account of what subscriptions hold.
#[derive(Debug)]
pub(crate) struct SubscriptionBudget {
    limits: SubscriptionLimits,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    bytes: usize,
    /// Streams per client; a client leaves the map with its last stream.
    streams: HashMap<Client, usize>,
}

/// What one stream or session holds of the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct Hold {
    budget: Arc<SubscriptionBudget>,
    bytes: usize,
    client: Option<Client>,
}

/// The `-32603` of a subscription the server will not hold now (DESIGN.md, "Tasks", on why this
/// code for a limit that a later request may fit).
fn subscription_limit(scope: &str, limit: usize, message: String) -> ErrorObject {
    ErrorObject::internal(message).with_data(
        serde_json::json!({"reason": "subscription_limit", "scope": scope, "limit": limit}),
    )
}

fn server_full(limit: usize) -> ErrorObject {
    subscription_limit(
        "server",
        limit,
        format!(
            "Too many subscriptions: the server holds its limit of {limit} bytes of them; try \
             again when some end"
        ),
    )
}

impl SubscriptionBudget {
    pub(crate) fn new(limits: SubscriptionLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            held: Mutex::new(Held::default()),
        })
    }

    pub(crate) fn limits(&self) -> &SubscriptionLimits {
        &self.limits
    }

    /// Admits a listen stream of `ctx` charged `bytes` for its life, or refuses it when its
    /// client already holds its limit of streams or the budget cannot cover it.
    pub(crate) fn admit_stream(
        self: &Arc<Self>,
        ctx: &RequestContext,
        bytes: usize,
    ) -> Result<Hold, ErrorObject> {
        let client = Client::of(ctx);
        let mut held = lock(&self.held);
        if let Some(client) = &client {
            let limit = self.limits.max_streams_per_client;
            if held.streams.get(client).copied().unwrap_or(0) >= limit {
                return Err(subscription_limit(
                    "client",
                    limit,
                    format!(
                        "Too many subscriptions: this client holds {limit} listen streams, its \
                         limit; close one first"
                    ),
                ));
            }
        }
        if bytes > self.limits.max_held_bytes.saturating_sub(held.bytes) {
            return Err(server_full(self.limits.max_held_bytes));
        }
        held.bytes += bytes;
        if let Some(client) = &client {
            *held.streams.entry(client.clone()).or_default() += 1;
        }
        drop(held);
        Ok(Hold {
            budget: Arc::clone(self),
            bytes,
            client,
        })
    }

    /// A hold of nothing yet, for what a session follows (grown one URI at a time).
    fn empty_hold(self: &Arc<Self>) -> Hold {
        Hold {
            budget: Arc::clone(self),
            bytes: 0,
            client: None,
        }
    }

    /// Makes the handshake-era session that `followed` belongs to follow `uri` (already checked
    /// against `max_uri_length` and the registry). Following a URI again costs nothing.
    pub(crate) fn follow(
        self: &Arc<Self>,
        followed: &mut Followed,
        uri: String,
    ) -> Result<(), ErrorObject> {
        if followed.uris.contains(uri.as_str()) {
            return Ok(());
        }
        let limits = &self.limits;
        if followed.uris.len() >= limits.max_resources {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: this session follows {} resources, the most one session may; \
                 unsubscribe from one first",
                followed.uris.len()
            )));
        }
        if uri.len() > limits.max_resource_bytes.saturating_sub(followed.bytes) {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: this session follows {} bytes of URIs; with this one it would \
                 pass its limit of {} bytes; unsubscribe from some first",
                followed.bytes, limits.max_resource_bytes
            )));
        }
        let hold = followed.hold.get_or_insert_with(|| self.empty_hold());
        hold.grow(uri.len() + SubscriptionLimits::ENTRY_CHARGE)?;
        followed.bytes += uri.len();
        followed.uris.insert(uri);
        Ok(())
    }
}

impl Hold {
    /// Charges `bytes` more, or refuses when the budget cannot cover them.
    fn grow(&mut self, bytes: usize) -> Result<(), ErrorObject> {
        let limit = self.budget.limits.max_held_bytes;
        let mut held = lock(&self.budget.held);
        if bytes > limit.saturating_sub(held.bytes) {
            return Err(server_full(limit));
        }
        held.bytes += bytes;
        self.bytes += bytes;
        Ok(())
    }

    /// Gives `bytes` of the charge back.
    fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        let mut held = lock(&self.budget.held);
        held.bytes = held.bytes.saturating_sub(bytes);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = lock(&self.budget.held);
        held.bytes = held.bytes.saturating_sub(self.bytes);
        if let Some(client) = self.client.take()
            && let Some(count) = held.streams.get_mut(&client)
        {
            *count -= 1;
            if *count == 0 {
                held.streams.remove(&client);
            }
        }
    }
}

/// The URIs a handshake-era session follows (`resources/subscribe`), with their charge.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    uris: HashSet<String>,
    /// Their lengths, summed.
    bytes: usize,
    /// Their charge against the budget (none until the first).
    hold: Option<Hold>,
}

impl Followed {
    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.uris.contains(uri)
    }

    pub(crate) fn uris(&self) -> impl Iterator<Item = &String> {
        self.uris.iter()
    }

    /// Stops following `uri`, giving its charge back.
    pub(crate) fn remove(&mut self, uri: &str) {
        if self.uris.remove(uri) {
            self.bytes -= uri.len();
            if let Some(hold) = &mut self.hold {
                hold.shrink(uri.len() + SubscriptionLimits::ENTRY_CHARGE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limits: SubscriptionLimits) -> Arc<SubscriptionBudget> {
        SubscriptionBudget::new(limits)
    }

    fn held(budget: &SubscriptionBudget) -> usize {
        lock(&budget.held).bytes
    }

    /// A session's charge follows its URIs: subscribing again is free, unsubscribing gives the
    /// charge back, the session's end gives all of it back; the count and byte limits hold.
    #[test]
    fn a_session_is_charged_for_what_it_follows() {
        let budget = budget(
            SubscriptionLimits::default()
                .max_resources(2)
                .max_resource_bytes(10),
        );
        let mut followed = Followed::default();
        budget.follow(&mut followed, "a://1".into()).unwrap();
        budget.follow(&mut followed, "a://1".into()).unwrap();
        let one = 5 + SubscriptionLimits::ENTRY_CHARGE;
        assert_eq!(held(&budget), one);
        let error = budget.follow(&mut followed, "a://22".into()).unwrap_err();
        assert_eq!(error.code, modelctx_types::ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.contains("limit of 10 bytes"),
            "{}",
            error.message
        );
        budget.follow(&mut followed, "a://2".into()).unwrap();
        let error = budget.follow(&mut followed, "b".into()).unwrap_err();
        assert!(
            error.message.contains("follows 2 resources"),
            "{}",
            error.message
        );
        followed.remove("a://1");
        followed.remove("never followed");
        assert_eq!(held(&budget), one);
        assert!(followed.contains("a://2") && !followed.contains("a://1"));
        drop(followed);
        assert_eq!(held(&budget), 0);
    }

    /// A full budget refuses a session's next URI with the server-wide `-32603`.
    #[test]
    fn a_full_budget_refuses_the_next_uri() {
        let budget = budget(
            SubscriptionLimits::default().max_held_bytes(2 * SubscriptionLimits::ENTRY_CHARGE),
        );
        let mut first = Followed::default();
        budget.follow(&mut first, "x".into()).unwrap();
        let mut second = Followed::default();
        let error = budget.follow(&mut second, "yy".into()).unwrap_err();
        assert_eq!(error.code, modelctx_types::ErrorCode::INTERNAL_ERROR);
        assert_eq!(error.data.unwrap()["scope"], "server");
        drop(first);
        budget.follow(&mut second, "yy".into()).unwrap();
    }

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
}
