//! Static resources cannot ask for input: neither by hand nor through resolvers.

#[modelctx::resource("info://hours")]
async fn hours() -> modelctx::types::Outcome<String> {
    modelctx::types::Outcome::Complete("9-18".to_owned())
}

#[modelctx::resolver]
async fn day() -> String {
    "Monday".to_owned()
}

#[modelctx::resource("info://today")]
async fn today(#[resolve(day)] day: String) -> String {
    day
}

fn main() {}
