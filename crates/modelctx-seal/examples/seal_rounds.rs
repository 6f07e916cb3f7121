//! Seal + open rounds under callgrind: the criterion bench's first case (`cargo bench -p
//! modelctx-seal`, "seal+open (policy, small args, 100 B state)") as a plain loop, so that
//! `(instructions(N2) − instructions(N1)) / (N2 − N1)` is the cost of one round, independent of
//! the machine's load (wall clock on a shared VM is not).
//!
//! ```text
//! cargo run --release -p modelctx-seal --example seal_rounds -- N
//!     # N rounds: a fresh binding, seal, open; prints the last opened state
//! ```

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line bench reports on stdout and stderr"
)]

use std::hint::black_box;
use std::process::ExitCode;

use modelctx_seal::{RequestBinding, RequestStateSecurity};
use serde_json::json;

/// The criterion bench's key, state and arguments.
const KEY: &[u8; 32] = b"bench-secret-0123456789abcdefghi";
const STATE: &str = r#"{"v":3,"outcomes":{"main:ask_prefs":{"action":"accept","data":{"seat":"aisle"}}},"asked":{}}"#;

fn main() -> ExitCode {
    let Some(rounds) = std::env::args().nth(1).and_then(|n| n.parse::<u64>().ok()) else {
        eprintln!("usage: seal_rounds N");
        return ExitCode::from(2);
    };
    let security = match RequestStateSecurity::with_keys([KEY]) {
        Ok(security) => security.with_audience("Bookshop"),
        Err(error) => {
            eprintln!("seal_rounds: {error}");
            return ExitCode::FAILURE;
        }
    };
    let args = json!({"name": "orders", "region": "eu-west-1", "replicas": 3});
    let mut last = String::new();
    for _ in 0..rounds {
        let binding = RequestBinding::tool_call(black_box("provision"), Some(black_box(&args)));
        let opened = security
            .seal(black_box(STATE), &binding)
            .map_err(|e| e.to_string())
            .and_then(|token| {
                security
                    .open(black_box(&token), &binding)
                    .map_err(|e| e.to_string())
            });
        match opened {
            Ok(state) => last = state,
            Err(error) => {
                eprintln!("seal_rounds: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{last}");
    ExitCode::SUCCESS
}
