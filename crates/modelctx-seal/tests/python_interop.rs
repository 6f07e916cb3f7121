//! Interop with the reference implementation: the Python SDK 2.3.0 itself.
//!
//! `scripts/python-env.sh` provides the interpreter (creating the venv on first use) and
//! `tests/python/seal_interop.py` drives the SDK's own `RequestStateBoundary`,
//! `AESGCMRequestStateCodec`, argument digest, principal and resolver question digest. These
//! tests FAIL (never skip) when Python or the SDK is unusable.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use modelctx_seal::{
    AesGcmCodec, Codec, InvalidRequestState, Principal, RequestBinding, RequestStateSecurity,
    arguments_digest, canonical_json, question_digest,
};
use serde::Serialize;
use serde_json::{Value, json};

const K1: &[u8; 32] = b"interop-secret-one-0123456789abc";
const K2: &[u8; 48] = b"interop-secret-two-0123456789abcdefghijklmnopqrs";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The venv interpreter from `scripts/python-env.sh`; panics if it cannot be had.
fn python() -> PathBuf {
    let root = repo_root();
    let output = Command::new("bash")
        .arg(root.join("scripts/python-env.sh"))
        .current_dir(&root)
        .stderr(Stdio::inherit())
        .output()
        .expect("running scripts/python-env.sh");
    assert!(
        output.status.success(),
        "scripts/python-env.sh failed ({}); the Python interop tests need it",
        output.status
    );
    let stdout = String::from_utf8(output.stdout).expect("utf-8 interpreter path");
    let path = PathBuf::from(stdout.lines().last().expect("an interpreter path").trim());
    assert!(
        path.exists(),
        "python-env.sh printed a missing interpreter: {}",
        path.display()
    );
    path
}

