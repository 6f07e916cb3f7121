//! The `mcp` binary end to end: against the demo server (`mcp serve demo`, stdio and HTTP) and
//! the Python SDK 2.3.0 low-level provisioner (`tests/python/provisioner.py`), answering in a
//! pseudo-terminal, through piped stdin, and with `--answer`.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use modelctx_test_support::cli::{
    HttpServer, assert_ok, mcp, mcp_in, python, repo_root, stderr, stdout,
};
use serde_json::Value;

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

fn provisioner() -> String {
    repo_root()
        .join("tests/python/provisioner.py")
        .display()
        .to_string()
}

/// The SDK-free fake 2026-07-28 server (`tests/python/fake_server.py`).
fn fake_server() -> String {
    repo_root()
        .join("tests/python/fake_server.py")
        .display()
        .to_string()
}

/// The Python SDK's low-level provisioner on HTTP.
fn python_provisioner() -> HttpServer {
    HttpServer::start(python(), &[&provisioner(), "--http", "0"])
}

/// Acceptance 1: `mcp call` in a pseudo-terminal asks for the region field by field, shows the
/// answer for review, and prints the final result.
#[test]
fn terminal_form_in_a_pty() {
    let mut command = Command::new(MCP);
    command.args([
        "call",
        "--timeout",
        "60",
        "provision",
        "name=orders",
        "--",
        MCP,
        "serve",
        "demo",
    ]);
    let mut session =
        rexpect::session::spawn_command(command, Some(60_000)).expect("spawn in a pty");
    // Which server asks, and what.
    session.exp_string("mcp-demo").unwrap();
    session
        .exp_string("Which region should the database live in?")
        .unwrap();
    session.exp_string("!decline or !cancel").unwrap();
    session.exp_string("(text): ").unwrap();
    session.send_line("eu-west-1").unwrap();
    session
        .exp_string(r#"Send {"region":"eu-west-1"}?"#)
        .unwrap();
    session.exp_string("[d]ecline, [c]ancel, [e]dit: ").unwrap();
    session.send_line("").unwrap();
    session
        .exp_string("Provisioned 'orders' in eu-west-1.")
        .unwrap();
    session.exp_eof().unwrap();
    match session.process_mut().wait().unwrap() {
        rexpect::process::WaitStatus::Exited(_, code) => assert_eq!(code, 0),
        other => panic!("mcp ended with {other:?}"),
    }
}

/// Acceptance 2: `--answer region='"eu-west-1"'` completes `provision` against our demo server
/// and the Python SDK's low-level provisioner, over stdio and HTTP, in both eras.
#[test]
fn answer_flag_completes_provision_against_both_servers() {
    let answer = r#"region="eu-west-1""#;
    let demo_http = HttpServer::demo();
    let python_http = python_provisioner();
    let py = python();
    let provisioner = provisioner();
    for mode in ["auto", "handshake"] {
        let base = [
            "call",
            "--timeout",
            "60",
            "--mode",
            mode,
            "--answer",
            answer,
        ];
        let demo_stdio = [
            &base[..],
            &["provision", "name=orders", "--", MCP, "serve", "demo"],
        ]
        .concat();
        let python_stdio = [
            &base[..],
            &["provision", "name=orders", "--", py, &provisioner],
        ]
        .concat();
        let demo_url = [
            &base[..],
            &[demo_http.url.as_str(), "provision", "name=orders"],
        ]
        .concat();
        let python_url = [
            &base[..],
            &[python_http.url.as_str(), "provision", "name=orders"],
        ]
        .concat();
        for (server, args) in [
            ("demo stdio", demo_stdio),
            ("demo HTTP", demo_url),
            ("python stdio", python_stdio),
            ("python HTTP", python_url),
        ] {
            let output = mcp(&args, "");
            assert_ok(&output);
            let text = stdout(&output);
            assert!(
                text.starts_with("Provisioned 'orders' in eu-west-1"),
                "{server} {mode}: {text}"
            );
            if server.starts_with("demo") {
                // Progress notifications, as lines when stderr is not a terminal.
                assert!(
                    stderr(&output).contains("progress 3/3 configuring backups"),
                    "{server} {mode}: {}",
                    stderr(&output)
                );
            }
            if server.starts_with("python") {
                let era = if mode == "auto" {
                    "2026-07-28"
                } else {
                    "2025-11-25"
                };
                assert!(
                    text.contains(&format!("protocol {era}")),
                    "{server} {mode}: {text}"
                );
            }
            assert!(
                stderr(&output).contains("answered from --answer: {\"region\":\"eu-west-1\"}"),
                "{server} {mode}: {}",
                stderr(&output)
            );
        }
    }
}

/// `--mode` takes either era by its revision as well as by its name: `2025-11-25` speaks the
/// handshake (the Python provisioner says which protocol served the call), like `handshake` and
/// `legacy`, its name before; `2026-07-28` and `modern` speak the other era. The help names the
/// values as they are (it called `handshake` the old alias, which is `legacy`).
#[test]
fn mode_takes_both_revisions_and_says_so() {
    let py = python();
    let provisioner = provisioner();
    for (mode, era) in [
        ("2025-11-25", "2025-11-25"),
        ("handshake", "2025-11-25"),
        ("legacy", "2025-11-25"),
        ("2026-07-28", "2026-07-28"),
        ("modern", "2026-07-28"),
    ] {
        let output = mcp(
            &[
                "call",
                "--timeout",
                "60",
                "--mode",
                mode,
                "--answer",
                r#"region="eu-west-1""#,
                "provision",
                "name=orders",
                "--",
                py,
                &provisioner,
            ],
            "",
        );
        assert_ok(&output);
        let text = stdout(&output);
        assert!(
            text.contains(&format!("(protocol {era},")),
            "{mode}: {text}"
        );
    }
    let help = mcp(&["call", "--help"], "");
    assert_ok(&help);
    let help = stdout(&help);
    for said in [
        "the 2025-11-25 handshake (`handshake` or `2025-11-25`)",
        "also `2025-11-25`, and `legacy`, its name before",
    ] {
        assert!(help.contains(said), "{said:?} not in:\n{help}");
    }
    assert!(
        !help.contains("`handshake` is accepted as an alias"),
        "{help}"
    );
}

/// Two questions in one round, asked field by field from piped stdin: wrong input is refused
/// with a reason and asked again; enums take a number or a value.
#[test]
fn piped_form_checks_types_and_batched_questions() {
    for mode in ["auto", "handshake"] {
        let output = mcp(
            &[
                "call",
                "--timeout",
                "60",
                "--mode",
                mode,
                "deploy",
                "service=api",
                "--",
                MCP,
                "serve",
                "demo",
            ],
            "prod\n2\n\n0\nthree\n3\n\n",
        );
        assert_ok(&output);
        assert_eq!(
            stdout(&output).trim(),
            "Deployed api to production with 3 replica(s)."
        );
        let err = stderr(&output);
        assert!(err.contains("Where should api be deployed?"), "{err}");
        assert!(err.contains("How many replicas of api?"), "{err}");
        assert!(err.contains("1) staging  2) production"), "{err}");
        assert!(
            err.contains(r#""prod" is not one of: staging, production"#),
            "{err}"
        );
        assert!(err.contains("0 is below the minimum 1"), "{err}");
        assert!(err.contains(r#""three" is not a number"#), "{err}");
    }
}

/// The user can decline or cancel; closed stdin cancels; the tool's error exits 1.
#[test]
fn decline_cancel_and_closed_stdin() {
    type Stream = fn(&Output) -> String;
    let declined_by_flag = ["--answer", r#"region={"action":"decline"}"#];
    // (options before the tool, stdin, the stream that says it, what it says)
    let cases: [(&[&str], &str, Stream, &str); 4] = [
        (
            &[],
            "!decline\n",
            stdout,
            "the question for 'region' was declined, so nothing was done",
        ),
        (
            &[],
            "eu-west-1\nc\n",
            stdout,
            "the question for 'region' was cancelled, so nothing was done",
        ),
        (&[], "", stderr, "stdin is closed; cancelling"),
        (
            &declined_by_flag,
            "",
            stdout,
            "the question for 'region' was declined, so nothing was done",
        ),
    ];
    for (options, stdin, stream, expected) in cases {
        let args = [
            &["call", "--timeout", "60"][..],
            options,
            &["provision", "name=x", "--", MCP, "serve", "demo"],
        ]
        .concat();
        let output = mcp(&args, stdin);
        assert_eq!(output.status.code(), Some(1), "{args:?} with {stdin:?}");
        let said = stream(&output);
        assert!(said.contains(expected), "{args:?} with {stdin:?}: {said}");
    }
}

/// `mcp call connect_account service=github` against the demo over stdio, in `mode`.
fn connect_account(mode: &str, options: &[&str], stdin: &str) -> Output {
    let args = [
        &["call", "--timeout", "60", "--mode", mode][..],
        options,
        &[
            "connect_account",
            "service=github",
            "--",
            MCP,
            "serve",
            "demo",
        ],
    ]
    .concat();
    mcp(&args, stdin)
}

/// URL mode: the full URL and its domain are shown, nothing is fetched, consent is asked. In
/// both eras: on 2025-11-25 the tool's `InputRequiredResult` is bridged over the back-channel.
#[test]
fn url_elicitation_asks_consent() {
    let connect = |mode: &str, stdin: &str| connect_account(mode, &[], stdin);
    for mode in ["auto", "handshake"] {
        let accepted = connect(mode, "y\n");
        assert_ok(&accepted);
        assert_eq!(stdout(&accepted).trim(), "Connected your github account.");
        let err = stderr(&accepted);
        assert!(
            err.contains("asks you to open a URL: Sign in to github"),
            "{mode}: {err}"
        );
        assert!(
            err.contains("URL:    https://accounts.example.com/connect?service=github"),
            "{mode}: {err}"
        );
        assert!(
            err.contains("domain: accounts.example.com"),
            "{mode}: {err}"
        );
        assert!(
            err.contains("does not open or fetch this URL"),
            "{mode}: {err}"
        );
    }

    // Enter declines (the default is "no").
    let declined = connect("auto", "\n");
    assert_ok(&declined);
    assert_eq!(
        stdout(&declined).trim(),
        "Your github account was not connected (declined)."
    );
}

/// A URL question has no input-request key on 2025-11-25 (through `mcp-remote` or
/// `supergateway` a server's bridged question arrives as a bare back-channel request): its kind,
/// `url`, is its key, the question says so, and `--answer url=…` answers it — in either era,
/// where on 2026-07-28 the server's own key (`consent`) works too. No stdin: nothing is asked.
#[test]
fn answer_url_answers_a_url_question_in_both_eras() {
    let connect = |mode: &str, answer: &str| connect_account(mode, &["--answer", answer], "");
    for (mode, answer, shown) in [
        ("handshake", "url=accept", "--answer url=accept"),
        ("2026-07-28", "url=accept", "--answer consent=accept"),
        ("2026-07-28", "consent=accept", "--answer consent=accept"),
    ] {
        let accepted = connect(mode, answer);
        assert_ok(&accepted);
        assert_eq!(
            stdout(&accepted).trim(),
            "Connected your github account.",
            "{mode} {answer}: {}",
            stderr(&accepted)
        );
        let err = stderr(&accepted);
        assert!(
            err.contains(&format!("({shown} answers this without asking)")),
            "{mode} {answer}: {err}"
        );
        assert!(
            err.contains("answered from --answer: accept"),
            "{mode} {answer}: {err}"
        );
    }
    let declined = connect("handshake", "url=decline");
    assert_ok(&declined);
    assert_eq!(
        stdout(&declined).trim(),
        "Your github account was not connected (declined)."
    );
    let help = mcp(&["call", "--help"], "");
    assert!(
        stdout(&help).contains("`form`, `url`, `sampling` or `roots` (e.g. `--answer url=accept`)"),
        "{}",
        stdout(&help)
    );
}

/// A form question shows no key: its fields are named at its prompts, and `--answer FIELD=…`
/// answers them. The demo's keys are resolver names, never a Rust path.
#[test]
fn a_form_question_shows_no_key() {
    let args = [
        "call",
        "--timeout",
        "60",
        "provision",
        "name=x",
        "--",
        MCP,
        "serve",
        "demo",
    ];
    let answered = mcp(&args, "eu-west-1\n\n");
    assert_ok(&answered);
    assert_eq!(stdout(&answered).trim(), "Provisioned 'x' in eu-west-1.");
    let err = stderr(&answered);
    assert!(err.contains("region* (text): "), "{err}");
    for hidden in [
        "input request",
        "modelctx_cli",
        "::",
        "answers this without asking",
    ] {
        assert!(!err.contains(hidden), "{hidden:?} in {err}");
    }
}

/// Sampling goes to --llm-cmd (prompt on stdin, text on stdout) once the user consents to the
/// prompt shown, or with --yes; otherwise, and without --llm-cmd, it is declined — the command
/// never runs. The same in both eras.
#[test]
fn sampling_through_llm_cmd_asks_first_or_is_declined() {
    let summarize = |mode: &str, extra: &[&str], stdin: &str| {
        let args = [
            &["call", "--timeout", "60", "--mode", mode][..],
            extra,
            &["summarize", "text=hello", "--", MCP, "serve", "demo"],
        ]
        .concat();
        mcp(&args, stdin)
    };
    for mode in ["2026-07-28", "handshake"] {
        let consented = summarize(mode, &["--llm-cmd", "tr a-z A-Z"], "y\n");
        assert_ok(&consented);
        assert_eq!(
            stdout(&consented).trim(),
            "Summary by tr: SUMMARIZE IN ONE SENTENCE: HELLO"
        );
        let err = stderr(&consented);
        assert!(err.contains("| Summarize in one sentence: hello"), "{err}");
        assert!(
            err.contains("Run --llm-cmd `tr a-z A-Z` on this prompt?"),
            "{err}"
        );

        let unasked = summarize(mode, &["--yes", "--llm-cmd", "tr a-z A-Z"], "");
        assert_ok(&unasked);
        assert!(!stderr(&unasked).contains("on this prompt?"));

        // Refused, or nobody to ask: the command does not run.
        let dir = modelctx_test_support::cli::TempDir::new("llm");
        let marker = dir.path().join("ran");
        let llm = format!("touch {}; cat", marker.display());
        for stdin in ["n\n", ""] {
            let refused = summarize(mode, &["--llm-cmd", &llm], stdin);
            assert_eq!(refused.status.code(), Some(1), "{mode} {stdin:?}");
            assert!(
                stderr(&refused).contains("User rejected sampling request (the user declined)"),
                "{mode} {stdin:?}: {}",
                stderr(&refused)
            );
            assert!(!marker.exists(), "{mode} {stdin:?}: --llm-cmd ran");
        }

        let declined = summarize(mode, &[], "");
        assert_eq!(declined.status.code(), Some(1));
        assert!(
            stderr(&declined).contains("User rejected sampling request"),
            "{}",
            stderr(&declined)
        );
    }
}

/// The same --answer flags answer, decline and cancel the same way on 2026-07-28 (an input
/// request with a key) and on 2025-11-25 (a back-channel request without one).
#[test]
fn answer_flags_mean_the_same_in_both_eras() {
    for mode in ["2026-07-28", "handshake"] {
        for (answer, code, printed) in [
            (
                r#"{"action":"decline"}"#,
                1,
                "the question for 'region' was declined, so nothing was done",
            ),
            (
                r#"{"action":"cancel"}"#,
                1,
                "the question for 'region' was cancelled, so nothing was done",
            ),
            (
                r#"{"region":"eu-west-1"}"#,
                0,
                "Provisioned 'x' in eu-west-1.",
            ),
            (r#""eu-west-1""#, 0, "Provisioned 'x' in eu-west-1."),
        ] {
            let output = mcp(
                &[
                    "call",
                    "--timeout",
                    "60",
                    "--mode",
                    mode,
                    "--answer",
                    &format!("region={answer}"),
                    "provision",
                    "name=x",
                    "--",
                    MCP,
                    "serve",
                    "demo",
                ],
                "",
            );
            let context = format!("{mode} {answer}: {}\n{}", stdout(&output), stderr(&output));
            assert_eq!(output.status.code(), Some(code), "{context}");
            assert!(stdout(&output).contains(printed), "{context}");
            assert!(
                stderr(&output).contains("answered from --answer"),
                "{context}"
            );
            assert!(!stderr(&output).contains("stdin is closed"), "{context}");
        }
    }
}

/// Roots default to the current directory; --root overrides.
#[test]
fn roots_default_to_the_current_directory() {
    let dir = std::env::temp_dir().join(format!("modelctx-cli-roots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let output = mcp_in(
        &[
            "call",
            "--timeout",
            "60",
            "where_am_i",
            "--",
            MCP,
            "serve",
            "demo",
        ],
        "",
        Some(&dir),
    );
    assert_ok(&output);
    assert_eq!(
        stdout(&output).trim(),
        format!("Your roots: file://{}", dir.display())
    );
    let output = mcp(
        &[
            "call",
            "--timeout",
            "60",
            "--root",
            "/srv/a",
            "--root",
            "/srv/b",
            "where_am_i",
            "--",
            MCP,
            "serve",
            "demo",
        ],
        "",
    );
    assert_ok(&output);
    assert_eq!(
        stdout(&output).trim(),
        "Your roots: file:///srv/a, file:///srv/b"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A prompt and a resource template ask too; `--answers FILE` and `--json`.
#[test]
fn prompt_and_template_ask_too() {
    let dir = std::env::temp_dir().join(format!("modelctx-cli-answers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("answers.json");
    std::fs::write(&file, r#"{"audience": "the board", "format": "csv"}"#).unwrap();
    let file = file.display().to_string();

    let prompt = mcp(
        &[
            "prompt",
            "--timeout",
            "60",
            "--answers",
            &file,
            "briefing",
            "topic=Q3",
            "--",
            MCP,
            "serve",
            "demo",
        ],
        "",
    );
    assert_ok(&prompt);
    assert_eq!(stdout(&prompt).trim(), "[user] Brief the board on Q3.");

    let read = mcp(
        &[
            "read",
            "--timeout",
            "60",
            "--answers",
            &file,
            "--json",
            "report://2026-Q3",
            "--",
            MCP,
            "serve",
            "demo",
        ],
        "",
    );
    assert_ok(&read);
    let result: Value = serde_json::from_str(&stdout(&read)).unwrap();
    assert_eq!(
        result["contents"][0]["text"],
        "quarter,revenue_change\n2026-Q3,4%"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Lists, human and JSON; a JSON object as tool arguments; typed key=value.
#[test]
fn lists_and_arguments() {
    let demo = ["--", MCP, "serve", "demo"];
    let tools = mcp(&[&["tools", "--json"][..], &demo[..]].concat(), "");
    assert_ok(&tools);
    let tools: Value = serde_json::from_str(&stdout(&tools)).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in [
        "provision",
        "deploy",
        "summarize",
        "where_am_i",
        "connect_account",
        "echo",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let human = mcp(&[&["tools"][..], &demo[..]].concat(), "");
    assert!(
        stdout(&human).contains("provision(name: string*)"),
        "{}",
        stdout(&human)
    );
    let prompts = mcp(&[&["prompts"][..], &demo[..]].concat(), "");
    assert!(
        stdout(&prompts).contains("briefing(topic*)"),
        "{}",
        stdout(&prompts)
    );
    let resources = mcp(&[&["resources"][..], &demo[..]].concat(), "");
    assert!(stdout(&resources).contains("report://{quarter} (text/plain)"));
    assert!(stdout(&resources).contains("demo://regions (text/plain)"));

    let json_args = mcp(
        &[&["call", "echo", r#"{"text": "hi"}"#][..], &demo[..]].concat(),
        "",
    );
    assert_ok(&json_args);
    assert_eq!(stdout(&json_args).trim(), "hi");
    // A number-looking value stays a string where the schema says string.
    let typed = mcp(&[&["call", "echo", "text=42"][..], &demo[..]].concat(), "");
    assert_ok(&typed);
    assert_eq!(stdout(&typed).trim(), "42");
    let deploy = mcp(
        &[
            &[
                "call",
                "deploy",
                "service=api",
                "--answer",
                "environment=staging",
            ][..],
            &["--answer", "replicas=2"][..],
            &demo[..],
        ]
        .concat(),
        "",
    );
    assert_ok(&deploy);
    assert_eq!(
        stdout(&deploy).trim(),
        "Deployed api to staging with 2 replica(s)."
    );

    let usage = mcp(&["call", "echo"], "");
    assert_eq!(usage.status.code(), Some(2));
    assert!(
        stderr(&usage).contains("is not an http(s) URL"),
        "{}",
        stderr(&usage)
    );
}

/// A server that can only ask over the 2025-11-25 back-channel (FastMCP 4.1.6's `ctx.elicit`)
/// fails on a 2026-07-28 connection with "…unavailable on 2026-07-28 connections": mcp says to
/// try `--mode 2025-11-25` (the name `--help` gives, not the old `legacy`), and only when the
/// connection was 2026-07-28.
#[test]
fn a_server_that_asks_only_on_2025_gets_a_mode_2025_11_25_hint() {
    let fake = fake_server();
    let py = python();
    for (mode, hinted) in [("auto", true), ("handshake", false)] {
        let output = mcp(
            &[
                "call",
                "--timeout",
                "60",
                "--mode",
                mode,
                "asks-legacy",
                "--",
                py,
                &fake,
            ],
            "",
        );
        assert_eq!(output.status.code(), Some(1), "{mode}");
        assert!(
            stdout(&output).contains("unavailable on 2026-07-28 connections"),
            "{mode}: {}",
            stdout(&output)
        );
        assert_eq!(
            stderr(&output).contains("try again with --mode 2025-11-25"),
            hinted,
            "{mode}: {}",
            stderr(&output)
        );
    }
}

/// `mcp read` of a 215 KiB HTML page prints one line about it, not the page; a blob is never
/// printed; `--full` prints the page and `--output FILE` writes the contents as they are.
#[test]
fn read_prints_large_or_binary_contents_only_when_asked() {
    let fake = fake_server();
    let py = python();
    let read = |options: &[&str], uri: &str| {
        let args = [
            &["read", "--timeout", "60"][..],
            options,
            &[uri, "--", py, &fake],
        ]
        .concat();
        let output = mcp(&args, "");
        assert_ok(&output);
        output
    };
    let page = read(&[], "fake://page.html");
    assert_eq!(
        stdout(&page).trim(),
        "[text fake://page.html text/html, 214.9 KiB: not shown; --output FILE saves it, --full \
         prints it]"
    );
    let pixel = read(&[], "fake://pixel.png");
    assert_eq!(
        stdout(&pixel).trim(),
        "[blob fake://pixel.png image/png, about 72 bytes: not shown; --output FILE saves it]"
    );
    assert_eq!(stdout(&read(&[], "fake://note.txt")).trim(), "a short note");
    let full = stdout(&read(&["--full"], "fake://page.html"));
    assert!(full.starts_with("<!doctype html>\n<title>big</title>\n"));
    assert_eq!(full.matches("<p>fake page line</p>").count(), 10_000);

    let dir = modelctx_test_support::cli::TempDir::new("read");
    let saved = dir.file("page.html");
    let wrote = read(&["--output", saved.to_str().unwrap()], "fake://page.html");
    assert_eq!(stdout(&wrote), "");
    assert!(
        stderr(&wrote).contains("wrote 214.9 KiB to ") && stderr(&wrote).contains("(text/html)"),
        "{}",
        stderr(&wrote)
    );
    let bytes = std::fs::read(&saved).unwrap();
    assert_eq!(bytes.len(), 220_035);
    assert!(bytes.starts_with(b"<!doctype html>"));
    let png = dir.file("pixel.png");
    read(&["-o", png.to_str().unwrap()], "fake://pixel.png");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(bytes.len(), 70);
    assert!(bytes.starts_with(b"\x89PNG\r\n"));
}

/// `mcp call '{json}' -- srv` forgot the tool name: said locally (exit 2), rather than sent as
/// a tool named `{json}`. The same for `key=value` and for prompts.
#[test]
fn a_missing_tool_name_is_said_locally() {
    for args in [
        &["call", r#"{"text": "hi"}"#, "--", MCP, "serve", "demo"][..],
        &["call", "text=hi", "--", MCP, "serve", "demo"][..],
        &["prompt", "topic=Q3", "--", MCP, "serve", "demo"][..],
    ] {
        let output = mcp(args, "");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(" name is missing: "),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

/// `mcp keys generate` makes keys the demo accepts; `mcp state inspect` opens its tokens.
#[test]
fn keys_and_state_inspect() {
    let key = stdout(&mcp(&["keys", "generate"], "")).trim().to_owned();
    assert_eq!(key.len(), 64);
    assert_ne!(key, stdout(&mcp(&["keys", "generate"], "")).trim());

    // One raw round against a demo server sealed with the key.
    let mut server = Command::new(MCP)
        .args(["serve", "demo"])
        .env("MCP_REQUEST_STATE_KEYS", &key)
        .env("MCP_REQUEST_STATE_TTL", "120")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"provision","arguments":{"name":"orders"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}"#;
    let mut stdin = server.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    drop(stdin);
    let reply = server.wait_with_output().unwrap();
    let reply: Value = serde_json::from_slice(&reply.stdout).unwrap();
    let token = reply["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(token.starts_with("v1."), "{reply}");

    let inspected = mcp(
        &[
            "state",
            "inspect",
            "--key",
            &key,
            "--args",
            r#"{"name":"orders"}"#,
            &token,
        ],
        "",
    );
    assert_ok(&inspected);
    let text = stdout(&inspected);
    for expected in [
        "(key 1 of 1, the minting key)",
        "method:    tools/call",
        "target:    provision",
        "(matches --args)",
        "audience:  mcp-demo",
        "\"region\"",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    // The TTL was 120 s when the token was minted; the clock has moved on since (by more than a
    // second on a loaded machine), so the countdown is at most 120 and well above zero.
    let remaining: u64 = text
        .split_once("(in ")
        .and_then(|(_, rest)| rest.split_once(" s)"))
        .and_then(|(seconds, _)| seconds.parse().ok())
        .unwrap_or_else(|| panic!("no \"(in N s)\" countdown in\n{text}"));
    assert!(
        (60..=120).contains(&remaining),
        "{remaining} s left in\n{text}"
    );
    let json = mcp(&["state", "inspect", "--key", &key, "--json", &token], "");
    let claims: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(claims["m"], "tools/call");
    assert_eq!(claims["aud"], "mcp-demo");

    let other = mcp(&["state", "inspect", "--key", &"k".repeat(32), &token], "");
    assert_eq!(other.status.code(), Some(1));
    assert!(
        stderr(&other).contains("(unknown key)"),
        "{}",
        stderr(&other)
    );
    let tampered = mcp(
        &["state", "inspect", "--key", &key, &format!("{token}A")],
        "",
    );
    assert_eq!(tampered.status.code(), Some(1));
    let mismatch = mcp(
        &[
            "state",
            "inspect",
            "--key",
            &key,
            "--args",
            r#"{"name":"other"}"#,
            &token,
        ],
        "",
    );
    assert!(stdout(&mismatch).contains("does NOT match --args"));
}

/// `mcp bench` against our server and the Python SDK's, stdio and HTTP.
#[test]
fn bench_reports_figures() {
    let demo_http = HttpServer::demo();
    let py = python();
    let provisioner = provisioner();
    let demo_stdio = ["--", MCP, "serve", "demo"];
    let python_stdio = ["--", py, provisioner.as_str()];
    let base = [
        "bench",
        "--timeout",
        "120",
        "--tool",
        "echo",
        "--args",
        r#"{"text":"hi"}"#,
        "--calls",
        "200",
        "--warmup",
        "10",
        "--concurrency",
        "4",
        "--json",
    ];
    for (server, tail, transport) in [
        ("demo stdio", &demo_stdio[..], "stdio"),
        ("demo HTTP", &[demo_http.url.as_str()][..], "http"),
        ("python stdio", &python_stdio[..], "stdio"),
    ] {
        let output = mcp(&[&base[..], tail].concat(), "");
        assert_ok(&output);
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["calls"], 200, "{server}");
        assert_eq!(report["errors"], 0, "{server}");
        assert_eq!(report["transport"], transport, "{server}");
        assert!(report["callsPerSecond"].as_f64().unwrap() > 0.0, "{server}");
        let latency = &report["latencyUs"];
        assert!(latency["p50"].as_f64().unwrap() <= latency["p99"].as_f64().unwrap());
        assert!(latency["p99"].as_f64().unwrap() <= latency["max"].as_f64().unwrap());
    }
    // A tool that asks: whole flows, answered from --answer.
    let flows = mcp(
        &[
            &["bench", "--tool", "provision", "--args", r#"{"name":"x"}"#][..],
            &[
                "--answer",
                "region=eu-west-1",
                "--calls",
                "20",
                "--warmup",
                "1",
                "--json",
            ],
            &demo_stdio[..],
        ]
        .concat(),
        "",
    );
    assert_ok(&flows);
    let report: Value = serde_json::from_str(&stdout(&flows)).unwrap();
    assert_eq!(report["errors"], 0);
}

/// `--http` binds loopback addresses only, unless told otherwise.
#[test]
fn demo_http_is_loopback_only() {
    let output = mcp(&["serve", "demo", "--http", "0.0.0.0:0"], "");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("not a loopback address"));
}

/// `--allow-remote` widens the hosts served, not the origins: a browser page on a foreign
/// origin still gets 403, one listed with `--allowed-origin` is served.
#[test]
fn allow_remote_keeps_the_origin_check() {
    let server = HttpServer::start(
        MCP,
        &[
            "serve",
            "demo",
            "--http",
            "127.0.0.1:0",
            "--allow-remote",
            "--allowed-origin",
            "https://app.example.com",
        ],
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let status = |origin: Option<&str>| {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let mut request = reqwest::Client::new()
            .post(&server.url)
            .header("host", "mcp.example.net")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .body(body);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        runtime
            .block_on(request.send())
            .expect("an answer")
            .status()
            .as_u16()
    };
    assert_eq!(status(None), 200, "any Host is served");
    assert_eq!(status(Some("http://evil.example")), 403);
    assert_eq!(status(Some("https://app.example.com")), 200);
    assert_eq!(status(Some("http://localhost:5173")), 200);
}

/// `--max-rounds` bounds the input-required loop (the Python provisioner's `state_only {n}`
/// answers n state-only rounds first); typed `key=value` follows the tool's schema.
#[test]
fn max_rounds_bounds_the_loop() {
    let py = python();
    let provisioner = provisioner();
    let finished = mcp(
        &[
            "call",
            "--timeout",
            "60",
            "state_only",
            "n=3",
            "--",
            py,
            &provisioner,
        ],
        "",
    );
    assert_ok(&finished);
    assert_eq!(
        stdout(&finished).trim(),
        "state_only completed after 3 state-only round(s)"
    );
    let capped = mcp(
        &[
            "call",
            "--timeout",
            "60",
            "--max-rounds",
            "2",
            "state_only",
            "n:=3",
            "--",
            py,
            &provisioner,
        ],
        "",
    );
    assert_eq!(capped.status.code(), Some(1));
    assert!(
        stderr(&capped).contains("for more than 2 rounds"),
        "{}",
        stderr(&capped)
    );
}

/// Two demo servers given the same MCP_REQUEST_STATE_KEYS: the state one seals, the other
/// opens (round 1 on A, the retry on B); a third with another key refuses it.
#[test]
fn demo_servers_share_keys() {
    let key = stdout(&mcp(&["keys", "generate"], "")).trim().to_owned();
    let round = |key: &str, request: &str| -> Value {
        let mut server = Command::new(MCP)
            .args(["serve", "demo"])
            .env("MCP_REQUEST_STATE_KEYS", key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = server.stdin.take().unwrap();
        writeln!(stdin, "{request}").unwrap();
        drop(stdin);
        let reply = server.wait_with_output().unwrap();
        serde_json::from_slice(&reply.stdout).unwrap()
    };
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let first = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "provision", "arguments": {"name": "orders"}, "_meta": meta}});
    let asked = round(&key, &first.to_string());
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let question = result["inputRequests"].as_object().unwrap();
    let (question_key, _) = question.iter().next().unwrap();
    let retry = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "provision", "arguments": {"name": "orders"}, "_meta": meta,
            "inputResponses": {question_key: {"action": "accept", "content": {"region": "eu-west-1"}}},
            "requestState": result["requestState"]}});
    let finished = round(&key, &retry.to_string());
    assert_eq!(
        finished["result"]["content"][0]["text"], "Provisioned 'orders' in eu-west-1.",
        "{finished}"
    );
    let other_key = stdout(&mcp(&["keys", "generate"], "")).trim().to_owned();
    let refused = round(&other_key, &retry.to_string());
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Invalid or expired requestState"
    );
}

/// The Python SDK 2.3.0 client in 2025-11-25 mode against `mcp serve demo`.
/// `connect_account` asks by returning an `InputRequiredResult` with a URL question; the server
/// bridges it over the back-channel (with an `elicitationId`), and `long_report`'s synchronous
/// run asks its format the same way.
#[test]
fn python_handshake_client_gets_bridged_questions() {
    let ops = r#"[
        {"op": "call_tool", "name": "connect_account", "arguments": {"service": "github"}},
        {"op": "call_tool", "name": "long_report", "arguments": {"quarter": "2025-Q3"}}
    ]"#;
    let output = Command::new(python())
        .arg(repo_root().join("tests/python/client_driver.py"))
        .args(["--timeout", "60", "--mode", "legacy", "--ops-json", ops])
        .args(["--stdio", MCP, "serve", "demo"])
        .stdin(Stdio::null())
        .output()
        .expect("run the Python driver");
    let events: Vec<Value> = stdout(&output)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let results: Vec<&Value> = events.iter().filter(|e| e["event"] == "result").collect();
    assert_eq!(results.len(), 2, "{events:?}\n{}", stderr(&output));
    for result in &results {
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["protocol_version"], "2025-11-25");
    }
    let text = |i: usize| results[i]["result"]["content"][0]["text"].clone();
    assert_eq!(text(0), "Connected your github account.");
    assert_eq!(
        text(1),
        "Long report 2025-Q3: revenue up 4%, costs down 2%."
    );
    let callbacks: Vec<Value> = stderr(&output)
        .lines()
        .filter_map(|l| l.strip_prefix("CALLBACK "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let modes: Vec<&str> = callbacks
        .iter()
        .filter_map(|c| c["mode"].as_str())
        .collect();
    assert_eq!(modes, ["url", "form"], "{callbacks:?}");
}
