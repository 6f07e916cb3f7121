//! Input-request keys are resolver names: two resolvers named `region` in one tool's graph
//! would share a key, so the tool does not compile.

mod eu {
    #[modelctx::resolver]
    pub async fn region() -> String {
        "eu-west-1".to_owned()
    }
}

mod us {
    #[modelctx::resolver]
    pub async fn region() -> String {
        "us-east-1".to_owned()
    }

    #[modelctx::resolver]
    pub async fn pair(#[resolve(super::eu::region)] eu: String) -> String {
        eu
    }
}

#[modelctx::tool]
async fn replicate(
    #[resolve(us::region)] primary: String,
    #[resolve(us::pair)] secondary: String,
) -> String {
    format!("{primary} and {secondary}")
}

fn main() {}
