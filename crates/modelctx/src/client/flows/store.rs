//! [`FlowStore`], the storage trait of flows: five primitives a backend implements, and the
//! transitions of a flow's life (answer, claim, advance, finish, release, expire) written once
//! on top of them, each a load and a compare-and-swap; and [`FlowFilter`], what a listing
//! selects. Above the record model; the kernel's backends implement it in `backends.rs`.

use std::fmt;

use futures::future::BoxFuture;
use modelctx_types::{InputRequiredResult, InputResponses};
use serde_json::Value;

use super::error::FlowError;
use super::record::{FlowFailure, FlowRecord};
use super::status::FlowStatus;

/// Which flows [`FlowStore::list`] returns. The default selects every flow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowFilter {
    /// Only these statuses (all when empty).
    pub statuses: Vec<FlowStatus>,
    /// Only the flows of this server.
    pub server: Option<String>,
    /// Only the flows of this owner.
    pub owner: Option<String>,
    /// Only the flows that last changed strictly before this time (ms since the Unix epoch).
    pub updated_before_ms: Option<u64>,
    /// At most this many (the oldest first).
    pub limit: Option<usize>,
}

impl FlowFilter {
    /// Every flow.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only these statuses.
    #[must_use]
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = FlowStatus>) -> Self {
        self.statuses = statuses.into_iter().collect();
        self
    }

    /// Only the flows of `server`.
    #[must_use]
    pub fn server(mut self, server: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self
    }

    /// Only the flows of `owner`.
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// Only the flows that last changed before `at_ms`.
    #[must_use]
    pub fn updated_before_ms(mut self, at_ms: u64) -> Self {
        self.updated_before_ms = Some(at_ms);
        self
    }

    /// At most `limit` flows.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Whether `record` passes (the store-independent check; stores may filter earlier).
    pub fn matches(&self, record: &FlowRecord) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&record.status))
            && self.server.as_ref().is_none_or(|s| *s == record.server)
            && self
                .owner
                .as_ref()
                .is_none_or(|o| record.owner.as_ref() == Some(o))
            && self
                .updated_before_ms
                .is_none_or(|before| record.updated_at_ms < before)
    }
}

/// Storage for flows: five primitives a backend implements, and the transitions of a flow's
/// life built on them.
///
/// Every provided transition is a load followed by [`FlowStore::swap`] on the version read,
/// retried when another writer got in between; so a transition applies to exactly one state of
/// the flow, and of two workers claiming the same answered flow exactly one wins. A backend may
/// override a transition with a native atomic operation as long as it keeps that contract.
///
/// The methods return boxed futures so that the trait is object-safe (`Arc<dyn FlowStore>`).
pub trait FlowStore: Send + Sync + fmt::Debug {
    /// Saves a new flow; [`FlowError::Exists`] if its id is taken.
    fn insert<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>>;

    /// The flow with this id.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>>;

    /// Replaces the stored flow with `record` if, and only if, the stored one's version is
    /// `expected`, atomically. Returns whether it did (`false` also when the flow is gone).
    fn swap<'a>(
        &'a self,
        record: &'a FlowRecord,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, FlowError>>;

