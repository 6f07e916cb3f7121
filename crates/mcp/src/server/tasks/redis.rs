//! [`RedisStore`]: tasks in Redis, shared by every server instance behind a load balancer.

use futures::future::BoxFuture;
use redis::Script;
use redis::aio::ConnectionManager;

use super::store::{Admission, StoreError, TaskLimits, TaskRecord, TaskStore};

/// A task store in Redis: each task is a hash (`v`: version, `r`: the record as JSON) under
/// `<prefix>:task:<id>`, expiring with the task's TTL (`PEXPIREAT`); the set `<prefix>:active`
/// lists the unfinished ones. The live tasks, for the [limits](TaskLimits), are sorted sets
/// scored by expiry: `<prefix>:live` (all) and `<prefix>:owner:p:<principal>` (one principal's;
/// tasks without a principal count towards the total only). Creation and compare-and-swap
/// are Lua scripts, so they are atomic — creation counts and inserts in one step; a write is
/// acknowledged by the primary before its future completes (configure Redis persistence — AOF
/// — for durability across Redis restarts).
///
/// The scripts touch the task key, the active set and the live sets together: use a standalone
/// Redis (or Sentinel), or a prefix that is a cluster hash tag such as `{mcp}`.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// KEYS: task, active set, live set, and the owner's live set when the principal is counted
/// ([`TaskLimits::counted_principal`]). ARGV: version, record, expiry (`''`: never), terminal,
/// id, now, per-principal limit, total limit (`''`: none). Returns 1 when created, -1 / -2 at
/// the principal's / the total limit, 0 when the id exists.
const CREATE: &str = r"
local owner = KEYS[4]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[6])
if owner then
  redis.call('ZREMRANGEBYSCORE', owner, '-inf', ARGV[6])
  if redis.call('ZCARD', owner) >= tonumber(ARGV[7]) then return -1 end
end
if ARGV[8] ~= '' and redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[8]) then return -2 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'r', ARGV[2])
if ARGV[3] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
if ARGV[4] == '0' then redis.call('SADD', KEYS[2], ARGV[5]) else redis.call('SREM', KEYS[2], ARGV[5]) end
local score = ARGV[3] == '' and '+inf' or ARGV[3]
redis.call('ZADD', KEYS[3], score, ARGV[5])
if owner then
  redis.call('ZADD', owner, score, ARGV[5])
  -- An owner's set lives as long as its last task.
  local last = redis.call('ZRANGE', owner, -1, -1, 'WITHSCORES')[2]
  if last == 'inf' then redis.call('PERSIST', owner) else redis.call('PEXPIREAT', owner, last) end
end
return 1
";

const SWAP: &str = r"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'r', ARGV[3])
if ARGV[4] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[4]) else redis.call('PERSIST', KEYS[1]) end
if ARGV[5] == '0' then redis.call('SADD', KEYS[2], ARGV[6]) else redis.call('SREM', KEYS[2], ARGV[6]) end
return 1
";

/// The active ids whose task still exists; drops the others (expired by Redis) from the set.
const ACTIVE: &str = r"
local live = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. id) == 1 then
    table.insert(live, id)
  else
    redis.call('SREM', KEYS[1], id)
  end
end
return live
";

fn backend(error: redis::RedisError) -> StoreError {
    StoreError::backend(error)
}

impl RedisStore {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`); keys start with `prefix` (e.g.
    /// `mcp-tasks`). The connection reconnects on its own.
    ///
    /// # Errors
    /// An invalid URL, or Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(backend)?;
        let connection = client.get_connection_manager().await.map_err(backend)?;
        Ok(Self {
            connection,
            prefix: prefix.into(),
        })
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.prefix)
    }

    fn active_key(&self) -> String {
        format!("{}:active", self.prefix)
    }

    fn live_key(&self) -> String {
        format!("{}:live", self.prefix)
    }

    fn owner_key(&self, principal: &str) -> String {
        format!("{}:owner:p:{principal}", self.prefix)
    }
}

struct Row {
    json: String,
    expires: String,
    terminal: &'static str,
}

fn row(record: &TaskRecord) -> Result<Row, StoreError> {
    Ok(Row {
        json: serde_json::to_string(record)?,
        expires: record
            .expires_at_ms()
            .map(|at| at.to_string())
            .unwrap_or_default(),
        terminal: if record.is_terminal() { "1" } else { "0" },
    })
}

impl TaskStore for RedisStore {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, Result<Admission, StoreError>> {
        Box::pin(async move {
            let row = row(record)?;
            let limit = |limit: Option<usize>| limit.map(|n| n.to_string()).unwrap_or_default();
            let mut connection = self.connection.clone();
            let script = Script::new(CREATE);
            let mut invocation = script.key(self.task_key(&record.task_id));
            invocation.key(self.active_key()).key(self.live_key());
            if let Some(principal) = limits.counted_principal(record) {
                invocation.key(self.owner_key(principal));
            }
            let created: i64 = invocation
                .arg(record.version)
                .arg(row.json)
                .arg(row.expires)
                .arg(row.terminal)
                .arg(&record.task_id)
                .arg(record.created_at_ms)
                .arg(limit(limits.per_principal))
                .arg(limit(limits.total))
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            match created {
                1 => Ok(Admission::Created),
                -1 => Ok(Admission::PrincipalLimit),
                -2 => Ok(Admission::TotalLimit),
                _ => Err(StoreError::new(format!("task {} exists", record.task_id))),
            }
        })
    }

    fn load<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let json: Option<String> = redis::cmd("HGET")
                .arg(self.task_key(task_id))
                .arg("r")
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
            json.map(|j| serde_json::from_str(&j).map_err(StoreError::from))
                .transpose()
        })
    }

    fn swap<'a>(
        &'a self,
        record: &'a TaskRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let row = row(record)?;
            let mut connection = self.connection.clone();
            let swapped: i64 = Script::new(SWAP)
                .key(self.task_key(&record.task_id))
                .key(self.active_key())
                .arg(expected)
                .arg(record.version)
                .arg(row.json)
                .arg(row.expires)
                .arg(row.terminal)
                .arg(&record.task_id)
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(swapped == 1)
        })
    }

    fn active(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            Script::new(ACTIVE)
                .key(self.active_key())
                .arg(format!("{}:task:", self.prefix))
                .invoke_async(&mut connection)
                .await
                .map_err(backend)
        })
    }

    fn purge_expired(&self, _now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        // Redis expires the task keys itself (PEXPIREAT); only the active set needs cleaning.
        Box::pin(async move { self.active().await.map(|_| 0) })
    }
}
