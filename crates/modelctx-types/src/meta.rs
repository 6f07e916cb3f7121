//! `_meta`: the reserved keys and the metadata objects of requests, results and notifications.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer, ser::SerializeMap};
use serde_json::{Value, value::RawValue};

use crate::{ClientCapabilities, Extra, Implementation, LoggingLevel, ProtocolVersion, RequestId};

/// The `_meta` keys the spec reserves.
pub mod keys {
    /// Request: the protocol revision of this request (required on 2026-07-28).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Request: the client's capabilities for this request (required on 2026-07-28).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Request: the client's name and version (recommended).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Request: the log level this request opts in to (deprecated logging).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Request: the token progress notifications refer to.
    pub const PROGRESS_TOKEN: &str = "progressToken";
    /// Result: the server's name and version.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Listen stream notifications and result: the id of the `subscriptions/listen` request.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// W3C trace context (SEP-414).
    pub const TRACEPARENT: &str = "traceparent";
    /// W3C trace state (SEP-414).
    pub const TRACESTATE: &str = "tracestate";
    /// W3C baggage (SEP-414).
    pub const BAGGAGE: &str = "baggage";
}

/// Whether a `_meta` key uses a reserved prefix: one whose second label is
/// `modelcontextprotocol` or `mcp` (`io.modelcontextprotocol/`, `dev.mcp/`, …).
pub fn is_reserved_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    matches!(
        prefix.split('.').nth(1),
        Some("modelcontextprotocol" | "mcp")
    )
}

/// A progress token: a string or an integer, unique among active requests.
pub type ProgressToken = RequestId;

/// The `_meta` object of a result or a notification: an open map with typed accessors for the
/// reserved keys.
///
/// A server that stamps its `serverInfo` on every result can pre-render it once and attach it
/// with [`Meta::set_server_info_raw`], which costs a reference-count increment per result.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    entries: Extra,
    server_info_raw: Option<Arc<RawValue>>,
}

impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
            && self.server_info_raw.as_ref().map(|r| r.get())
                == other.server_info_raw.as_ref().map(|r| r.get())
    }
}

impl Meta {
    /// An empty `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.server_info_raw.is_none()
    }

    /// The value under `key` (a pre-rendered `serverInfo` is not visible here; use
    /// [`Meta::server_info`]).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key)
    }

    /// Sets `key`.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.entries.insert(key.into(), value)
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.entries.remove(key)
    }

    /// The entries as a map.
    pub fn entries(&self) -> &Extra {
        &self.entries
    }

    /// The entries as a mutable map.
    pub fn entries_mut(&mut self) -> &mut Extra {
        &mut self.entries
    }

    /// `io.modelcontextprotocol/serverInfo`, when present and well formed.
    pub fn server_info(&self) -> Option<Implementation> {
        if let Some(raw) = &self.server_info_raw {
            return serde_json::from_str(raw.get()).ok();
        }
        serde_json::from_value(self.entries.get(keys::SERVER_INFO)?.clone()).ok()
    }

    /// Sets `io.modelcontextprotocol/serverInfo`.
    pub fn set_server_info(&mut self, info: &Implementation) {
        self.server_info_raw = None;
        // An Implementation always serializes.
        if let Ok(value) = serde_json::to_value(info) {
            self.entries.insert(keys::SERVER_INFO.to_owned(), value);
        }
    }

    /// Sets `io.modelcontextprotocol/serverInfo` to pre-rendered JSON (see the type docs).
    pub fn set_server_info_raw(&mut self, info: Arc<RawValue>) {
        self.entries.remove(keys::SERVER_INFO);
        self.server_info_raw = Some(info);
    }

    /// `io.modelcontextprotocol/subscriptionId`, when present and well formed.
    pub fn subscription_id(&self) -> Option<RequestId> {
        serde_json::from_value(self.entries.get(keys::SUBSCRIPTION_ID)?.clone()).ok()
    }

    /// Sets `io.modelcontextprotocol/subscriptionId`.
    pub fn set_subscription_id(&mut self, id: &RequestId) {
        let value = match id {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_str()),
        };
        self.entries.insert(keys::SUBSCRIPTION_ID.to_owned(), value);
    }

    /// A `_meta` holding only a subscription id.
    pub fn for_subscription(id: &RequestId) -> Self {
        let mut meta = Self::new();
        meta.set_subscription_id(id);
        meta
    }
}

impl From<Extra> for Meta {
    fn from(entries: Extra) -> Self {
        Self {
            entries,
            server_info_raw: None,
        }
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in &self.entries {
            map.serialize_entry(key, value)?;
        }
        if let Some(raw) = &self.server_info_raw {
            map.serialize_entry(keys::SERVER_INFO, &**raw)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Extra::deserialize(deserializer).map(Self::from)
    }
}

wire_struct! {
    /// The `_meta` object of a request.
    ///
    /// On 2026-07-28 `protocolVersion` and `clientCapabilities` are required; they are optional
    /// here because handshake-era requests carry neither, and because a server must answer a
    /// missing one with a precise `-32602` rather than a generic decoding error.
    #[derive(Default)]
    pub struct RequestMeta {
        /// `io.modelcontextprotocol/protocolVersion`.
        opt "io.modelcontextprotocol/protocolVersion" => protocol_version: ProtocolVersion,
        /// `io.modelcontextprotocol/clientCapabilities` (`{}` means none).
        opt "io.modelcontextprotocol/clientCapabilities" => client_capabilities: ClientCapabilities,
        /// `io.modelcontextprotocol/clientInfo`.
        opt "io.modelcontextprotocol/clientInfo" => client_info: Implementation,
        /// `io.modelcontextprotocol/logLevel`: without it the server sends no log messages.
        opt "io.modelcontextprotocol/logLevel" => log_level: LoggingLevel,
        /// The token progress notifications refer to.
        opt "progressToken" => progress_token: ProgressToken,
    }
}

impl RequestMeta {
    /// The envelope a 2026-07-28 client puts on every request.
    pub fn modern(
        protocol_version: ProtocolVersion,
        client_capabilities: ClientCapabilities,
        client_info: Option<Implementation>,
    ) -> Self {
        Self {
            protocol_version: Some(protocol_version),
            client_capabilities: Some(client_capabilities),
            client_info,
            ..Self::default()
        }
    }
}
