//! A handler that takes a `State<T>` the server's state cannot give does not compile.

use modelctx::server::{McpServer, State};

#[derive(Clone)]
struct Db;

/// Reads the database.
#[modelctx::tool]
async fn query(db: State<Db>) -> String {
    let _ = db;
    String::new()
}

fn main() {
    // No state at all.
    let _ = McpServer::builder("s", "1").tool::<query>();
    // Another state, with no way to take a `Db` from it.
    let _ = McpServer::builder("s", "1").state(7_u32).tool::<query>();
}
