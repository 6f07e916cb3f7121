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
    port: u16,
    persistence: Persistence,
    // Declared before the directory: the server is killed before its data is removed.
    child: Option<tokio::process::Child>,
    dir: TempDir,
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
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut redis = Self {
            url: format!("redis://127.0.0.1:{port}/0"),
            port,
            persistence,
            child: None,
            dir: TempDir::new(&format!("redis-{port}")),
        };
        redis.start_again().await;
        redis
    }

    /// Kills the server (an outage: its clients' connections drop) and waits until it exited.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child
                .kill()
                .await
                .expect("redis-server could not be killed");
        }
    }

    /// Starts the server again on the same port and data directory, and waits until it accepts
    /// connections (a restart, after [`Redis::stop`]).
    pub async fn start_again(&mut self) {
        assert!(self.child.is_none(), "redis-server is running");
        let appendonly = match self.persistence {
            Persistence::Off => "no",
            Persistence::AppendOnly => "yes",
        };
        let child = tokio::process::Command::new(redis_server_binary())
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", appendonly, "--dir"])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server did not start");
        self.child = Some(child);
        wait_for_port(self.port, Duration::from_secs(10))
            .await
            .unwrap_or_else(|error| panic!("redis-server: {error}"));
    }
}
