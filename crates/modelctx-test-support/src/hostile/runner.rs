//! Runs cases against a server process: each case followed by a probe that proves the server
//! still serves, the multi-round-trip flow with 10 000 answers, and the two-pass memory check
//! both transports' suites end with.

use std::time::Duration;

use modelctx_reliability::procfs::Memory;
use modelctx_reliability::wire::{self, CONFIRMED_TEXT, MRTR_TOOL};
use serde_json::{Value, json};

use super::{Case, Expect, MIB, Wire, bytes, check, echo, error, many_input_responses};

/// Every case twice, each pass followed by the 10 000-answer flow: no case may fail, and memory
/// must be bounded and flat. The largest messages are ~3 MiB (a 1 MiB id, 10 000 input
/// responses decoded into maps), far below the transports' limits; the peak is what a few of
/// them decoded at once cost on the runtime's worker threads (measured +35 MiB over idle in a
/// debug build), and a second pass adds nothing (what the first left is the allocator's to
/// reuse).
#[allow(clippy::print_stderr)]
pub async fn every_case_twice<W: Wire>(wire: &mut W, cases: &[Case]) {
    let before = wire.memory();
    let started = std::time::Instant::now();
    let mut failures = run_cases(wire, cases).await;
    failures.extend(ten_thousand_input_responses(wire).await);
    let first_pass = wire.memory();
    failures.extend(run_cases(wire, cases).await);
    failures.extend(ten_thousand_input_responses(wire).await);
    let after = wire.memory();
    eprintln!(
        "{}: 2 × {} cases in {:?}; VmRSS {:.1} → {:.1} → {:.1} MiB, VmHWM {:.1} → {:.1} MiB",
        wire.name(),
        cases.len() + 4,
        started.elapsed(),
        before.rss_mib(),
        first_pass.rss_mib(),
        after.rss_mib(),
        first_pass.hwm_mib(),
        after.hwm_mib()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        after.hwm_kib < before.hwm_kib + 48 * MIB,
        "VmHWM grew from {:.1} to {:.1} MiB",
        before.hwm_mib(),
        after.hwm_mib()
    );
    assert!(
        after.hwm_kib < first_pass.hwm_kib + 8 * MIB,
        "VmHWM grew on the second pass: {:.1} → {:.1} MiB",
        first_pass.hwm_mib(),
        after.hwm_mib()
    );
}

