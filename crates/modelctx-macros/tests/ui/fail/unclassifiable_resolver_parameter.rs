//! A resolver parameter must be the Context, a #[resolve] dependency, or an argument of the
//! tool, prompt or template that uses the resolver.

#[modelctx::resolver]
async fn greeting(cty: String) -> String {
    format!("Hello {cty}")
}

#[modelctx::tool]
async fn greet(city: String, #[resolve(greeting)] greeting: String) -> String {
    format!("{greeting} from {city}")
}

fn main() {}
