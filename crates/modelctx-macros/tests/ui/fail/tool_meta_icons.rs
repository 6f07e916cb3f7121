//! `meta` must be a JSON object without the MCP Apps keys; `icons` are https: or data: URLs.

#[modelctx::tool(meta = "not json")]
async fn garbled() {}

#[modelctx::tool(meta = "[1, 2]")]
async fn listed() {}

#[modelctx::tool(meta = r#"{"ui": {"resourceUri": "ui://x/y.html"}}"#)]
async fn by_hand() {}

#[modelctx::tool(icons = "https://example.com/a.png http://example.com/b.png")]
async fn plain_http() {}

fn main() {}
