//! Resolvers that depend on each other can never resolve.

#[modelctx::resolver]
async fn first(#[resolve(second)] second: String) -> String {
    second
}

#[modelctx::resolver]
async fn second(#[resolve(first)] first: String) -> String {
    first
}

fn main() {}
