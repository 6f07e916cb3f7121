//! The loopback channel between the host page in the browser and `mcp app`: what the page
//! posts from the app goes in (checked, queued, bounded), and what `mcp` sends goes out on the
//! page's event stream — messages for the app, or commands for the page itself (resize, display
//! mode, status).
//!
//! One page at a time: a page that (re)connects its event stream takes the channel over, and
//! the stream it replaces ends. Nothing waits on a slow page: the outbound queue is bounded and
//! what does not fit is dropped with a warning, and an app that floods the inbound queue gets
//! its messages refused until `mcp` catches up.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::app::message::AppMessage;
use crate::sync::lock;

/// How many checked messages from the app may wait for the session.
const INBOUND_QUEUE: usize = 64;

/// How many messages for the page may wait for its event stream.
const OUTBOUND_QUEUE: usize = 256;

/// Something for the page's event stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outbound {
    /// A JSON-RPC message the page posts to the app (SSE event `app`).
    App(Value),
    /// A command for the page itself (SSE event `host`).
    Host(Value),
}

/// Why a message from the page was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a JSON-RPC message of the protocol's shapes.
    Shape,
    /// The session is behind (or gone): too many messages waiting.
    Busy,
}

/// Both directions of the channel.
#[derive(Debug)]
pub(crate) struct Channel {
    inbound: mpsc::Sender<AppMessage>,
    page: Mutex<Option<mpsc::Sender<Outbound>>>,
}

impl Channel {
    /// A channel, and the receiving end of what the app sends.
    pub(crate) fn new() -> (Arc<Self>, mpsc::Receiver<AppMessage>) {
        let (inbound, received) = mpsc::channel(INBOUND_QUEUE);
        let channel = Self {
            inbound,
            page: Mutex::new(None),
        };
        (Arc::new(channel), received)
    }

    /// Takes a message the page relayed from the app, if it has the protocol's shape.
    pub(crate) fn receive(&self, message: Value) -> Result<(), Refused> {
        let message = AppMessage::parse(message).ok_or(Refused::Shape)?;
        self.inbound.try_send(message).map_err(|_| Refused::Busy)
    }

    /// A page's event stream connects: what is sent from now on goes to it (and no longer to
    /// the stream before it).
    pub(crate) fn attach_page(&self) -> mpsc::Receiver<Outbound> {
        let (sender, receiver) = mpsc::channel(OUTBOUND_QUEUE);
        *lock(&self.page) = Some(sender);
        receiver
    }

    /// Sends a JSON-RPC message to the app; `false` when no page is connected or it is too far
    /// behind.
    pub(crate) fn to_app(&self, message: Value) -> bool {
        self.send(Outbound::App(message))
    }

    /// Sends a command to the page.
    pub(crate) fn to_page(&self, command: Value) -> bool {
        self.send(Outbound::Host(command))
    }

    fn send(&self, outbound: Outbound) -> bool {
        let page = lock(&self.page);
        page.as_ref()
            .is_some_and(|sender| sender.try_send(outbound).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn checked_messages_go_in_and_the_newest_page_gets_what_goes_out() {
        let (channel, mut received) = Channel::new();
        assert_eq!(
            channel.receive(json!({"method": "ping"})),
            Err(Refused::Shape)
        );
        channel
            .receive(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .unwrap();
        assert!(matches!(
            received.recv().await,
            Some(AppMessage::Request { .. })
        ));

        assert!(!channel.to_app(json!({"early": true})), "no page yet");
        let mut first = channel.attach_page();
        assert!(channel.to_app(json!({"n": 1})));
        assert_eq!(first.recv().await, Some(Outbound::App(json!({"n": 1}))));
        let mut second = channel.attach_page();
        assert!(channel.to_page(json!({"height": 10})));
        assert_eq!(first.recv().await, None, "the replaced stream ends");
        assert_eq!(
            second.recv().await,
            Some(Outbound::Host(json!({"height": 10})))
        );
    }

    #[test]
    fn a_flood_is_refused_not_queued() {
        let (channel, _received) = Channel::new();
        let ping = json!({"jsonrpc": "2.0", "method": "notifications/message"});
        for _ in 0..INBOUND_QUEUE {
            channel.receive(ping.clone()).unwrap();
        }
        assert_eq!(channel.receive(ping), Err(Refused::Busy));
        let _page = channel.attach_page();
        for _ in 0..OUTBOUND_QUEUE {
            assert!(channel.to_app(json!({})));
        }
        assert!(!channel.to_app(json!({})));
    }
}
