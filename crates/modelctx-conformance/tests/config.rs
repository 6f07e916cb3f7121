//! The fixture server refuses a bad environment with a one-line error instead of panicking or
//! falling back silently (to port 3000, or to a per-process sealing key).

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// Runs `conformance-server --stdio` (stdin closed) with `env`; its exit status and stderr.
async fn run(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_conformance-server"));
    command
        .arg("--stdio")
        .env_remove("PORT")
        .env_remove("MCP_REQUEST_STATE_KEYS")
        .env_remove("MCP_REQUEST_STATE_TTL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("the server exits")
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_bad_environment_is_an_error_not_a_panic_or_a_default() {
    let (ok, _) = run(&[]).await;
    assert_eq!(ok, Some(0), "stdin closed: a clean exit");
    for (env, expected) in [
        (("PORT", "http"), "PORT=http: invalid digit"),
        (("PORT", "70000"), "PORT=70000: number too large"),
        (("MCP_REQUEST_STATE_TTL", "1e300"), "ttl \"1e300\""),
    ] {
        let (code, stderr) = run(&[env]).await;
        assert_eq!(code, Some(2), "{env:?}: {stderr}");
        assert!(stderr.contains(expected), "{expected} in {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}
