//! What the `mcp` binary's integration tests share: running it, and a server started with
//! `--http 0` whose address is read from its stderr.

#![allow(dead_code, unreachable_pub, reason = "each test file uses a part")]

use std::io::{BufRead as _, BufReader, Lines, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;

pub const MCP: &str = env!("CARGO_BIN_EXE_mcp");

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The interpreter of the project venv with the Python SDK 2.3.0 (`scripts/python-env.sh`).
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

/// Runs `mcp args…` with `stdin` piped in.
pub fn mcp(args: &[&str], stdin: &str) -> Output {
    mcp_in(args, stdin, None)
}

/// [`mcp`] in `dir`.
pub fn mcp_in(args: &[&str], stdin: &str, dir: Option<&Path>) -> Output {
    let mut command = Command::new(MCP);
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

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn assert_ok(output: &Output) {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(output),
        stderr(output)
    );
}

/// A spawned `mcp` (or server) whose stderr is read line by line.
pub struct Running {
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
pub struct HttpServer {
    pub url: String,
    pub banner: Vec<String>,
    child: Child,
}

impl HttpServer {
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

    pub fn demo() -> Self {
        Self::start(MCP, &["serve", "demo", "--http", "0"])
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh directory under the system's temporary directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("mcp-cli-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
