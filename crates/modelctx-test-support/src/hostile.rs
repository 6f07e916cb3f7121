//! The hostile-input cases shared by the stdio and HTTP suites, and the runner that sends each
//! one to a real server process, checks its precise answer, and proves the server still serves.
//!
//! A case is the bytes of one message and what must come back: the JSON-RPC error code (the
//! HTTP status follows from it, as `http_status` documents), the id — echoed whenever it was
//! readable, absent otherwise (the 2026-07-28 schema has no `null` id) — and a fragment of the
//! message, or the whole error object where the SDK freezes it.

pub mod runner;

use modelctx_reliability::procfs::Memory;
use modelctx_reliability::server::Launch;
use modelctx_reliability::wire::{self, MRTR_TOOL};
use serde_json::{Value, json};

/// `Memory` counts KiB: this many make a MiB.
pub const MIB: u64 = 1024;

/// How the suites start the server: with a predictable allocator, so that the memory bounds
/// measure what the server keeps rather than how glibc's arenas and mmap threshold happened to
/// adapt to the machine's load.
pub fn memory_checked_launch() -> Launch {
    Launch {
        predictable_malloc: true,
        ..Launch::default()
    }
}

pub use runner::{
    assert_peak_within, echo_body, echo_of_size, every_case_twice, limit_is_exact, probe,
};

/// What a transport gives back for one message.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status (`None` over stdio).
    pub status: Option<u16>,
    /// The response body (one line over stdio; empty when nothing came).
    pub body: Vec<u8>,
}

/// One connection to a server process under test.
#[allow(
    async_fn_in_trait,
    reason = "implemented and awaited only by the test binaries, on their own runtime"
)]
pub trait Wire {
    /// The transport's name, for messages.
    fn name(&self) -> &'static str;

    /// Sends one message. `reply` is false when the server must stay silent (stdio does not
    /// wait for a line then; HTTP always answers).
    async fn exchange(
        &mut self,
        body: &[u8],
        headers: Option<&[(String, Vec<u8>)]>,
        reply: bool,
    ) -> Reply;

    /// The server's memory now.
    fn memory(&self) -> Memory;
}

/// What must come back.
#[derive(Debug, Clone)]
#[allow(missing_docs, reason = "each variant's documentation names its fields")]
pub enum Expect {
    /// An error with this code, for this id (`None`: the id member is absent), whose message
    /// contains `contains`.
    Error {
        code: i64,
        id: Option<Value>,
        contains: &'static str,
    },
    /// An error with this code whatever the id (a message with two ids).
    ErrorAnyId { code: i64, contains: &'static str },
    /// Exactly this error object, for this id.
    Exact { id: Option<Value>, error: Value },
    /// A complete result whose first content block is this text.
    Text { id: Value, text: String },
    /// An `InputRequiredResult` carrying a `requestState`.
    InputRequired { id: Value },
    /// Nothing over stdio; `202 Accepted` with an empty body over HTTP.
    Silent,
    /// HTTP only: this status with a plain-text body (the transport refused the request).
    Status(u16),
}

/// One hostile message.
#[derive(Debug, Clone)]
pub struct Case {
    /// What it is, for messages and the report.
    pub name: String,
    /// The bytes sent (no newline inside: stdio frames by lines).
    pub body: Vec<u8>,
    /// HTTP headers instead of the ones derived from the body.
    pub headers: Option<Vec<(String, Vec<u8>)>>,
    /// What must come back.
    pub expect: Expect,
}

impl Case {
    /// A case named `name` sending `body`.
    pub fn new(name: impl Into<String>, body: impl Into<Vec<u8>>, expect: Expect) -> Self {
        Self {
            name: name.into(),
            body: body.into(),
            headers: None,
            expect,
        }
    }

    /// The case with these HTTP headers instead of the standard ones.
    pub fn with_headers(mut self, headers: Vec<(String, Vec<u8>)>) -> Self {
        self.headers = Some(headers);
        self
    }
}

/// [`Expect::Error`].
pub fn error(code: i64, id: Option<Value>, contains: &'static str) -> Expect {
    Expect::Error { code, id, contains }
}

/// The frozen request-state error.
pub fn bad_state(id: Value) -> Expect {
    Expect::Exact {
        id: Some(id),
        error: wire::invalid_request_state(),
    }
}

/// The HTTP status of a JSON-RPC error on the 2026-07-28 endpoint: 400 for malformed requests
/// and the ladder's errors, 404 for an unknown method, 200 otherwise.
pub fn http_status(code: i64) -> u16 {
    match code {
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => 400,
        -32601 => 404,
        _ => 200,
    }
}

/// `value` serialized.
pub fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a Value serializes")
}

