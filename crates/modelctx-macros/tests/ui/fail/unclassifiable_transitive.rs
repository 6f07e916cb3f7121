//! The check follows dependencies: `region` needs `city`, which the prompt does not have.

#[modelctx::resolver]
async fn region(city: String) -> String {
    city
}

#[modelctx::resolver]
async fn label(#[resolve(region)] region: String) -> String {
    region
}

#[modelctx::prompt]
async fn briefing(topic: String, #[resolve(label)] label: String) -> String {
    format!("{topic} for {label}")
}

fn main() {}
