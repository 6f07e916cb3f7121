//! Server processes: `reliability-server` over stdio or HTTP, started and stopped without
//! sleeping (readiness is the line it prints once bound; stopping waits for the exit).

use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::procfs::{self, Memory};

/// The line prefix `reliability-server` prints on stdout once its HTTP listener is bound.
pub const READY_PREFIX: &str = "listening http://127.0.0.1:";

/// The environment variable holding the sealing secrets (comma-separated, first one mints).
pub const KEYS_VAR: &str = "MCP_REQUEST_STATE_KEYS";

/// The environment variable naming the Redis change bus `reliability-server` joins.
pub const BUS_VAR: &str = "MCP_BUS_REDIS";

/// The environment variable raising how many listen streams one client (here: one peer address)
/// may hold (`SubscriptionLimits::max_streams_per_client`, 256 by default), and making the
/// server's whole budget its share (`max_held_bytes_per_client`, 16 MiB by default):
/// `mcp-listeners` holds all its streams from 127.0.0.1, as a proxy in front of an instance
/// would.
pub const STREAMS_PER_CLIENT_VAR: &str = "MCP_LISTEN_STREAMS_PER_CLIENT";

/// How a server process is started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Sealing secrets; `None` leaves the process its own random key.
    pub keys: Option<String>,
    /// The Redis change bus to join (`MCP_BUS_REDIS`); `None`: changes stay in the process.
    pub bus: Option<String>,
    /// The TCP port (0: any free port). Ignored over stdio.
    pub port: u16,
    /// Whether the server's stderr (its logs) reaches ours.
    pub show_logs: bool,
    /// How many listen streams one peer address may hold (`None`: the SDK's default).
    pub streams_per_client: Option<usize>,
    /// Make glibc's allocator predictable for memory checks: one arena (`MALLOC_ARENA_MAX`)
    /// and a fixed 128 KiB mmap threshold (`MALLOC_MMAP_THRESHOLD_`). By default glibc opens
    /// an arena per contending thread, each keeping its own freed memory, and raises its mmap
    /// threshold after the first large free, so that later large buffers come from the heap
    /// and stay there: the same work then peaks higher on a loaded machine, or on a second
    /// pass, without any leak. Two arenas were not enough: a second pass whose large messages
    /// landed on the other arena than the first pass's peaked 15 MiB higher (seen once in ~10
    /// loaded runs of hostile_stdio).
    pub predictable_malloc: bool,
}

fn command(bin: &Path, launch: &Launch) -> Command {
    let mut command = Command::new(bin);
    command
        .env_remove(KEYS_VAR)
        .env_remove("MCP_REQUEST_STATE_TTL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if launch.show_logs {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true);
    if let Some(keys) = &launch.keys {
        command.env(KEYS_VAR, keys);
    }
    command.env_remove(BUS_VAR);
    if let Some(bus) = &launch.bus {
        command.env(BUS_VAR, bus);
    }
    command.env_remove(STREAMS_PER_CLIENT_VAR);
    if let Some(streams) = launch.streams_per_client {
        command.env(STREAMS_PER_CLIENT_VAR, streams.to_string());
    }
    if launch.predictable_malloc {
        command
            .env("MALLOC_ARENA_MAX", "1")
            .env("MALLOC_MMAP_THRESHOLD_", "131072");
    }
    command
}

/// A server process serving HTTP on 127.0.0.1.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    /// The process id.
    pub pid: u32,
    /// The bound port.
    pub port: u16,
}

impl HttpServer {
    /// Starts `bin` and waits (at most 60 s) for its readiness line.
    ///
    /// # Errors
    /// The process could not start, exited, or never announced its port.
    pub async fn start(bin: &Path, launch: &Launch) -> io::Result<Self> {
        let mut command = command(bin, launch);
        command.env("PORT", launch.port.to_string());
        let mut child = command.spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("server exited at once"))?;
        let mut stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| io::Error::other("no stdout"))?,
        );
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line))
            .await
            .map_err(|_| io::Error::other("the server did not announce its port within 60 s"))??;
        let port = line
            .trim()
            .strip_prefix(READY_PREFIX)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse::<u16>().ok())
            .filter(|_| read > 0)
            .ok_or_else(|| io::Error::other(format!("unexpected readiness line {line:?}")))?;
        Ok(Self {
            child,
            _stdout: stdout,
            pid,
            port,
        })
    }

    /// `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its memory now.
    ///
    /// # Errors
    /// The process is gone.
    pub fn memory(&self) -> io::Result<Memory> {
        procfs::memory(self.pid)
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Graceful stop: SIGTERM (the server stops accepting and finishes the requests in flight),
    /// then waits for the exit; SIGKILL after `grace`.
    ///
    /// # Errors
    /// Signalling or waiting failed.
    pub async fn stop(mut self, grace: Duration) -> io::Result<std::process::ExitStatus> {
        terminate(self.pid)?;
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                self.child.start_kill()?;
                self.child.wait().await
            }
        }
    }
}

/// Sends SIGTERM to `pid`.
///
/// # Errors
/// The signal could not be sent.
pub fn terminate(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| io::Error::other("invalid pid"))?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).map_err(io::Error::from)
}

/// A server process serving newline-delimited JSON on its stdin/stdout.
#[derive(Debug)]
pub struct StdioServer {
    /// The process.
    pub child: Child,
    /// Its stdin (requests go here).
    pub stdin: Option<ChildStdin>,
    /// Its stdout, by lines.
    pub stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    /// The process id.
    pub pid: u32,
}

impl StdioServer {
    /// Starts `bin --stdio`.
    ///
    /// # Errors
    /// The process could not start.
    pub fn start(bin: &Path, launch: &Launch) -> io::Result<Self> {
        let mut command = command(bin, launch);
        command.arg("--stdio").stdin(Stdio::piped());
        let mut child = command.spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("server exited at once"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| io::Error::other("no stdout"))?,
        )
        .lines();
        Ok(Self {
            child,
            stdin,
            stdout,
            pid,
        })
    }

    /// Its memory now.
    ///
    /// # Errors
    /// The process is gone.
    pub fn memory(&self) -> io::Result<Memory> {
        procfs::memory(self.pid)
    }
}
