//! Shapes the macros refuse.

#[modelctx::tool]
async fn generic<T: Send>(value: String) -> String {
    value
}

#[modelctx::tool(colour = "red")]
async fn unknown_option(value: String) -> String {
    value
}

#[modelctx::tool]
async fn bad_attribute(#[validate] value: String) -> String {
    value
}

#[modelctx::tool]
async fn pattern((a, b): (String, String)) -> String {
    a + &b
}

#[modelctx::tool]
async fn bad_resolve(#[resolve = "x"] value: String) -> String {
    value
}

#[modelctx::resolver]
async fn no_return() {}

struct Shop;

impl Shop {
    #[modelctx::tool]
    async fn method(&self) -> String {
        String::new()
    }
}

fn main() {}