    /// The flows that pass `filter`, oldest change first.
    fn list<'a>(
        &'a self,
        filter: &'a FlowFilter,
    ) -> BoxFuture<'a, Result<Vec<FlowRecord>, FlowError>>;

    /// Removes the flow, if its version is `expected` (any version when `None`). Returns
    /// whether it did.
    fn remove<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<bool, FlowError>>;

    /// Saves a new flow (awaiting the user).
    fn save<'a>(&'a self, record: &'a FlowRecord) -> BoxFuture<'a, Result<(), FlowError>> {
        self.insert(record)
    }

    /// Records the user's answers to the current round: `awaiting_user` → `answered`. The
    /// answers must be keyed exactly like the round's questions.
    fn record_answers<'a>(
        &'a self,
        id: &'a str,
        answers: InputResponses,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            loop {
                let current = self
                    .load(id)
                    .await?
                    .ok_or_else(|| FlowError::NotFound(id.to_owned()))?;
                if current.status != FlowStatus::AwaitingUser {
                    return Err(FlowError::WrongStatus {
                        id: id.to_owned(),
                        status: current.status,
                        expected: FlowStatus::AwaitingUser,
                    });
                }
                check_answers(&current, &answers)?;
                let next = current.next(now_ms, |r| {
                    r.answers = Some(answers.clone());
                    r.status = FlowStatus::Answered;
                });
                if self.swap(&next, current.version).await? {
                    return Ok(next);
                }
            }
        })
    }

    /// Claims the flow for `worker` until `now_ms + lease_ms`: `answered` (or `resuming` with a
    /// lease that ran out) → `resuming`. `None` if the flow is not claimable — another worker
    /// holds it, it is not answered yet, or it has ended.
    fn claim<'a>(
        &'a self,
        id: &'a str,
        worker: &'a str,
        now_ms: u64,
        lease_ms: u64,
    ) -> BoxFuture<'a, Result<Option<FlowRecord>, FlowError>> {
        Box::pin(async move {
            loop {
                let Some(current) = self.load(id).await? else {
                    return Ok(None);
                };
                if !current.is_claimable(now_ms) {
                    return Ok(None);
                }
                let next = current.next(now_ms, |r| {
                    r.status = FlowStatus::Resuming;
                    r.worker = Some(worker.to_owned());
                    r.lease_until_ms = Some(now_ms.saturating_add(lease_ms));
                    r.attempts += 1;
                });
                if self.swap(&next, current.version).await? {
                    return Ok(Some(next));
                }
            }
        })
    }

    /// The server asked again: the claimed flow waits for the user with the new round.
    /// [`FlowError::ClaimLost`] if `claimed` is no longer the stored version.
    fn advance<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        input_required: InputRequiredResult,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            let next = claimed.next(now_ms, |r| {
                r.input_required = input_required;
                r.answers = None;
                r.status = FlowStatus::AwaitingUser;
                r.round += 1;
                r.attempts = 0;
                r.lease_until_ms = None;
                r.error = None;
            });
            self.swap_claimed(claimed, next).await
        })
    }

    /// The claimed flow ended: `done` with the server's result, or `failed`.
    fn finish<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        outcome: Result<Value, FlowFailure>,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            let next = claimed.next(now_ms, |r| {
                r.lease_until_ms = None;
                match outcome {
                    Ok(result) => {
                        r.status = FlowStatus::Done;
                        r.result = Some(result);
                        r.error = None;
                    }
                    Err(failure) => {
                        r.status = FlowStatus::Failed;
                        r.error = Some(failure);
                    }
                }
            });
            self.swap_claimed(claimed, next).await
        })
    }

    /// The attempt failed in a way worth retrying: the claimed flow goes back to `answered`
    /// (keeping its answers), with the failure recorded.
    fn release<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        failure: FlowFailure,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            let next = claimed.next(now_ms, |r| {
                r.status = FlowStatus::Answered;
                r.lease_until_ms = None;
                r.error = Some(failure);
            });
            self.swap_claimed(claimed, next).await
        })
    }

    /// Replaces the claimed version with `next`, or [`FlowError::ClaimLost`].
    fn swap_claimed<'a>(
        &'a self,
        claimed: &'a FlowRecord,
        next: FlowRecord,
    ) -> BoxFuture<'a, Result<FlowRecord, FlowError>> {
        Box::pin(async move {
            if self.swap(&next, claimed.version).await? {
                Ok(next)
            } else {
                Err(FlowError::ClaimLost(claimed.id.clone()))
            }
        })
    }

    /// Removes the flows in `statuses` that last changed before `before_ms` (each only if it did
    /// not change meanwhile). Returns how many were removed.
    fn expire<'a>(
        &'a self,
        statuses: &'a [FlowStatus],
        before_ms: u64,
    ) -> BoxFuture<'a, Result<u64, FlowError>> {
        Box::pin(async move {
            let filter = FlowFilter::new()
                .statuses(statuses.iter().copied())
                .updated_before_ms(before_ms);
            let mut removed = 0;
            for record in self.list(&filter).await? {
                if self.remove(&record.id, Some(record.version)).await? {
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }
}

/// The answers are keyed exactly like the questions.
fn check_answers(record: &FlowRecord, answers: &InputResponses) -> Result<(), FlowError> {
    let asked: Vec<&String> = record
        .questions()
        .map(|q| q.keys().collect())
        .unwrap_or_default();
    let missing: Vec<&str> = asked
        .iter()
        .filter(|key| !answers.contains_key(key.as_str()))
        .map(|key| key.as_str())
        .collect();
    let unexpected: Vec<&str> = answers
        .keys()
        .filter(|key| !asked.contains(key))
        .map(String::as_str)
        .collect();
    if missing.is_empty() && unexpected.is_empty() {
        return Ok(());
    }
    Err(FlowError::InvalidAnswers {
        id: record.id.clone(),
        reason: format!("missing {missing:?}, unexpected {unexpected:?}"),
    })
}
