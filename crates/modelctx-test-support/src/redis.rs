//! A private redis-server for the Redis store tests (client flows and server tasks): a free
//! 127.0.0.1 port, its data in a fresh temporary directory, killed when dropped.
//! `scripts/system-packages.sh` installs the binary (`.ci/run` runs it once, before any test);
//! tests only look for it, and fail, never skip, when it is not there.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::process::wait_for_port;
use crate::tempdir::TempDir;

/// Whether the server keeps an append-only file (writes survive a redis-server restart).
#[derive(Clone, Copy, Debug)]
pub enum Persistence {
    /// Nothing is written to disk.
    Off,
    /// Every write goes to the append-only file first.
    AppendOnly,
}

/// A running redis-server; killed, and its data directory removed, when dropped.
#[derive(Debug)]
pub struct Redis {
    /// `redis://127.0.0.1:<port>/0`.
    pub url: String,
    // Declared before the directory: the server is killed before its data is removed.
    _child: tokio::process::Child,
    _dir: TempDir,
}

/// Where `redis-server` is. Tests never install packages: several tests of one binary did so at
/// once and collided on apt's lock, losing the reason.
fn redis_server_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "redis-server is not installed: run scripts/system-packages.sh \
                 (.ci/run does, before the tests)"
            )
        })
}

impl Redis {
    /// Starts a server on a free port and waits until it accepts connections.
    pub async fn start(persistence: Persistence) -> Self {
        let binary = redis_server_binary();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = TempDir::new(&format!("redis-{port}"));
        let appendonly = match persistence {
            Persistence::Off => "no",
            Persistence::AppendOnly => "yes",
        };
        let child = tokio::process::Command::new(binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", appendonly, "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server did not start");
        wait_for_port(port, Duration::from_secs(10))
            .await
            .unwrap_or_else(|error| panic!("redis-server: {error}"));
        Self {
            url: format!("redis://127.0.0.1:{port}/0"),
            _child: child,
            _dir: dir,
        }
    }
}
