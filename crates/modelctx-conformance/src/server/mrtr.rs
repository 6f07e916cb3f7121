//! The input-required fixtures (`input-required-result-*`): tools and a prompt that ask for
//! elicitation, sampling and roots through `InputRequiredResult`, carrying their progress in
//! (sealed) `requestState`.

use modelctx::server::{RequestContext, ServerBuilder};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CreateMessageRequestParams,
    ElicitAction, ElicitRequestFormParams, ErrorObject, Extra, GetPromptRequestParams,
    GetPromptResult, InputRequest, InputRequiredResult, InputResponses, Outcome, Prompt,
    PromptMessage, Role, SamplingMessage,
};
use serde_json::{Value, json};

use super::tools::tool;

type ToolOutcome = Result<Outcome<CallToolResult>, ErrorObject>;

fn no_args(name: &str, description: &str) -> modelctx::types::Tool {
    tool(
        name,
        description,
        json!({"type": "object", "properties": {}}),
    )
}

/// A form elicitation with a flat schema of `(field, type)` pairs, all required.
pub(super) fn elicit(message: &str, fields: &[(&str, &str)]) -> InputRequest {
    let properties: Extra = fields
        .iter()
        .map(|(f, t)| ((*f).to_owned(), json!({"type": t})))
        .collect();
    let required: Vec<&str> = fields.iter().map(|(f, _)| *f).collect();
    let schema = serde_json::from_value(
        json!({"type": "object", "properties": properties, "required": required}),
    )
    .unwrap_or_default();
    InputRequest::elicit(ElicitRequestFormParams::new(message, schema))
}

fn sample(text: &str, max_tokens: u64) -> InputRequest {
    InputRequest::create_message(CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(text)],
        max_tokens,
    ))
}

/// The accepted content of an elicitation answered under `key`.
fn accepted(responses: Option<&InputResponses>, key: &str) -> Option<Extra> {
    let answer = responses?.get(key)?.as_elicit().ok()?;
    (answer.action == ElicitAction::Accept).then_some(answer.content.unwrap_or_default())
}

fn text_field(content: &Extra, field: &str) -> Option<String> {
    content
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn complete(text: impl Into<String>) -> ToolOutcome {
    Ok(Outcome::Complete(CallToolResult::text(text)))
}

fn ask(result: InputRequiredResult) -> ToolOutcome {
    Ok(Outcome::InputRequired(result))
}

/// "Please confirm" with one boolean field, `ok`.
fn confirmation() -> InputRequest {
    elicit("Please confirm", &[("ok", "boolean")])
}

/// Asks for a [`confirmation`] as `confirm`, carrying `state` to the next round.
fn ask_confirmation(state: &str) -> ToolOutcome {
    ask(InputRequiredResult::new()
        .with_request("confirm", confirmation())
        .with_state(state))
}

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            no_args(
                "test_input_required_result_elicitation",
                "Asks for the user's name.",
            ),
            |_, p: CallToolRequestParams| async move {
                match accepted(p.input_responses.as_ref(), "user_name")
                    .and_then(|c| text_field(&c, "name"))
                {
                    Some(name) => complete(format!("Hello, {name}!")),
                    None => ask(InputRequiredResult::new().with_request(
                        "user_name",
                        elicit("What is your name?", &[("name", "string")]),
                    )),
                }
            },
        )
        .tool(
            no_args(
                "test_input_required_result_sampling",
                "Asks the client's model a question.",
            ),
            |_, p: CallToolRequestParams| async move {
                let answer = p
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("capital_question"))
                    .and_then(|a| a.read_for(&sample("", 1)).ok());
                match answer {
                    Some(modelctx::types::InputAnswer::CreateMessage(result)) => {
                        let text = result
                            .content
                            .as_slice()
                            .iter()
                            .find_map(|c| c.as_text())
                            .unwrap_or_default()
                            .to_owned();
                        complete(format!("Model said: {text}"))
                    }
                    _ => ask(InputRequiredResult::new().with_request(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    )),
                }
            },
        )
        .tool(
            no_args(
                "test_input_required_result_list_roots",
                "Asks for the client's roots.",
            ),
            |_, p: CallToolRequestParams| async move {
                let roots = p
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get("client_roots"))
                    .and_then(|a| a.read_for(&InputRequest::list_roots()).ok());
                match roots {
                    Some(modelctx::types::InputAnswer::ListRoots(result)) => {
                        complete(format!("Client exposed {} root(s).", result.roots.len()))
                    }
                    _ => ask(InputRequiredResult::new()
                        .with_request("client_roots", InputRequest::list_roots())),
                }
            },
        )
        .tool(
            no_args(
                "test_input_required_result_request_state",
                "Asks for confirmation and carries state.",
            ),
            |_, p: CallToolRequestParams| async move {
                let ok = accepted(p.input_responses.as_ref(), "confirm")
                    .and_then(|c| c.get("ok").and_then(Value::as_bool));
                match (ok, p.request_state.as_deref()) {
                    (Some(true), Some("awaiting-confirmation")) => {
                        complete("state-ok: confirmation received")
                    }
                    _ => ask_confirmation("awaiting-confirmation"),
                }
            },
        )
        .tool(
            no_args(
                "test_input_required_result_multiple_inputs",
                "Asks for a name, a greeting and the roots at once.",
            ),
            multiple_inputs,
        )
        .tool(
            no_args(
                "test_input_required_result_multi_round",
                "Asks two questions in two rounds.",
            ),
            multi_round,
        )
        .tool(
            no_args(
                "test_input_required_result_tampered_state",
                "Asks for confirmation; its state is sealed.",
            ),
            |_, p: CallToolRequestParams| async move {
                match (
                    accepted(p.input_responses.as_ref(), "confirm"),
                    p.request_state.as_deref(),
                ) {
                    (Some(_), Some("tamper-check")) => complete("state verified"),
                    _ => ask_confirmation("tamper-check"),
                }
            },
        )
        .tool(
            no_args(
                "test_input_required_result_capabilities",
                "Asks only through capabilities the client declared.",
            ),
            capabilities,
        )
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .with_description("A prompt that asks for its context first."),
            |_, p: GetPromptRequestParams| async move {
                match accepted(p.input_responses.as_ref(), "user_context")
                    .and_then(|c| text_field(&c, "context"))
                {
                    Some(context) => Ok::<_, ErrorObject>(Outcome::Complete(
                        GetPromptResult::new(vec![PromptMessage::new(
                            Role::USER,
                            modelctx::types::ContentBlock::text(format!(
                                "Use the following context: {context}"
                            )),
                        )])
                        .with_description("A prompt built from the user's context"),
                    )),
                    None => Ok(Outcome::InputRequired(
                        InputRequiredResult::new().with_request(
                            "user_context",
                            elicit(
                                "What context should the prompt use?",
                                &[("context", "string")],
                            ),
                        ),
                    )),
                }
            },
        )
}

