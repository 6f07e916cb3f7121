//! A real stdio server process fed 10 000 lines of mixed garbage and valid requests: every valid
//! request gets its correct answer, every bad line the precise error, and the server is still
//! serving at the end (and exits cleanly on EOF).

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const LINES: usize = 10_000;

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})
}

/// What one line should produce.
enum Expect {
    /// A result whose first message text contains this.
    Answer(String),
    /// An error with this code for this id.
    Error(i64),
    /// An error with this code and no id.
    Anonymous(i64),
    /// No response at all.
    Nothing,
}

/// A deterministic mix (a small LCG, so a failure replays exactly).
fn line(n: usize, seed: &mut u64) -> (Vec<u8>, Expect) {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let id = n as i64;
    match (*seed >> 33) % 12 {
        0..=5 => {
            let value = format!("v{n}-ü");
            let body = json!({"jsonrpc":"2.0","id":id,"method":"prompts/get","params":{"_meta":meta(),"name":"test_prompt_with_arguments","arguments":{"arg1":value,"arg2":"x"}}});
            (serde_json::to_vec(&body).unwrap(), Expect::Answer(value))
        }
        6 => (b"this is not json {".to_vec(), Expect::Anonymous(-32700)),
        7 => (format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list""#).into_bytes(), Expect::Anonymous(-32700)),
        8 => (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec(), Expect::Anonymous(-32700)),
        9 => match n % 5 {
            0 => (format!(r#"{{"jsonrpc":"1.0","id":{id},"method":"tools/list","params":{{}}}}"#).into_bytes(), Expect::Error(-32600)),
            1 => (format!(r#"{{"jsonrpc":"2.0","id":{id}}}"#).into_bytes(), Expect::Error(-32600)),
            2 => (br#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#.to_vec(), Expect::Anonymous(-32600)),
            3 => (br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#.to_vec(), Expect::Anonymous(-32600)),
            _ => (format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{{}}}}}}"#).into_bytes(), Expect::Error(-32602)),
        },
        10 => {
            let body = json!({"jsonrpc":"2.0","id":id,"method":"no/such/method","params":{"_meta":meta()}});
            (serde_json::to_vec(&body).unwrap(), Expect::Error(-32601))
        }
        _ => match n % 2 {
            0 => (b"   ".to_vec(), Expect::Nothing),
            _ => (br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nobody"}}"#.to_vec(), Expect::Nothing),
        },
    }
}

#[tokio::test]
async fn ten_thousand_mixed_lines() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();

    let mut seed = 7u64;
    let mut by_id: HashMap<i64, Expect> = HashMap::new();
    let mut anonymous: HashMap<i64, usize> = HashMap::new();
    let mut expected_responses = 0usize;
    // The first request fixes the era of a stdio connection: open it as 2026-07-28.
    let mut payload = serde_json::to_vec(
        &json!({"jsonrpc":"2.0","id":-1,"method":"server/discover","params":{"_meta":meta()}}),
    )
    .unwrap();
    payload.push(b'\n');
    by_id.insert(-1, Expect::Answer(String::new()));
    expected_responses += 1;
    for n in 0..LINES {
        let (bytes, expect) = line(n, &mut seed);
        payload.extend_from_slice(&bytes);
        payload.push(b'\n');
        match expect {
            Expect::Nothing => {}
            Expect::Anonymous(code) => {
                *anonymous.entry(code).or_default() += 1;
                expected_responses += 1;
            }
            other => {
                by_id.insert(n as i64, other);
                expected_responses += 1;
            }
        }
    }
    // Write from another task while this one reads, so neither pipe fills up.
    let writer = tokio::spawn(async move {
        stdin.write_all(&payload).await.unwrap();
        stdin.flush().await.unwrap();
        stdin
    });

    let read_all = async {
        let mut answered = 0usize;
        let mut anonymous_seen: HashMap<i64, usize> = HashMap::new();
        while answered < expected_responses {
            let line = stdout
                .next_line()
                .await
                .unwrap()
                .expect("server ended early");
            let message: Value = serde_json::from_str(&line).expect("every output line is JSON");
            answered += 1;
            let id = message.get("id").and_then(Value::as_i64);
            match id.and_then(|id| by_id.remove(&id)) {
                Some(Expect::Answer(value)) if value.is_empty() => {
                    assert_eq!(
                        message["result"]["supportedVersions"],
                        json!(["2026-07-28"])
                    );
                }
                Some(Expect::Answer(value)) => {
                    let text = message["result"]["messages"][0]["content"]["text"]
                        .as_str()
                        .unwrap_or_default();
                    assert!(text.contains(&value), "wrong answer for {id:?}: {message}");
                    assert_eq!(message["result"]["resultType"], "complete");
                }
                Some(Expect::Error(code)) => {
                    assert_eq!(message["error"]["code"], code, "{message}");
                }
                Some(_) => unreachable!(),
                None => {
                    assert!(message.get("id").is_none(), "unexpected response {message}");
                    *anonymous_seen
                        .entry(message["error"]["code"].as_i64().unwrap())
                        .or_default() += 1;
                }
            }
        }
        anonymous_seen
    };
    let anonymous_seen = tokio::time::timeout(Duration::from_secs(120), read_all)
        .await
        .expect("all answers within the bound");
    assert!(
        by_id.is_empty(),
        "{} requests were never answered",
        by_id.len()
    );
    assert_eq!(anonymous_seen, anonymous, "id-less errors by code");
    assert!(
        anonymous.len() >= 2 && expected_responses > LINES / 2,
        "the mix exercised the error paths"
    );

    // Still serving.
    let mut stdin = writer.await.unwrap();
    let last = json!({"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"_meta":meta(),"name":"test_simple_text"}});
    stdin
        .write_all(format!("{last}\n").as_bytes())
        .await
        .unwrap();
    let reply: Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["id"], "last");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );

    // EOF ends the server cleanly.
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}
