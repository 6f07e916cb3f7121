//! `mcp call` / `mcp tools` show the answer before they close a stdio server: the server's
//! shutdown (stdin closed, then up to the grace period for it to exit) is not the user's wait.
//!
//! The server runs under `sh`, which creates a marker file once the server has exited. The marker
//! can only exist when the answer is read if the client closed the server first, so the check is
//! an ordering, not a timing.

#![cfg(unix)]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use modelctx_test_support::cli::TempDir;

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// Runs `mcp ARGS -- sh -c '"$MCP" serve demo; : > MARKER'`, reads the first line of its output,
/// and returns it with whether the server had exited by then. Waits for `mcp` to exit (status 0),
/// after which the marker must exist: the server was closed, not left behind.
fn first_line_and_server_gone(args: &[&str], marker: &Path) -> (String, bool) {
    let script = r#""$0" serve demo; : > "$1""#;
    let mut child = Command::new(MCP)
        .args(args)
        .args(["--", "sh", "-c", script, MCP])
        .arg(marker)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn mcp");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read the answer");
    let gone = marker.exists();
    std::io::copy(&mut stdout, &mut std::io::sink()).expect("drain");
    let status = child.wait().expect("wait for mcp");
    assert!(status.success(), "{status}");
    assert!(marker.exists(), "mcp exited, the server did not");
    (line, gone)
}

#[test]
fn call_prints_the_result_before_closing_the_server() {
    let dir = TempDir::new("result-first-call");
    let marker = dir.file("exited");
    let (line, gone) =
        first_line_and_server_gone(&["call", "--timeout", "60", "echo", "text=hello"], &marker);
    assert_eq!(line, "hello\n");
    assert!(!gone, "the server was closed before the result was shown");
}

#[test]
fn lists_print_before_closing_the_server() {
    let dir = TempDir::new("result-first-tools");
    let marker = dir.file("exited");
    let (line, gone) = first_line_and_server_gone(&["tools", "--timeout", "60"], &marker);
    assert!(line.contains('('), "not a tool: {line:?}");
    assert!(!gone, "the server was closed before the list was shown");
}