/// An echo request of `total` bytes whose text fills it, for streaming huge messages without
/// holding them: (prefix, suffix, number of text bytes between them).
pub fn echo_of_size(id: &str, total: usize) -> (Vec<u8>, Vec<u8>, usize) {
    let prefix = format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"_meta":{},"name":"echo","arguments":{{"text":""#,
        wire::meta()
    );
    let suffix = r#""}}}"#;
    let fill = total - prefix.len() - suffix.len();
    (prefix.into_bytes(), suffix.as_bytes().to_vec(), fill)
}

/// An echo request of exactly `total` bytes whose text is `fill` repeated, and the text's length.
pub fn echo_body(id: &str, total: usize, fill: u8) -> (Vec<u8>, usize) {
    let (prefix, suffix, length) = echo_of_size(id, total);
    let mut body = prefix;
    body.resize(body.len() + length, fill);
    body.extend_from_slice(&suffix);
    (body, length)
}

/// The transport's size limit is exact: an echo of `limit + 1` bytes is answered as `refused`
/// expects, one of exactly `limit` bytes is served (its whole text comes back), and the server
/// still serves. `headers` as in [`Wire::exchange`].
pub async fn limit_is_exact<W: Wire>(
    wire: &mut W,
    limit: usize,
    refused: &Case,
    headers: Option<&[(String, Vec<u8>)]>,
) {
    let (over, _) = echo_body("over", limit + 1, b'b');
    let reply = wire.exchange(&over, headers, true).await;
    check(wire.name(), refused, &reply).unwrap_or_else(|f| panic!("{f}"));
    let (at_limit, length) = echo_body("at-limit", limit, b'c');
    let reply = wire.exchange(&at_limit, headers, true).await;
    let served = Case::new(
        "exactly the limit",
        Vec::new(),
        Expect::Text {
            id: json!("at-limit"),
            text: "c".repeat(length),
        },
    );
    check(wire.name(), &served, &reply).unwrap_or_else(|f| panic!("{f}"));
    probe(wire, 2).await.unwrap_or_else(|f| panic!("{f}"));
}

/// Prints what `what` did to the server's memory, and asserts its peak (VmHWM) grew by less
/// than `bound_kib` over `before`.
#[allow(clippy::print_stderr)]
pub fn assert_peak_within(what: &str, before: &Memory, after: &Memory, bound_kib: u64) {
    eprintln!(
        "{what}: VmRSS {:.1} → {:.1} MiB, VmHWM {:.1} → {:.1} MiB",
        before.rss_mib(),
        after.rss_mib(),
        before.hwm_mib(),
        after.hwm_mib()
    );
    assert!(
        after.hwm_kib < before.hwm_kib + bound_kib,
        "VmHWM grew from {:.1} to {:.1} MiB on {what}",
        before.hwm_mib(),
        after.hwm_mib()
    );
}

/// Proves the server still serves: an echo with a fresh id gets its text back.
pub async fn probe<W: Wire>(wire: &mut W, n: usize) -> Result<(), String> {
    let text = format!("alive-{n}");
    let id = json!(format!("probe-{n}"));
    let case = Case::new(
        format!("probe {n}"),
        bytes(&echo(id.clone(), &text)),
        Expect::Text { id, text },
    );
    let reply = wire.exchange(&case.body, None, true).await;
    check(wire.name(), &case, &reply).map(|_| ())
}

/// Sends every case, each followed by a probe; returns the failures (all of them, not just the
/// first, so one run shows every deviation). `HOSTILE_REPORT=1` prints every answer.
#[allow(clippy::print_stderr)]
pub(crate) async fn run_cases<W: Wire>(wire: &mut W, cases: &[Case]) -> Vec<String> {
    let mut failures = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let reply = wire
            .exchange(
                &case.body,
                case.headers.as_deref(),
                !matches!(case.expect, Expect::Silent),
            )
            .await;
        if let Err(failure) = check(wire.name(), case, &reply) {
            failures.push(failure);
        }
        if std::env::var_os("HOSTILE_REPORT").is_some() {
            let body = String::from_utf8_lossy(&reply.body);
            let shown: String = body.chars().take(200).collect();
            eprintln!(
                "[{}] {} → {:?} {shown}",
                wire.name(),
                case.name,
                reply.status
            );
        }
        if let Err(failure) = probe(wire, n).await {
            failures.push(format!("after {:?}: {failure}", case.name));
            break;
        }
    }
    failures
}

/// The multi-round-trip flow with 10 000 unasked answers beside the real one: round one asks,
/// round two (state echoed, `confirm` among 10 000 other keys) completes; the same with one
/// malformed key is refused and names the key.
pub(crate) async fn ten_thousand_input_responses<W: Wire>(wire: &mut W) -> Vec<String> {
    let mut failures = Vec::new();
    let first = Case::new(
        "10 000 input responses: round one",
        bytes(&wire::call_tool("round-1", MRTR_TOOL, &json!({}))),
        Expect::InputRequired {
            id: json!("round-1"),
        },
    );
    let reply = wire.exchange(&first.body, None, true).await;
    let state = match check(wire.name(), &first, &reply) {
        Ok(Some(message)) => message["result"]["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        Ok(None) => unreachable!(),
        Err(failure) => return vec![failure],
    };
    let round_two = |id: &str, responses: Value| {
        bytes(&wire::request(
            id,
            "tools/call",
            json!({"name": MRTR_TOOL, "arguments": {}, "inputResponses": responses, "requestState": state}),
        ))
    };
    let cases = [
        Case::new(
            "10 000 input responses: round two completes",
            round_two("round-2", many_input_responses(10_000, false)),
            Expect::Text {
                id: json!("round-2"),
                text: CONFIRMED_TEXT.to_owned(),
            },
        ),
        Case::new(
            "10 000 input responses: one malformed is named",
            round_two("round-2-bad", many_input_responses(10_000, true)),
            error(
                -32602,
                Some(json!("round-2-bad")),
                "inputResponses[\"k9999\"]",
            ),
        ),
        Case::new(
            "10 000 input responses: on a tool that asks nothing (ignored)",
            bytes(&wire::request(
                "echo-10k",
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "ignored"}, "inputResponses": many_input_responses(10_000, false)}),
            )),
            Expect::Text {
                id: json!("echo-10k"),
                text: "ignored".to_owned(),
            },
        ),
    ];
    for case in &cases {
        let started = std::time::Instant::now();
        let reply = wire.exchange(&case.body, None, true).await;
        if let Err(failure) = check(wire.name(), case, &reply) {
            failures.push(failure);
        }
        let elapsed = started.elapsed();
        if elapsed > Duration::from_secs(5) {
            failures.push(format!("{}: took {elapsed:?}", case.name));
        }
    }
    failures
}
