//! The questions a resolver can put to the client — [`Elicit`], [`ElicitUrl`], [`Sample`],
//! [`ListRoots`], or [`Ask`] (known or asked) — and how a resolver's return value becomes its
//! outcome ([`ResolverOutput`](super::ResolverOutput)).

use modelctx_types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestUrlParams, ElicitResult, InputRequest, ListRootsResult, SamplingMessage,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::outcome::Elicitation;
use super::schema::{ElicitationForm, form_check};

/// A question a resolver puts to the client. The SDK renders it, checks the client's
/// capabilities, carries its answer across rounds and reads the answer back as `Value`.
pub trait Question: Send + Sync + 'static {
    /// What an accepted answer resolves to.
    type Value: Clone + Send + Sync + 'static;

    /// The input request shown to the client. It must render identically on every round while
    /// the question is the same: its digest binds the answer.
    ///
    /// # Errors
    /// A question that cannot be rendered (e.g. a schema that is not a flat form).
    fn render(&self) -> Result<InputRequest, String>;

    /// Reads the client's answer. Returns the outcome and what to record in the state
    /// (`data` of the entry; `None` for decline / cancel).
    ///
    /// # Errors
    /// An answer of the wrong kind, or content that does not fit the schema.
    fn read_answer(
        &self,
        answer: &Value,
    ) -> Result<(Elicitation<Self::Value>, Option<Value>), String>;

    /// Rebuilds the outcome recorded by an earlier round; `None` when it no longer fits (the
    /// question is then asked again).
    fn restore(
        &self,
        action: ElicitAction,
        data: Option<&Value>,
    ) -> Option<Elicitation<Self::Value>>;
}

/// Ask the user to fill a form whose schema is derived from `T` (a struct of primitive fields:
/// strings, numbers, booleans, unit enums, optional or not).
#[derive(Debug, Clone)]
pub struct Elicit<T> {
    message: String,
    _form: std::marker::PhantomData<fn() -> T>,
}

impl<T> Elicit<T> {
    /// A question with its message; the form comes from `T`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            _form: std::marker::PhantomData,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<T> Question for Elicit<T>
where
    T: ElicitationForm + DeserializeOwned + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn render(&self) -> Result<InputRequest, String> {
        let schema = T::elicitation_schema()?;
        Ok(InputRequest::elicit(ElicitRequestFormParams::new(
            self.message.clone(),
            schema,
        )))
    }

    fn read_answer(&self, answer: &Value) -> Result<(Elicitation<T>, Option<Value>), String> {
        let answer = ElicitResult::deserialize(answer)
            .map_err(|_| "received a non-elicitation response".to_owned())?;
        match answer.action {
            ElicitAction::Accept => {
                let content = Value::Object(
                    answer
                        .content
                        .ok_or("received an accepted elicitation with no content")?,
                );
                // The schema the client was shown, not just `T`'s serde shape: `u32` takes
                // 4000000000 where the form said 1 to 10, `String` takes any text where it said
                // an email address.
                let fits = form_check::<T>()?.check(&content);
                let value = fits
                    .map_err(|problem| {
                        // The problem quotes the peer's answer: bounded and escaped.
                        tracing::info!(
                            problem = crate::server::message::logged(&problem),
                            problem_len = problem.len(),
                            "elicitation answer rejected"
                        );
                    })
                    .ok()
                    .and_then(|()| T::deserialize(&content).ok())
                    .ok_or_else(|| {
                        "received an accepted elicitation whose content does not match the \
                         requested schema"
                            .to_owned()
                    })?;
                // The client's own validated content is recorded, never a re-serialised value,
                // so the next round re-validates the same bytes.
                Ok((Elicitation::Accept(value), Some(content)))
            }
            ElicitAction::Decline => Ok((Elicitation::Decline, None)),
            ElicitAction::Cancel => Ok((Elicitation::Cancel, None)),
        }
    }

    fn restore(&self, action: ElicitAction, data: Option<&Value>) -> Option<Elicitation<T>> {
        match action {
            ElicitAction::Accept => T::deserialize(data?).ok().map(Elicitation::Accept),
            ElicitAction::Decline => Some(Elicitation::Decline),
            ElicitAction::Cancel => Some(Elicitation::Cancel),
        }
    }
}

/// Ask the user to open a URL (URL-mode elicitation): to sign in to a third party, pay, or
/// enter something the client must not see. The client shows the full URL and asks for consent;
/// it never opens it unasked. Resolves to `()`: accepting means only that the user agreed to
/// open it, so the consumer checks whether the out-of-band step actually finished (declare the
/// parameter as [`Elicitation<()>`] to see a decline or cancel instead of failing the call).
///
/// On 2026-07-28 it travels in the `InputRequiredResult` like any question; on a 2025-11-25
/// session it is an `elicitation/create` request with an `elicitationId`, and the client gets
/// `notifications/elicitation/complete` when the call completes.
#[derive(Debug, Clone)]
pub struct ElicitUrl {
    message: String,
    url: String,
}

