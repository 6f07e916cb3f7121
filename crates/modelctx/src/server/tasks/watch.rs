//! The watch streams behind `notifications/tasks`: each visible change of the watched tasks,
//! from this instance's announcements at once and from the store every poll interval.
//!
//! The store is read [`LOAD_BATCH`] tasks at a time ([`TaskStore::load_many`]: one query on
//! SQLite, one pipelined round trip on Redis): a stream following the most tasks a client may
//! have (1 000 by default) costs ten reads when it starts and ten at each poll interval after
//! (the first one interval after the start), where it cost a thousand sequential round trips.
//! The reads that find which tasks the client may see, before the acknowledgement, are the
//! start's: the states they found are the stream's first, not read again. What a stream
//! remembers of each task after sending it is a fingerprint of what it sent, not the task: a
//! completed task's result may be large, and a stream may follow a thousand of them. (The
//! first states are held from the start's reads until sent, as the notifications they are.)
//!
//! [`TaskStore::load_many`]: super::TaskStore::load_many

use std::collections::VecDeque;
use std::hash::{BuildHasher as _, RandomState};
use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt as _};
use modelctx_types::tasks::DetailedTask;
use tokio::sync::broadcast;

use super::rules::now_ms;
use super::runtime::Runtime;
use super::store::TaskRecord;

/// How many tasks one store read covers.
pub(crate) const LOAD_BATCH: usize = 100;

/// The tasks a listen stream follows, as [`Runtime::visible`] found them: a watch starts from
/// them ([`Runtime::watch`]).
pub(crate) struct Visible {
    /// The ids of the unexpired tasks the caller may see, in the order asked.
    pub(crate) ids: Vec<String>,
    /// Their detailed states as read, in the same order: the stream's first notifications.
    first: Vec<DetailedTask>,
    /// This instance's announcements since just before the reads.
    updates: broadcast::Receiver<String>,
}

impl Runtime {
    /// The unexpired tasks among `ids` that `principal` may see, in their order, with their
    /// states (one store read per [`LOAD_BATCH`] ids).
    pub(crate) async fn visible(&self, ids: Vec<String>, principal: Option<&str>) -> Visible {
        // Before the reads: a change announced after a task was read reaches the watch.
        let updates = self.updates.subscribe();
        let mut visible = Vec::with_capacity(ids.len());
        let mut first = Vec::with_capacity(ids.len());
        for batch in ids.chunks(LOAD_BATCH) {
            let names: Vec<&str> = batch.iter().map(String::as_str).collect();
            let records = self.load_visible_batch(&names, principal).await;
            for (id, record) in batch.iter().zip(records) {
                if let Some(record) = record {
                    visible.push(id.clone());
                    // Only what is sent is kept, not the record (its arguments, checkpoint
                    // and answers).
                    first.push(self.detailed(&record));
                }
            }
        }
        Visible {
            ids: visible,
            first,
            updates,
        }
    }

    /// The records of `ids` as `principal` may see them, in one store read (`None`: not
    /// found, expired, another principal's, or the read failed, which is logged).
    async fn load_visible_batch(
        &self,
        ids: &[&str],
        principal: Option<&str>,
    ) -> Vec<Option<TaskRecord>> {
        match self.store.load_many(ids).await {
            Ok(records) => {
                let now = now_ms();
                records
                    .into_iter()
                    .map(|record| record.filter(|r| Self::is_visible(r, principal, now)))
                    .collect()
            }
            Err(error) => {
                tracing::warn!(%error, "task store failure while following tasks");
                ids.iter().map(|_| None).collect()
            }
        }
    }

