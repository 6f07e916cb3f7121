//! Following a `Client::listen` subscription in a test: every wait bounded, so a notification
//! that never comes fails the test instead of hanging it.

use std::time::Duration;

use modelctx::client::{Client, ListenEvent, Subscription};
use modelctx::types::SubscriptionFilter;

/// How long any single expected event (or the acknowledgement) may take.
pub const BOUND: Duration = Duration::from_secs(10);

/// Listens with `filter`; panics unless acknowledged within [`BOUND`].
pub async fn listen(client: &Client, filter: SubscriptionFilter) -> Subscription {
    tokio::time::timeout(BOUND, client.listen(filter))
        .await
        .expect("acknowledged in time")
        .unwrap()
}

/// The next event; panics unless one comes within [`BOUND`] on an open stream.
pub async fn next(subscription: &mut Subscription) -> ListenEvent {
    tokio::time::timeout(BOUND, subscription.next())
        .await
        .expect("an event in time")
        .expect("the stream is open")
}

/// The events up to and including the first one for which `last` holds.
pub async fn until(
    subscription: &mut Subscription,
    last: impl Fn(&ListenEvent) -> bool,
) -> Vec<ListenEvent> {
    let mut events = Vec::new();
    loop {
        let event = next(subscription).await;
        let done = last(&event);
        events.push(event);
        if done {
            return events;
        }
    }
}

/// `ListenEvent::ResourceUpdated` for `uri`.
pub fn updated(uri: &str) -> ListenEvent {
    ListenEvent::ResourceUpdated {
        uri: uri.to_owned(),
    }
}
