//! The single pass (`MessageRef::decode_with`): typed params in the envelope's pass when
//! `method` comes first, and exactly the two phases' result and errors for everything else.

use modelctx_types::jsonrpc::{Decoded, MessageRef, MethodSeed};
use modelctx_types::methods::CallTool;
use modelctx_types::{CallToolRequestParams, RequestId};

/// The seed the server's router delegates `tools/call` to.
const CALL_TOOL: MethodSeed<CallTool> = MethodSeed::new();

const PARAMS: &str = r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;

/// Decodes `text` both ways and checks that they agree; returns whether the single pass typed
/// the params.
fn agrees(text: &str) -> bool {
    agrees_slice(text.as_bytes())
}

fn agrees_slice(bytes: &[u8]) -> bool {
    let two_phases = MessageRef::decode_slice(bytes);
    match (MessageRef::decode_slice_with(bytes, &CALL_TOOL), two_phases) {
        (Err(one), Err(two)) => {
            assert_eq!(one, two, "{}", String::from_utf8_lossy(bytes));
            false
        }
        (Ok(Decoded::Raw(one)), Ok(two)) => {
            assert_eq!(format!("{one:?}"), format!("{two:?}"));
            false
        }
        (Ok(Decoded::Typed(one)), Ok(MessageRef::Request(two))) => {
            assert_eq!(one.id, two.id);
            assert_eq!(one.method, two.method);
            assert_eq!(Some(one.params_text), two.params.map(|raw| raw.get()));
            let typed = two.params_as::<CallToolRequestParams>().unwrap();
            assert_eq!(
                serde_json::to_value(&one.params).unwrap(),
                serde_json::to_value(&typed).unwrap()
            );
            true
        }
        (one, two) => panic!("single pass {one:?}, two phases {two:?}"),
    }
}

#[test]
fn typed_in_one_pass_when_method_comes_first() {
    let text = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{PARAMS}}}"#);
    let Decoded::Typed(request) = MessageRef::decode_with(&text, &CALL_TOOL).unwrap() else {
        panic!("not typed")
    };
    assert_eq!(request.id, RequestId::Number(7));
    assert_eq!(request.params.name, "echo");
    assert_eq!(request.params_text, PARAMS);
    assert!(agrees(&text));
    // Whitespace, sorted keys (Python), an escaped key, unknown members before params.
    assert!(agrees(&format!(
        " {{ \"jsonrpc\" : \"2.0\" ,\n\"id\":\"a\", \"method\":\"tools/call\" ,\t\"params\" :\r{PARAMS} }} \n"
    )));
    assert!(agrees(&format!(
        r#"{{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{PARAMS}}}"#
    )));
    assert!(agrees(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","x\"y":[1,{{}}],"par\u0061ms":{PARAMS}}}"#
    )));
}

#[test]
fn two_phases_when_params_come_first_or_are_not_last() {
    assert!(!agrees(&format!(
        r#"{{"jsonrpc":"2.0","params":{PARAMS},"id":1,"method":"tools/call"}}"#
    )));
    assert!(!agrees(&format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{PARAMS},"id":1}}"#
    )));
    assert!(!agrees(&format!(
        r#"{{"method":"tools/call","params":{PARAMS},"jsonrpc":"2.0","id":1}}"#
    )));
}

/// Every malformed input gets the two phases' error (code, message, kept id), in both orders.
#[test]
fn malformed_input_is_decoded_exactly_as_in_two_phases() {
    let bad_params = [
        r#"{"name":5}"#,
        r#"{"arguments":{"text":"hi"}}"#,
        r#"{"name":"echo","arguments":[1]}"#,
        r#"{"name":"echo","name":"echo"}"#,
        "[1,2]",
        r#""text""#,
        "7",
        "null",
        "{}",
    ];
    for params in bad_params {
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":3,"params":{params},"method":"tools/call"}}"#),
        ] {
            agrees(&text);
        }
    }
    let members = [
        // unknown method, missing method, a method that is not a string
        r#""method":"tools/unknown""#.to_owned(),
        String::new(),
        r#""method":5"#.to_owned(),
        // duplicates: method, params (typed first), id
        r#""method":"tools/call","method":"tools/call""#.to_owned(),
        format!(r#""method":"tools/call","params":{PARAMS}"#),
        r#""method":"tools/call","id":4"#.to_owned(),
        // a request cannot carry a result
        r#""method":"tools/call","result":{}"#.to_owned(),
    ];
    for member in &members {
        let separator = if member.is_empty() { "" } else { "," };
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":3{separator}{member},"params":{PARAMS}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":3,"params":{PARAMS}{separator}{member}}}"#),
        ] {
            agrees(&text);
        }
    }
    // The envelope itself: id null, a notification, no jsonrpc, a wrong jsonrpc, a float id.
    for head in [
        r#""jsonrpc":"2.0","id":null"#,
        r#""jsonrpc":"2.0""#,
        r#""id":3"#,
        r#""jsonrpc":"1.0","id":3"#,
        r#""jsonrpc":"2.0","id":3.5"#,
        r#""jsonrpc":"2.0","id":"\ud800""#,
    ] {
        agrees(&format!(
            r#"{{{head},"method":"tools/call","params":{PARAMS}}}"#
        ));
        agrees(&format!(
            r#"{{{head},"params":{PARAMS},"method":"tools/call"}}"#
        ));
    }
}

#[test]
fn not_json_and_invalid_utf8_are_parse_errors_as_before() {
    let full = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{PARAMS}}}"#);
    for cut in [1, 10, 40, full.len() - 1] {
        agrees(&full[..cut]);
    }
    agrees(&format!("{full} x"));
    agrees(&format!("{full}}}"));
    agrees(&format!("[{full}]"));
    agrees("");
    agrees("null");
    let mut bytes = full.clone().into_bytes();
    let at = full.find("hi").unwrap();
    bytes[at] = 0xff;
    agrees_slice(&bytes);
    // Invalid UTF-8 inside a member the envelope skips.
    let mut bytes =
        format!(r#"{{"jsonrpc":"2.0","id":3,"x":"é","method":"tools/call","params":{PARAMS}}}"#)
            .into_bytes();
    let at = bytes.iter().position(|&b| b == 0xc3).unwrap();
    bytes[at] = 0xc0;
    agrees_slice(&bytes);
}

#[test]
fn huge_and_deep_params_agree() {
    let text = "x".repeat(1 << 20);
    assert!(agrees(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
    )));
    // Nesting near serde_json's recursion limit: the params are one level deeper in the
    // envelope than on their own.
    for depth in [120, 126, 127, 128, 200] {
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        agrees(&format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{deep}}}}}}}"#
        ));
    }
}
