//! The server a stdio client spawns: the environment it gets (a safe subset unless the builder
//! says to inherit all of it) and its process group, which closing the client ends whole.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use modelctx_test_support::client::{pinned, python, repo_root};
use serde_json::json;

/// `sh -c script` with the cancel probe as `$PROBE` and `$PY`, and `vars` set explicitly.
fn wrapped(script: &str, vars: &[(&str, &Path)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(script).env("PY", python()).env(
        "PROBE",
        repo_root().join("tests/python/client_fixtures/cancel_probe.py"),
    );
    for (name, value) in vars {
        command.env(name, value);
    }
    command
}

fn variables(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .expect("the server wrote its environment")
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_owned()))
        .collect()
}

/// By default the server gets PATH and the variables set on its command, not the rest of the
/// client's environment (here, what cargo sets for a test); `inherit_environment(true)` gives
/// it everything.
#[tokio::test]
async fn a_spawned_server_gets_a_safe_environment_unless_told_otherwise() {
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some() && std::env::var_os("PATH").is_some(),
        "cargo sets CARGO_MANIFEST_DIR for a test, and a PATH is needed to find sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = r#"env > "$ENV_FILE"; exec "$PY" "$PROBE""#;

    let safe = dir.path().join("safe.env");
    let client = pinned()
        .connect_stdio(wrapped(script, &[("ENV_FILE", &safe)]))
        .await
        .unwrap();
    client.close().await.unwrap();
    let seen = variables(&safe);
    assert!(seen.iter().any(|name| name == "PATH"), "{seen:?}");
    assert!(seen.iter().any(|name| name == "ENV_FILE"), "{seen:?}");
    assert!(seen.iter().any(|name| name == "PROBE"), "{seen:?}");
    assert!(
        !seen.iter().any(|name| name.starts_with("CARGO")),
        "the client's own environment leaked: {seen:?}"
    );

    let all = dir.path().join("all.env");
    let client = pinned()
        .inherit_environment(true)
        .connect_stdio(wrapped(script, &[("ENV_FILE", &all)]))
        .await
        .unwrap();
    client.close().await.unwrap();
    let seen = variables(&all);
    assert!(
        seen.iter().any(|name| name == "CARGO_MANIFEST_DIR"),
        "{seen:?}"
    );
}

/// Whether process `pid` is alive (a zombie, which nobody may have reaped in a container,
/// is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_owned())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// A server that does not exit when its stdin closes is terminated with what it started: the
/// signal goes to its process group, so a child it left running (here a `sleep`) ends too.
#[tokio::test]
async fn closing_ends_the_server_s_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let client = pinned()
        .shutdown_grace(Duration::from_millis(200))
        .connect_stdio(wrapped(
            r#"sleep 300 & echo $! > "$PID_FILE"; exec "$PY" "$PROBE" --ignore-eof"#,
            &[("PID_FILE", &pid_file)],
        ))
        .await
        .unwrap();
    // A 2026-07-28 client sends nothing until asked: a call makes sure the script ran.
    client.call_tool("x", json!({})).await.unwrap();
    let child: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        alive(child),
        "the server's child runs while the server does"
    );
    client.close().await.unwrap();
    // The signal is sent by the time `close` returns; its delivery is the kernel's. Polled,
    // bounded.
    let mut ended = false;
    for _ in 0..200 {
        if !alive(child) {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(ended, "the server's child outlived the close");
}
