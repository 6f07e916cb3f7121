//! Shapes the macros refuse.

#[mcp::tool]
async fn generic<T: Send>(value: String) -> String {
    value
}

#[mcp::tool(colour = "red")]
async fn unknown_option(value: String) -> String {
    value
}

#[mcp::tool]
async fn bad_attribute(#[validate] value: String) -> String {
    value
}

#[mcp::tool]
async fn pattern((a, b): (String, String)) -> String {
    a + &b
}

#[mcp::tool]
async fn bad_resolve(#[resolve = "x"] value: String) -> String {
    value
}

#[mcp::resolver]
async fn no_return() {}

struct Shop;

impl Shop {
    #[mcp::tool]
    async fn method(&self) -> String {
        String::new()
    }
}

fn main() {}
