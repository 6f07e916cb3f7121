//! What a server announces when something a client may follow changed: the message between
//! the registry (which changes), the change bus (which carries changes between instances) and
//! the streams that tell clients (`subscriptions/listen`, a handshake-era session's
//! notifications). A plain type at the bottom of the server, so that the bus and the handshake
//! era name it without reaching up into the listen stream that consumes it.

/// A change announced to listen streams.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource (or template) list changed.
    ResourcesListChanged,
    /// The contents of this resource changed.
    ResourceUpdated(String),
    /// Anything may have changed (e.g. after a change bus reconnected, when changes may have
    /// been missed): each listen stream gets a list-changed notification for every list it
    /// follows and `notifications/resources/updated` for every resource it follows, so that its
    /// client refetches.
    Resync,
}