    /// The detailed states of the `visible` tasks as they change: each visible change once (the
    /// state `visible` read first), from this instance's announcements at once and from the
    /// store every poll interval (changes made by other instances), the first poll one
    /// interval after the start.
    pub(crate) fn watch(
        &self,
        visible: Visible,
        principal: Option<String>,
    ) -> BoxStream<'static, DetailedTask> {
        let Some(runtime) = self.arc() else {
            return futures::stream::pending().boxed();
        };
        let Visible {
            ids,
            first,
            updates,
        } = visible;
        // Not `interval`, whose first tick is at once: the states were just read.
        let poll = self.options.poll_interval;
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + poll, poll);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut by_id: Vec<usize> = (0..ids.len()).collect();
        by_id.sort_unstable_by(|&a, &b| ids[a].cmp(&ids[b]));
        let mut state = Watch {
            updates,
            queue: VecDeque::new(),
            queued: vec![false; ids.len()],
            sent: vec![None; ids.len()],
            ready: VecDeque::with_capacity(first.len()),
            fingerprints: RandomState::new(),
            runtime,
            by_id,
            ids,
            principal,
            interval,
        };
        for (index, detailed) in first.into_iter().enumerate() {
            state.offer(index, detailed);
        }
        futures::stream::unfold(state, |mut watch| async move {
            loop {
                if let Some(task) = watch.ready.pop_front() {
                    return Some((task, watch));
                }
                if !watch.queue.is_empty() {
                    watch.read_batch().await;
                    continue;
                }
                tokio::select! {
                    update = watch.updates.recv() => match update {
                        Ok(id) => {
                            if let Some(index) = watch.index_of(&id) {
                                watch.enqueue(index);
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

/// What a stream last sent for one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    /// A hash of the detailed task as sent (keyed per stream, so no task can be made to
    /// collide with another state of itself on purpose).
    fingerprint: u64,
    /// It was terminal: the task cannot change any more.
    terminal: bool,
}

/// The state of one watch stream. Tasks are named by their index in `ids`.
struct Watch {
    runtime: Arc<Runtime>,
    ids: Vec<String>,
    /// The indices of `ids` in the order of the ids, to find an announced one.
    by_id: Vec<usize>,
    principal: Option<String>,
    updates: broadcast::Receiver<String>,
    /// The tasks to read, each at most once (`queued`).
    queue: VecDeque<usize>,
    queued: Vec<bool>,
    sent: Vec<Option<Sent>>,
    /// Changes read and not yet taken by the stream.
    ready: VecDeque<DetailedTask>,
    fingerprints: RandomState,
    interval: tokio::time::Interval,
}

impl Watch {
    fn index_of(&self, id: &str) -> Option<usize> {
        let at = self
            .by_id
            .binary_search_by(|&i| self.ids[i].as_str().cmp(id))
            .ok()?;
        Some(self.by_id[at])
    }

    fn enqueue(&mut self, index: usize) {
        if !self.queued[index] {
            self.queued[index] = true;
            self.queue.push_back(index);
        }
    }

    /// Queues every task that can still change.
    fn requeue(&mut self) {
        for index in 0..self.ids.len() {
            if !self.sent[index].is_some_and(|sent| sent.terminal) {
                self.enqueue(index);
            }
        }
    }

    /// Reads the next batch of queued tasks and readies those whose visible state changed.
    async fn read_batch(&mut self) {
        let take = self.queue.len().min(LOAD_BATCH);
        let batch: Vec<usize> = self.queue.drain(..take).collect();
        for &index in &batch {
            self.queued[index] = false;
        }
        let names: Vec<&str> = batch.iter().map(|&i| self.ids[i].as_str()).collect();
        let records = self
            .runtime
            .load_visible_batch(&names, self.principal.as_deref())
            .await;
        for (index, record) in batch.into_iter().zip(records) {
            let Some(record) = record else { continue };
            let detailed = self.runtime.detailed(&record);
            self.offer(index, detailed);
        }
    }

    /// Readies `detailed`, the state of task `index` as read, if it is not what was last sent.
    fn offer(&mut self, index: usize, detailed: DetailedTask) {
        let bytes = serde_json::to_vec(&detailed).unwrap_or_default();
        let sent = Sent {
            fingerprint: self.fingerprints.hash_one(&bytes),
            terminal: detailed.status.is_terminal(),
        };
        if self.sent[index] != Some(sent) {
            self.sent[index] = Some(sent);
            self.ready.push_back(detailed);
        }
    }
}
