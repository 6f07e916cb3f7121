//! The server-wide account of what subscriptions hold (`subscription_limits` has the limits):
//! each listen stream, each 2025-11-25 `GET` stream and each session's subscriptions hold a
//! share of one budget, given back when they end, and each client's share is bounded too —
//! in streams and in bytes — so that no few clients can take the budget from the others.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use modelctx_seal::Principal;
use modelctx_types::ErrorObject;

use super::SubscriptionLimits;
use super::limit_error::limit_reached;
use crate::sync::lock;

/// Who a stream or a session's subscriptions are counted against for the per-client limits
/// ([`SubscriptionLimits::max_streams_per_client`],
/// [`SubscriptionLimits::max_held_bytes_per_client`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    Principal(Principal),
    #[cfg(feature = "http-server")]
    Peer(std::net::IpAddr),
}

impl Client {
    /// The client a request or session is counted against: its principal, else (on HTTP) its
    /// peer's address; `None` when neither is known.
    pub(crate) fn of(
        principal: Option<&Principal>,
        peer: Option<std::net::IpAddr>,
    ) -> Option<Self> {
        match (principal, peer) {
            (Some(principal), _) => Some(Self::Principal(principal.clone())),
            #[cfg(feature = "http-server")]
            (None, Some(peer)) => Some(Self::Peer(super::peer_rate::peer_key(peer))),
            _ => None,
        }
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
    /// What each client holds; a client leaves the map when it holds nothing.
    clients: HashMap<Client, Share>,
}

/// One client's part of the budget.
#[derive(Debug, Default, Clone, Copy)]
struct Share {
    streams: usize,
    bytes: usize,
}

/// What one stream or session holds of the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct Hold {
    budget: Arc<SubscriptionBudget>,
    bytes: usize,
    client: Option<Client>,
    /// A stream, counted against its client's `max_streams_per_client` while it lives.
    stream: bool,
}

/// The `-32603` of a subscription the server will not hold now.
fn subscription_limit(scope: &str, limit: usize, message: String) -> ErrorObject {
    limit_reached("subscription_limit", scope, limit, message)
}

impl Held {
    /// Charges `bytes` to the server and to `client`, or refuses when either's limit cannot
    /// cover them.
    fn charge(
        &mut self,
        limits: &SubscriptionLimits,
        client: Option<&Client>,
        bytes: usize,
    ) -> Result<(), ErrorObject> {
        if let Some(client) = client {
            let limit = limits.max_held_bytes_per_client;
            let held = self.clients.get(client).map_or(0, |share| share.bytes);
            if bytes > limit.saturating_sub(held) {
                return Err(subscription_limit(
                    "client",
                    limit,
                    format!(
                        "Too many subscriptions: this client holds {held} bytes of them, and \
                         this one would pass its limit of {limit} bytes; close some first"
                    ),
                ));
            }
        }
        let limit = limits.max_held_bytes;
        if bytes > limit.saturating_sub(self.bytes) {
            return Err(subscription_limit(
                "server",
                limit,
                format!(
                    "Too many subscriptions: the server holds its limit of {limit} bytes of \
                     them; try again when some end"
                ),
            ));
        }
        self.bytes += bytes;
        if let Some(client) = client {
            self.clients.entry(client.clone()).or_default().bytes += bytes;
        }
        Ok(())
    }

    /// Gives `bytes` of `client`'s charge back, and `stream` one of its streams.
    fn release(&mut self, client: Option<&Client>, bytes: usize, stream: bool) {
        self.bytes = self.bytes.saturating_sub(bytes);
        let Some(client) = client else { return };
        if let Some(share) = self.clients.get_mut(client) {
            share.bytes = share.bytes.saturating_sub(bytes);
            if stream {
                share.streams = share.streams.saturating_sub(1);
            }
            if share.streams == 0 && share.bytes == 0 {
                self.clients.remove(client);
            }
        }
    }
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

    /// What everything together holds now.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        lock(&self.held).bytes
    }

    /// Admits a stream of `client` charged `bytes` for its life, or refuses it when the client
    /// already holds its limit of streams, or its share or the budget cannot cover it.
    pub(crate) fn admit(
        self: &Arc<Self>,
        client: Option<Client>,
        bytes: usize,
    ) -> Result<Hold, ErrorObject> {
        let mut held = lock(&self.held);
        if let Some(client) = &client {
            let limit = self.limits.max_streams_per_client;
            if held.clients.get(client).map_or(0, |share| share.streams) >= limit {
                return Err(subscription_limit(
                    "client",
                    limit,
                    format!(
                        "Too many subscriptions: this client holds {limit} streams, its limit; \
                         close one first"
                    ),
                ));
            }
        }
        held.charge(&self.limits, client.as_ref(), bytes)?;
        if let Some(client) = &client {
            held.clients.entry(client.clone()).or_default().streams += 1;
        }
        drop(held);
        Ok(Hold {
            budget: Arc::clone(self),
            bytes,
            client,
            stream: true,
        })
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
        let hold = followed.hold.get_or_insert_with(|| Hold {
            budget: Arc::clone(self),
            bytes: 0,
            client: followed.client.clone(),
            stream: false,
        });
        hold.grow(uri.len() + SubscriptionLimits::ENTRY_CHARGE)?;
        followed.bytes += uri.len();
        followed.uris.insert(uri);
        Ok(())
    }
}

