//! The check follows dependencies: `region` needs `city`, which the prompt does not have.

#[mcp::resolver]
async fn region(city: String) -> String {
    city
}

#[mcp::resolver]
async fn label(#[resolve(region)] region: String) -> String {
    region
}

#[mcp::prompt]
async fn briefing(topic: String, #[resolve(label)] label: String) -> String {
    format!("{topic} for {label}")
}

fn main() {}
