//! `mcp app` run as a child process for the browser tests: its page's URL (the first line of
//! its stdout, with `--no-open`), waits for lines on stdout and stderr, and Ctrl-C (SIGINT).
//! Both streams are read by tasks of their own into channels, so a wait is a bounded `recv`,
//! never a fixed sleep.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::cli::mcp_binary;

/// A running `mcp app --no-open …`, killed when dropped.
#[derive(Debug)]
pub struct McpApp {
    child: Child,
    stdout: Lines,
    stderr: Lines,
}

/// One stream's lines: those read so far, and those still to come.
#[derive(Debug)]
struct Lines {
    seen: Vec<String>,
    coming: mpsc::UnboundedReceiver<String>,
}

impl Lines {
    fn read(stream: impl AsyncRead + Unpin + Send + 'static) -> Self {
        let (sender, coming) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            seen: Vec::new(),
            coming,
        }
    }

    /// The first line (seen before or coming) that `matches`, waiting at most `limit`.
    async fn wait(&mut self, matches: impl Fn(&str) -> bool, limit: Duration) -> Option<String> {
        if let Some(line) = self.seen.iter().find(|line| matches(line)) {
            return Some(line.clone());
        }
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let line = tokio::time::timeout_at(deadline, self.coming.recv())
                .await
                .ok()??;
            self.seen.push(line.clone());
            if matches(&line) {
                return Some(line);
            }
        }
    }

    /// Every line, once the stream has ended.
    async fn rest(&mut self) -> Vec<String> {
        while let Some(line) = self.coming.recv().await {
            self.seen.push(line);
        }
        self.seen.clone()
    }
}

impl McpApp {
    /// Runs `mcp app --no-open ARGS…` (stdin closed: a question it asks is cancelled) and waits
    /// for the page's URL.
    pub async fn start(args: &[&str]) -> (Self, String) {
        let mut child = Command::new(mcp_binary())
            .arg("app")
            .arg("--no-open")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn mcp app");
        let stdout = Lines::read(child.stdout.take().unwrap());
        let stderr = Lines::read(child.stderr.take().unwrap());
        let mut app = Self {
            child,
            stdout,
            stderr,
        };
        let is_url = |line: &str| line.starts_with("http://127.0.0.1:");
        match app.stdout.wait(is_url, Duration::from_secs(90)).await {
            Some(url) => (app, url),
            None => {
                let _ = app.child.start_kill();
                let (status, out, err) = app.exit(Duration::from_secs(10)).await;
                panic!("mcp app printed no URL ({status}):\nstdout: {out:#?}\nstderr: {err:#?}");
            }
        }
    }

    /// Waits (at most `limit`) for a stdout line containing `text`; panics showing both streams
    /// otherwise.
    pub async fn stdout_line(&mut self, text: &str, limit: Duration) -> String {
        self.line(false, text, limit).await
    }

    /// Waits (at most `limit`) for a stderr line containing `text`.
    pub async fn stderr_line(&mut self, text: &str, limit: Duration) -> String {
        self.line(true, text, limit).await
    }

    async fn line(&mut self, on_stderr: bool, text: &str, limit: Duration) -> String {
        let stream = if on_stderr {
            &mut self.stderr
        } else {
            &mut self.stdout
        };
        match stream.wait(|line| line.contains(text), limit).await {
            Some(line) => line,
            None => panic!(
                "no {} line with {text:?} within {limit:?}:\nstdout: {:#?}\nstderr: {:#?}",
                if on_stderr { "stderr" } else { "stdout" },
                self.stdout.seen,
                self.stderr.seen
            ),
        }
    }

    /// Ctrl-C (SIGINT), then [`Self::exit`].
    pub async fn interrupt(self, limit: Duration) -> (ExitStatus, Vec<String>, Vec<String>) {
        let pid = self.child.id().expect("still running").to_string();
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -INT {pid}");
        self.exit(limit).await
    }

    /// Waits (at most `limit`, then kills it and panics) for the exit: its status and every
    /// line of stdout and stderr.
    pub async fn exit(mut self, limit: Duration) -> (ExitStatus, Vec<String>, Vec<String>) {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => {
                let status = status.unwrap();
                (status, self.stdout.rest().await, self.stderr.rest().await)
            }
            Err(_) => {
                let _ = self.child.kill().await;
                panic!(
                    "mcp app did not exit within {limit:?}:\nstdout: {:#?}\nstderr: {:#?}",
                    self.stdout.rest().await,
                    self.stderr.rest().await
                );
            }
        }
    }
}
