//! `#[tool(ui = …, visibility = …)]` (MCP Apps): what a literal can show is checked here.

#[modelctx::tool(ui = "https://example.com/app.html")]
async fn not_a_ui_uri() -> String {
    String::new()
}

#[modelctx::tool(ui = "ui://clock/app.html", visibility = "model, user")]
async fn unknown_visibility() -> String {
    String::new()
}

#[modelctx::tool(ui = "ui://clock/app.html", visibility = "app, app")]
async fn visibility_twice() -> String {
    String::new()
}

fn main() {}
