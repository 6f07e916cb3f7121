//! The repository and its Python environment, for tests that run peers as child processes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The interpreter of the project venv with the Python SDK (`scripts/python-env.sh` creates it
/// once per test process).
pub fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let output = Command::new("bash")
            .arg(repo_root().join("scripts/python-env.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/python-env.sh");
        assert!(output.status.success(), "scripts/python-env.sh failed");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    })
}

/// Waits until something accepts TCP connections on 127.0.0.1:`port`, polling every 20 ms for
/// at most `limit` (a child process that never listens fails the test instead of hanging it).
pub async fn wait_for_port(port: u16, limit: Duration) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "nothing listened on 127.0.0.1:{port} within {limit:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
