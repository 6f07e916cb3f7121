//! Static resources cannot ask for input: neither by hand nor through resolvers.

#[mcp::resource("info://hours")]
async fn hours() -> mcp::types::Outcome<String> {
    mcp::types::Outcome::Complete("9-18".to_owned())
}

#[mcp::resolver]
async fn day() -> String {
    "Monday".to_owned()
}

#[mcp::resource("info://today")]
async fn today(#[resolve(day)] day: String) -> String {
    day
}

fn main() {}
