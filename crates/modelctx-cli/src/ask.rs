//! Answering the server's questions: elicitation forms field by field, URL consent, sampling
//! through `--llm-cmd`, roots — from `--answer`s first, then in the terminal.
//!
//! Questions are put one at a time (a batched round's callbacks run concurrently; a lock keeps
//! the terminal to one of them). Prompts go to stderr; answers are read from stdin line by
//! line, so a pipe drives them as well as a terminal does. Whatever the server wrote (messages,
//! titles, URLs, choices, prompts) is shown through [`safe_text`], never raw. Sampling runs
//! `--llm-cmd` only after the user consents to the prompt shown, unless `--yes`.

use std::collections::BTreeSet;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use console::style;
use modelctx::client::{CallbackContext, ClientBuilder};
use modelctx::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestParams, ElicitRequestUrlParams, ElicitResult, ErrorCode, ErrorObject,
    ListRootsResult, OneOrMany, Root,
};
use serde_json::{Map, Value};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{Mutex, mpsc};

use crate::answers::{Answers, explicit_action};
use crate::cli::AnswerArgs;
use crate::form;
use crate::progress::ProgressView;
use crate::safe_text::{self, line};
use crate::shown_url::highlight_url;

/// What the user may type (lower-cased) to "Send …?" after filling a form, and what it means:
/// Enter accepts the answer shown.
const SEND_ANSWERS: &[(&str, &str)] = &[
    ("", "accept"),
    ("a", "accept"),
    ("accept", "accept"),
    ("y", "accept"),
    ("yes", "accept"),
    ("d", "decline"),
    ("decline", "decline"),
    ("n", "decline"),
    ("no", "decline"),
    ("c", "cancel"),
    ("cancel", "cancel"),
    ("e", "edit"),
    ("edit", "edit"),
];

/// What the user may type to "Do you consent to open it?" for a URL: Enter declines.
const URL_CONSENT_ANSWERS: &[(&str, &str)] = &[
    ("y", "accept"),
    ("yes", "accept"),
    ("", "decline"),
    ("n", "decline"),
    ("no", "decline"),
    ("c", "cancel"),
    ("cancel", "cancel"),
];

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

/// Asks the user (or reads prepared answers) on behalf of the server.
#[derive(Debug)]
pub(crate) struct Asker {
    answers: Answers,
    llm_cmd: Option<String>,
    /// Run `llm_cmd` without asking first (`--yes`).
    yes: bool,
    /// `--max-sampling`: the client's sampling budget per request.
    max_sampling: u32,
    roots: Vec<Root>,
    /// Whether to ask on stdin at all (`mcp bench` never does).
    interactive: bool,
    server: OnceLock<String>,
    progress: ProgressView,
    input: Mutex<Lines>,
}

