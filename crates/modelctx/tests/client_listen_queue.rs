//! Issue 32, item 12: a subscription's queue is bounded. A scripted server floods a
//! subscription whose consumer reads nothing until the flood has been routed (a `tools/list`
//! sent after it comes back only once every notification before it was routed): the consumer then
//! finds at most the queue's worth of notifications, preceded by a resync (a list-changed event
//! for each list it follows, an update for each resource it follows), in both eras, bounded in
//! count and in bytes.

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

/// Everything the subscription holds now, without waiting.
fn drain(subscription: &mut Subscription) -> Vec<ListenEvent> {
    std::iter::from_fn(|| subscription.next().now_or_never().flatten()).collect()
}

async fn flooded(handshake: bool, count: usize, padding: usize) -> (Vec<ListenEvent>, u64) {
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
    let events = drain(&mut subscription);
    (events, subscription.missed())
}

/// The resync a lagging subscription following the tools list and `WATCHED` gets first (the
/// handshake-era fake declares `listChanged` for tools, so both eras follow that list).
fn resync() -> [ListenEvent; 2] {
    [
        ListenEvent::ToolsListChanged,
        ListenEvent::ResourceUpdated {
            uri: WATCHED.to_owned(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_gets_the_queue_s_worth_and_a_resync_in_both_eras() {
    for handshake in [false, true] {
        let (events, missed) = flooded(handshake, FLOOD, 0).await;
        assert!(
            events.len() <= QUEUE + 2,
            "handshake {handshake}: {} events held for a consumer that read none",
            events.len()
        );
        assert_eq!(events[..2], resync(), "handshake {handshake}");
        assert_eq!(
            missed,
            u64::try_from(FLOOD - QUEUE).unwrap(),
            "handshake {handshake}"
        );
        // What was queued is delivered in order after the resync.
        if !handshake {
            assert_eq!(
                events[2],
                ListenEvent::ResourceUpdated {
                    uri: "res://0".to_owned()
                }
            );
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
    assert_eq!(events[..2], resync());
    assert_eq!(missed, 40 - u64::try_from(updates).unwrap());
    // A consumer that keeps up loses nothing.
    let (events, missed) = flooded(false, 10, 0).await;
    assert_eq!(events.len(), 10);
    assert_eq!(missed, 0);
}
