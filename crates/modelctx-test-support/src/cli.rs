//! What the `mcp` binary's integration tests share: running it, and a server started with
//! `--http 0` whose address is read from its stderr.

use std::io::{BufRead as _, BufReader, Lines, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;

pub use crate::process::{python, repo_root};
pub use crate::tempdir::TempDir;

/// The `mcp` binary of the test being run: cargo (1.94 and later) sets `CARGO_BIN_EXE_mcp` at
/// run time for the integration tests of `modelctx-cli`, as it does at compile time for `env!`.
pub fn mcp_binary() -> &'static str {
    static BINARY: OnceLock<String> = OnceLock::new();
    BINARY.get_or_init(|| {
        std::env::var("CARGO_BIN_EXE_mcp")
            .expect("CARGO_BIN_EXE_mcp is unset: run the modelctx-cli tests with `cargo test`")
    })
}

/// Runs `mcp args…` with `stdin` piped in.
pub fn mcp(args: &[&str], stdin: &str) -> Output {
    mcp_in(args, stdin, None)
}

/// [`mcp()`] in `dir`.
pub fn mcp_in(args: &[&str], stdin: &str, dir: Option<&Path>) -> Output {
    let mut command = Command::new(mcp_binary());
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command.spawn().expect("spawn mcp");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The process's stdout, as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The process's stderr, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Panics, showing both streams, unless the process exited with success.
pub fn assert_ok(output: &Output) {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(output),
        stderr(output)
    );
}

/// The `task ID: STATUS — MESSAGE` lines of `mcp call`'s stderr (either task protocol), without
/// the `task ID: ` prefix, and the (last) id.
pub fn task_lines(stderr: &str) -> (String, Vec<String>) {
    let mut id = String::new();
    let lines = stderr
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("task ")?;
            let (task, status) = rest.split_once(": ")?;
            id = task.to_owned();
            Some(status.to_owned())
        })
        .collect();
    (id, lines)
}

/// A spawned `mcp` (or server) whose stderr is read line by line.
#[derive(Debug)]
pub struct Running {
    /// The process.
    pub child: Child,
    lines: Lines<BufReader<ChildStderr>>,
    /// The stderr lines read so far.
    pub seen: Vec<String>,
}

impl Running {
    /// Spawns `command` with stderr piped (stdout as the command says).
    pub fn spawn(command: &mut Command) -> Self {
        let mut child = command.stderr(Stdio::piped()).spawn().expect("spawn");
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads stderr until a line contains `marker`; returns what follows the marker. Panics
    /// when the process closes stderr first.
    pub fn wait_for(&mut self, marker: &str) -> String {
        loop {
            let line = self
                .lines
                .next()
                .unwrap_or_else(|| panic!("exited before printing {marker:?}: {:?}", self.seen))
                .unwrap();
            let found = line
                .split_once(marker)
                .map(|(_, after)| after.trim().to_owned());
            self.seen.push(line);
            if let Some(after) = found {
                return after;
            }
        }
    }

    /// Waits for the exit: the status, stdout, and every stderr line.
    pub fn finish(mut self) -> (ExitStatus, String, Vec<String>) {
        self.seen.extend(self.lines.by_ref().map_while(Result::ok));
        let mut out = String::new();
        if let Some(mut stdout) = self.child.stdout.take() {
            stdout.read_to_string(&mut out).unwrap();
        }
        let status = self.child.wait().unwrap();
        (status, out, self.seen)
    }
}

/// A server started with `--http 0`, reporting `listening on http://…/mcp` on stderr; killed
/// on drop. The stderr lines before that are kept in `banner`.
#[derive(Debug)]
pub struct HttpServer {
    /// The server's URL, read from its banner.
    pub url: String,
    /// The stderr lines up to and including the one with the URL.
    pub banner: Vec<String>,
    child: Child,
}

impl HttpServer {
    /// Runs `program args…` and waits for the URL on its stderr.
    pub fn start(program: &str, args: &[&str]) -> Self {
        let mut running = Running::spawn(
            Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null()),
        );
        let url = running.wait_for("listening on ");
        let Running {
            child,
            lines,
            mut seen,
        } = running;
        seen.pop();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            url,
            banner: seen,
            child,
        }
    }

    /// `mcp serve demo --http 0`.
    pub fn demo() -> Self {
        Self::start(mcp_binary(), &["serve", "demo", "--http", "0"])
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
