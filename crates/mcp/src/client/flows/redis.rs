//! [`RedisFlowStore`]: flows in Redis, shared by workers on any number of hosts.

use std::sync::Arc;

use futures::future::BoxFuture;
use redis::Script;
use redis::aio::ConnectionManager;

use super::{FlowError, FlowFilter, FlowRecord, FlowStatus, FlowStore};

/// Flows in Redis: each flow is a hash (`v`: version, `r`: the record as JSON) under
/// `<prefix>:flow:<id>`, and one set per status (`<prefix>:status:<status>`) lists the ids.
/// Insert, compare-and-swap and remove are Lua scripts, so each is atomic: of two workers
/// claiming the same answered flow, exactly one script sees the version it read. A write is
/// acknowledged by the primary before its future completes (configure AOF persistence for
/// durability across Redis restarts).
///
/// The scripts touch a flow's hash and the status sets together, and the list script reads
/// hashes by id: use a standalone Redis (or Sentinel), not a cluster.
#[derive(Clone)]
pub struct RedisFlowStore {
    connection: ConnectionManager,
    prefix: String,
    scripts: Arc<Scripts>,
}

impl std::fmt::Debug for RedisFlowStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFlowStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

struct Scripts {
    insert: Script,
    swap: Script,
    remove: Script,
    list: Script,
}

/// KEYS: the flow, its status set. ARGV: version, record, id.
const INSERT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'r', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
";

/// KEYS: the flow, the new status set, then every status set. ARGV: expected version, new
/// version, record, id.
const SWAP: &str = r"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'r', ARGV[3])
for i = 3, #KEYS do redis.call('SREM', KEYS[i], ARGV[4]) end
redis.call('SADD', KEYS[2], ARGV[4])
return 1
";

/// KEYS: the flow, then every status set. ARGV: expected version (or ''), id.
const REMOVE: &str = r"
local v = redis.call('HGET', KEYS[1], 'v')
if v and ARGV[1] ~= '' and v ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
for i = 2, #KEYS do redis.call('SREM', KEYS[i], ARGV[2]) end
if v then return 1 end
return 0
";

/// KEYS: the status sets to read. ARGV: the prefix of flow keys. Drops ids whose flow is gone.
const LIST: &str = r"
local out = {}
for i = 1, #KEYS do
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    local r = redis.call('HGET', ARGV[1] .. id, 'r')
    if r then table.insert(out, r) else redis.call('SREM', KEYS[i], id) end
  end
end
return out
";

fn backend(error: redis::RedisError) -> FlowError {
    FlowError::backend(error)
}

impl RedisFlowStore {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`); keys start with `prefix` (e.g.
    /// `mcp-flows`). The connection reconnects on its own.
    ///
    /// # Errors
    /// An invalid URL, or Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, FlowError> {
        let client = redis::Client::open(url).map_err(backend)?;
        let connection = client.get_connection_manager().await.map_err(backend)?;
        Ok(Self::with_connection(connection, prefix))
    }

    /// A store on a connection the caller made.
    pub fn with_connection(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self {
            connection,
            prefix: prefix.into(),
            scripts: Arc::new(Scripts {
                insert: Script::new(INSERT),
                swap: Script::new(SWAP),
                remove: Script::new(REMOVE),
                list: Script::new(LIST),
            }),
        }
    }

    fn flow_key(&self, id: &str) -> String {
        format!("{}:flow:{id}", self.prefix)
    }

    fn status_key(&self, status: FlowStatus) -> String {
        format!("{}:status:{}", self.prefix, status.as_str())
    }
}

fn decode(json: &str) -> Result<FlowRecord, FlowError> {
    Ok(serde_json::from_str(json)?)
}

impl FlowStore for RedisFlowStore {
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record)?;
            let mut connection = self.connection.clone();
            let inserted: i64 = self
                .scripts
                .insert
                .key(self.flow_key(&record.id))
                .key(self.status_key(record.status))
                .arg(record.version)
                .arg(json)
                .arg(&record.id)
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            if inserted == 1 {
                Ok(())
            } else {
                Err(FlowError::Exists(record.id.clone()))
            }
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let json: Option<String> = redis::cmd("HGET")
                .arg(self.flow_key(id))
                .arg("r")
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
            json.as_deref().map(decode).transpose()
        })
    }

    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record)?;
            let mut connection = self.connection.clone();
            let mut invocation = self.scripts.swap.prepare_invoke();
            invocation
                .key(self.flow_key(&record.id))
                .key(self.status_key(record.status));
            for status in FlowStatus::ALL {
                invocation.key(self.status_key(status));
            }
            let swapped: i64 = invocation
                .arg(expected)
                .arg(record.version)
                .arg(json)
                .arg(&record.id)
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(swapped == 1)
        })
    }

    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>> {
        Box::pin(async move {
            let statuses: &[FlowStatus] = if filter.statuses.is_empty() {
                &FlowStatus::ALL
            } else {
                &filter.statuses
            };
            let mut connection = self.connection.clone();
            let mut invocation = self.scripts.list.prepare_invoke();
            for status in statuses {
                invocation.key(self.status_key(*status));
            }
            let rows: Vec<String> = invocation
                .arg(format!("{}:flow:", self.prefix))
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            let records = rows
                .iter()
                .map(|json| decode(json))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(filter.apply(records))
        })
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, FlowError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let mut invocation = self.scripts.remove.prepare_invoke();
            invocation.key(self.flow_key(id));
            for status in FlowStatus::ALL {
                invocation.key(self.status_key(status));
            }
            let removed: i64 = invocation
                .arg(expected.map(|v| v.to_string()).unwrap_or_default())
                .arg(id)
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(removed == 1)
        })
    }
}
