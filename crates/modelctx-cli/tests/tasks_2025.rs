//! `mcp call` against a 2025-11-25 server with the experimental tasks (SEP-1686) — the
//! project's fixture `modelctx_test_support::tasks_2025`, over HTTP and stdio: a tool that
//! requires a task is run as one, its status lines shown (sanitised) as for 2026-07-28 tasks,
//! its `input_required` question answered from `--answer`; a question the server asks as a
//! client-side task is answered the same way; Ctrl-C cancels the task on the server.

use std::process::{Command, Output, Stdio};

use modelctx_test_support::cli::{Running, assert_ok, stderr, stdout, task_lines};
use serde_json::Value;

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// Marks the re-run of this binary that serves the fixture on stdio.
const STDIO_ENV: &str = "MCP_CLI_TASKS_2025_STDIO_SERVER";

/// The stdio server process (this binary re-run; ignored in normal runs).
#[tokio::test]
#[ignore = "entry point of the stdio server child process"]
async fn child_stdio_server() {
    if std::env::var_os(STDIO_ENV).is_some() {
        modelctx_test_support::tasks_2025::serve_stdio()
            .await
            .unwrap();
    }
}

/// The fixture on HTTP at 127.0.0.1 on a free port, in a runtime of its own for as long as the
/// test runs.
fn http_server() -> String {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            url_tx
                .send(format!("http://{}/mcp", listener.local_addr().unwrap()))
                .unwrap();
            modelctx_test_support::tasks_2025::server()
                .serve_http_on(
                    listener,
                    modelctx::server::http::HttpConfig::default(),
                    std::future::pending(),
                )
                .await
        })
    });
    url_rx.recv().unwrap()
}

/// Where `mcp` finds the server: a URL, or this binary re-run on stdio.
enum Via {
    Http(String),
    Stdio,
}

impl Via {
    fn both() -> [Self; 2] {
        [Self::Http(http_server()), Self::Stdio]
    }

    /// `mcp call` with `args` (the tool and its arguments) against this server.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCP);
        command.args(["call", "--timeout", "60"]);
        match self {
            Self::Http(url) => {
                command.arg(url).args(args);
            }
            Self::Stdio => {
                command
                    .args(args)
                    .arg("--")
                    .arg(std::env::current_exe().unwrap())
                    .args(["child_stdio_server", "--exact", "--ignored", "--quiet"])
                    .env(STDIO_ENV, "1");
            }
        }
        command
    }

    fn call(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("run mcp")
    }
}

/// A tool with `taskSupport: "required"` runs as a task: each status is a line, the escape
/// sequence the server echoes in a status message is shown escaped, the question comes from
/// `--answer`, and the result is printed.
#[test]
fn call_runs_a_required_task_and_answers_its_question() {
    for via in Via::both() {
        let output = via.call(&["research", "topic=tides\u{1b}[2J", "--answer", "depth=deep"]);
        assert_ok(&output);
        let err = stderr(&output);
        assert_eq!(
            stdout(&output).trim(),
            "research on tides\\u{1b}[2J at depth deep",
            "{err}"
        );
        let (id, lines) = task_lines(&err);
        assert_eq!(id, "research-1", "{err}");
        assert_eq!(
            lines,
            [
                "working — started",
                "input_required — waiting for the depth of tides\\u{1b}[2J",
                "completed — done"
            ],
            "{err}"
        );
        assert!(
            !err.contains('\u{1b}'),
            "raw escape on the terminal: {err:?}"
        );
        assert!(
            err.contains("asks: Which depth for the research on tides\\u{1b}[2J?"),
            "{err}"
        );
    }
}

/// The server asks its question as a client-side task (it polls the client): `mcp call`
/// declared the capability, runs it, and answers it from `--answer`.
#[test]
fn a_question_asked_as_a_task_is_answered() {
    for via in Via::both() {
        let output = via.call(&["async_elicit", "--answer", "name=Ada"]);
        assert_ok(&output);
        let err = stderr(&output);
        let report: Value = serde_json::from_str(stdout(&output).trim())
            .unwrap_or_else(|e| panic!("{e}: {}\n{err}", stdout(&output)));
        assert_eq!(report["result"]["action"], "accept", "{report}");
        assert_eq!(report["result"]["content"]["name"], "Ada", "{report}");
        assert_eq!(
            report["statuses"].as_array().unwrap().last().unwrap(),
            "completed"
        );
        assert_eq!(report["listed"], true, "{report}");
        assert_eq!(report["unknown"]["code"], -32602, "{report}");
        assert!(err.contains("asks: Your name, at your pace?"), "{err}");
    }
}

/// Ctrl-C while a 2025-11-25 task works: `mcp call` sends that protocol's `tasks/cancel`, and
/// the server has the task cancelled.
#[test]
fn ctrl_c_cancels_a_2025_task() {
    let via = Via::Http(http_server());
    let mut running = Running::spawn(
        via.command(&["slow", "topic=glaciers"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped()),
    );
    running.wait_for("task slow-1: working");
    let interrupt = Command::new("kill")
        .args(["-INT", "--", &running.child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let (status, out, lines) = running.finish();
    assert_eq!(status.code(), Some(130), "{lines:?}");
    assert!(out.is_empty(), "{out}");
    assert!(
        lines.contains(&"task slow-1 cancelled".to_owned()),
        "{lines:?}"
    );
    // The server agrees.
    let ended = via.call(&["wait_ended", "taskId=slow-1"]);
    assert_ok(&ended);
    assert_eq!(stdout(&ended).trim(), "cancelled");
}
