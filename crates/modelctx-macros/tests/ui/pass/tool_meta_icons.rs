//! `#[tool(meta = …, icons = …)]`: entries of the tool's `_meta` beside its UI, and its icons.

#[modelctx::tool(
    meta = r#"{"com.example/owner": "billing", "com.example/cost": 3}"#,
    icons = "https://example.com/invoice.png data:image/png;base64,AAAA",
    ui = "ui://billing/invoice.html"
)]
async fn invoice() -> String {
    String::new()
}

fn main() {
    use modelctx::server::ToolDefinition as _;
    let tool = invoice::tool();
    let meta = tool.meta.unwrap();
    assert_eq!(meta.get("com.example/owner").unwrap(), "billing");
    assert_eq!(meta.get("com.example/cost").unwrap(), 3);
    assert_eq!(meta.get("ui").unwrap()["resourceUri"], "ui://billing/invoice.html");
    let icons = tool.icons.unwrap();
    assert_eq!(icons.len(), 2);
    assert_eq!(icons[0].src, "https://example.com/invoice.png");
    assert_eq!(icons[1].src, "data:image/png;base64,AAAA");
}
