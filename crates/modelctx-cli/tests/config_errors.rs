//! Configuration mistakes are one-line usage errors (exit 2), never a panic or a silent
//! fallback: the sealing settings of `mcp serve demo` and the `--timeout` of client commands.

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::process::{Command, Output, Stdio};

use modelctx_test_support::cli::{assert_ok, mcp, stderr, stdout};
use serde_json::Value;

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// `mcp serve demo` with `env`, one provisioning request on stdin.
fn serve_demo(env: &[(&str, &OsStr)]) -> Output {
    let mut command = Command::new(MCP);
    command
        .args(["serve", "demo"])
        .env_remove("MCP_REQUEST_STATE_KEYS")
        .env_remove("MCP_REQUEST_STATE_TTL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut server = command.spawn().unwrap();
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"provision","arguments":{"name":"orders"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}"#;
    let mut stdin = server.stdin.take().unwrap();
    // The server may already have exited with a configuration error.
    let _ = writeln!(stdin, "{request}");
    drop(stdin);
    server.wait_with_output().unwrap()
}

#[track_caller]
fn assert_usage_error(output: &Output, expected: &str) {
    let message = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    assert!(message.contains(expected), "{expected:?} in {message}");
}

#[test]
fn bad_sealing_settings_are_usage_errors() {
    for ttl in ["1e300", "inf", "NaN", "-1", "0", "1e-300", "soon"] {
        let output = serve_demo(&[
            ("MCP_REQUEST_STATE_KEYS", OsStr::new(KEY)),
            ("MCP_REQUEST_STATE_TTL", OsStr::new(ttl)),
        ]);
        assert_usage_error(&output, &format!("ttl \"{ttl}\""));
    }
    // Not UTF-8: refused, not ignored (which would seal under a per-process key).
    let mut bytes = KEY.as_bytes().to_vec();
    bytes[3] = 0xff;
    let output = serve_demo(&[("MCP_REQUEST_STATE_KEYS", OsStr::from_bytes(&bytes))]);
    assert_usage_error(
        &output,
        "MCP_REQUEST_STATE_KEYS is set but is not valid UTF-8",
    );
    let output = serve_demo(&[("MCP_REQUEST_STATE_KEYS", OsStr::new("short"))]);
    assert_usage_error(&output, "keys[0] is 5 bytes");
    // `mcp state inspect` reads the same variable the same way.
    let output = Command::new(MCP)
        .args(["state", "inspect", "v1.AAAA"])
        .env("MCP_REQUEST_STATE_KEYS", OsStr::from_bytes(&bytes))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_usage_error(
        &output,
        "MCP_REQUEST_STATE_KEYS is set but is not valid UTF-8",
    );
}

/// Whitespace around a key (a trailing newline from `$(cat key.txt)`, spaces after commas) is
/// not part of it: the demo seals under the key itself.
#[test]
fn keys_are_trimmed() {
    let spaced = format!(" {KEY} ,\n");
    let output = serve_demo(&[("MCP_REQUEST_STATE_KEYS", OsStr::new(&spaced))]);
    assert_ok(&output);
    let reply: Value = serde_json::from_slice(&output.stdout).unwrap();
    let token = reply["result"]["requestState"].as_str().unwrap();
    let inspected = mcp(&["state", "inspect", "--key", KEY, token], "");
    assert_ok(&inspected);
    assert!(
        stdout(&inspected).contains("(key 1 of 1, the minting key)"),
        "{}",
        stdout(&inspected)
    );
}

#[test]
fn bad_timeouts_are_usage_errors() {
    let flags = ["--timeout", "--connect-timeout"];
    for (name, timeout) in flags.iter().flat_map(|name| {
        ["1e300", "inf", "NaN", "-1", "0", "1e-300", "2e9"].map(|timeout| (name, timeout))
    }) {
        let flag = format!("{name}={timeout}");
        let output = mcp(&["call", &flag, "echo", "--", "/bin/false"], "");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{timeout}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("expected a positive number of seconds"),
            "{}",
            stderr(&output)
        );
    }
}

/// A log filter that does not parse is reported, not replaced by the default in silence (the
/// operator would believe they had turned on the logs they asked for).
#[test]
fn a_bad_log_filter_is_a_usage_error() {
    let output = serve_demo(&[
        ("MCP_REQUEST_STATE_KEYS", OsStr::new(KEY)),
        ("MCP_LOG", OsStr::new("mcp=loud")),
    ]);
    assert_usage_error(&output, "MCP_LOG:");
    let output = serve_demo(&[
        ("MCP_REQUEST_STATE_KEYS", OsStr::new(KEY)),
        ("MCP_LOG", OsStr::new("mcp=debug")),
    ]);
    assert_ok(&output);
}
