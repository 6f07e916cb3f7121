//! Resource parameters are template variables (or the Context, or resolved).

#[modelctx::resource("report://{quarter}")]
async fn report(quarter: String, year: String) -> String {
    format!("{quarter} {year}")
}

#[modelctx::resource("info://hours")]
async fn hours(day: String) -> String {
    day
}

#[modelctx::resource(mime_type = "text/plain")]
async fn nowhere() -> String {
    String::new()
}

fn main() {}
