//! Issue 32, item 12: a subscription's queue is bounded. A scripted server floods a
//! subscription whose consumer reads nothing until the flood has been routed (a `tools/list`
//! sent after it comes back only once every notification before it was routed): the consumer then
//! finds at most the queue's worth of notifications, followed by a resync (a list-changed event
//! for each list it follows, an update for each resource it follows) where the loss was — after
//! the notifications queued before it, so nothing read after the resync is older than what was
//! dropped — in both eras, bounded in count and in bytes. `Subscription::missed` grows at the
//! resync, not before: a consumer that re-reads state when it grows reads nothing older after.

use futures::FutureExt as _;
use modelctx::client::{Client, ListenEvent, Mode, Subscription};
use modelctx::types::SubscriptionFilter;
use modelctx_test_support::client::{FakeServer, pinned, result};
use serde_json::{Value, json};

/// The queue's bound in notifications (`client::listen::QUEUE_MESSAGES`).
const QUEUE: usize = 256;
/// How many notifications the server sends at once: far more than the queue holds.
const FLOOD: usize = 2_000;
const WATCHED: &str = "res://watched";

/// `notifications/resources/updated` for `uri`, tagged with `tag` (2026-07-28) or not.
fn updated(uri: &str, tag: Option<&Value>, padding: usize) -> Value {
    let mut params = json!({"uri": uri, "padding": "x".repeat(padding)});
    if let Some(id) = tag {
        params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": id});
    }
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params})
}

/// A server that acknowledges a listen request (2026-07-28) or accepts `resources/subscribe`
/// (handshake era) and, asked for its tools, first sends `count` updates of `padding` bytes each.
fn flooding_server(count: usize, padding: usize) -> FakeServer {
    let mut tag = None;
    FakeServer::start(move |message| match message["method"].as_str() {
        Some("initialize") => vec![result(
            message,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": true},
                "resources": {"subscribe": true}}, "serverInfo": {"name": "flood", "version": "1"}}),
        )],
        Some("subscriptions/listen") => {
            tag = Some(message["id"].clone());
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"toolsListChanged": true,
                    "resourceSubscriptions": [WATCHED]},
                    "_meta": {"io.modelcontextprotocol/subscriptionId": message["id"]}}}),
            ]
        }
        Some("resources/subscribe") => vec![result(message, json!({}))],
        Some("tools/list") => {
            let mut replies: Vec<Value> = (0..count)
                .map(|n| updated(&format!("res://{n}"), tag.as_ref(), padding))
                .collect();
            // The handshake era matches the filter: only the watched resource is taken.
            if tag.is_none() {
                replies = (0..count)
                    .map(|_| updated(WATCHED, None, padding))
                    .collect();
            }
            replies.push(result(
                message,
                json!({"tools": [], "resultType": "complete"}),
            ));
            replies
        }
        _ => Vec::new(),
    })
}

/// Everything the subscription holds now, without waiting, each with `missed()` after it
/// (outside tokio's cooperative budget, which would end a drain of more than 128 events early).
fn drain(subscription: &mut Subscription) -> Vec<(ListenEvent, u64)> {
    std::iter::from_fn(|| {
        let event = tokio::task::unconstrained(subscription.next())
            .now_or_never()
            .flatten()?;
        Some((event, subscription.missed()))
    })
    .collect()
}

/// The events a consumer that read nothing during the flood finds, and `missed()` after each.
async fn flooded(handshake: bool, count: usize, padding: usize) -> (Vec<ListenEvent>, Vec<u64>) {
    let builder = if handshake {
        Client::builder().mode(Mode::Handshake)
    } else {
        pinned()
    };
    let (client, _log, _received) = flooding_server(count, padding).connect(builder).await;
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed()
        .with_resource(WATCHED);
    let mut subscription = client.listen(filter).await.unwrap();
    // Answered after every notification before it was routed.
    client.list_tools().await.unwrap();
    drain(&mut subscription).into_iter().unzip()
}

/// The resync a lagging subscription following the tools list and `WATCHED` gets (the
/// handshake-era fake declares `listChanged` for tools, so both eras follow that list).
fn resync() -> [ListenEvent; 2] {
    [
        ListenEvent::ToolsListChanged,
        ListenEvent::ResourceUpdated {
            uri: WATCHED.to_owned(),
        },
    ]
}

/// Checks that `events` are the queued updates, then the resync, with `missed()` still 0 while
/// the queued ones are read and `dropped` from the resync on; returns how many were queued.
fn queued_then_resync(events: &[ListenEvent], missed: &[u64], dropped: u64, what: &str) -> usize {
    let queued = events.len() - 2;
    assert_eq!(events[queued..], resync(), "{what}: the resync comes last");
    assert!(
        events[..queued]
            .iter()
            .all(|event| matches!(event, ListenEvent::ResourceUpdated { .. })),
        "{what}: {events:?}"
    );
    assert!(
        missed[..queued].iter().all(|&n| n == 0),
        "{what}: {missed:?}"
    );
    assert!(
        missed[queued..].iter().all(|&n| n == dropped),
        "{what}: {missed:?}"
    );
    queued
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_gets_the_queue_s_worth_and_a_resync_in_both_eras() {
    for handshake in [false, true] {
        let (events, missed) = flooded(handshake, FLOOD, 0).await;
        let what = format!("handshake {handshake}");
        assert!(
            events.len() <= QUEUE + 2,
            "{what}: {} events held for a consumer that read none",
            events.len()
        );
        let dropped = u64::try_from(FLOOD - QUEUE).unwrap();
        let queued = queued_then_resync(&events, &missed, dropped, &what);
        assert_eq!(queued, QUEUE, "{what}");
        // What was queued is delivered in order, the oldest first, before the resync: what
        // was dropped (res://256 on) is newer than all of it.
        if !handshake {
            for (n, event) in events[..queued].iter().enumerate() {
                assert_eq!(
                    *event,
                    ListenEvent::ResourceUpdated {
                        uri: format!("res://{n}")
                    }
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_is_bounded_in_bytes_too() {
    // 40 updates of 256 KiB: 10 MiB, more than the 4 MiB the queue holds.
    let (events, missed) = flooded(false, 40, 256 << 10).await;
    let updates = events.len() - 2;
    assert!(
        (14..=16).contains(&updates),
        "{updates} updates of 256 KiB held (4 MiB is 16)"
    );
    queued_then_resync(
        &events,
        &missed,
        40 - u64::try_from(updates).unwrap(),
        "bytes",
    );
    // A consumer that keeps up loses nothing.
    let (events, missed) = flooded(false, 10, 0).await;
    assert_eq!(events.len(), 10);
    assert!(missed.iter().all(|&n| n == 0), "{missed:?}");
}