impl Hold {
    /// Charges `bytes` more, or refuses when the client's share or the budget cannot cover them.
    fn grow(&mut self, bytes: usize) -> Result<(), ErrorObject> {
        let mut held = lock(&self.budget.held);
        held.charge(&self.budget.limits, self.client.as_ref(), bytes)?;
        self.bytes += bytes;
        Ok(())
    }

    /// Gives `bytes` of the charge back.
    fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        lock(&self.budget.held).release(self.client.as_ref(), bytes, false);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        lock(&self.budget.held).release(self.client.as_ref(), self.bytes, self.stream);
    }
}

/// The URIs a handshake-era session follows (`resources/subscribe`), with their charge.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    uris: HashSet<String>,
    /// Their lengths, summed.
    bytes: usize,
    /// Who they are charged to: the client that opened the session.
    client: Option<Client>,
    /// Their charge against the budget (none until the first).
    hold: Option<Hold>,
}

impl Followed {
    /// What the session of `client` follows: nothing yet.
    pub(crate) fn of(client: Option<Client>) -> Self {
        Self {
            client,
            ..Self::default()
        }
    }

    /// The client the session is counted against.
    #[cfg(feature = "http-server")]
    pub(crate) fn client(&self) -> Option<&Client> {
        self.client.as_ref()
    }

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

    fn client(name: &str) -> Option<Client> {
        Some(Client::Principal(Principal::new(name)))
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

    /// One client's streams and sessions together hold at most its share of the budget, however
    /// few streams it has: past it `-32603` with `scope: "client"`, while other clients are
    /// served; what it gives back makes room again, and a client that holds nothing leaves the
    /// account.
    #[test]
    fn a_client_holds_at_most_its_share_of_the_budget() {
        let limits = SubscriptionLimits::default();
        let largest = limits.max_stream_charge();
        let budget = budget(limits.clone());
        let alice = client("alice");
        let mut streams: Vec<Hold> = (0..limits.max_held_bytes_per_client / largest)
            .map(|_| budget.admit(alice.clone(), largest).unwrap())
            .collect();
        assert_eq!(streams.len(), 35, "35 of the largest streams, not 256");
        let error = budget.admit(alice.clone(), largest).unwrap_err();
        assert_eq!(error.code, modelctx_types::ErrorCode::INTERNAL_ERROR);
        assert_eq!(
            error.data.unwrap(),
            serde_json::json!({"reason": "subscription_limit", "scope": "client",
                "limit": 16 * 1024 * 1024})
        );
        assert!(
            error.message.contains("this client holds"),
            "{}",
            error.message
        );
        let bob = budget.admit(client("bob"), largest).unwrap();
        streams.pop();
        let again = budget.admit(alice.clone(), largest).unwrap();
        drop((streams, again, bob));
        assert_eq!(held(&budget), 0);
        assert!(
            lock(&budget.held).clients.is_empty(),
            "nobody holds anything"
        );

        // Her sessions count against the same share.
        let budget =
            SubscriptionBudget::new(SubscriptionLimits::default().max_held_bytes_per_client(1_000));
        let stream = budget.admit(alice.clone(), 900).unwrap();
        let mut session = Followed::of(alice.clone());
        let error = budget.follow(&mut session, "a://1".into()).unwrap_err();
        assert_eq!(error.data.unwrap()["scope"], "client");
        drop(stream);
        budget.follow(&mut session, "a://1".into()).unwrap();
        assert!(
            budget.admit(alice, 900).is_err(),
            "the session holds part of it"
        );
    }

    /// A client holds at most its limit of streams, whatever they cost; a session's
    /// subscriptions are no stream.
    #[test]
    fn a_client_holds_a_bounded_number_of_streams() {
        let budget = budget(SubscriptionLimits::default().max_streams_per_client(2));
        let alice = client("alice");
        let mut session = Followed::of(alice.clone());
        budget.follow(&mut session, "a://1".into()).unwrap();
        let first = budget.admit(alice.clone(), 1).unwrap();
        let _second = budget.admit(alice.clone(), 1).unwrap();
        let error = budget.admit(alice.clone(), 1).unwrap_err();
        assert!(
            error.message.contains("holds 2 streams"),
            "{}",
            error.message
        );
        assert!(budget.admit(None, 1).is_ok(), "no client: the budget only");
        drop(first);
        assert!(budget.admit(alice, 1).is_ok());
    }
}
