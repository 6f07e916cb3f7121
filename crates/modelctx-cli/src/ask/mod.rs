//! Answering the server's questions: elicitation forms field by field, URL consent, sampling
//! through `--llm-cmd`, roots — from `--answer`s first, then in the terminal; and, for `mcp app`,
//! consent to open a link an app asks for.
//!
//! Questions are put one at a time (a batched round's callbacks run concurrently; a lock keeps
//! the terminal to one of them). Prompts go to stderr; answers are read from stdin line by
//! line, so a pipe drives them as well as a terminal does. Whatever the server wrote (messages,
//! titles, URLs, choices, prompts) is shown through [`safe_text`](crate::safe_text), never
//! raw. Sampling runs `--llm-cmd` only after the user consents to the prompt shown, unless
//! `--yes`.
//!
//! One file per kind of question, over the terminal they share: [`terminal`] (the lock, the
//! prompts, stdin), then [`elicit_form`], [`elicit_url`], [`sampling`] (the only code that runs
//! `--llm-cmd`, so that what may spend the user's money is read in one place), [`roots`] and
//! [`open_link`].
//! None of them names another or this file; [`Asker`] here holds the settings and the
//! terminal and installs one callback per kind on the client.

mod elicit_form;
mod elicit_url;
mod open_link;
mod roots;
mod sampling;
mod terminal;

use std::sync::Arc;

use modelctx::client::{CallbackContext, ClientBuilder};
use modelctx::types::{CreateMessageRequestParams, ElicitRequestParams, ElicitResult};

use self::roots::Roots;
use self::sampling::Sampler;
use self::terminal::Terminal;
use crate::answers::Answers;
use crate::cli::AnswerArgs;
use crate::progress::ProgressView;

/// Asks the user (or reads prepared answers) on behalf of the server.
#[derive(Debug)]
pub(crate) struct Asker {
    answers: Answers,
    /// `--llm-cmd`, and whether to run it without asking first (`--yes`).
    sampler: Sampler,
    /// `--max-sampling`: the client's sampling budget per request.
    max_sampling: u32,
    roots: Roots,
    terminal: Terminal,
}

impl Asker {
    /// An asker with prepared answers, and from `args` the LLM command, whether to run it
    /// without asking, the sampling budget and the roots to offer (none given: the current
    /// directory).
    pub(crate) fn new(
        answers: Answers,
        args: &AnswerArgs,
        interactive: bool,
        progress: ProgressView,
    ) -> std::io::Result<Self> {
        Ok(Self {
            answers,
            sampler: Sampler::new(args.llm_cmd.clone(), args.yes),
            max_sampling: args.max_sampling,
            roots: Roots::offered(&args.roots)?,
            terminal: Terminal::new(interactive, progress),
        })
    }

    /// Names the server in every question from now on ("show which server is asking").
    pub(crate) fn set_server(&self, label: String) {
        self.terminal.set_server(label);
    }

    /// Installs the callbacks (and the sampling budget) on a client builder.
    pub(crate) fn install(self: &Arc<Self>, builder: ClientBuilder) -> ClientBuilder {
        let elicit = Arc::clone(self);
        let sample = Arc::clone(self);
        let roots = Arc::clone(self);
        builder
            .max_sampling_per_call(self.max_sampling)
            .on_elicitation(
                move |context: CallbackContext, params: ElicitRequestParams| {
                    let asker = Arc::clone(&elicit);
                    async move { Ok(asker.elicit(context, params).await) }
                },
            )
            .on_sampling(
                move |context: CallbackContext, params: CreateMessageRequestParams| {
                    let asker = Arc::clone(&sample);
                    async move {
                        asker
                            .sampler
                            .answer(&asker.terminal, &asker.answers, context, params)
                            .await
                    }
                },
            )
            .on_list_roots(move |context: CallbackContext| {
                let asker = Arc::clone(&roots);
                async move {
                    Ok(asker
                        .roots
                        .answer(&asker.terminal, &asker.answers, &context)
                        .await)
                }
            })
    }

    /// Whether the user consents to opening `url` in the browser, which an app shown by `mcp app`
    /// asked for (`ui/open-link`): asked in the terminal, or answered by `--answer link=…`.
    pub(crate) async fn consent_to_open_link(&self, url: &str) -> bool {
        let mut input = self.terminal.take().await;
        open_link::consent(&self.terminal, &self.answers, &mut input, url).await
    }

    async fn elicit(&self, context: CallbackContext, params: ElicitRequestParams) -> ElicitResult {
        let (terminal, answers) = (&self.terminal, &self.answers);
        let mut input = terminal.take().await;
        match params {
            ElicitRequestParams::Form(form) => {
                elicit_form::answer(terminal, answers, &mut input, context.key(), &form).await
            }
            ElicitRequestParams::Url(url) => {
                elicit_url::answer(terminal, answers, &mut input, context.key(), &url).await
            }
            // A mode this CLI cannot show: it asks nothing it cannot present.
            _ => ElicitResult::decline(),
        }
    }
}
