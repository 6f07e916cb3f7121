//! A call has one input channel: resolvers, or an InputRequiredResult from the body.

use modelctx::server::Elicit;

#[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

#[modelctx::resolver]
async fn confirm() -> Elicit<Confirm> {
    Elicit::new("Sure?")
}

#[modelctx::tool]
async fn both(#[resolve(confirm)] confirm: Confirm) -> modelctx::types::Outcome<String> {
    modelctx::types::Outcome::Complete(confirm.ok.to_string())
}

#[modelctx::prompt]
async fn both_prompt(
    #[resolve(confirm)] confirm: Confirm,
) -> Result<modelctx::types::InputRequiredResult, String> {
    let _ = confirm;
    Err("no".to_owned())
}

fn main() {}
