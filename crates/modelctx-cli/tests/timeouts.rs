//! Giving up, and the time it takes to connect (issue 32, items 14 and 23).
//!
//! * When `mcp call` gives up on a 2025-11-25 HTTP server (`--timeout`, Ctrl-C), the server is
//!   told before the process exits: `notifications/cancelled` for the request in flight, then
//!   `DELETE` of the session. The server is `tests/python/handshake_only.py`, whose `wait` tool
//!   answers only once cancelled and which logs every notification and DELETE it receives: the
//!   test reads what arrived, not how the server reacted.
//! * `--timeout` counts from the connection on; starting a stdio server counts against
//!   `--connect-timeout`.

use std::process::{Command, Stdio};

use modelctx_test_support::cli::{Running, assert_ok, mcp, python, repo_root, stderr, stdout};
use serde_json::Value;

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// `handshake_only.py --http 0`, once it listens; its stderr is the log the tests read.
fn handshake_server() -> (Running, String) {
    let script = repo_root().join("tests/python/handshake_only.py");
    let mut server = Running::spawn(
        Command::new(python())
            .arg(script)
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let url = server.wait_for("listening on ");
    (server, url)
}

/// Stops the server and checks its log: the `wait` call, then its cancellation, then the
/// session's end, in that order.
fn told_in_order(mut server: Running) {
    server.child.kill().unwrap();
    let (_, _, log) = server.finish();
    let position = |what: &str| {
        log.iter()
            .position(|line| line.contains(what))
            .unwrap_or_else(|| panic!("the server never logged {what:?}: {log:#?}"))
    };
    let waiting = position("waiting ");
    let id: i64 = log[waiting]
        .rsplit_once("waiting ")
        .and_then(|(_, id)| id.trim().parse().ok())
        .expect("the call's id");
    let cancelled = position("notification notifications/cancelled ");
    let params: Value = serde_json::from_str(
        log[cancelled]
            .split_once("notifications/cancelled ")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(params["requestId"], id, "{log:#?}");
    let deleted = position("DELETE ended session");
    assert!(waiting < cancelled && cancelled < deleted, "{log:#?}");
}

#[test]
fn a_timed_out_call_cancels_its_request_and_ends_the_session() {
    let (server, url) = handshake_server();
    // Long enough for the call to reach the server (and be logged as waiting) on a loaded
    // machine: with 1 s it sometimes did not, and nothing here depends on the length.
    let output = mcp(&["call", "--timeout", "5", &url, "wait"], "");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("timed out after 5 s (--timeout)"),
        "{}",
        stderr(&output)
    );
    told_in_order(server);
}

#[test]
fn an_interrupted_call_cancels_its_request_and_ends_the_session() {
    let (mut server, url) = handshake_server();
    let mut call = Running::spawn(
        Command::new(MCP)
            .args(["call", &url, "wait"])
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    // The call is in flight: Ctrl-C now.
    server.wait_for("waiting ");
    let signal = Command::new("kill")
        .args(["-INT", &call.child.id().to_string()])
        .status()
        .unwrap();
    assert!(signal.success());
    call.wait_for("error: interrupted");
    let (status, _, _) = call.finish();
    assert_eq!(status.code(), Some(130));
    told_in_order(server);
}

/// How long the slow stdio server takes to start: longer than the `--timeout` below by a margin,
/// so that a start counted against it would always fail, and far longer than the
/// `--connect-timeout` below, so that connecting always times out.
const START: &str = "6";
/// Long enough for the call once connected (one `tools/call` to `mcp serve demo`) on a loaded
/// machine, and shorter than the start by 2 s.
const TIMEOUT: &str = "4";

/// A stdio server that takes `START` seconds to start (a stand-in for a Node server, which takes
/// seconds): `mcp serve demo` after a pause, in a shell. Its stderr is not `mcp`'s, so that a
/// call that gave up returns at once instead of when the pause ends.
fn slow_demo() -> [&'static str; 6] {
    [
        "--",
        "sh",
        "-c",
        "exec 2>/dev/null; sleep \"$1\"; exec \"$0\" serve demo",
        MCP,
        START,
    ]
}

#[test]
fn the_timeout_counts_from_the_connection_on() {
    let call = |flags: &[&str]| {
        let args = [&["call"][..], flags, &["echo", "text=hello"], &slow_demo()].concat();
        mcp(&args, "")
    };
    // Before: "connecting to stdio: … timed out" (the start counted against --timeout).
    let started = call(&["--timeout", TIMEOUT]);
    assert_ok(&started);
    assert_eq!(stdout(&started).trim(), "hello");

    let refused = call(&["--timeout", TIMEOUT, "--connect-timeout", "1"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("timed out after 1 s (--connect-timeout)"),
        "{}",
        stderr(&refused)
    );
}