async fn multiple_inputs(_ctx: RequestContext, p: CallToolRequestParams) -> ToolOutcome {
    let responses = p.input_responses.as_ref();
    let name = accepted(responses, "user_name").and_then(|c| text_field(&c, "name"));
    let greeting = responses
        .and_then(|r| r.get("greeting"))
        .and_then(|a| a.read_for(&sample("", 1)).ok());
    let roots = responses
        .and_then(|r| r.get("client_roots"))
        .and_then(|a| a.read_for(&InputRequest::list_roots()).ok());
    if name.is_some()
        && greeting.is_some()
        && roots.is_some()
        && p.request_state.as_deref() == Some("collecting")
    {
        return complete("All inputs received.");
    }
    ask(InputRequiredResult::new()
        .with_request(
            "user_name",
            elicit("What is your name?", &[("name", "string")]),
        )
        .with_request("greeting", sample("Generate a greeting", 50))
        .with_request("client_roots", InputRequest::list_roots())
        .with_state("collecting"))
}

async fn multi_round(_ctx: RequestContext, p: CallToolRequestParams) -> ToolOutcome {
    let responses = p.input_responses.as_ref();
    match p.request_state.as_deref() {
        Some("round-1") => {
            match accepted(responses, "step1").and_then(|c| text_field(&c, "name")) {
                Some(name) => ask(InputRequiredResult::new()
                    .with_request(
                        "step2",
                        elicit(
                            "Step 2: What is your favorite color?",
                            &[("color", "string")],
                        ),
                    )
                    .with_state(format!("round-2:{name}"))),
                None => ask(InputRequiredResult::new()
                    .with_request(
                        "step1",
                        elicit("Step 1: What is your name?", &[("name", "string")]),
                    )
                    .with_state("round-1")),
            }
        }
        Some(state) if state.starts_with("round-2:") => {
            let name = &state["round-2:".len()..];
            match accepted(responses, "step2").and_then(|c| text_field(&c, "color")) {
                Some(color) => complete(format!("{name} likes {color}.")),
                None => ask(InputRequiredResult::new()
                    .with_request(
                        "step2",
                        elicit(
                            "Step 2: What is your favorite color?",
                            &[("color", "string")],
                        ),
                    )
                    .with_state(state.to_owned())),
            }
        }
        _ => ask(InputRequiredResult::new()
            .with_request(
                "step1",
                elicit("Step 1: What is your name?", &[("name", "string")]),
            )
            .with_state("round-1")),
    }
}

async fn capabilities(ctx: RequestContext, p: CallToolRequestParams) -> ToolOutcome {
    if p.input_responses.as_ref().is_some_and(|r| !r.is_empty())
        && p.request_state.as_deref() == Some("capabilities")
    {
        return complete("Answered through a declared capability.");
    }
    let caps = ctx.client_capabilities();
    let request = if caps.elicitation_form() {
        ("confirm", confirmation())
    } else if caps.sampling() {
        ("sample", sample("Say hello", 50))
    } else if caps.roots() {
        ("client_roots", InputRequest::list_roots())
    } else {
        // Nothing to ask with: answer -32021 naming the capability this tool prefers.
        ctx.require_capabilities(&ClientCapabilities::new().with_sampling())?;
        ("sample", sample("Say hello", 50))
    };
    ask(InputRequiredResult::new()
        .with_request(request.0, request.1)
        .with_state("capabilities"))
}
