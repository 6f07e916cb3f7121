//! [`RedisStore`]: records in Redis, shared by instances on any number of hosts.

use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use redis::Script;
use redis::aio::ConnectionManager;

use super::{Inserted, Limits, Record, Scan, StoreError, Tag, VersionedStore};
use crate::redis_link::RedisLink;

/// Records in Redis: each record is a hash (`v`: version, `r`: the record as JSON) under
/// `<prefix>:<key>:<id>` ([`Schema::redis_key`](super::Schema::redis_key)), expiring with the
/// record (`PEXPIREAT`); the sets of the schema's [`Tag`]s list the ids a scan reads. For a
/// counted schema the live records are sorted sets scored by expiry: `<prefix>:live` (all) and
/// `<prefix>:<group key>:<group>` (one group's, while a per-group limit applies).
///
/// Insert, compare-and-swap and remove are Lua scripts, loaded once per store, so each is
/// atomic: an insertion counts and inserts in one step, and of two handles swapping the same
/// version exactly one script sees it. A write is acknowledged by the primary before its future
/// completes (configure AOF persistence for durability across Redis restarts).
///
/// The scripts touch a record's hash, its sets and the live sets together: use a standalone
/// Redis (or Sentinel), or a prefix that is a cluster hash tag such as `{mcp}`.
#[derive(Clone)]
pub struct RedisStore<R> {
    link: RedisLink,
    scripts: Arc<Scripts>,
    record: PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for RedisStore<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.link.debug("RedisStore", f)
    }
}

struct Scripts {
    insert: Script,
    swap: Script,
    remove: Script,
    scan: Script,
    prune: Script,
}

/// KEYS: the record, the live set, the group's live set, then every tag set. ARGV: version,
/// record, expiry (`''`: never), id, now, per-group limit, total limit (`''`: none), counted
/// (`1`), group, group counted (`1`), then one membership flag per tag set. Returns 1 when
/// inserted, -1 / -2 at the group's / the total limit, 0 when the id exists.
const INSERT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local counted = ARGV[8] == '1'
local grouped = ARGV[10] == '1'
if counted then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
  if grouped then
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
    if ARGV[6] ~= '' and redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return -1 end
  end
  if ARGV[7] ~= '' and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[7]) then return -2 end
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'r', ARGV[2])
if ARGV[3] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
for i = 4, #KEYS do
  if ARGV[i + 7] == '1' then redis.call('SADD', KEYS[i], ARGV[4]) else redis.call('SREM', KEYS[i], ARGV[4]) end
end
if counted then
  local score = ARGV[3] == '' and '+inf' or ARGV[3]
  redis.call('ZADD', KEYS[2], score, ARGV[4])
  if grouped then
    redis.call('HSET', KEYS[1], 'g', ARGV[9])
    redis.call('ZADD', KEYS[3], score, ARGV[4])
    -- A group's set lives as long as its last record.
    local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')[2]
    if last == 'inf' then redis.call('PERSIST', KEYS[3]) else redis.call('PEXPIREAT', KEYS[3], last) end
  end
end
return 1
";

/// KEYS: the record, then every tag set. ARGV: expected version, new version, record, expiry
/// (`''`: never), id, then one membership flag per tag set.
const SWAP: &str = r"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'r', ARGV[3])
if ARGV[4] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[4]) else redis.call('PERSIST', KEYS[1]) end
for i = 2, #KEYS do
  if ARGV[i + 4] == '1' then redis.call('SADD', KEYS[i], ARGV[5]) else redis.call('SREM', KEYS[i], ARGV[5]) end
end
return 1
";

/// KEYS: the record, the live set, then every tag set. ARGV: expected version (or ''), id, the
/// key prefix of group sets, counted (`1`).
const REMOVE: &str = r"
local v = redis.call('HGET', KEYS[1], 'v')
if v and ARGV[1] ~= '' and v ~= ARGV[1] then return 0 end
local g = redis.call('HGET', KEYS[1], 'g')
redis.call('DEL', KEYS[1])
for i = 3, #KEYS do redis.call('SREM', KEYS[i], ARGV[2]) end
if ARGV[4] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[2])
  if g then redis.call('ZREM', ARGV[3] .. g, ARGV[2]) end
end
if v then return 1 end
return 0
";

