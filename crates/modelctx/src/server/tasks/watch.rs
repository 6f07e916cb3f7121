//! The watch streams behind `notifications/tasks`: each visible change of the watched tasks,
//! from this instance's announcements at once and from the store every poll interval.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt as _};
use modelctx_types::tasks::DetailedTask;
use tokio::sync::broadcast;

use super::runtime::Runtime;

impl Runtime {
    /// The detailed states of `ids` as they change: each visible change once (the current state
    /// first), from this instance's announcements at once and from the store every poll
    /// interval (changes made by other instances).
    pub(crate) fn watch(
        &self,
        ids: Vec<String>,
        principal: Option<String>,
    ) -> BoxStream<'static, DetailedTask> {
        let Some(runtime) = self.arc() else {
            return futures::stream::pending().boxed();
        };
        let mut interval = tokio::time::interval(self.options.poll_interval);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let state = Watch {
            updates: self.updates.subscribe(),
            queue: ids.iter().cloned().collect(),
            sent: HashMap::new(),
            runtime,
            ids,
            principal,
            interval,
        };
        futures::stream::unfold(state, |mut watch| async move {
            loop {
                while let Some(id) = watch.queue.pop_front() {
                    if let Some(task) = watch.check(&id).await {
                        return Some((task, watch));
                    }
                }
                tokio::select! {
                    update = watch.updates.recv() => match update {
                        Ok(id) => {
                            if watch.ids.contains(&id) {
                                watch.queue.push_back(id);
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => watch.requeue(),
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    _ = watch.interval.tick() => watch.requeue(),
                }
            }
        })
        .boxed()
    }
}

/// The state of one watch stream.
struct Watch {
    runtime: Arc<Runtime>,
    ids: Vec<String>,
    principal: Option<String>,
    updates: broadcast::Receiver<String>,
    queue: VecDeque<String>,
    sent: HashMap<String, DetailedTask>,
    interval: tokio::time::Interval,
}

impl Watch {
    /// Queues every task that can still change.
    fn requeue(&mut self) {
        for id in &self.ids {
            let settled = self.sent.get(id).is_some_and(|t| t.status.is_terminal());
            if !settled && !self.queue.contains(id) {
                self.queue.push_back(id.clone());
            }
        }
    }

    async fn check(&mut self, id: &str) -> Option<DetailedTask> {
        let record = self
            .runtime
            .load_visible(id, self.principal.as_deref())
            .await
            .ok()?;
        let detailed = self.runtime.detailed(&record);
        if self.sent.get(id) == Some(&detailed) {
            return None;
        }
        self.sent.insert(id.to_owned(), detailed.clone());
        Some(detailed)
    }
}
