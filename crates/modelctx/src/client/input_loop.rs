//! The input-required loop (multi-round-trip requests) of `tools/call`, `prompts/get` and
//! `resources/read`, and the limits on what one call may ask.
//!
//! Each `InputRequiredResult` is one round. Its input requests go to their callbacks
//! concurrently (at most [`LoopLimits::max_concurrent_callbacks`] at once; identical questions
//! under several keys are answered once); the retry is the same request (same name or uri, same
//! arguments, a new id) with `inputResponses` under the server's keys and `requestState` echoed
//! byte for byte — or absent when the server sent none. A round with only `requestState` is
//! retried after a backoff (50 ms doubling to 250 ms by default), reset by any round that asks
//! something.
//!
//! A server must not make one call cost without bound, so every path that answers questions
//! (this loop, a task's input requests, a resumed request, a hand-driven round) checks the same
//! limits before any callback runs: at most `max_rounds` rounds ([`ClientError::RoundsExceeded`]),
//! at most `max_input_requests` questions in a round ([`ClientError::TooManyInputRequests`]),
//! and at most `max_sampling` sampling requests in a call
//! ([`ClientError::SamplingBudgetExceeded`]).
//!
//! The loop's state (the pending answers and state) lives in the loop alone, so concurrent
//! calls never see each other's input requests; the loop keeps nothing between calls (the
//! response cache, `client/cache`, stores only one-round results).

use std::future::Future;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use modelctx_types::{
    InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponseParams,
    InputResponses,
};

use super::callbacks::Callbacks;
use super::error::ClientError;
use super::session::RoundOutcome;

/// The loop's limits (see the module docs and the `ClientBuilder` methods that set them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopLimits {
    /// How many `InputRequiredResult`s one call may receive.
    pub(crate) max_rounds: u32,
    /// The first state-only backoff.
    pub(crate) backoff_initial: Duration,
    /// The largest state-only backoff.
    pub(crate) backoff_max: Duration,
    /// How many input requests one round may carry; on the handshake-era back-channel, how
    /// many server requests are answered at a time.
    pub(crate) max_input_requests: usize,
    /// How many callbacks run at once.
    pub(crate) max_concurrent_callbacks: usize,
    /// How many sampling requests one call may have answered.
    pub(crate) max_sampling: u32,
}

impl Default for LoopLimits {
    fn default() -> Self {
        Self {
            max_rounds: 10,
            backoff_initial: Duration::from_millis(50),
            backoff_max: Duration::from_millis(250),
            max_input_requests: 16,
            max_concurrent_callbacks: 4,
            max_sampling: 10,
        }
    }
}

/// What one call has spent of its limits. One budget follows a call through its
/// input-required loop and the task it may become.
#[derive(Debug, Default)]
pub(crate) struct CallBudget {
    rounds: u32,
    sampling: u32,
}

impl CallBudget {
    /// Counts a round that asked (or carried state); fails past `max_rounds`.
    pub(crate) fn next_round(&mut self, limits: &LoopLimits) -> Result<(), ClientError> {
        self.rounds += 1;
        if self.rounds > limits.max_rounds {
            return Err(ClientError::RoundsExceeded {
                max_rounds: limits.max_rounds,
            });
        }
        Ok(())
    }

    /// Spends `count` sampling requests; fails, spending nothing, when they do not fit.
    fn spend_sampling(&mut self, count: u32, limits: &LoopLimits) -> Result<(), ClientError> {
        if self.sampling.saturating_add(count) > limits.max_sampling {
            return Err(ClientError::SamplingBudgetExceeded {
                max: limits.max_sampling,
            });
        }
        self.sampling += count;
        Ok(())
    }
}

/// Drives rounds until a complete result. `first` is an input-required result obtained
/// earlier (a resumed manual loop); it counts as the first round.
pub(crate) async fn drive<P, T, F, Fut>(
    callbacks: &Callbacks,
    version: Option<modelctx_types::ProtocolVersion>,
    limits: LoopLimits,
    budget: &mut CallBudget,
    mut params: P,
    first: Option<InputRequiredResult>,
    mut send: F,
) -> Result<T, ClientError>
where
    P: InputResponseParams + Clone,
    F: FnMut(P) -> Fut,
    Fut: Future<Output = Result<RoundOutcome<T>, ClientError>>,
{
    let mut backoff = limits.backoff_initial;
    let mut pending = first;
    loop {
        if let Some(result) = pending.take() {
            budget.next_round(&limits)?;
            let InputRequiredResult {
                input_requests,
                request_state,
                ..
            } = result;
            match input_requests.filter(|requests| !requests.is_empty()) {
                Some(requests) => {
                    let answers = Box::pin(answer_all(
                        callbacks,
                        requests,
                        version.clone(),
                        &limits,
                        budget,
                    ))
                    .await?;
                    params.set_input_responses(Some(answers));
                    backoff = limits.backoff_initial;
                }
                None => {
                    // Nothing to answer: the server is not ready yet. Retry, but not hot.
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(limits.backoff_max);
                    params.set_input_responses(None);
                }
            }
            // Echoed verbatim, or left out when the server sent none.
            params.set_request_state(request_state);
        }
        // Boxed so that a call's future stays small however deep the transport's is.
        match Box::pin(send(params.clone())).await? {
            RoundOutcome::Complete(result) => return Ok(result),
            RoundOutcome::InputRequired(result) => pending = Some(result),
        }
    }
}

/// Answers every input request of a round, at most `max_concurrent_callbacks` at once. The
/// round fails before any callback runs when it asks too much (more questions than
/// `max_input_requests`, more sampling than the call has left) or when a question has no
/// callback (the user is not asked half the questions); the first refusal cancels the other
/// callbacks. Identical questions under several keys are answered once, and the answer goes
/// under every key.
pub(crate) async fn answer_all(
    callbacks: &Callbacks,
    requests: InputRequests,
    version: Option<modelctx_types::ProtocolVersion>,
    limits: &LoopLimits,
    budget: &mut CallBudget,
) -> Result<InputResponses, ClientError> {
    if requests.len() > limits.max_input_requests {
        return Err(ClientError::TooManyInputRequests {
            count: requests.len(),
            max: limits.max_input_requests,
        });
    }
    for (key, request) in &requests {
        callbacks.check_answerable(key, request)?;
    }
    // At most `max_input_requests` entries: the quadratic search stays small.
    let mut distinct: Vec<(InputRequest, Vec<String>)> = Vec::with_capacity(requests.len());
    for (key, request) in requests {
        match distinct.iter_mut().find(|(asked, _)| *asked == request) {
            Some((_, keys)) => keys.push(key),
            None => distinct.push((request, vec![key])),
        }
    }
    let sampling = distinct
        .iter()
        .filter(|(request, _)| matches!(request, InputRequest::CreateMessage(_)))
        .count();
    budget.spend_sampling(u32::try_from(sampling).unwrap_or(u32::MAX), limits)?;
    let answered: Vec<(Vec<String>, InputResponse)> =
        futures::stream::iter(distinct.into_iter().map(|(request, mut keys)| {
            let version = version.clone();
            async move {
                // The callback sees the first key; the others get the same answer.
                let first = keys.remove(0);
                let (first, response) = callbacks.answer_input(first, request, version).await?;
                keys.insert(0, first);
                Ok::<_, ClientError>((keys, response))
            }
        }))
        .buffer_unordered(limits.max_concurrent_callbacks.max(1))
        .try_collect()
        .await?;
    let mut answers = InputResponses::new();
    for (keys, response) in answered {
        for key in keys {
            answers.insert(key, response.clone());
        }
    }
    Ok(answers)
}