/// KEYS: the tag sets to read. ARGV: the key prefix of records. Drops ids whose record is gone
/// (expired by Redis).
const SCAN: &str = r"
local out = {}
for i = 1, #KEYS do
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    local r = redis.call('HGET', ARGV[1] .. id, 'r')
    if r then table.insert(out, r) else redis.call('SREM', KEYS[i], id) end
  end
end
return out
";

/// KEYS: the tag sets. ARGV: the key prefix of records. Drops ids whose record is gone.
const PRUNE: &str = r"
for i = 1, #KEYS do
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    if redis.call('EXISTS', ARGV[1] .. id) == 0 then redis.call('SREM', KEYS[i], id) end
  end
end
return 0
";

fn backend(error: redis::RedisError) -> StoreError {
    StoreError::backend(error)
}

fn flag(yes: bool) -> &'static str {
    if yes { "1" } else { "0" }
}

impl<R: Record> RedisStore<R> {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`); keys start with `prefix` (e.g.
    /// `mcp-tasks`). The connection reconnects on its own.
    ///
    /// # Errors
    /// An invalid URL, or Redis cannot be reached.
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, StoreError> {
        let link = RedisLink::connect(url, prefix).await.map_err(backend)?;
        Ok(Self::on(link))
    }

    /// A store on a connection the caller made.
    pub fn with_connection(connection: ConnectionManager, prefix: impl Into<String>) -> Self {
        Self::on(RedisLink::new(connection, prefix))
    }

    fn on(link: RedisLink) -> Self {
        Self {
            link,
            scripts: Arc::new(Scripts {
                insert: Script::new(INSERT),
                swap: Script::new(SWAP),
                remove: Script::new(REMOVE),
                scan: Script::new(SCAN),
                prune: Script::new(PRUNE),
            }),
            record: PhantomData,
        }
    }

    fn record_key(&self, id: &str) -> String {
        self.link.key(format_args!("{}:{id}", R::SCHEMA.redis_key))
    }

    fn record_prefix(&self) -> String {
        self.link.key(format_args!("{}:", R::SCHEMA.redis_key))
    }

    fn live_key(&self) -> String {
        self.link.key(format_args!("live"))
    }

    fn group_prefix(&self) -> String {
        self.link
            .key(format_args!("{}:", R::SCHEMA.redis_group_key))
    }

    fn tag_key(&self, tag: &Tag) -> String {
        self.link.key(format_args!("{}", tag.set))
    }

    /// Whether `record` belongs in each of the schema's tag sets.
    fn memberships(record: &R) -> impl Iterator<Item = &'static str> {
        let fields = record.fields();
        R::SCHEMA.tags.iter().map(move |tag| {
            let holds = R::SCHEMA
                .columns
                .iter()
                .position(|c| *c == tag.column)
                .and_then(|i| fields.get(i))
                .and_then(super::Field::tag)
                .is_some_and(|value| value == tag.value);
            flag(holds)
        })
    }

    /// The tag sets a scan reads: those of its index values, or all of them.
    fn scanned_tags(scan: &Scan) -> Result<Vec<&'static Tag>, StoreError> {
        let tags = R::SCHEMA.tags;
        let Some((column, values)) = &scan.index else {
            return Ok(tags.iter().collect());
        };
        values
            .iter()
            .map(|value| {
                tags.iter()
                    .find(|tag| tag.column == *column && tag.value == *value)
                    .ok_or_else(|| {
                        StoreError::new(format!("no Redis set lists {column} = {value}"))
                    })
            })
            .collect()
    }
}

fn expiry(at: Option<u64>) -> String {
    at.map(|at| at.to_string()).unwrap_or_default()
}

fn decode<R: Record>(json: &str) -> Result<R, StoreError> {
    Ok(serde_json::from_str(json)?)
}

impl<R: Record> VersionedStore<R> for RedisStore<R> {
    fn insert<'a>(
        &'a self,
        record: &'a R,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Inserted, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record)?;
            let limit = |limit: Option<usize>| limit.map(|n| n.to_string()).unwrap_or_default();
            let group = limits.counted_group(record);
            let mut invocation = self.scripts.insert.prepare_invoke();
            invocation
                .key(self.record_key(record.id()))
                .key(self.live_key())
                .key(match group {
                    Some(group) => self
                        .link
                        .key(format_args!("{}:{group}", R::SCHEMA.redis_group_key)),
                    None => self.live_key(),
                });
            for tag in R::SCHEMA.tags {
                invocation.key(self.tag_key(tag));
            }
            invocation
                .arg(record.version())
                .arg(json)
                .arg(expiry(record.expires_at_ms()))
                .arg(record.id())
                .arg(limits.now_ms)
                .arg(limit(limits.per_group))
                .arg(limit(limits.total))
                .arg(flag(R::SCHEMA.counted))
                .arg(group.unwrap_or_default())
                .arg(flag(R::SCHEMA.counted && group.is_some()));
            for member in Self::memberships(record) {
                invocation.arg(member);
            }
            let mut connection = self.link.connection.clone();
            let inserted: i64 = invocation
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(match inserted {
                1 => Inserted::Yes,
                -1 => Inserted::GroupFull,
                -2 => Inserted::TotalFull,
                _ => Inserted::Exists,
            })
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<R>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.link.connection.clone();
            let json: Option<String> = redis::cmd("HGET")
                .arg(self.record_key(id))
                .arg("r")
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
            json.as_deref().map(decode).transpose()
        })
    }

    fn load_many<'a>(
        &'a self,
        ids: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Option<R>>, StoreError>> {
        Box::pin(async move {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            // One pipeline, one round trip: each record is a hash, which `MGET` cannot read.
            let mut pipeline = redis::pipe();
            for id in ids {
                pipeline.cmd("HGET").arg(self.record_key(id)).arg("r");
            }
            let mut connection = self.link.connection.clone();
            let found: Vec<Option<String>> = pipeline
                .query_async(&mut connection)
                .await
                .map_err(backend)?;
            found
                .iter()
                .map(|json| json.as_deref().map(decode).transpose())
                .collect()
        })
    }

    fn swap<'a>(&'a self, record: &'a R, expected: u64) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record)?;
            let mut invocation = self.scripts.swap.prepare_invoke();
            invocation.key(self.record_key(record.id()));
            for tag in R::SCHEMA.tags {
                invocation.key(self.tag_key(tag));
            }
            invocation
                .arg(expected)
                .arg(record.version())
                .arg(json)
                .arg(expiry(record.expires_at_ms()))
                .arg(record.id());
            for member in Self::memberships(record) {
                invocation.arg(member);
            }
            let mut connection = self.link.connection.clone();
            let swapped: i64 = invocation
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(swapped == 1)
        })
    }

    fn scan<'a>(&'a self, scan: &'a Scan) -> BoxFuture<'a, Result<Vec<R>, StoreError>> {
        Box::pin(async move {
            let mut invocation = self.scripts.scan.prepare_invoke();
            for tag in Self::scanned_tags(scan)? {
                invocation.key(self.tag_key(tag));
            }
            let mut connection = self.link.connection.clone();
            let rows: Vec<String> = invocation
                .arg(self.record_prefix())
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            let records = rows
                .iter()
                .map(|json| decode(json))
                .collect::<Result<Vec<R>, _>>()?;
            let mut records = scan.apply(records);
            // A record listed by two tags of different columns is returned once.
            records.dedup_by(|a, b| a.id() == b.id());
            Ok(records)
        })
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut invocation = self.scripts.remove.prepare_invoke();
            invocation.key(self.record_key(id)).key(self.live_key());
            for tag in R::SCHEMA.tags {
                invocation.key(self.tag_key(tag));
            }
            let mut connection = self.link.connection.clone();
            let removed: i64 = invocation
                .arg(expected.map(|v| v.to_string()).unwrap_or_default())
                .arg(id)
                .arg(self.group_prefix())
                .arg(flag(R::SCHEMA.counted))
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(removed == 1)
        })
    }

    fn purge_expired(&self, _now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        // Redis expires the records itself (PEXPIREAT); only the tag sets need cleaning.
        Box::pin(async move {
            let mut invocation = self.scripts.prune.prepare_invoke();
            for tag in R::SCHEMA.tags {
                invocation.key(self.tag_key(tag));
            }
            let mut connection = self.link.connection.clone();
            let _: i64 = invocation
                .arg(self.record_prefix())
                .invoke_async(&mut connection)
                .await
                .map_err(backend)?;
            Ok(0)
        })
    }
}
