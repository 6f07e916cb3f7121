//! [`RedisTaskStore`]: tasks in Redis, shared by every server instance behind a load balancer.

use super::store::TaskRecord;

/// A task store in Redis: each task is a hash (`v`: version, `r`: the record as JSON) under
/// `<prefix>:task:<id>`, expiring with the task's TTL (`PEXPIREAT`); the set `<prefix>:active`
/// lists the unfinished ones. The live tasks, for the [limits](super::TaskLimits), are sorted
/// sets scored by expiry: `<prefix>:live` (all) and `<prefix>:owner:p:<principal>` (one
/// principal's; tasks without a principal count towards the total only). Creation and
/// compare-and-swap are Lua scripts, so they are atomic — creation counts and inserts in one
/// step. The kernel's [`crate::store::RedisStore`] for [`TaskRecord`]s.
///
/// The scripts touch the task key, the active set and the live sets together: use a standalone
/// Redis (or Sentinel), or a prefix that is a cluster hash tag such as `{mcp}`.
pub type RedisTaskStore = crate::store::RedisStore<TaskRecord>;