/// Runs the helper on one request and returns its answer.
fn ask_python(request: &Value) -> Value {
    let mut child = Command::new(python())
        .arg(repo_root().join("tests/python/seal_interop.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning the Python helper");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(request.to_string().as_bytes())
        .expect("writing the request");
    let output = child.wait_with_output().expect("waiting for the helper");
    assert!(
        output.status.success(),
        "Python helper failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).expect("helper answers JSON");
    assert_eq!(
        answer["sdk_version"], "2.3.0",
        "the reference must be mcp 2.3.0"
    );
    answer
}

/// One request both sides seal for / open with.
struct Case {
    method: &'static str,
    params: Value,
    audience: Option<&'static str>,
    /// OAuth (client_id, iss, sub) or unauthenticated.
    principal: Option<(&'static str, Option<&'static str>, Option<&'static str>)>,
    state: &'static str,
}

impl Case {
    fn target(&self) -> &str {
        let key = if self.method == "resources/read" {
            "uri"
        } else {
            "name"
        };
        self.params[key].as_str().unwrap_or("")
    }

    fn principal(&self) -> Option<Principal> {
        self.principal
            .map(|(client, iss, sub)| Principal::from_oauth(client, iss, sub))
    }

    fn security(&self, keys: &[&[u8]]) -> RequestStateSecurity {
        let security = RequestStateSecurity::with_keys(keys.iter().copied()).unwrap();
        match self.audience {
            Some(audience) => security.with_audience(audience),
            None => security,
        }
    }

    fn python_item(&self, keys: &[&[u8]]) -> Value {
        json!({
            "keys": keys.iter().map(|k| hex(k)).collect::<Vec<_>>(),
            "audience": self.audience,
            "method": self.method,
            "params": self.params,
            "principal": self.principal.map(|(c, i, s)| json!({"client_id": c, "iss": i, "sub": s})),
        })
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            method: "tools/call",
            params: json!({"name": "provision", "arguments": {"name": "orders"}}),
            audience: Some("Provisioner"),
            principal: None,
            state: "provision-v1",
        },
        Case {
            method: "tools/call",
            params: json!({"name": "order_book", "arguments": {
                "title": "Über 😀 \"quotes\" \\ \n", "qty": 3, "price": 12.5, "tags": ["a", null, true]}}),
            audience: Some("Bookshop ☃"),
            principal: Some(("shop-app", Some("https://id.example"), Some("alice"))),
            state: r#"{"v":3,"outcomes":{"__main__:ask":{"action":"accept","data":{"seat":"aisle 𝄞"},"q":"45NnrTy8gnBYA3Ncj6G16A"}},"asked":{}}"#,
        },
        Case {
            method: "prompts/get",
            params: json!({"name": "summary", "arguments": {"topic": "rust", "depth": "2"}}),
            audience: None,
            principal: Some(("cli", None, Some("bob\u{7f}\u{1}"))),
            state: "\u{0}\t\u{2028}",
        },
        Case {
            method: "resources/read",
            params: json!({"uri": "file:///reports/q3.csv"}),
            audience: Some("files"),
            principal: Some(("svc", Some("iss"), None)),
            state: "",
        },
        Case {
            method: "tools/call",
            params: json!({"name": "no_args"}),
            audience: Some("x"),
            principal: None,
            state: "no arguments at all",
        },
    ]
}

/// The claims with the per-token values (times, principal salt) blanked, for layout comparison.
fn claims_layout(payload: &str) -> String {
    let mut out = payload.to_owned();
    for key in ["\"iat\":", "\"exp\":"] {
        let start = out.find(key).expect("time claim") + key.len();
        let end = start + out[start..].find(',').expect("claim end");
        out.replace_range(start..end, "T");
    }
    if let Some(at) = out.find("\"p\":\"") {
        out.replace_range(at + 5..at + 5 + 32, "P");
    }
    out
}

#[test]
fn tokens_are_interchangeable_with_the_python_sdk() {
    let ring: [&[u8]; 1] = [K1];
    let cases = cases();
    let codec = AesGcmCodec::new([K1]).unwrap();

    // Rust mints; Python opens through its real boundary. Python mints; Rust opens.
    let mut rust_tokens = Vec::new();
    let mut open = Vec::new();
    let mut mint = Vec::new();
    let mut unseal = Vec::new();
    for case in &cases {
        let principal = case.principal();
        let binding = RequestBinding::new(case.method, case.target())
            .with_arguments(case.params.get("arguments"))
            .with_principal(principal.as_ref());
        let token = case.security(&ring).seal(case.state, &binding).unwrap();
        let mut item = case.python_item(&ring);
        item["token"] = json!(token);
        open.push(item);
        unseal.push(json!({"keys": [hex(K1)], "token": token}));
        let mut item = case.python_item(&ring);
        item["state"] = json!(case.state);
        mint.push(item);
        rust_tokens.push(token);
    }
    let answer = ask_python(&json!({"open": open, "mint": mint, "unseal": unseal}));

    for (i, case) in cases.iter().enumerate() {
        assert_eq!(
            answer["open"][i],
            json!({"ok": case.state}),
            "Python opening Rust token {i}"
        );
        let python_token = answer["mint"][i].as_str().unwrap();
        let principal = case.principal();
        let binding = RequestBinding::new(case.method, case.target())
            .with_arguments(case.params.get("arguments"))
            .with_principal(principal.as_ref());
        assert_eq!(
            case.security(&ring).open(python_token, &binding).unwrap(),
            case.state,
            "Rust opening Python token {i}"
        );
        // Same claims, byte for byte, apart from the per-token time and salt.
        let rust_payload = answer["unseal"][i]["payload"].as_str().unwrap();
        assert_eq!(
            rust_payload.as_bytes(),
            codec.unseal(&rust_tokens[i]).unwrap(),
            "both codecs decrypt the same bytes"
        );
        let python_payload = String::from_utf8(codec.unseal(python_token).unwrap()).unwrap();
        assert_eq!(
            claims_layout(rust_payload),
            claims_layout(&python_payload),
            "case {i}"
        );
    }
}

/// The round claims this SDK adds (`r`, `tc`) keep tokens interchangeable: the Python SDK's
/// boundary opens a round-3 token carrying them (it ignores claims it does not know), and a
/// Python token opens here as round 1 without trace context.
#[test]
fn round_claims_are_ignored_by_the_python_sdk() {
    let ring: [&[u8]; 1] = [K1];
    let cases = cases();
    let lineage = modelctx_seal::RoundLineage::new(3)
        .with_trace_context("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    let mut open = Vec::new();
    let mut mint = Vec::new();
    for case in &cases {
        let principal = case.principal();
        let binding = RequestBinding::new(case.method, case.target())
            .with_arguments(case.params.get("arguments"))
            .with_principal(principal.as_ref());
        let token = case
            .security(&ring)
            .seal_round(case.state, &binding, &lineage)
            .unwrap();
        let mut item = case.python_item(&ring);
        item["token"] = json!(token);
        open.push(item);
        let mut item = case.python_item(&ring);
        item["state"] = json!(case.state);
        mint.push(item);
    }
    let answer = ask_python(&json!({"open": open, "mint": mint, "unseal": []}));
    for (i, case) in cases.iter().enumerate() {
        assert_eq!(
            answer["open"][i],
            json!({"ok": case.state}),
            "Python opening Rust round-3 token {i}"
        );
        let principal = case.principal();
        let binding = RequestBinding::new(case.method, case.target())
            .with_arguments(case.params.get("arguments"))
            .with_principal(principal.as_ref());
        let python_token = answer["mint"][i].as_str().unwrap();
        let (state, opened) = case
            .security(&ring)
            .open_round(python_token, &binding)
            .unwrap();
        assert_eq!(
            (state.as_str(), opened),
            (case.state, modelctx_seal::RoundLineage::FIRST),
            "Rust opening Python token {i}"
        );
    }
}

#[test]
fn rejections_match_python_reasons_and_wire_error() {
    let ring: [&[u8]; 1] = [K1];
    let case = &cases()[1];
    let principal = case.principal().unwrap();
    let args = case.params["arguments"].clone();
    let binding =
        RequestBinding::tool_call("order_book", Some(&args)).with_principal(Some(&principal));
    let security = case.security(&ring);
    let token = security.seal(case.state, &binding).unwrap();

    // Tampered and malformed tokens, checked by both sides under the same request.
    let mut bad_tokens: Vec<String> = vec![
        String::new(),
        "provision-v1".into(),
        "v1.".into(),
        format!("{token}="),
        format!("{token}AAAA"),
        token.replace('_', "/").replace('-', "+"),
        format!("v2{}", &token[2..]),
    ];
    let chars: Vec<char> = token.chars().collect();
    for position in (0..chars.len()).step_by(7).chain([chars.len() - 1]) {
        let mut tampered = chars.clone();
        tampered[position] = if chars[position] == 'A' { 'B' } else { 'A' };
        bad_tokens.push(tampered.into_iter().collect());
    }
    // Binding mismatches: (description, python params, python principal, python audience).
    let other_args = json!({"title": "other"});
    let mismatches = [
        (
            "other tool",
            json!({"name": "echo", "arguments": args}),
            case.principal,
            case.audience,
        ),
        (
            "other args",
            json!({"name": "order_book", "arguments": other_args}),
            case.principal,
            case.audience,
        ),
        (
            "other principal",
            case.params.clone(),
            Some(("shop-app", Some("https://id.example"), Some("mallory"))),
            case.audience,
        ),
        ("no principal", case.params.clone(), None, case.audience),
        (
            "other audience",
            case.params.clone(),
            case.principal,
            Some("Elsewhere"),
        ),
    ];

    let mut open = Vec::new();
    let mut expected = Vec::new();
    for bad in &bad_tokens {
        let mut item = case.python_item(&ring);
        item["token"] = json!(bad);
        open.push(item);
        expected.push(security.open(bad, &binding).unwrap_err());
    }
    for (_, params, who, audience) in &mismatches {
        let mut item = case.python_item(&ring);
        item["params"] = params.clone();
        item["principal"] = json!(who.map(|(c, i, s)| json!({"client_id": c, "iss": i, "sub": s})));
        item["audience"] = json!(audience);
        item["token"] = json!(token);
        open.push(item);
        let rust_principal = who.map(|(c, i, s)| Principal::from_oauth(c, i, s));
        let rust_security = match audience {
            Some(audience) => security.clone().with_audience(*audience),
            None => security.clone(),
        };
        let rust_binding =
            RequestBinding::tool_call(params["name"].as_str().unwrap(), params.get("arguments"))
                .with_principal(rust_principal.as_ref());
        expected.push(rust_security.open(&token, &rust_binding).unwrap_err());
    }
    // Unknown key: a verifier holding only K2.
    let mut item = case.python_item(&[K2]);
    item["token"] = json!(token);
    open.push(item);
    expected.push(case.security(&[K2]).open(&token, &binding).unwrap_err());

    let answer = ask_python(&json!({"open": open}));
    for (i, rust_err) in expected.iter().enumerate() {
        let python = &answer["open"][i];
        assert_eq!(
            python["error"],
            rust_err.wire_error(),
            "wire error of rejection {i}"
        );
        assert_eq!(
            python["reason"].as_str(),
            Some(rust_err.reason().as_str()),
            "log reason of rejection {i} ({rust_err})"
        );
    }
    assert_eq!(
        InvalidRequestState::new(modelctx_seal::Reason::Seal).wire_error(),
        answer["open"][0]["error"]
    );
}

#[test]
fn rotation_and_codec_interop() {
    // Python's codec seals raw payloads under [K2, K1]; Rust's opens them under [K1, K2], not [K1].
    let payloads = ["", "x", "{\"v\":1}", "é😀\u{0}"];
    let seal: Vec<Value> = payloads
        .iter()
        .map(|p| json!({"keys": [hex(K2), hex(K1)], "payload": p}))
        .collect();
    let rust_new_first = AesGcmCodec::new([&K2[..], K1]).unwrap();
    let unseal: Vec<Value> = payloads
        .iter()
        .flat_map(|p| {
            let token = rust_new_first.seal(p.as_bytes()).unwrap();
            [
                json!({"keys": [hex(K1), hex(K2)], "token": token}),
                json!({"keys": [hex(K1)], "token": token}),
            ]
        })
        .collect();
    let answer = ask_python(&json!({"seal": seal, "unseal": unseal}));

    let rust_old_new = AesGcmCodec::new([&K1[..], K2]).unwrap();
    let rust_old = AesGcmCodec::new([K1]).unwrap();
    for (i, payload) in payloads.iter().enumerate() {
        let token = answer["seal"][i].as_str().unwrap();
        assert_eq!(rust_old_new.unseal(token).unwrap(), payload.as_bytes());
        assert_eq!(
            rust_old.unseal(token).unwrap_err().reason(),
            modelctx_seal::Reason::UnknownKey
        );
        assert_eq!(answer["unseal"][2 * i], json!({"payload": payload}));
        assert_eq!(
            answer["unseal"][2 * i + 1],
            json!({"reason": "unknown key"})
        );
    }
}

/// Deterministic pseudo-random doubles covering the whole exponent range.
fn float_table() -> Vec<f64> {
    let mut values = vec![
        1e16,
        1e-5,
        0.1,
        -0.0,
        0.0,
        1.5,
        1.0,
        100.0,
        1e15,
        9.999_999_999_999_998e15,
        1e-4,
        9.9e-5,
        1e22,
        1e21,
        1e23,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        -1.5e-7,
        0.30000000000000004,
        123456.789,
        4.35,
        2.675,
        1e100,
        3.0e-10,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    while values.len() < 400 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let value = f64::from_bits(state);
        if value.is_finite() {
            values.push(value);
        }
        // Also decimal-looking values near the notation switch points.
        let scaled = (state % 1_000_000) as f64 / 1000.0 * 10f64.powi((state % 40) as i32 - 20);
        values.push(scaled);
    }
    values
}

#[test]
fn argument_digests_and_json_match_python() {
    let mut texts: Vec<String> = [
        r#"{"x":7}"#,
        r#"{"name":"orders"}"#,
        r#"{}"#,
        r#"{"s":"héllo wörld ☃ 😀 𝄞 \ud83d\ude00 \uffff"}"#,
        r#"{"nested":{"b":[1,{"d":null,"c":true}],"a":{"z":[],"y":{}}}}"#,
        r#"{"ints":[0,-1,1,-42,9007199254740993,-9223372036854775808,9223372036854775807,18446744073709551615]}"#,
        r#"{"floats":[1e16,1e-5,0.1,-0.0,1.5,1.0,100.0,1E22,1.7976931348623157e308,5e-324,0.0001,123.456,2.5e-7,1.0e2]}"#,
        r#"{"bool":[true,false],"null":null}"#,
        r#"{"empty":{"a":[],"o":{},"s":""}}"#,
        r#"{"zeta":1,"alpha":2,"Beta":3,"_":4,"ä":5,"a":6,"10":7,"9":8,"😀":9,"\uffff":10,"":11,"A":12}"#,
        r#"{"ctl":"\u0000\u0001\u001f\u007f\b\f\n\r\t\u0080\u00ff"}"#,
        r#"{"q":"\"quoted\" and \\backslash\\ and /slash/ \u2028\u2029"}"#,
        // (An integer literal `-0` is the one known divergence: serde_json parses it as the
        // float -0.0, which Python writes as `-0.0` while its int 0 is `0`.)
        r#"{"w":0.0,"v":-0.0,"u":0}"#,
        r#"[1,"list arguments",{"b":1,"a":2}]"#,
        r#"[]"#,
        r#"null"#,
        r#"false"#,
        r#"0"#,
        r#""""#,
        r#""str""#,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let floats = float_table();
    for chunk in floats.chunks(20) {
        texts.push(serde_json::to_string(&json!({ "f": chunk })).unwrap());
    }
    let answer = ask_python(&json!({"digests": texts, "dumps": texts}));

    let mut failures = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let value: Value = serde_json::from_str(text).unwrap();
        let rust = arguments_digest(Some(&value));
        if answer["digests"][i] != json!(rust) {
            failures.push(format!(
                "digest of {text}: python {} rust {rust}\n  python json {}\n  rust json   {}",
                answer["digests"][i],
                answer["dumps"][i],
                canonical_json::to_string_sorted(&value)
            ));
        }
        // The sorted compact JSON itself (for non-falsy values) must be identical too.
        let dumped = canonical_json::to_string_sorted(&value);
        if answer["dumps"][i] != json!(dumped) {
            failures.push(format!(
                "json of {text}: python {} rust {dumped}",
                answer["dumps"][i]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The three digests checked by hand against Python in the reference document.
    assert_eq!(answer["digests"][0], "Ey8lUoApKugLEhHi5PR-xw");
    assert_eq!(answer["digests"][1], "cpW1mcFtGeM0ZPdUOr4a0A");
    assert_eq!(answer["digests"][2], "RBNvo1WzZ4oRRq0W9-hkng");
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FormParams<'a> {
    mode: &'a str,
    message: &'a str,
    requested_schema: Value,
}

#[test]
fn principals_and_question_digests_match_python() {
    let principals = [
        ("client", Some("https://issuer.example"), Some("user-1")),
        ("client", None, None),
        ("clïent 😀", Some("iss"), None),
        ("c\"\\", None, Some("\u{1}\u{7f}")),
    ];
    // Schemas are written with sorted keys so the parsed value has the same order whether or
    // not serde_json's preserve_order feature is on in this build.
    let questions = [
        (
            "Which region should the database live in?",
            r#"{"properties":{"region":{"type":"string"}},"required":["region"],"type":"object"}"#,
        ),
        (
            "Budget in €? 😀",
            r#"{"properties":{"budget":{"minimum":0,"type":"number"}},"type":"object"}"#,
        ),
    ];
    let mut question_items: Vec<Value> = vec![Value::Null];
    question_items.extend(
        questions
            .iter()
            .map(|(m, s)| json!({"message": m, "schema": s})),
    );
    let answer = ask_python(&json!({
        "principals": principals
            .iter()
            .map(|(c, i, s)| json!({"client_id": c, "iss": i, "sub": s}))
            .collect::<Vec<_>>(),
        "questions": question_items,
    }));

    for (i, (client, iss, sub)) in principals.iter().enumerate() {
        assert_eq!(
            answer["principals"][i],
            json!(Principal::from_oauth(client, *iss, *sub).as_str()),
            "principal {i}"
        );
    }
    assert_eq!(
        answer["questions"][0]["digest"],
        json!(question_digest::<Value>(None).unwrap())
    );
    for (i, (message, schema)) in questions.iter().enumerate() {
        let params = FormParams {
            mode: "form",
            message,
            requested_schema: serde_json::from_str(schema).unwrap(),
        };
        let python = &answer["questions"][i + 1];
        assert_eq!(
            python["rendered"],
            json!(canonical_json::to_string(&params).unwrap())
        );
        assert_eq!(
            python["digest"],
            json!(question_digest(Some(&params)).unwrap())
        );
    }
}