fn echo(id: impl Into<Value>, text: &str) -> Value {
    wire::call_tool(id, "echo", &json!({"text": text}))
}

/// `depth` nested arrays: `[[[…]]]`.
pub fn nested_arrays(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 2);
    s.push_str(&"[".repeat(depth));
    s.push_str(&"]".repeat(depth));
    s
}

/// `depth` nested objects: `{"a":{"a":…{}}}`.
pub fn nested_objects(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 6);
    s.push_str(&"{\"a\":".repeat(depth));
    s.push_str("{}");
    s.push_str(&"}".repeat(depth));
    s
}

/// The nesting depth of the hostile cases.
pub const DEPTH: usize = 100_000;

/// Every hostile message that both transports answer the same way.
pub fn cases() -> Vec<Case> {
    let meta = wire::meta();
    let meta_text = meta.to_string();
    let mut cases = Vec::new();
    let mut late = Vec::new();
    let mut push = |name: &str, body: Vec<u8>, expect: Expect| {
        cases.push(Case::new(name, body, expect));
    };

    // --- Not JSON.
    for (name, text) in [
        ("not JSON: prose", "hello, server"),
        ("not JSON: a lone brace", "{"),
        (
            "not JSON: single quotes",
            "{'jsonrpc':'2.0','id':1,'method':'tools/list'}",
        ),
        (
            "not JSON: NaN",
            r#"{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}"#,
        ),
        (
            "not JSON: trailing comma",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list",}"#,
        ),
        (
            "not JSON: trailing garbage",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"} x"#,
        ),
        (
            "not JSON: two messages on one line",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ),
        (
            "not JSON: control character in a string",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\u{1}list\"}",
        ),
        (
            "not JSON: bad escape",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\qlist"}"#,
        ),
        ("not JSON: NUL bytes", "\0\0\0\0"),
    ] {
        push(
            name,
            text.as_bytes().to_vec(),
            error(-32700, None, "Parse error"),
        );
    }

    // --- Truncated JSON: every prefix of a valid request (cut every 11 bytes) is a parse error.
    let full = bytes(&echo(4242, "truncated"));
    for cut in (1..full.len()).step_by(11) {
        push(
            &format!("truncated JSON: first {cut} of {} bytes", full.len()),
            full[..cut].to_vec(),
            error(-32700, None, "Parse error"),
        );
    }

    // --- Invalid UTF-8.
    let with_bytes = |before: &str, bad: &[u8], after: &str| {
        let mut v = before.as_bytes().to_vec();
        v.extend_from_slice(bad);
        v.extend_from_slice(after.as_bytes());
        v
    };
    push(
        "invalid UTF-8: in the method",
        with_bytes(
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/"#,
            b"\xff\xfe",
            r#""}"#,
        ),
        error(-32700, None, "Parse error"),
    );
    push(
        "invalid UTF-8: in an argument",
        with_bytes(
            &format!(
                r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","arguments":{{"text":"a"#
            ),
            b"\xc3\x28",
            r#""}}}"#,
        ),
        error(-32700, None, "Parse error"),
    );
    push(
        "invalid UTF-8: overlong encoding in the id",
        with_bytes(
            r#"{"jsonrpc":"2.0","id":""#,
            b"\xc0\xaf",
            r#"","method":"tools/list"}"#,
        ),
        error(-32700, None, "Parse error"),
    );
    push(
        "invalid UTF-8: a surrogate encoded in UTF-8 in _meta",
        with_bytes(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"x":""#,
            b"\xed\xa0\x80",
            r#""}}}"#,
        ),
        error(-32700, None, "Parse error"),
    );
    late.push(
        Case::new(
            "invalid UTF-8: in an unknown top-level member",
            with_bytes(
                &format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","arguments":{{"text":"x"}}}},"note":""#),
                b"\xff",
                r#""}"#,
            ),
            error(-32700, None, "Parse error"),
        )
    );
    push(
        "invalid UTF-8: a truncated sequence at the end",
        with_bytes(
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#,
            b"\xe2\x82",
            "",
        ),
        error(-32700, None, "Parse error"),
    );

    // --- Duplicate members and unpaired surrogates: JSON that is not a valid message.
    push(
        "duplicate member: id",
        br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}"#.to_vec(),
        Expect::ErrorAnyId {
            code: -32600,
            contains: "duplicate field `id`",
        },
    );
    push(
        "duplicate member: method",
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call"}"#.to_vec(),
        error(-32600, Some(json!(3)), "duplicate field `method`"),
    );
    push(
        "duplicate member: params.name",
        format!(r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","name":"test_simple_text","arguments":{{}}}}}}"#).into_bytes(),
        error(-32602, Some(json!(4)), "duplicate field `name`"),
    );
    push(
        "unpaired surrogate escape: in the id",
        br#"{"jsonrpc":"2.0","id":"\ud800","method":"tools/list"}"#.to_vec(),
        error(-32600, None, "malformed \"id\""),
    );
    push(
        "unpaired surrogate escape: in an argument",
        format!(r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","arguments":{{"text":"\udc00"}}}}}}"#).into_bytes(),
        error(-32602, Some(json!(6)), "Invalid params"),
    );

    // --- Nesting depth 100 000.
    push(
        "nesting 100 000: an array as the message",
        nested_arrays(DEPTH).into_bytes(),
        error(-32600, None, "batches are not supported"),
    );
    push(
        "nesting 100 000: objects as the message",
        nested_objects(DEPTH).into_bytes(),
        error(-32600, None, "jsonrpc"),
    );
    push(
        "nesting 100 000: as the id",
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/list"}}"#,
            nested_arrays(DEPTH)
        )
        .into_bytes(),
        error(-32600, None, "\"id\" must be a string or an integer"),
    );
    push(
        "nesting 100 000: as the method",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-method","method":{}}}"#,
            nested_objects(DEPTH)
        )
        .into_bytes(),
        error(
            -32600,
            Some(json!("deep-method")),
            "\"method\" must be a string",
        ),
    );
    push(
        "nesting 100 000: as params",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-params","method":"tools/call","params":{}}}"#,
            nested_arrays(DEPTH)
        )
        .into_bytes(),
        error(
            -32600,
            Some(json!("deep-params")),
            "\"params\" must be an object",
        ),
    );
    push(
        "nesting 100 000: in a tool argument",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-args","method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","arguments":{{"text":"x","deep":{}}}}}}}"#,
            nested_arrays(DEPTH)
        )
        .into_bytes(),
        error(-32602, Some(json!("deep-args")), "recursion limit exceeded"),
    );
    push(
        "nesting 100 000: objects in a tool argument",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-objects","method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","arguments":{}}}}}"#,
            nested_objects(DEPTH)
        )
        .into_bytes(),
        error(-32602, Some(json!("deep-objects")), "recursion limit exceeded"),
    );
    push(
        "nesting 100 000: in the client capabilities",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-meta","method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"experimental":{{"x":{}}}}}}}}}}}"#,
            nested_arrays(DEPTH)
        )
        .into_bytes(),
        error(-32602, Some(json!("deep-meta")), ""),
    );
    push(
        "nesting 100 000: in an input response",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-input","method":"tools/call","params":{{"_meta":{meta_text},"name":"{MRTR_TOOL}","arguments":{{}},"inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":{}}}}}}}}}}}"#,
            nested_arrays(DEPTH)
        )
        .into_bytes(),
        error(-32602, Some(json!("deep-input")), "recursion limit exceeded"),
    );
    late.push(
        Case::new(
            "nesting 100 000: in requestState",
            format!(
                r#"{{"jsonrpc":"2.0","id":"deep-state","method":"tools/call","params":{{"_meta":{meta_text},"name":"{MRTR_TOOL}","arguments":{{}},"requestState":{}}}}}"#,
                nested_arrays(DEPTH)
            )
            .into_bytes(),
            bad_state(json!("deep-state")),
        )
    );
    push(
        "nesting 100 000: in an unknown top-level member (ignored, answered)",
        format!(
            r#"{{"jsonrpc":"2.0","id":"deep-extra","method":"tools/call","params":{{"_meta":{meta_text},"name":"echo","arguments":{{"text":"still here"}}}},"extra":{}}}"#,
            nested_arrays(DEPTH)
        )
        .into_bytes(),
        Expect::Text {
            id: json!("deep-extra"),
            text: "still here".to_owned(),
        },
    );

    // --- Huge ids.
    for id in [
        json!(i64::MAX),
        json!(i64::MIN),
        json!(0),
        json!(""),
        json!("x".repeat(1 << 20)),
        json!("é\u{1F600}\"\\\n".repeat(10_000)),
    ] {
        let label = match &id {
            Value::String(s) if s.len() > 64 => format!("string of {} bytes", s.len()),
            other => other.to_string(),
        };
        push(
            &format!("huge id: {label} is echoed"),
            bytes(&echo(id.clone(), "id kept")),
            Expect::Text {
                id,
                text: "id kept".to_owned(),
            },
        );
    }
    for (label, raw) in [
        ("i64::MAX + 1", "9223372036854775808".to_owned()),
        ("i64::MIN - 1", "-9223372036854775809".to_owned()),
        ("100 digits", "1".repeat(100)),
        ("100 000 digits", "9".repeat(100_000)),
    ] {
        push(
            &format!("huge id: {label} is out of range"),
            format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"tools/list"}}"#).into_bytes(),
            error(-32600, None, "\"id\" is out of range"),
        );
    }
    for (label, raw) in [
        ("1e400", "1e400"),
        ("1.5", "1.5"),
        ("1.0", "1.0"),
        ("-0.0", "-0.0"),
    ] {
        push(
            &format!("huge id: {label} is not an integer"),
            format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"tools/list"}}"#).into_bytes(),
            error(-32600, None, "\"id\" must be a string or an integer"),
        );
    }

    // --- Wrong types: the envelope.
    for (label, value) in [
        ("2.0 as a number", "2.0"),
        ("null", "null"),
        ("\"1.0\"", "\"1.0\""),
        ("an object", "{}"),
    ] {
        push(
            &format!("wrong type: jsonrpc {label}"),
            format!(r#"{{"jsonrpc":{value},"id":11,"method":"tools/list","params":{{"_meta":{meta_text}}}}}"#).into_bytes(),
            error(-32600, Some(json!(11)), "\"jsonrpc\" must be \"2.0\""),
        );
    }
    push(
        "wrong type: jsonrpc missing",
        format!(r#"{{"id":12,"method":"tools/list","params":{{"_meta":{meta_text}}}}}"#)
            .into_bytes(),
        error(-32600, Some(json!(12)), "missing \"jsonrpc\""),
    );
    for (label, value) in [("true", "true"), ("an object", "{}"), ("an array", "[1]")] {
        push(
            &format!("wrong type: id {label}"),
            format!(r#"{{"jsonrpc":"2.0","id":{value},"method":"tools/list","params":{{"_meta":{meta_text}}}}}"#).into_bytes(),
            error(-32600, None, "\"id\" must be a string or an integer"),
        );
    }
    push(
        "wrong type: id null",
        format!(r#"{{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{{"_meta":{meta_text}}}}}"#).into_bytes(),
        error(-32600, None, "\"id\" must not be null"),
    );
    for (label, value) in [
        ("a number", "42"),
        ("null", "null"),
        ("an object", "{}"),
        ("an array", "[\"tools/list\"]"),
        ("true", "true"),
    ] {
        push(
            &format!("wrong type: method {label}"),
            format!(
                r#"{{"jsonrpc":"2.0","id":13,"method":{value},"params":{{"_meta":{meta_text}}}}}"#
            )
            .into_bytes(),
            error(-32600, Some(json!(13)), "\"method\" must be a string"),
        );
    }
    for (label, value) in [
        ("an array", "[]"),
        ("a string", "\"x\""),
        ("a number", "1"),
        ("true", "true"),
    ] {
        push(
            &format!("wrong type: params {label}"),
            format!(r#"{{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{value}}}"#)
                .into_bytes(),
            error(-32600, Some(json!(14)), "\"params\" must be an object"),
        );
    }
    push(
        "wrong type: params null (read as absent: no _meta)",
        br#"{"jsonrpc":"2.0","id":15,"method":"tools/list","params":null}"#.to_vec(),
        error(-32602, Some(json!(15)), "params._meta"),
    );
    push(
        "wrong type: a request carrying result",
        format!(r#"{{"jsonrpc":"2.0","id":16,"method":"tools/list","params":{{"_meta":{meta_text}}},"result":{{}}}}"#).into_bytes(),
        error(-32600, Some(json!(16)), "cannot carry \"result\" or \"error\""),
    );
    for (label, value) in [
        ("a string", "\"x\""),
        ("a number", "42"),
        ("null", "null"),
        ("true", "true"),
    ] {
        push(
            &format!("wrong type: the message is {label}"),
            value.as_bytes().to_vec(),
            error(-32600, None, "expected a JSON-RPC message object"),
        );
    }
    push(
        "wrong type: a notification whose method is a number",
        br#"{"jsonrpc":"2.0","method":5}"#.to_vec(),
        error(-32600, None, "\"method\" must be a string"),
    );
    push(
        "wrong type: notifications/cancelled with an object requestId (ignored)",
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#
            .to_vec(),
        Expect::Silent,
    );

    // --- Wrong types: _meta and its envelope keys.
    for (label, value) in [
        ("a string", json!("x")),
        ("a number", json!(5)),
        ("an array", json!([])),
        ("null", Value::Null),
    ] {
        push(
            &format!("wrong type: _meta {label}"),
            bytes(
                &json!({"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"_meta":value,"name":"echo","arguments":{"text":"x"}}}),
            ),
            error(-32602, Some(json!(21)), "params._meta"),
        );
    }
    let key_cases: [(&str, &str, Value); 6] = [
        (
            "protocolVersion a number",
            "io.modelcontextprotocol/protocolVersion",
            json!(20260728),
        ),
        (
            "protocolVersion null",
            "io.modelcontextprotocol/protocolVersion",
            Value::Null,
        ),
        (
            "clientCapabilities a string",
            "io.modelcontextprotocol/clientCapabilities",
            json!("all"),
        ),
        (
            "clientCapabilities an array",
            "io.modelcontextprotocol/clientCapabilities",
            json!([]),
        ),
        (
            "clientCapabilities.elicitation a number",
            "io.modelcontextprotocol/clientCapabilities",
            json!({"elicitation": 1}),
        ),
        (
            "clientInfo a string",
            "io.modelcontextprotocol/clientInfo",
            json!("me"),
        ),
    ];
    for (label, key, value) in key_cases {
        let mut meta = meta.clone();
        meta[key] = value;
        push(
            &format!("wrong type: _meta.{label}"),
            bytes(
                &json!({"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"_meta":meta,"name":"echo","arguments":{"text":"x"}}}),
            ),
            error(-32602, Some(json!(22)), ""),
        );
    }
    for (label, key, value, named) in [
        (
            "progressToken an object",
            "progressToken",
            json!({}),
            "progressToken",
        ),
        (
            "logLevel a number",
            "io.modelcontextprotocol/logLevel",
            json!(3),
            "logLevel",
        ),
        (
            "clientInfo a string",
            "io.modelcontextprotocol/clientInfo",
            json!("me"),
            "clientInfo",
        ),
        (
            "clientCapabilities.elicitation a number",
            "io.modelcontextprotocol/clientCapabilities",
            json!({"elicitation": 1}),
            "elicitation",
        ),
    ] {
        let mut meta = meta.clone();
        meta[key] = value;
        late.push(
            Case::new(
                format!("wrong type: _meta.{label}: the message names it"),
                bytes(&json!({"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"_meta":meta,"name":"echo","arguments":{"text":"x"}}})),
                error(-32602, Some(json!(24)), named),
            )
        );
    }
    for (label, key, value) in [
        ("progressToken an object", "progressToken", json!({})),
        ("progressToken a float", "progressToken", json!(1.5)),
        (
            "logLevel a number",
            "io.modelcontextprotocol/logLevel",
            json!(3),
        ),
    ] {
        let mut meta = meta.clone();
        meta[key] = value;
        push(
            &format!("wrong type: _meta.{label}"),
            bytes(
                &json!({"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"_meta":meta,"name":"echo","arguments":{"text":"x"}}}),
            ),
            error(-32602, Some(json!(23)), ""),
        );
    }

    // --- Wrong types: the params of each method.
    let call = |id: i64, params: Value| {
        let mut params = params;
        params["_meta"] = wire::meta();
        bytes(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}))
    };
    for (label, params) in [
        ("name a number", json!({"name": 5, "arguments": {}})),
        ("name null", json!({"name": null, "arguments": {}})),
        (
            "name an object",
            json!({"name": {"n": "echo"}, "arguments": {}}),
        ),
        ("name missing", json!({"arguments": {}})),
        (
            "arguments a string",
            json!({"name": "echo", "arguments": "text=x"}),
        ),
        (
            "arguments an array",
            json!({"name": "echo", "arguments": ["x"]}),
        ),
        (
            "arguments a number",
            json!({"name": "echo", "arguments": 5}),
        ),
        (
            "inputResponses a string",
            json!({"name": MRTR_TOOL, "arguments": {}, "inputResponses": "yes"}),
        ),
        (
            "inputResponses an array",
            json!({"name": MRTR_TOOL, "arguments": {}, "inputResponses": [{"action": "accept"}]}),
        ),
        (
            "inputResponses.confirm a number",
            json!({"name": MRTR_TOOL, "arguments": {}, "inputResponses": {"confirm": 5}}),
        ),
        (
            "inputResponses.confirm without a known shape",
            json!({"name": MRTR_TOOL, "arguments": {}, "inputResponses": {"confirm": {"ok": true}}}),
        ),
    ] {
        push(
            &format!("wrong type: tools/call {label}"),
            call(31, params),
            error(-32602, Some(json!(31)), ""),
        );
    }
    for (label, state) in [
        ("a number", json!(5)),
        ("an object", json!({"s": 1})),
        ("an array", json!(["x"])),
        ("true", json!(true)),
    ] {
        push(
            &format!("wrong type: tools/call requestState {label}"),
            call(
                32,
                json!({"name": MRTR_TOOL, "arguments": {}, "requestState": state}),
            ),
            bad_state(json!(32)),
        );
    }
    for (label, state) in [
        ("not a token", "awaiting-confirmation".to_owned()),
        ("a forged v1 token", format!("v1.{}", "A".repeat(80))),
        ("1 MiB", format!("v1.{}", "A".repeat(1 << 20))),
    ] {
        push(
            &format!("wrong value: tools/call requestState {label}"),
            call(
                33,
                json!({"name": MRTR_TOOL, "arguments": {}, "requestState": state}),
            ),
            bad_state(json!(33)),
        );
    }
    push(
        "wrong value: tools/call of an unknown tool",
        call(34, json!({"name": "no-such-tool", "arguments": {}})),
        error(-32602, Some(json!(34)), "Unknown tool"),
    );
    let with_meta = |id: i64, method: &str, mut params: Value| {
        params["_meta"] = wire::meta();
        bytes(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
    };
    for (label, method, params, contains) in [
        (
            "tools/list cursor a number",
            "tools/list",
            json!({"cursor": 5}),
            "",
        ),
        (
            "tools/list cursor not ours",
            "tools/list",
            json!({"cursor": "b2Zmc2V0Ojk5OTk"}),
            "Invalid cursor",
        ),
        (
            "prompts/get name a number",
            "prompts/get",
            json!({"name": 5}),
            "",
        ),
        (
            "prompts/get an argument a number",
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": 5, "arg2": "x"}}),
            "",
        ),
        (
            "prompts/get arguments an array",
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": ["a", "b"]}),
            "",
        ),
        (
            "resources/read uri a number",
            "resources/read",
            json!({"uri": 5}),
            "",
        ),
        (
            "resources/read uri null",
            "resources/read",
            json!({"uri": null}),
            "",
        ),
        (
            "completion/complete ref a string",
            "completion/complete",
            json!({"ref": "x", "argument": {"name": "a", "value": "b"}}),
            "",
        ),
        (
            "completion/complete argument a number",
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": 5}),
            "",
        ),
    ] {
        push(
            &format!("wrong type: {label}"),
            with_meta(41, method, params),
            error(-32602, Some(json!(41)), contains),
        );
    }
    push(
        "unknown method with a valid envelope",
        with_meta(42, "tools/destroy", json!({})),
        error(-32601, Some(json!(42)), ""),
    );
    cases.extend(late);
    cases
}

/// `inputResponses` with `extra` answered questions nobody asked (`k0`, `k1`, …) besides
/// `confirm`.
pub fn many_input_responses(extra: usize, malformed_last: bool) -> Value {
    let mut responses = serde_json::Map::new();
    for n in 0..extra {
        responses.insert(
            format!("k{n}"),
            json!({"action": "accept", "content": {"n": n}}),
        );
    }
    if malformed_last {
        responses.insert(format!("k{}", extra - 1), json!(5));
    }
    responses.insert(
        "confirm".to_owned(),
        json!({"action": "accept", "content": {"ok": true}}),
    );
    Value::Object(responses)
}

/// Checks one reply against its expectation.
pub fn check(transport: &str, case: &Case, reply: &Reply) -> Result<Option<Value>, String> {
    let fail = |what: String| Err(format!("[{transport}] {}: {what}", case.name));
    let body = String::from_utf8_lossy(&reply.body);
    let shown: String = body.chars().take(400).collect();
    let expected_status = match &case.expect {
        Expect::Error { code, .. } | Expect::ErrorAnyId { code, .. } => http_status(*code),
        Expect::Exact { error, .. } => http_status(error["code"].as_i64().unwrap_or_default()),
        Expect::Text { .. } | Expect::InputRequired { .. } => 200,
        Expect::Silent => 202,
        Expect::Status(status) => *status,
    };
    if let Some(status) = reply.status
        && status != expected_status
    {
        return fail(format!(
            "HTTP status {status}, expected {expected_status}: {shown}"
        ));
    }
    match &case.expect {
        Expect::Silent => {
            return if reply.body.is_empty() {
                Ok(None)
            } else {
                fail(format!("expected no answer, got {shown}"))
            };
        }
        Expect::Status(_) => {
            return if reply.status.is_some()
                && serde_json::from_slice::<Value>(&reply.body).is_err()
            {
                Ok(None)
            } else {
                fail(format!("expected a plain refusal, got {shown}"))
            };
        }
        _ => {}
    }
    let Ok(message) = serde_json::from_slice::<Value>(&reply.body) else {
        return fail(format!("the answer is not JSON: {shown}"));
    };
    if message["jsonrpc"] != "2.0" {
        return fail(format!("no jsonrpc 2.0 in {shown}"));
    }
    let id_ok = |expected: &Option<Value>| match expected {
        None => message.get("id").is_none(),
        Some(id) => message.get("id") == Some(id),
    };
    match &case.expect {
        Expect::Error { code, id, contains } => {
            let error = &message["error"];
            if error["code"].as_i64() != Some(*code) {
                return fail(format!("expected code {code}, got {shown}"));
            }
            if !id_ok(id) {
                return fail(format!("expected id {id:?}, got {shown}"));
            }
            let text = error["message"].as_str().unwrap_or_default();
            if text.is_empty() || !text.contains(contains) {
                return fail(format!("message {text:?} lacks {contains:?}"));
            }
        }
        Expect::ErrorAnyId { code, contains } => {
            let text = message["error"]["message"].as_str().unwrap_or_default();
            if message["error"]["code"].as_i64() != Some(*code) || !text.contains(contains) {
                return fail(format!(
                    "expected code {code} and {contains:?}, got {shown}"
                ));
            }
        }
        Expect::Exact { id, error } => {
            if &message["error"] != error || !id_ok(id) {
                return fail(format!(
                    "expected exactly {error} for id {id:?}, got {shown}"
                ));
            }
        }
        Expect::Text { id, text } => {
            if message.get("id") != Some(id) {
                return fail(format!("expected id {}, got {shown}", short(id)));
            }
            if message["result"]["resultType"] != "complete"
                || message["result"]["content"][0]["text"].as_str() != Some(text)
            {
                return fail(format!("expected the text {text:?}, got {shown}"));
            }
        }
        Expect::InputRequired { id } => {
            if message.get("id") != Some(id)
                || message["result"]["resultType"] != "input_required"
                || !message["result"]["requestState"].is_string()
            {
                return fail(format!("expected an InputRequiredResult, got {shown}"));
            }
        }
        Expect::Silent | Expect::Status(_) => unreachable!(),
    }
    Ok(Some(message))
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 80 {
        let head: String = text.chars().take(80).collect();
        format!("{head}… ({} bytes)", text.len())
    } else {
        text
    }
}
