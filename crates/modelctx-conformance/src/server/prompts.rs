//! The prompt fixtures (`prompts-*`).

use modelctx::server::ServerBuilder;
use modelctx::types::{
    ContentBlock, GetPromptRequestParams, GetPromptResult, Prompt, PromptArgument, PromptMessage,
    ResourceContents, Role,
};

use super::tools::PNG;

fn prompt(name: &str, description: &str, arguments: &[(&str, &str)]) -> Prompt {
    let mut prompt = Prompt::new(name).with_description(description);
    prompt.arguments = (!arguments.is_empty()).then(|| {
        arguments
            .iter()
            .map(|(n, d)| {
                PromptArgument::new(*n)
                    .with_description(*d)
                    .with_required(true)
            })
            .collect()
    });
    prompt
}

fn messages(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult::new(messages)
}

fn argument(params: &GetPromptRequestParams, name: &str) -> String {
    params
        .arguments
        .as_ref()
        .and_then(|a| a.get(name))
        .cloned()
        .unwrap_or_default()
}

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(
            prompt(
                "test_simple_prompt",
                "A simple prompt without arguments.",
                &[],
            ),
            |_, _| async {
                messages(vec![PromptMessage::new(
                    Role::USER,
                    ContentBlock::text("This is a simple prompt for testing."),
                )])
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two arguments.",
                &[("arg1", "First argument"), ("arg2", "Second argument")],
            ),
            |_, p: GetPromptRequestParams| async move {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    argument(&p, "arg1"),
                    argument(&p, "arg2")
                );
                messages(vec![PromptMessage::new(
                    Role::USER,
                    ContentBlock::text(text),
                )])
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt embedding a resource.",
                &[("resourceUri", "URI of the resource to embed")],
            ),
            |_, p: GetPromptRequestParams| async move {
                let uri = argument(&p, "resourceUri");
                messages(vec![
                    PromptMessage::new(
                        Role::USER,
                        ContentBlock::resource(ResourceContents::text(
                            uri,
                            Some("text/plain".into()),
                            "Embedded resource content for testing.",
                        )),
                    ),
                    PromptMessage::new(
                        Role::USER,
                        ContentBlock::text("Please process the embedded resource above."),
                    ),
                ])
            },
        )
        .prompt(
            prompt("test_prompt_with_image", "A prompt with an image.", &[]),
            |_, _| async {
                messages(vec![
                    PromptMessage::new(Role::USER, ContentBlock::image(PNG, "image/png")),
                    PromptMessage::new(
                        Role::USER,
                        ContentBlock::text("Please analyze the image above."),
                    ),
                ])
            },
        )
}
