//! Resource parameters are template variables (or the Context, or resolved).

#[mcp::resource("report://{quarter}")]
async fn report(quarter: String, year: String) -> String {
    format!("{quarter} {year}")
}

#[mcp::resource("info://hours")]
async fn hours(day: String) -> String {
    day
}

#[mcp::resource(mime_type = "text/plain")]
async fn nowhere() -> String {
    String::new()
}

fn main() {}
