//! Sampling: the only code that runs `--llm-cmd`. A server's sampling request is answered from
//! an `--answer`, or by the user's LLM command on the prompt — which is the server's text, run
//! at the user's cost — only after the user has seen the prompt and said yes (`--yes` to skip;
//! declined when nobody can answer).

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;

use console::style;
use modelctx::client::CallbackContext;
use modelctx::types::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, ErrorObject, OneOrMany,
    SamplingContent,
};
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

use super::terminal::{Lines, Terminal};
use crate::answers::{Answers, explicit_action};
use crate::safe_text;

/// What the user may type to "Run --llm-cmd on this prompt?": Enter declines.
const RUN_LLM_ANSWERS: &[(&str, &str)] = &[
    ("y", "yes"),
    ("yes", "yes"),
    ("", "no"),
    ("n", "no"),
    ("no", "no"),
];

/// The code a client answers when the user rejects a sampling request (the spec's convention).
const USER_REJECTED: ErrorCode = ErrorCode(-1);

/// How much of a sampling prompt the consent question shows.
const PROMPT_SHOWN_CHARS: usize = 2000;

/// The user's LLM command (`--llm-cmd`) and whether to run it without asking (`--yes`).
#[derive(Debug)]
pub(super) struct Sampler {
    llm_cmd: Option<String>,
    yes: bool,
}

impl Sampler {
    pub(super) fn new(llm_cmd: Option<String>, yes: bool) -> Self {
        Self { llm_cmd, yes }
    }

    /// Answers a sampling request: from an `--answer` (a text, or a whole
    /// `CreateMessageResult`), else by running `--llm-cmd` on the prompt once the user has seen
    /// it and consented (or `--yes`); declined when there is no command.
    pub(super) async fn answer(
        &self,
        terminal: &Terminal,
        answers: &Answers,
        context: CallbackContext,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let mut input = terminal.take().await;
        let prompt = sampling_prompt(&params);
        let key = context.key().unwrap_or(CallbackContext::SAMPLING_KEY);
        terminal.header(
            "asks for an LLM completion (sampling)",
            &format!(
                "{} message(s), at most {} tokens",
                params.messages.len(),
                params.max_tokens
            ),
            Some(format!("--answer {key}=TEXT")),
        );
        if let Some(answer) = answers.for_question(key, CallbackContext::SAMPLING_KEY) {
            terminal.note("answered from --answer");
            return match answer {
                Value::String(text) => Ok(CreateMessageResult::text("modelctx-cli --answer", text)),
                other if explicit_action(other).is_some() => Err(rejected("by --answer")),
                other => serde_json::from_value(other.clone()).map_err(|e| {
                    ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("--answer is not a CreateMessageResult: {e}"),
                    )
                }),
            };
        }
        let Some(command) = &self.llm_cmd else {
            terminal.note("declined: pass --llm-cmd CMD to answer sampling requests");
            return Err(rejected("no --llm-cmd was given"));
        };
        if !self.yes && !consents(terminal, &mut input, command, &prompt).await {
            return Err(rejected("the user declined"));
        }
        terminal.note(&format!(
            "running --llm-cmd `{command}` with the prompt on its stdin"
        ));
        run_llm(command, &prompt).await.map(|text| {
            let model = command.split_whitespace().next().unwrap_or("llm-cmd");
            let model = Path::new(model)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(model);
            CreateMessageResult::text(model, text)
        })
    }
}

/// Shows the prompt the server wants run (escaped, and cut when long) and asks whether to
/// run `--llm-cmd` on it; without a terminal to ask (`mcp bench`) or with stdin closed,
/// the answer is no.
async fn consents(terminal: &Terminal, input: &mut Lines, command: &str, prompt: &str) -> bool {
    if !terminal.interactive() {
        terminal.note("declined: pass --yes to run --llm-cmd for sampling requests unasked");
        return false;
    }
    let mut shown: String = prompt.chars().take(PROMPT_SHOWN_CHARS).collect();
    let more = prompt.chars().count().saturating_sub(PROMPT_SHOWN_CHARS);
    if more > 0 {
        shown.push_str(&format!("… ({more} more characters)"));
    }
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "  {}", style("prompt:").dim().for_stderr());
        for text in safe_text::block(&shown).lines() {
            let _ = writeln!(err, "  | {text}");
        }
    }
    let question = format!(
        "  Run --llm-cmd `{command}` on this prompt? [y]es, [{}]o: ",
        style("N").bold().for_stderr()
    );
    let consented = terminal.choose(input, &question, RUN_LLM_ANSWERS).await == "yes";
    if !consented {
        terminal.note("declined: --llm-cmd was not run (pass --yes to run it unasked)");
    }
    consented
}

fn rejected(why: &str) -> ErrorObject {
    ErrorObject::new(
        USER_REJECTED,
        format!("User rejected sampling request ({why})"),
    )
}

/// The text given to `--llm-cmd`: the system prompt, then the conversation.
fn sampling_prompt(params: &CreateMessageRequestParams) -> String {
    let mut prompt = String::new();
    if let Some(system) = &params.system_prompt {
        prompt.push_str(system);
        prompt.push_str("\n\n");
    }
    let single = params.messages.len() == 1;
    for message in &params.messages {
        let blocks: Vec<&SamplingContent> = match &message.content {
            OneOrMany::One(block) => vec![block],
            OneOrMany::Many(blocks) => blocks.iter().collect(),
        };
        let text: Vec<String> = blocks
            .iter()
            .map(|b| {
                b.as_text()
                    .map_or_else(|| "[non-text content]".to_owned(), str::to_owned)
            })
            .collect();
        if single {
            prompt.push_str(&text.join("\n"));
        } else {
            prompt.push_str(&format!("{}: {}\n", message.role, text.join("\n")));
        }
    }
    prompt
}

async fn run_llm(command: &str, prompt: &str) -> Result<String, ErrorObject> {
    let failed = |what: String| ErrorObject::new(ErrorCode::INTERNAL_ERROR, what);
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("--llm-cmd could not start: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(prompt.as_bytes()).await;
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| failed(format!("--llm-cmd failed: {e}")))?;
    if !output.status.success() {
        return Err(failed(format!("--llm-cmd exited with {}", output.status)));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned())
}
