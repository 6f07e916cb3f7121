//! The input-required loop (multi-round-trip requests) of `tools/call`, `prompts/get` and
//! `resources/read`.
//!
//! Each `InputRequiredResult` is one round. Its input requests all go to their callbacks
//! concurrently; the retry is the same request (same name or uri, same arguments, a new id)
//! with `inputResponses` under the server's keys and `requestState` echoed byte for byte —
//! or absent when the server sent none. A round with only `requestState` is retried after a
//! backoff (50 ms doubling to 250 ms by default), reset by any round that asks something.
//! Past `max_rounds` rounds the loop fails with [`ClientError::RoundsExceeded`].
//!
//! The loop's state (the pending answers and state) lives in the loop alone, so concurrent
//! calls never see each other's input requests; nothing is cached.

use std::future::Future;
use std::time::Duration;

use mcp_types::{InputRequests, InputRequiredResult, InputResponseParams, InputResponses};

use super::callbacks::Callbacks;
use super::error::ClientError;
use super::session::RoundOutcome;

/// The loop's limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopLimits {
    /// How many `InputRequiredResult`s one call may receive.
    pub(crate) max_rounds: u32,
    /// The first state-only backoff.
    pub(crate) backoff_initial: Duration,
    /// The largest state-only backoff.
    pub(crate) backoff_max: Duration,
}

impl Default for LoopLimits {
    fn default() -> Self {
        Self {
            max_rounds: 10,
            backoff_initial: Duration::from_millis(50),
            backoff_max: Duration::from_millis(250),
        }
    }
}

/// Drives rounds until a complete result. `first` is an input-required result obtained
/// earlier (a resumed manual loop); it counts as the first round.
pub(crate) async fn drive<P, T, F, Fut>(
    callbacks: &Callbacks,
    version: Option<mcp_types::ProtocolVersion>,
    limits: LoopLimits,
    mut params: P,
    first: Option<InputRequiredResult>,
    mut send: F,
) -> Result<T, ClientError>
where
    P: InputResponseParams + Clone,
    F: FnMut(P) -> Fut,
    Fut: Future<Output = Result<RoundOutcome<T>, ClientError>>,
{
    let mut rounds = 0u32;
    let mut backoff = limits.backoff_initial;
    let mut pending = first;
    loop {
        if let Some(result) = pending.take() {
            rounds += 1;
            if rounds > limits.max_rounds {
                return Err(ClientError::RoundsExceeded {
                    max_rounds: limits.max_rounds,
                });
            }
            let InputRequiredResult {
                input_requests,
                request_state,
                ..
            } = result;
            match input_requests.filter(|requests| !requests.is_empty()) {
                Some(requests) => {
                    let answers =
                        Box::pin(answer_all(callbacks, requests, version.clone())).await?;
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

/// Answers every input request of a round concurrently. If any has no callback the round fails
/// before any callback runs (the user is not asked half the questions); the first refusal
/// cancels the other callbacks.
pub(crate) async fn answer_all(
    callbacks: &Callbacks,
    requests: InputRequests,
    version: Option<mcp_types::ProtocolVersion>,
) -> Result<InputResponses, ClientError> {
    for (key, request) in &requests {
        callbacks.check_answerable(key, request)?;
    }
    let answers = futures::future::try_join_all(
        requests
            .into_iter()
            .map(|(key, request)| callbacks.answer_input(key, request, version.clone())),
    )
    .await?;
    Ok(answers.into_iter().collect())
}
