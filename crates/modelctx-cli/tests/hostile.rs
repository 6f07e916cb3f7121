//! The `mcp` CLI against a hostile server (`tests/python/hostile_server.py`, standard library
//! only): it cannot make the CLI run the LLM command or answer questions without bound, and the
//! text it sends — escape sequences, carriage returns, bidi overrides — is shown escaped, never
//! acted on by the terminal.

use std::process::Command;

use modelctx_test_support::cli::{mcp, python, repo_root, stderr, stdout};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

fn hostile() -> String {
    repo_root()
        .join("tests/python/hostile_server.py")
        .display()
        .to_string()
}

/// `mcp COMMAND ARGS… -- python hostile_server.py`.
fn against_hostile(command: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let server = hostile();
    let line = [
        &[command, "--timeout", "60"][..],
        args,
        &["--", python(), &server],
    ]
    .concat();
    mcp(&line, stdin)
}

/// Twenty sampling requests a round (×10 rounds once ran --llm-cmd 200 times): the round is
/// refused before the command runs once; four a round run it in two rounds, the third would
/// pass the budget of ten. A round of 100,000 roots requests is refused at once.
#[test]
fn a_hostile_server_cannot_run_the_llm_or_ask_without_bound() {
    let dir = modelctx_test_support::cli::TempDir::new("hostile-llm");
    let runs = dir.path().join("runs");
    let llm = format!("echo run >> {}; echo answer", runs.display());
    let count = || {
        std::fs::read_to_string(&runs)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    };

    // Twenty questions break the per-round cap, twelve samplings the per-call budget: either
    // way the round is refused before the command runs once.
    let flood = against_hostile("call", &["--yes", "--llm-cmd", &llm, "sample_flood"], "");
    assert_eq!(flood.status.code(), Some(1));
    let err = stderr(&flood);
    assert!(
        err.contains("asked 20 questions in one round; at most 16 are answered"),
        "{err}"
    );
    let flood = against_hostile(
        "call",
        &["--yes", "--llm-cmd", &llm, "sample_flood", "per_round:=12"],
        "",
    );
    assert_eq!(flood.status.code(), Some(1));
    let err = stderr(&flood);
    assert!(
        err.contains("more than 10 sampling requests in one request (--max-sampling)"),
        "{err}"
    );
    assert_eq!(count(), 0);

    let paced = against_hostile(
        "call",
        &["--yes", "--llm-cmd", &llm, "sample_flood", "per_round:=4"],
        "",
    );
    assert_eq!(paced.status.code(), Some(1));
    assert_eq!(count(), 8, "two rounds of four");

    let raised = against_hostile(
        "call",
        &[
            "--yes",
            "--llm-cmd",
            &llm,
            "--max-sampling",
            "12",
            "sample_flood",
            "per_round:=4",
        ],
        "",
    );
    assert_eq!(raised.status.code(), Some(1));
    assert_eq!(count(), 8 + 12);

    let roots = against_hostile("call", &["roots_flood"], "");
    assert_eq!(roots.status.code(), Some(1));
    assert!(
        stderr(&roots).contains("asked 100000 questions in one round; at most 16 are answered"),
        "{}",
        stderr(&roots)
    );
}

/// What the server wrote, as the terminal would get it raw.
const RAW: &[&str] = &[
    "\u{1b}[2J",
    "\u{1b}]0;",
    "\u{7}",
    "\u{202e}",
    "code\u{1b}[2K",
    "Open\u{1b}[2K",
    "\u{1b}[8m",
];

/// Acceptance: in a pseudo-terminal, the form's message, field title and description, the
/// URL with a right-to-left override, and the result are shown with their escapes visible; none
/// reaches the terminal raw.
#[test]
fn server_text_is_escaped_in_a_pty() {
    let mut command = Command::new(MCP);
    command.args(["call", "--timeout", "60", "inject"]);
    command.args(["--", python(), &hostile()]);
    let mut session =
        rexpect::session::spawn_command(command, Some(60_000)).expect("spawn in a pty");
    let mut seen = String::new();
    let mut expect = |session: &mut rexpect::session::PtySession, text: &str| {
        seen.push_str(&session.exp_string(text).unwrap());
        seen.push_str(text);
    };
    // (rexpect reads bytes as Latin-1: expectations stay ASCII.)
    expect(&mut session, r"Pay the invoice\u{1b}[2J\u{1b}[H");
    expect(&mut session, " Verified by your bank");
    expect(
        &mut session,
        r"Code\u{1b}]0;pwned\u{7}: the code\u{1b}[2K\u{d}from your bank",
    );
    expect(&mut session, "(text): ");
    session.send_line("123456").unwrap();
    expect(&mut session, "[e]dit: ");
    session.send_line("").unwrap();
    expect(&mut session, r"Open\u{1b}[2K the page");
    expect(&mut session, r"/\u{202e}moc.live.evil//:sptth");
    expect(&mut session, "control or invisible characters");
    expect(&mut session, "[c]ancel: ");
    session.send_line("y").unwrap();
    expect(&mut session, r"done\u{1b}[2J\u{1b}[Hall good\u{d}");
    seen.push_str(&session.exp_eof().unwrap());
    // Back from rexpect's Latin-1 to the bytes the terminal got.
    let bytes: Vec<u8> = seen
        .chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
        .collect();
    let seen = String::from_utf8_lossy(&bytes);
    assert!(seen.contains(r"Hostile\u{1b}[2J\u{1b}[H 6.6.6"), "{seen:?}");
    for raw in RAW {
        assert!(
            !seen.contains(raw),
            "{raw:?} reached the terminal: {seen:?}"
        );
    }
}

