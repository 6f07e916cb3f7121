//! Resolvers that depend on each other can never resolve.

#[mcp::resolver]
async fn first(#[resolve(second)] second: String) -> String {
    second
}

#[mcp::resolver]
async fn second(#[resolve(first)] first: String) -> String {
    first
}

fn main() {}
