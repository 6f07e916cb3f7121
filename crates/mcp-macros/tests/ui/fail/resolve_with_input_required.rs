//! A call has one input channel: resolvers, or an InputRequiredResult from the body.

use mcp::server::Elicit;

#[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

#[mcp::resolver]
async fn confirm() -> Elicit<Confirm> {
    Elicit::new("Sure?")
}

#[mcp::tool]
async fn both(#[resolve(confirm)] confirm: Confirm) -> mcp::types::Outcome<String> {
    mcp::types::Outcome::Complete(confirm.ok.to_string())
}

#[mcp::prompt]
async fn both_prompt(
    #[resolve(confirm)] confirm: Confirm,
) -> Result<mcp::types::InputRequiredResult, String> {
    let _ = confirm;
    Err("no".to_owned())
}

fn main() {}
