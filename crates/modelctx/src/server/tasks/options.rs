//! The task runtime's settings: timing, limits, and what happens to the tasks of a dead
//! instance. Set through [`TasksBuilder`](super::TasksBuilder); read by the runtime.

use std::time::Duration;

use super::store::TaskLimits;

/// What happens to a `working` task whose instance died (its lease lapsed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OrphanPolicy {
    /// Run the handler again from the task's last checkpoint (handlers must be re-runnable).
    #[default]
    Resume,
    /// End the task `failed` with `-32603`.
    Fail,
}

/// Timing and recovery settings of the task runtime.
#[derive(Debug, Clone)]
pub(crate) struct TaskOptions {
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll_interval: Duration,
    pub(crate) lease: Duration,
    pub(crate) sweep_interval: Duration,
    pub(crate) cancel_grace: Duration,
    pub(crate) orphans: OrphanPolicy,
    pub(crate) limits: TaskLimits,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            ttl: Some(Duration::from_secs(24 * 3600)),
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            sweep_interval: Duration::from_secs(10),
            cancel_grace: Duration::from_secs(5),
            orphans: OrphanPolicy::Resume,
            limits: TaskLimits {
                per_principal: Some(1_000),
                total: Some(10_000),
            },
        }
    }
}
