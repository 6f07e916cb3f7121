//! A Redis connection with a key prefix: what every Redis-backed part of the SDK holds (the
//! task and flow stores, the replay guard of single-use rounds).

use redis::aio::ConnectionManager;

/// A reconnecting connection and the prefix of every key written through it.
#[derive(Clone)]
pub(crate) struct RedisLink {
    pub(crate) connection: ConnectionManager,
    pub(crate) prefix: String,
}

impl RedisLink {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`). The connection reconnects on its own.
    pub(crate) async fn connect(url: &str, prefix: impl Into<String>) -> redis::RedisResult<Self> {
        let client = redis::Client::open(url)?;
        let connection = client.get_connection_manager().await?;
        Ok(Self::new(connection, prefix))
    }

    /// A link on a connection the caller made.
    pub(crate) fn new(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
        }
    }

    /// `<prefix>:<rest>`.
    pub(crate) fn key(&self, rest: impl std::fmt::Display) -> String {
        format!("{}:{rest}", self.prefix)
    }

    /// Writes `name { prefix, .. }`: the Debug output of a type that holds the link.
    pub(crate) fn debug(&self, name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(name)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}
