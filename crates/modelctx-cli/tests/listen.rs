//! `mcp listen` and `mcp serve demo --bus`: two demo instances share a Redis bus; `mcp call A
//! touch_report` reaches `mcp listen B` as one line, and the list a listener follows arrives
//! too. Needs `redis-server` (`scripts/redis.sh install`); fails, never skips, without it.

use std::io::{BufRead as _, BufReader, Lines};
use std::process::{ChildStdout, Command, Stdio};

use modelctx_test_support::cli::{HttpServer, Running, assert_ok, mcp, stdout};
use modelctx_test_support::redis::{Persistence, Redis};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// `mcp listen URL ARGS…` with stdout piped, once it said what it listens to.
fn listen(url: &str, args: &[&str]) -> (Running, Lines<BufReader<ChildStdout>>) {
    let mut running = Running::spawn(
        Command::new(MCP)
            .args(["listen", url, "--timeout", "60"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped()),
    );
    running.wait_for("listening to ");
    let lines = BufReader::new(running.child.stdout.take().unwrap()).lines();
    (running, lines)
}

fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    lines
        .next()
        .expect("mcp listen printed a line")
        .expect("readable")
}

#[test]
fn a_change_made_on_one_demo_instance_reaches_a_listener_on_another() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let redis = runtime.block_on(Redis::start(Persistence::Off));
    let demo = |prefix: &str| {
        HttpServer::start(
            MCP,
            &[
                "serve",
                "demo",
                "--http",
                "0",
                "--bus",
                &redis.url,
                "--bus-prefix",
                prefix,
            ],
        )
    };
    let (a, b) = (demo("fleet"), demo("fleet"));

    let (mut on_b, mut lines) = listen(
        &b.url,
        &["--resource", "report://2026-q3", "--lists", "tools,prompts"],
    );
    let acknowledged = on_b.seen.last().unwrap().clone();
    assert!(
        acknowledged.contains("tools list, prompts list, report://2026-q3"),
        "{acknowledged}"
    );
    let touched = mcp(&["call", &a.url, "touch_report", "quarter=2026-q3"], "");
    assert_ok(&touched);
    assert_eq!(stdout(&touched).trim(), "Touched report://2026-q3.");
    assert_eq!(next_line(&mut lines), "resources/updated report://2026-q3");

    // A quarter that is not one is refused, and announces nothing: the next line is the next
    // real change.
    let refused = mcp(&["call", &a.url, "touch_report", "quarter=../x"], "");
    assert_eq!(refused.status.code(), Some(1));
    let json = listen(&b.url, &["--resource", "report://2026-q4", "--json"]);
    let (mut on_b_json, mut json_lines) = json;
    assert_ok(&mcp(
        &["call", &a.url, "touch_report", "quarter=2026-q4"],
        "",
    ));
    assert_eq!(
        next_line(&mut json_lines),
        r#"{"method":"notifications/resources/updated","params":{"uri":"report://2026-q4"}}"#
    );
    assert_ok(&mcp(
        &["call", &b.url, "touch_report", "quarter=2026-q3"],
        "",
    ));
    assert_eq!(next_line(&mut lines), "resources/updated report://2026-q3");

    for running in [&mut on_b, &mut on_b_json] {
        running.child.kill().unwrap();
        running.child.wait().unwrap();
    }
}

#[test]
fn listen_needs_something_to_follow() {
    let output = mcp(&["listen", "http://127.0.0.1:9/mcp"], "");
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("nothing to follow"), "{err}");
}