/// What the user chose at one prompt.
enum Step<T> {
    Value(T),
    Stop(ElicitAction),
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
        let roots: Vec<PathBuf> = if args.roots.is_empty() {
            vec![std::env::current_dir()?]
        } else {
            args.roots.clone()
        };
        let roots = roots
            .iter()
            .map(|path| root_for(path))
            .collect::<std::io::Result<_>>()?;
        Ok(Self {
            answers,
            llm_cmd: args.llm_cmd.clone(),
            yes: args.yes,
            max_sampling: args.max_sampling,
            roots,
            interactive,
            server: OnceLock::new(),
            progress,
            input: Mutex::new(Lines::default()),
        })
    }

    /// Names the server in every question from now on ("show which server is asking").
    pub(crate) fn set_server(&self, label: String) {
        let _ = self.server.set(label);
    }

    fn server(&self) -> &str {
        self.server.get().map_or("the server", String::as_str)
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
                    async move { asker.sample(context, params).await }
                },
            )
            .on_list_roots(move |context: CallbackContext| {
                let asker = Arc::clone(&roots);
                async move { Ok(asker.list_roots(&context).await) }
            })
    }

    async fn elicit(&self, context: CallbackContext, params: ElicitRequestParams) -> ElicitResult {
        let mut input = self.input.lock().await;
        self.progress.clear();
        match params {
            ElicitRequestParams::Form(form) => self.form(&mut input, context.key(), &form).await,
            ElicitRequestParams::Url(url) => self.url(&mut input, context.key(), &url).await,
            // A mode this CLI cannot show: it asks nothing it cannot present.
            _ => ElicitResult::decline(),
        }
    }

    /// A dim line of commentary (none when not interactive: `mcp bench` stays quiet).
    fn note(&self, text: &str) {
        if self.interactive {
            note_line(text);
        }
    }

    /// Which server asks what; `answer_with` is the `--answer` that would answer it without
    /// asking, shown only where the question names nothing the user could type instead (a
    /// form's fields are named at its prompts, and answer it by those names).
    fn header(&self, what: &str, message: &str, answer_with: Option<String>) {
        if !self.interactive {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "\n{} {} {what}: {}",
            style("?").cyan().bold().for_stderr(),
            style(line(self.server())).bold().for_stderr(),
            style(line(message)).bold().for_stderr()
        );
        if let Some(flag) = answer_with {
            let _ = writeln!(
                err,
                "  {}",
                style(format!("({} answers this without asking)", line(&flag)))
                    .dim()
                    .for_stderr()
            );
        }
    }

    async fn form(
        &self,
        input: &mut Lines,
        key: Option<&str>,
        form: &ElicitRequestFormParams,
    ) -> ElicitResult {
        self.header("asks", &form.message, None);
        let schema = &form.requested_schema;
        let required: BTreeSet<&str> = schema
            .required
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();

        // Prepared answers: one for the whole request, then one per field.
        let mut prepared = Map::new();
        let fields = schema.properties.iter().filter(|(_, f)| form::is_typed(f));
        if let Some(answer) = self.answers.for_form(
            key,
            CallbackContext::FORM_KEY,
            fields.map(|(name, _)| name.as_str()),
        ) {
            if let Some((action, content)) = explicit_action(answer) {
                self.note(&format!("answered from --answer: {action}"));
                return action_result(action, content);
            }
            match answer {
                Value::Object(map) => prepared.extend(map.clone()),
                value if schema.properties.len() == 1 => {
                    if let Some(name) = schema.properties.keys().next() {
                        prepared.insert(name.clone(), value.clone());
                    }
                }
                _ => self.note(
                    "the --answer for this request is not an object, and the form has \
                           several fields; asking",
                ),
            }
        }
        for (name, field) in &schema.properties {
            if !prepared.contains_key(name)
                && let Some(value) = self.answers.for_field(name)
                // An object named after a typed field answered the whole form (above).
                && !(value.is_object() && form::is_typed(field))
            {
                prepared.insert(name.clone(), value.clone());
            }
        }
        let mut content = Map::new();
        for (name, value) in prepared {
            match schema.properties.get(&name) {
                Some(field) => match form::check(field, &value) {
                    Ok(value) => {
                        content.insert(name, value);
                    }
                    Err(problem) => {
                        self.note(&format!("--answer {name}: {problem}; asking instead"));
                    }
                },
                None => self.note(&format!("--answer {name}: the form has no such field")),
            }
        }
        if !content.is_empty() && required.iter().all(|r| content.contains_key(*r)) {
            for (name, field) in &schema.properties {
                if !content.contains_key(name)
                    && let Some(value) = form::default(field)
                {
                    content.insert(name.clone(), value);
                }
            }
            self.note(&format!(
                "answered from --answer: {}",
                Value::Object(content.clone())
            ));
            return ElicitResult::accept(content);
        }
        if !self.interactive {
            self.note("no --answer covers this form; cancelling");
            return ElicitResult::cancel();
        }

        let defaults = schema
            .properties
            .values()
            .any(|f| form::default(f).is_some());
        self.note(if defaults {
            "Type !decline or !cancel at any prompt; Enter keeps a [default]."
        } else {
            "Type !decline or !cancel at any prompt."
        });
        loop {
            let mut answer = content.clone();
            for (name, field) in &schema.properties {
                if answer.contains_key(name) {
                    continue;
                }
                match self
                    .field(input, name, field, required.contains(name.as_str()))
                    .await
                {
                    Step::Value(Some(value)) => {
                        answer.insert(name.clone(), value);
                    }
                    Step::Value(None) => {}
                    Step::Stop(action) => return action_result(action_name(action), None),
                }
            }
            let shown = line(&Value::Object(answer.clone()).to_string()).into_owned();
            let choice = self
                .choose(
                    input,
                    &format!(
                        "  Send {shown}? [{}]ccept, [d]ecline, [c]ancel, [e]dit: ",
                        style("A").bold().for_stderr()
                    ),
                    SEND_ANSWERS,
                )
                .await;
            match choice {
                "accept" => return ElicitResult::accept(answer),
                "edit" => {}
                other => return action_result(other, None),
            }
        }
    }

    /// Asks one field until the input fits; `Value(None)` leaves an optional field out.
    async fn field(
        &self,
        input: &mut Lines,
        name: &str,
        field: &modelctx::types::PrimitiveSchema,
        required: bool,
    ) -> Step<Option<Value>> {
        let label = line(field.title().unwrap_or(name)).into_owned();
        if let Some(description) = field.description() {
            self.note(&format!("{label}: {description}"));
        }
        if let Some(choices) = form::choices(field) {
            let listed: Vec<String> = choices
                .iter()
                .enumerate()
                .map(|(i, (value, title))| {
                    if value == title {
                        format!("{}) {value}", i + 1)
                    } else {
                        format!("{}) {title} ({value})", i + 1)
                    }
                })
                .collect();
            self.note(&format!("  {}", listed.join("  ")));
        }
        let default = form::default(field);
        let prompt = format!(
            "  {}{} ({}){}: ",
            style(&label).bold().for_stderr(),
            if required { "*" } else { "" },
            line(&form::describe(field)),
            default
                .as_ref()
                .map(|d| format!(" [{}]", line(&shown_default(d))))
                .unwrap_or_default()
        );
        loop {
            let Some(line) = self.read(input, &prompt).await else {
                self.note("stdin is closed; cancelling");
                return Step::Stop(ElicitAction::Cancel);
            };
            let line = line.trim();
            match line {
                "!decline" => return Step::Stop(ElicitAction::Decline),
                "!cancel" => return Step::Stop(ElicitAction::Cancel),
                "" => match (&default, required) {
                    (Some(value), _) => return Step::Value(Some(value.clone())),
                    (None, false) => return Step::Value(None),
                    (None, true) => warn("a value is required (or !decline / !cancel)"),
                },
                text => match form::parse(field, text) {
                    Ok(value) => return Step::Value(Some(value)),
                    Err(problem) => warn(&problem),
                },
            }
        }
    }

    async fn url(
        &self,
        input: &mut Lines,
        key: Option<&str>,
        params: &ElicitRequestUrlParams,
    ) -> ElicitResult {
        let key = key.unwrap_or(CallbackContext::URL_KEY);
        self.header(
            "asks you to open a URL",
            &params.message,
            Some(format!("--answer {key}=accept")),
        );
        let shown = highlight_url(&params.url);
        {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "  URL:    {}", shown.line);
            let _ = writeln!(
                err,
                "  domain: {}",
                style(&shown.host).yellow().bold().underlined().for_stderr()
            );
            for warning in &shown.warnings {
                let _ = writeln!(
                    err,
                    "  {} {warning}",
                    style("warning:").red().bold().for_stderr()
                );
            }
            let _ = writeln!(
                err,
                "  {}",
                style("mcp does not open or fetch this URL; if you consent, open it yourself.")
                    .dim()
                    .for_stderr()
            );
        }
        if let Some(answer) = self.answers.for_question(key, CallbackContext::URL_KEY) {
            let action = match answer {
                Value::Bool(true) => Some("accept"),
                Value::Bool(false) => Some("decline"),
                Value::String(text) => Some(text.as_str()),
                other => explicit_action(other).map(|(action, _)| action),
            };
            if let Some(action) = action.filter(|a| ["accept", "decline", "cancel"].contains(a)) {
                self.note(&format!("answered from --answer: {action}"));
                return url_result(action);
            }
        }
        if !self.interactive {
            self.note("no --answer covers this URL; cancelling");
            return ElicitResult::cancel();
        }
        let choice = self
            .choose(
                input,
                &format!(
                    "  Do you consent to open it? [y]es (accept), [{}]o (decline), [c]ancel: ",
                    style("N").bold().for_stderr()
                ),
                URL_CONSENT_ANSWERS,
            )
            .await;
        url_result(choice)
    }

    /// Asks until one of `options` (lower-cased input → choice) is typed; closed stdin cancels.
    async fn choose(
        &self,
        input: &mut Lines,
        prompt: &str,
        options: &[(&str, &'static str)],
    ) -> &'static str {
        loop {
            let Some(line) = self.read(input, prompt).await else {
                self.note("stdin is closed; cancelling");
                return "cancel";
            };
            let typed = line.trim().to_ascii_lowercase();
            if let Some((_, choice)) = options.iter().find(|(text, _)| *text == typed) {
                return choice;
            }
            warn(&format!(
                "{:?}: choose one of the bracketed letters",
                line.trim()
            ));
        }
    }

    async fn read(&self, input: &mut Lines, prompt: &str) -> Option<String> {
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{prompt}");
            let _ = err.flush();
        }
        let line = input.next().await;
        if let Some(line) = &line
            && !std::io::stdin().is_terminal()
        {
            // Nothing echoed what was piped in: show it, so the transcript reads like a session.
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        line
    }

    async fn sample(
        &self,
        context: CallbackContext,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let mut input = self.input.lock().await;
        self.progress.clear();
        let prompt = sampling_prompt(&params);
        let key = context.key().unwrap_or(CallbackContext::SAMPLING_KEY);
        self.header(
            "asks for an LLM completion (sampling)",
            &format!(
                "{} message(s), at most {} tokens",
                params.messages.len(),
                params.max_tokens
            ),
            Some(format!("--answer {key}=TEXT")),
        );
        if let Some(answer) = self
            .answers
            .for_question(key, CallbackContext::SAMPLING_KEY)
        {
            self.note("answered from --answer");
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
            self.note("declined: pass --llm-cmd CMD to answer sampling requests");
            return Err(rejected("no --llm-cmd was given"));
        };
        if !self.yes && !self.consents(&mut input, command, &prompt).await {
            return Err(rejected("the user declined"));
        }
        self.note(&format!(
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

    /// Shows the prompt the server wants run (escaped, and cut when long) and asks whether to
    /// run `--llm-cmd` on it; without a terminal to ask (`mcp bench`) or with stdin closed,
    /// the answer is no.
    async fn consents(&self, input: &mut Lines, command: &str, prompt: &str) -> bool {
        if !self.interactive {
            self.note("declined: pass --yes to run --llm-cmd for sampling requests unasked");
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
        let consented = self.choose(input, &question, RUN_LLM_ANSWERS).await == "yes";
        if !consented {
            self.note("declined: --llm-cmd was not run (pass --yes to run it unasked)");
        }
        consented
    }

    async fn list_roots(&self, context: &CallbackContext) -> ListRootsResult {
        let key = context.key().unwrap_or(CallbackContext::ROOTS_KEY);
        if let Some(Value::Array(items)) =
            self.answers.for_question(key, CallbackContext::ROOTS_KEY)
        {
            let roots: Vec<_> = items
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|item| {
                    if item.contains("://") {
                        Some(Root::new(item, None))
                    } else {
                        root_for(Path::new(item)).ok()
                    }
                })
                .collect();
            return ListRootsResult::new(roots);
        }
        let _terminal = self.input.lock().await;
        let uris: Vec<&str> = self.roots.iter().map(|r| r.uri.as_str()).collect();
        self.note(&format!(
            "{} lists roots: {}",
            self.server(),
            uris.join(", ")
        ));
        ListRootsResult::new(self.roots.clone())
    }
}

/// A dim line; `text` may quote the server (a description, a choice), so it is escaped.
fn note_line(text: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "  {}",
        style(line(text)).dim().for_stderr()
    );
}

/// A problem with what was typed; it may quote the server (the choices), so it is escaped.
fn warn(text: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "  {} {}",
        style("!").red().bold().for_stderr(),
        line(text)
    );
}

fn shown_default(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

fn action_name(action: ElicitAction) -> &'static str {
    match action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    }
}

