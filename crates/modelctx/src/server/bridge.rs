//! The bridge: a handler written for 2026-07-28, which asks by returning an
//! `InputRequiredResult`, served to a handshake-era (2025-11-25) client, which cannot receive one.
//!
//! The SDK plays the client's part of the multi-round-trip loop on the server: it checks the
//! questions against the capabilities the session declared (`-32021` otherwise, as on
//! 2026-07-28), sends each one over the back-channel (`elicitation/create` in form or URL mode,
//! `sampling/createMessage`, `roots/list`), and calls the handler again with the answers as
//! `inputResponses` and its state as `requestState` — until it returns a result, within
//! [`MAX_ROUNDS`]. The state never leaves the process, so the handler's plaintext goes straight
//! to its next call: it is not sealed, opened or redeemed in a single-use guard (which would
//! cost a seal, an open and — with a shared guard — a Redis write per round, and could fail a
//! round after the user answered). A handler still sees one code path in both eras (state in,
//! plaintext), and a state-only round waits as the client would.
//! Cancelling the request cancels the question in flight (the client gets
//! `notifications/cancelled` for it).

use std::future::Future;
use std::time::Duration;

use modelctx_types::{
    ErrorObject, InputRequest, InputRequests, InputResponse, InputResponseParams, InputResponses,
    Outcome,
};

use super::RequestContext;
use super::context::name_input_request;
use super::mrtr::{Target, check_input_required};

/// How many times one request may ask for input over the back-channel: the bridge's rounds and
/// a task tool's synchronous run alike.
pub(crate) const MAX_ROUNDS: usize = 16;

/// The wait before retrying a state-only round (no questions, only state: "not yet"), doubled
/// each time up to [`STATE_ONLY_MAX_WAIT`], as the client loop does.
const STATE_ONLY_FIRST_WAIT: Duration = Duration::from_millis(50);
const STATE_ONLY_MAX_WAIT: Duration = Duration::from_millis(250);

/// The rounds one request has asked over the back-channel, against [`MAX_ROUNDS`]. Counted
/// before a round is asked, never after: a handler that keeps asking fails without its user
/// being asked once more, and a handler that is done after the last allowed round gets its
/// answers.
#[derive(Debug, Default)]
pub(crate) struct Rounds(usize);

impl Rounds {
    /// Counts a round about to be asked; past [`MAX_ROUNDS`], the error of a request whose
    /// handler keeps asking (logged).
    pub(crate) fn next(&mut self, method: &str) -> Result<(), ErrorObject> {
        self.0 += 1;
        if self.0 <= MAX_ROUNDS {
            return Ok(());
        }
        let error = ErrorObject::internal(format!(
            "the handler asked for input more than {MAX_ROUNDS} times"
        ));
        tracing::error!(method, "{}", error.message);
        Err(error)
    }
}

/// Whether an accepted form answer is checked against its schema here, or by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormCheck {
    /// [`RequestContext::elicit`]'s check (`-32603` on a misfit).
    Here,
    /// The caller's own (the high-level server's questions).
    #[cfg_attr(not(feature = "macros"), allow(dead_code))]
    Caller,
}

/// Asks one question over the handshake-era back-channel.
///
/// # Errors
/// What the client answered with, or why the question could not be asked.
pub(crate) async fn ask(
    ctx: &RequestContext,
    request: InputRequest,
    check: FormCheck,
) -> Result<InputResponse, ErrorObject> {
    Ok(match request {
        InputRequest::Elicit(elicit) if check == FormCheck::Here => {
            InputResponse::elicit(&ctx.elicit(elicit.params).await?)
        }
        InputRequest::Elicit(elicit) => {
            InputResponse::elicit(&ctx.elicit_unchecked(elicit.params).await?)
        }
        InputRequest::CreateMessage(sample) => {
            InputResponse::create_message(&ctx.create_message(&sample.params).await?)
        }
        InputRequest::ListRoots(_) => InputResponse::list_roots(&ctx.list_roots().await?),
        other => {
            return Err(ErrorObject::internal(format!(
                "cannot ask {} over the back-channel",
                other.method()
            )));
        }
    })
}

/// Asks every question of a round, one after the other in key order (a user answers one dialog
/// at a time; the first refusal ends the round without asking the rest).
///
/// # Errors
/// The first failure of [`ask`].
pub(crate) async fn ask_all(
    ctx: &RequestContext,
    requests: InputRequests,
) -> Result<InputResponses, ErrorObject> {
    let mut answers = InputResponses::new();
    for (key, request) in requests {
        let method = request.method().to_owned();
        let answer = ask(ctx, request, FormCheck::Here)
            .await
            .map_err(|error| name_input_request(error, &key, &method))?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// Runs a multi-round-trip handler on a handshake-era request to its final outcome (see the
/// module docs). `params` are the request's own; each further round gets a copy carrying
/// the answers and the state.
pub(crate) async fn bridge<P, T, F, Fut>(
    ctx: &RequestContext,
    target: &Target<'_>,
    mut params: P,
    call: F,
) -> Result<Outcome<T>, ErrorObject>
where
    P: InputResponseParams + Clone,
    F: Fn(RequestContext, P) -> Fut,
    Fut: Future<Output = Result<Outcome<T>, ErrorObject>>,
{
    let mut wait = STATE_ONLY_FIRST_WAIT;
    let mut rounds = Rounds::default();
    loop {
        let irr = match call(ctx.clone(), params.clone()).await? {
            Outcome::InputRequired(irr) => irr,
            done => {
                if matches!(done, Outcome::Complete(_)) {
                    ctx.announce_elicitations_complete().await;
                }
                return Ok(done);
            }
        };
        check_input_required(ctx, target, &irr)?;
        rounds.next(target.method)?;
        let state = irr.request_state;
        let requests = irr.input_requests.unwrap_or_default();
        let answers = if requests.is_empty() {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = ctx.cancelled() => {
                    return Err(ErrorObject::internal("the request was cancelled"));
                }
            }
            wait = (wait * 2).min(STATE_ONLY_MAX_WAIT);
            None
        } else {
            wait = STATE_ONLY_FIRST_WAIT;
            Some(ask_all(ctx, requests).await?)
        };
        params.set_input_responses(answers);
        params.set_request_state(state);
    }
}