/// Listings, progress lines and the server's error messages are escaped too; `--json` stays
/// valid JSON.
#[test]
fn listings_progress_and_errors_are_escaped() {
    let tools = against_hostile("tools", &[], "");
    let text = stdout(&tools);
    assert!(text.contains(r"inject(a\u{1b}[8m: string)"), "{text}");
    assert!(
        text.contains(r"Innocent.\u{1b}[2J\u{1b}[HVerified by your bank\u{d}and a second line"),
        "{text}"
    );
    let json = against_hostile("tools", &["--json"], "");
    let listed: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(listed[0]["name"], "inject");

    let failed = against_hostile("call", &["fail"], "");
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        stderr(&failed).contains(r"boom\u{1b}[2J\u{1b}[HVerified by your bank"),
        "{}",
        stderr(&failed)
    );

    // Piped: progress as lines, the form answered from stdin.
    let piped = against_hostile("call", &["inject"], "123456\n\ny\n");
    let err = stderr(&piped);
    assert!(
        err.contains(r"progress 1/3 step\u{1b}[2J\u{1b}[Hdone\u{d}"),
        "{err}"
    );
    for output in [&tools, &json, &failed, &piped] {
        let all = format!("{}{}", stdout(output), stderr(output));
        for raw in RAW {
            assert!(!all.contains(raw), "{raw:?} printed raw: {all:?}");
        }
        assert!(!all.contains('\r'), "a raw carriage return: {all:?}");
    }
}

/// Item 9 of issue 32: `mcp listen` printed a notification's method raw when its params could
/// not be parsed (nested deeper than the JSON parser's limit: the params were dropped and the
/// method went out as it came). Every method is escaped, and params that cannot be parsed are
/// shown as their raw text, escaped too; `--json` stays valid JSON.
#[test]
fn listen_escapes_methods_and_keeps_unparsable_params_as_escaped_text() {
    let human = against_hostile("listen", &["--lists", "tools"], "");
    let out = stdout(&human);
    assert!(
        out.contains(r"x\u{1b}[2J\u{1b}[HVerified by your bank"),
        "{out}"
    );
    assert!(
        out.contains(r#"deep\u{1b}[2J\u{1b}[HVerified by your bank {"_meta": "#),
        "{out}"
    );
    assert!(out.contains(r#"["\u{9b}2J\u{202e}deep"]"#), "{out}");

    let json = against_hostile("listen", &["--json", "--lists", "tools"], "");
    let lines: Vec<serde_json::Value> = stdout(&json)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&json));
    assert_eq!(
        lines[1]["method"],
        "notifications/deep\u{1b}[2J\u{1b}[HVerified by your bank"
    );
    let raw = lines[1]["params"].as_str().expect("the raw params text");
    assert!(raw.starts_with(r#"{"_meta": {"io.modelcontextprotocol/subscriptionId""#));
    assert!(raw.contains("\"\u{9b}2J\u{202e}deep\""), "{raw}");

    for output in [&human, &json] {
        let all = format!("{}{}", stdout(output), stderr(output));
        for raw in RAW.iter().chain(&["\u{9b}"]) {
            assert!(!all.contains(raw), "{raw:?} printed raw: {all:?}");
        }
    }
}

/// Item 11 of issue 32: a server's error message with a newline printed a second line that
/// looked like `mcp`'s own (`error: your sign-in expired; …`). An error is one line on stderr.
#[test]
fn a_server_error_is_one_line() {
    for output in [
        against_hostile("call", &["fail"], ""),
        against_hostile("listen", &["--lists", "tools"], ""),
    ] {
        assert_eq!(output.status.code(), Some(1));
        let err = stderr(&output);
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(errors[0].starts_with("error: "), "{err}");
        assert!(
            errors[0].ends_with(r"\u{a}error: your sign-in expired; run `mcp login`"),
            "{err}"
        );
    }
}