fn action_result(action: &str, content: Option<&Map<String, Value>>) -> ElicitResult {
    match action {
        "accept" => ElicitResult::accept(content.cloned().unwrap_or_default()),
        "decline" => ElicitResult::decline(),
        _ => ElicitResult::cancel(),
    }
}

fn url_result(action: &str) -> ElicitResult {
    match action {
        "accept" => ElicitResult::accept_url(),
        "decline" => ElicitResult::decline(),
        _ => ElicitResult::cancel(),
    }
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
        let blocks: Vec<&modelctx::types::SamplingContent> = match &message.content {
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

/// A `file://` root for a directory.
fn root_for(path: &Path) -> std::io::Result<Root> {
    let path = std::path::absolute(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| Some("/".to_owned()));
    Ok(Root::new(file_uri(&path), name))
}

/// `file://` + the path, percent-encoding what a URI path may not hold.
pub(crate) fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// Lines of stdin, read by a thread started on first use (a blocked read never holds up the
/// runtime or the exit).
#[derive(Debug, Default)]
struct Lines {
    receiver: Option<mpsc::UnboundedReceiver<String>>,
}

impl Lines {
    async fn next(&mut self) -> Option<String> {
        let receiver = self.receiver.get_or_insert_with(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    if sender.send(line.trim_end_matches('\r').to_owned()).is_err() {
                        break;
                    }
                }
            });
            receiver
        });
        receiver.recv().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_encoded() {
        assert_eq!(
            file_uri(Path::new("/tmp/a b/ü")),
            "file:///tmp/a%20b/%C3%BC"
        );
    }
}
