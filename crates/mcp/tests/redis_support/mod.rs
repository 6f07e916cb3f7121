//! A private redis-server for the Redis store tests (client flows and server tasks): a free
//! 127.0.0.1 port, its data in a fresh temporary directory, killed when dropped.
//! `scripts/system-packages.sh` installs the binary (`.ci/run` runs it once, before any test);
//! tests only look for it, and fail, never skip, when it is not there.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// Whether the server keeps an append-only file (writes survive a redis-server restart).
#[derive(Clone, Copy, Debug)]
pub enum Persistence {
    Off,
    AppendOnly,
}

pub struct Redis {
    pub url: String,
    _child: tokio::process::Child,
    _dir: DataDir,
}

struct DataDir(PathBuf);

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    pub async fn start(persistence: Persistence) -> Self {
        let binary = redis_server_binary();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("mcp-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = DataDir(dir);
        let appendonly = match persistence {
            Persistence::Off => "no",
            Persistence::AppendOnly => "yes",
        };
        let child = tokio::process::Command::new(binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", appendonly, "--dir"])
            .arg(&dir.0)
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server did not start");
        // Poll the port until it answers (bounded).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "redis-server never listened on 127.0.0.1:{port}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Self {
            url: format!("redis://127.0.0.1:{port}/0"),
            _child: child,
            _dir: dir,
        }
    }
}
