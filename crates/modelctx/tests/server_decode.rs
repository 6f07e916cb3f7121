//! Decoding on the server: a request whose `method` comes before `params` has its params decoded
//! in the envelope's pass, one in any other order in two phases. Either way every answer —
//! result, or error code, message and kept id — is the same, over stdio and over HTTP.

use modelctx_test_support::server::{HttpPeer, StdioPeer, fixture, meta, request};
use serde_json::{Value, json};

/// One request line in both member orders (`method` first, then `params` first), as bytes.
struct Case {
    name: &'static str,
    method_first: Vec<u8>,
    params_first: Vec<u8>,
    /// The JSON-RPC error code expected (`None`: a result).
    code: Option<i64>,
    /// Over HTTP, when it differs (the header checks come first).
    http_code: Option<Option<i64>>,
    /// The id the answer carries.
    id: Value,
}

fn case(name: &'static str, head: &str, method: &str, params: &str, code: Option<i64>) -> Case {
    let sep = |s: &str| {
        if s.is_empty() {
            String::new()
        } else {
            format!(",{s}")
        }
    };
    Case {
        name,
        method_first: format!(r#"{{{head}{}{}}}"#, sep(method), sep(params)).into_bytes(),
        params_first: format!(r#"{{{head}{}{}}}"#, sep(params), sep(method)).into_bytes(),
        code,
        http_code: None,
        // The id is kept whenever it was readable (a parse error has none).
        id: if code == Some(-32700) {
            Value::Null
        } else {
            json!(7)
        },
    }
}

fn cases() -> Vec<Case> {
    let meta = meta(&json!({}));
    let params = |inner: &str| format!(r#""params":{{{inner}"_meta":{meta}}}"#);
    let echo = params(r#""name":"echo","arguments":{"text":"hi"},"#);
    let call = r#""method":"tools/call""#;
    let head = r#""jsonrpc":"2.0","id":7"#;
    let huge = "x".repeat(200 * 1024);
    let mut cases = vec![
        case("a good call", head, call, &echo, None),
        case(
            "params of the wrong type",
            head,
            call,
            &params(r#""name":5,"#),
            Some(-32602),
        ),
        case(
            "arguments not an object",
            head,
            call,
            &params(r#""name":"echo","arguments":[1],"#),
            Some(-32602),
        ),
        case(
            "an unknown tool",
            head,
            call,
            &params(r#""name":"nope","#),
            Some(-32602),
        ),
        case(
            "a malformed requestState",
            head,
            call,
            &params(r#""name":"echo","requestState":5,"#),
            Some(-32602),
        ),
        case(
            "an unknown method",
            head,
            r#""method":"tools/nope""#,
            &echo,
            Some(-32601),
        ),
        case("no method", head, "", &echo, Some(-32600)),
        case(
            "a method that is not a string",
            head,
            r#""method":5"#,
            &echo,
            Some(-32600),
        ),
        case(
            "a duplicate method",
            head,
            r#""method":"tools/call","method":"tools/call""#,
            &echo,
            Some(-32600),
        ),
        case(
            "duplicate params",
            head,
            call,
            &format!("{echo},{echo}"),
            Some(-32600),
        ),
        case(
            "a duplicate id",
            head,
            r#""method":"tools/call","id":8"#,
            &echo,
            Some(-32600),
        ),
        case(
            "params not an object",
            head,
            call,
            r#""params":[1]"#,
            Some(-32600),
        ),
        case(
            "a request with a result",
            head,
            r#""method":"tools/call","result":{}"#,
            &echo,
            Some(-32600),
        ),
        case(
            "huge params",
            head,
            call,
            &params(&format!(
                r#""name":"echo","arguments":{{"text":"{huge}"}},"#
            )),
            None,
        ),
        case(
            "huge bad params",
            head,
            call,
            &params(&format!(r#""name":5,"arguments":{{"text":"{huge}"}},"#)),
            Some(-32602),
        ),
        case(
            "not JSON",
            head,
            call,
            r#""params":{"name":"echo""#,
            Some(-32700),
        ),
    ];
    for case in &mut cases {
        match case.name {
            // The last of two ids is the one kept (as serde_json reads a duplicate member).
            "a duplicate id" => case.id = json!(8),
            // Over HTTP a name that is not a string cannot match the Mcp-Name header.
            "params of the wrong type" | "huge bad params" => {
                case.http_code = Some(Some(-32020));
            }
            _ => {}
        }
    }
    // Invalid UTF-8 in the arguments.
    let mut bad = case("invalid UTF-8", head, call, &echo, Some(-32700));
    for line in [&mut bad.method_first, &mut bad.params_first] {
        let at = line.windows(2).position(|w| w == b"hi").unwrap();
        line[at] = 0xff;
    }
    cases.push(bad);
    cases
}

/// The answer with the position (` at line 1 column N`, ` at byte N`) dropped from an error
/// message: the two orders put the offending member at different columns.
fn without_position(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if let Some(message) = answer["error"]["message"].as_str()
        && let Some(at) = message.find(" at line ").or(message.find(" at byte "))
    {
        answer["error"]["message"] = message[..at].into();
    }
    answer
}

fn check(case: &Case, transport: &str, first: &Value, second: &Value) {
    let what = format!("{} over {transport}", case.name);
    assert_eq!(
        without_position(first),
        without_position(second),
        "{what}: the answer depends on the member order"
    );
    let code = match (transport, case.http_code) {
        ("HTTP", Some(code)) => code,
        _ => case.code,
    };
    match code {
        None => assert_eq!(first["result"]["resultType"], "complete", "{what}: {first}"),
        Some(code) => assert_eq!(first["error"]["code"], code, "{what}: {first}"),
    }
    assert_eq!(first["id"], case.id, "{what}: {first}");
}

#[tokio::test]
async fn every_answer_is_the_same_in_either_member_order_over_stdio() {
    let mut peer = StdioPeer::start(fixture());
    // The first request fixes the era of the connection.
    let (first, _) = peer
        .request(&request(1, "server/discover", json!({})))
        .await;
    assert_eq!(first["result"]["resultType"], "complete");
    for case in cases() {
        peer.send_raw(&case.method_first).await;
        let first = peer.next().await.expect("an answer");
        peer.send_raw(&case.params_first).await;
        let second = peer.next().await.expect("an answer");
        check(&case, "stdio", &first, &second);
    }
    peer.close().await.unwrap();
}

#[tokio::test]
async fn every_answer_is_the_same_in_either_member_order_over_http() {
    let peer = HttpPeer::start(fixture()).await;
    for case in cases() {
        let mut answers = Vec::new();
        for body in [&case.method_first, &case.params_first] {
            let mut post = peer
                .client
                .post(&peer.url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2026-07-28")
                .body(body.clone());
            // The Mcp-Method and Mcp-Name headers agree with the body, as a client's would.
            let parsed = serde_json::from_slice::<Value>(body).unwrap_or_default();
            let method = parsed["method"].as_str().unwrap_or("tools/call");
            post = post.header("mcp-method", method);
            if let Some(name) = parsed["params"]["name"].as_str() {
                post = post.header("mcp-name", name);
            }
            let response = post.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
            answers.push((status, body));
        }
        assert_eq!(
            answers[0].0, answers[1].0,
            "{}: the status depends on the order",
            case.name
        );
        check(&case, "HTTP", &answers[0].1, &answers[1].1);
    }
}