impl ElicitUrl {
    /// A question with its message and the URL to open. The URL must not carry credentials or
    /// personal data, nor grant access by itself (whoever opens it must still sign in).
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            url: url.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Question for ElicitUrl {
    type Value = ();

    fn render(&self) -> Result<InputRequest, String> {
        Ok(InputRequest::elicit(ElicitRequestUrlParams::new(
            self.message.clone(),
            self.url.clone(),
        )))
    }

    fn read_answer(&self, answer: &Value) -> Result<(Elicitation<()>, Option<Value>), String> {
        let answer = ElicitResult::deserialize(answer)
            .map_err(|_| "received a non-elicitation response".to_owned())?;
        // Consent carries no content; whatever a client sends along is not read.
        Ok((consent(answer.action), None))
    }

    fn restore(&self, action: ElicitAction, _data: Option<&Value>) -> Option<Elicitation<()>> {
        Some(consent(action))
    }
}

fn consent(action: ElicitAction) -> Elicitation<()> {
    match action {
        ElicitAction::Accept => Elicitation::Accept(()),
        ElicitAction::Decline => Elicitation::Decline,
        ElicitAction::Cancel => Elicitation::Cancel,
    }
}

/// Ask the client's LLM (`sampling/createMessage`; deprecated in 2026-07-28). Resolves to the
/// [`CreateMessageResult`]. With `tools` or `toolChoice` set, it needs `sampling.tools`.
#[derive(Debug, Clone)]
pub struct Sample {
    params: CreateMessageRequestParams,
}

impl Sample {
    /// A request with messages and a token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        Self {
            params: CreateMessageRequestParams::new(messages, max_tokens),
        }
    }

    /// One user message of text.
    pub fn text(text: impl Into<String>, max_tokens: u64) -> Self {
        Self::new(vec![SamplingMessage::user_text(text)], max_tokens)
    }

    /// Every other sampling parameter (system prompt, temperature, tools, …).
    pub fn from_params(params: CreateMessageRequestParams) -> Self {
        Self { params }
    }

    /// Sets a system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.params.system_prompt = Some(prompt.into());
        self
    }

    /// The parameters.
    pub fn params(&self) -> &CreateMessageRequestParams {
        &self.params
    }
}

impl Question for Sample {
    type Value = CreateMessageResult;

    fn render(&self) -> Result<InputRequest, String> {
        Ok(InputRequest::create_message(self.params.clone()))
    }

    fn read_answer(
        &self,
        answer: &Value,
    ) -> Result<(Elicitation<CreateMessageResult>, Option<Value>), String> {
        let result = CreateMessageResult::deserialize(answer)
            .map_err(|_| "received a response of the wrong kind".to_owned())?;
        Ok((Elicitation::Accept(result), Some(answer.clone())))
    }

    fn restore(
        &self,
        _action: ElicitAction,
        data: Option<&Value>,
    ) -> Option<Elicitation<CreateMessageResult>> {
        CreateMessageResult::deserialize(data?)
            .ok()
            .map(Elicitation::Accept)
    }
}

/// Ask for the client's roots (`roots/list`; deprecated in 2026-07-28). Resolves to the
/// [`ListRootsResult`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ListRoots;

impl Question for ListRoots {
    type Value = ListRootsResult;

    fn render(&self) -> Result<InputRequest, String> {
        Ok(InputRequest::list_roots())
    }

    fn read_answer(
        &self,
        answer: &Value,
    ) -> Result<(Elicitation<ListRootsResult>, Option<Value>), String> {
        let result = ListRootsResult::deserialize(answer)
            .map_err(|_| "received a response of the wrong kind".to_owned())?;
        Ok((Elicitation::Accept(result), Some(answer.clone())))
    }

    fn restore(
        &self,
        _action: ElicitAction,
        data: Option<&Value>,
    ) -> Option<Elicitation<ListRootsResult>> {
        ListRootsResult::deserialize(data?)
            .ok()
            .map(Elicitation::Accept)
    }
}

/// A resolver result that is either already known or has to be asked: return
/// `Ask::Ready(value)` when you have it (a cache, a default) and `Ask::Question(q)` otherwise.
#[derive(Debug, Clone)]
pub enum Ask<Q: Question> {
    /// The value, without asking.
    Ready(Q::Value),
    /// Ask.
    Question(Q),
}

impl<Q: Question> From<Q> for Ask<Q> {
    fn from(question: Q) -> Self {
        Self::Question(question)
    }
}
