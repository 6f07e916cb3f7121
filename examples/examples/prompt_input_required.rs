//! A prompt that returns an `InputRequiredResult`: `prompts/get` may ask the user too. The
//! prompt asks by hand (an `Outcome`), reads the answer on the retry, and gets its plaintext
//! state back (sealed on the wire).
//!
//! ```sh
//! cargo run -p modelctx-examples --example prompt_input_required
//! ```
//!
//! A prompt can also ask through resolvers (`#[resolve(..)]`): see the `briefing` prompt of
//! `mcp serve demo` (`crates/modelctx-cli/src/demo.rs`).

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use modelctx::client::{Client, RoundOutcome};
use modelctx::memory;
use modelctx::prompt;
use modelctx::server::{Context, McpServer};
use modelctx::types::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ErrorObject,
    GetPromptRequestParams, InputRequest, InputRequiredResult, Outcome,
};
use serde_json::{Map, Value, json};

/// A briefing; asks who the audience is.
#[prompt]
pub async fn briefing(
    /// What the briefing is about.
    topic: String,
    ctx: Context,
) -> Outcome<String> {
    match ctx.elicit_result("audience") {
        Some(answer) if answer.action == ElicitAction::Accept => {
            let audience = answer
                .content
                .as_ref()
                .and_then(|c| c.get("audience"))
                .and_then(Value::as_str)
                .unwrap_or("everyone");
            let state = ctx.request_state().unwrap_or_default();
            Outcome::Complete(format!("Brief {audience} on {topic}. (state: {state})"))
        }
        Some(_) => Outcome::Complete(format!("Brief everyone on {topic}.")),
        None => {
            let schema = serde_json::from_value(json!({
                "type": "object",
                "properties": {"audience": {"type": "string", "description": "e.g. the board"}},
                "required": ["audience"],
            }))
            .unwrap_or_default();
            Outcome::InputRequired(
                InputRequiredResult::new()
                    .with_request(
                        "audience",
                        InputRequest::elicit(ElicitRequestFormParams::new(
                            format!("Who is the audience for the briefing on {topic}?"),
                            schema,
                        )),
                    )
                    .with_state(format!("briefing:{topic}")),
            )
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = McpServer::builder("briefings", "1.0.0")
        .prompt::<briefing>()
        .build()?;
    let pipe = memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });

    let client = Client::builder()
        .on_elicitation(|_context, params: ElicitRequestParams| async move {
            println!("  asked: {}", params.message());
            let mut content = Map::new();
            content.insert("audience".to_owned(), Value::from("the board"));
            Ok::<_, ErrorObject>(ElicitResult::accept(content))
        })
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await?;

    // One round by hand: the result is an InputRequiredResult, not the prompt.
    let params = GetPromptRequestParams::new("briefing")
        .with_arguments([("topic".to_owned(), "Q3".to_owned())]);
    let first = client.session().get_prompt(params.clone(), true).await?;
    let RoundOutcome::InputRequired(asked) = first else {
        return Err("the prompt did not ask".into());
    };
    println!("round 1: {}", serde_json::to_string(&asked.input_requests)?);

    // The whole loop: the client answers through its callback and retries.
    let result = client.get_prompt_with(params, Default::default()).await?;
    let text = serde_json::to_value(&result.messages)?;
    let text = text[0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    println!("prompt: {text}");
    client.close().await?;
    if text != "Brief the board on Q3. (state: briefing:Q3)" {
        return Err(format!("unexpected prompt: {text}").into());
    }
    Ok(())
}
