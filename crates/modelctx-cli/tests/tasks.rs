//! `mcp call` follows a tool call the server runs as a task — the demo server's
//! `long_report` — showing each status change, answering the task's question, and cancelling
//! the task on Ctrl-C; `mcp task` picks a task up again, also after the server restarted with
//! `--tasks-db`.

use std::process::{Command, Stdio};

use modelctx::client::{Client, TaskSettings};
use modelctx::types::tasks::TaskStatus;
use modelctx_test_support::cli::{
    HttpServer, Running, TempDir, assert_ok, mcp, stderr, stdout, task_lines,
};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// Over HTTP and stdio: the task's status changes are shown line by line, its question is
/// answered from `--answer`, and the final result is printed.
#[test]
fn call_shows_a_task_and_answers_its_question() {
    let server = HttpServer::demo();
    let over_stdio = ["--", MCP, "serve", "demo"];
    for stdio in [false, true] {
        let mut args = vec![
            "call",
            "--timeout",
            "60",
            "long_report",
            "quarter=Q3",
            "--answer",
            "format=markdown",
        ];
        if stdio {
            args.extend(over_stdio);
        } else {
            args.insert(3, &server.url);
        }
        let output = mcp(&args, "");
        assert_ok(&output);
        let err = stderr(&output);
        assert_eq!(
            stdout(&output).trim(),
            "# Long report Q3\n\n* revenue up 4%\n* costs down 2%",
            "{err}"
        );
        let (id, lines) = task_lines(&err);
        assert_eq!(id.len(), 32, "{err}");
        // Created working; the steps before the question may pass between two polls, the
        // question and the end may not.
        assert_eq!(lines.first().map(String::as_str), Some("working"), "{err}");
        let asking = lines
            .iter()
            .position(|l| l == "input_required — waiting for the format")
            .unwrap_or_else(|| panic!("no input_required line: {err}"));
        assert_eq!(
            lines.last().map(String::as_str),
            Some("completed — the report is ready"),
            "{err}"
        );
        assert!(asking < lines.len() - 1);
        // Each line is a change.
        assert!(lines.windows(2).all(|w| w[0] != w[1]), "{lines:?}");
        // The question was the task's, answered from --answer.
        assert!(
            err.contains("asks: Which format for the Q3 report?"),
            "{err}"
        );
        assert!(
            err.contains(r#"answered from --answer: {"format":"markdown"}"#),
            "{err}"
        );
    }
}

/// `mcp call --timeout SECONDS URL long_report quarter=QUARTER` with stdin open and silent,
/// once it asks for the format (the question then waits for the user).
fn asked(url: &str, seconds: &str, quarter: &str) -> Running {
    let mut running = Running::spawn(
        Command::new(MCP)
            .args(["call", "--timeout", seconds, url, "long_report"])
            .arg(format!("quarter={quarter}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped()),
    );
    running.wait_for(&format!("asks: Which format for the {quarter} report?"));
    running
}

/// Ctrl-C while the task waits for input: `mcp call` cancels the task on the server and exits
/// 130.
#[test]
fn ctrl_c_cancels_the_task() {
    let server = HttpServer::demo();
    // Stdin stays open and silent: the question waits for the user.
    let running = asked(&server.url, "60", "Q4");
    let pid = running.child.id().to_string();
    let id = interrupt_and_expect_cancel(running, &pid);

    // The server agrees.
    assert_eq!(task_status(&server.url, &id), TaskStatus::CANCELLED);
}

/// Ctrl-C in a terminal signals the whole foreground process group: over stdio the server
/// (in a group of its own) survives it, so `mcp call` can still cancel the task through it.
#[test]
fn ctrl_c_over_stdio_cancels_the_task_through_the_live_server() {
    use std::os::unix::process::CommandExt as _;
    let mut running = Running::spawn(
        Command::new(MCP)
            .args(["call", "--timeout", "60", "long_report", "quarter=Q4"])
            .args(["--", MCP, "serve", "demo"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // The group a terminal would put the command line in.
            .process_group(0),
    );
    running.wait_for("asks: Which format for the Q4 report?");
    let group = format!("-{}", running.child.id());
    interrupt_and_expect_cancel(running, &group);
}

/// Sends SIGINT to `target` (a pid, or `-PGID` for a process group) while `mcp call` waits on
/// its task's question; `mcp call` must cancel the task through the server and exit 130.
/// Returns the task's id.
fn interrupt_and_expect_cancel(running: Running, target: &str) -> String {
    let (id, _) = task_lines(&running.seen.join("\n"));
    let interrupt = Command::new("kill")
        .args(["-INT", "--", target])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let (status, out, lines) = running.finish();
    assert_eq!(status.code(), Some(130), "{lines:?}");
    assert!(out.is_empty(), "{out}");
    assert!(lines.contains(&format!("task {id} cancelled")), "{lines:?}");
    assert!(lines.iter().any(|l| l == "error: interrupted"), "{lines:?}");
    id
}

/// A task that fails, and a task still waiting when `--timeout` runs out: each said plainly,
/// and the waiting one cancelled on the server.
#[test]
fn failed_and_timed_out_tasks() {
    let server = HttpServer::demo();
    let failed = mcp(
        &[
            "call",
            "--timeout",
            "60",
            &server.url,
            "long_report",
            "quarter=Q5",
        ],
        "",
    );
    assert_eq!(failed.status.code(), Some(1));
    let err = stderr(&failed);
    let (id, lines) = task_lines(&err);
    let why = r#"no figures for "Q5": a quarter ends with Q1, Q2, Q3 or Q4"#;
    assert_eq!(lines.first().map(String::as_str), Some("working"), "{err}");
    assert_eq!(lines.last(), Some(&format!("failed — {why}")), "{err}");
    assert!(
        err.contains(&format!(
            "error: task {id} failed with error -32602 (Invalid params): {why}"
        )),
        "{err}"
    );
    assert!(stdout(&failed).is_empty());

    // Stdin open and silent: the question waits until --timeout.
    let running = asked(&server.url, "2", "Q1");
    let (status, _, lines) = running.finish();
    let (id, _) = task_lines(&lines.join("\n"));
    assert_eq!(status.code(), Some(1), "{lines:?}");
    assert!(lines.contains(&format!("task {id} cancelled")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l == "error: timed out after 2 s (--timeout)"),
        "{lines:?}"
    );
    assert_eq!(task_status(&server.url, &id), TaskStatus::CANCELLED);
}

/// A task waiting for input outlives the `mcp call` that started it (killed, so it cancelled
/// nothing) and a restart of the demo server with `--tasks-db`; `mcp task` then answers its
/// question and prints the result.
#[test]
fn a_task_outlives_its_client_and_a_server_restart() {
    let dir = TempDir::new("tasks-db");
    let db = dir.path().join("tasks.sqlite");
    let db = db.to_str().unwrap();
    let serve = ["serve", "demo", "--http", "0", "--tasks-db", db];
    let first = HttpServer::start(MCP, &serve);
    let mut running = asked(&first.url, "60", "Q2");
    let (id, _) = task_lines(&running.seen.join("\n"));
    assert_eq!(id.len(), 32, "{:?}", running.seen);
    running.child.kill().unwrap();
    running.child.wait().unwrap();
    drop(first);

    let second = HttpServer::start(MCP, &serve);
    assert_eq!(task_status(&second.url, &id), TaskStatus::INPUT_REQUIRED);
    let output = mcp(
        &[
            "task",
            "--timeout",
            "60",
            &second.url,
            &id,
            "--answer",
            "format=csv",
        ],
        "",
    );
    assert_ok(&output);
    let err = stderr(&output);
    assert_eq!(
        stdout(&output).trim(),
        "quarter,revenue_change,cost_change\nQ2,4%,-2%",
        "{err}"
    );
    assert!(
        err.contains(r#"answered from --answer: {"format":"csv"}"#),
        "{err}"
    );
    let (_, lines) = task_lines(&err);
    assert_eq!(
        lines.last().map(String::as_str),
        Some("completed — the report is ready"),
        "{err}"
    );
    assert_eq!(task_status(&second.url, &id), TaskStatus::COMPLETED);

    // A task id the server does not know is an error that names it.
    let unknown = mcp(&["task", &second.url, "no-such-task"], "");
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("no-such-task"),
        "{}",
        stderr(&unknown)
    );
}

/// The status of task `id` on the server at `url`.
fn task_status(url: &str, id: &str) -> TaskStatus {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = Client::builder()
            .tasks(TaskSettings::new())
            .connect_http(url)
            .await
            .unwrap();
        client.get_task(id).await.unwrap().status
    })
}
