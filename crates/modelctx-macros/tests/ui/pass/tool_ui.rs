//! `#[tool(ui = …, visibility = …)]`: a tool with UI, and one the app alone may call.

#[modelctx::tool(ui = "ui://clock/app.html", visibility = "model, app")]
async fn show_clock() -> String {
    String::new()
}

#[modelctx::tool(visibility = "app")]
async fn set_clock(time: String) -> String {
    time
}

fn main() {
    use modelctx::server::ToolDefinition as _;
    let tool = show_clock::tool();
    let meta = tool.meta.unwrap();
    assert_eq!(meta.get("ui").unwrap()["resourceUri"], "ui://clock/app.html");
    assert_eq!(set_clock::tool().meta.unwrap().get("ui").unwrap()["visibility"][0], "app");
}
