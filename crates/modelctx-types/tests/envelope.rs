//! Phase one: the JSON-RPC envelope, including every way it can be malformed.

use modelctx_types::jsonrpc::{self, DecodeErrorKind, Message, MessageRef, ResponsePayload};
use modelctx_types::{ErrorCode, ErrorObject, RequestId};

fn decode_err(text: &str) -> modelctx_types::DecodeError {
    MessageRef::decode(text).expect_err("must not decode")
}

#[test]
fn classifies_requests_notifications_and_responses() {
    let MessageRef::Request(r) =
        MessageRef::decode(r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{}}"#)
            .unwrap()
    else {
        panic!()
    };
    assert_eq!(r.id, RequestId::from("a-1"));
    assert_eq!(r.method, "tools/list");
    assert_eq!(r.params.unwrap().get(), "{}");

    let MessageRef::Notification(n) =
        MessageRef::decode(r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#).unwrap()
    else {
        panic!()
    };
    assert_eq!(n.method, "notifications/cancelled");
    assert!(n.params.is_none());

    let MessageRef::Response(ok) =
        MessageRef::decode(r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}"#)
            .unwrap()
    else {
        panic!()
    };
    assert_eq!(ok.id, Some(RequestId::Number(7)));
    assert_eq!(ok.payload.unwrap().get(), r#"{"resultType":"complete"}"#);

    let MessageRef::Response(err) = MessageRef::decode(
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(err.payload.unwrap_err().code, ErrorCode::METHOD_NOT_FOUND);
}

#[test]
fn method_with_escapes_and_unknown_members() {
    let MessageRef::Request(r) = MessageRef::decode(
        r#"{"extra":1,"method":"tools\/call","id":-3,"jsonrpc":"2.0","params":null}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(r.method, "tools/call");
    assert_eq!(r.id, RequestId::Number(-3));
    assert!(r.params.is_none(), "null params read as absent");
}

#[test]
fn not_json_is_a_parse_error_without_id() {
    for text in [
        "not json",
        r#"{"jsonrpc":"2.0","id":1,"method":"x""#,
        "",
        "{\"a\":1}}",
    ] {
        let err = decode_err(text);
        assert_eq!(err.kind(), DecodeErrorKind::Parse, "{text:?}");
        assert_eq!(err.code(), ErrorCode::PARSE_ERROR);
        assert_eq!(err.id(), None);
    }
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}";
    let err = MessageRef::decode_slice(bytes).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PARSE_ERROR);
    // Also where serde would not look: inside a member nobody reads.
    let bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"note\":\"\xff\"}";
    let err = MessageRef::decode_slice(bytes).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PARSE_ERROR);
    assert!(
        err.to_string().contains("invalid UTF-8 at byte 48"),
        "{err}"
    );
}

#[test]
fn wrong_jsonrpc_version_keeps_the_id() {
    let err = decode_err(r#"{"jsonrpc":"1.0","id":5,"method":"tools/list"}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::Number(5)));
    assert!(
        err.to_string().contains("\"jsonrpc\" must be \"2.0\""),
        "{err}"
    );

    let err = decode_err(r#"{"jsonrpc":2.0,"id":"x","method":"tools/list"}"#);
    assert_eq!(err.id(), Some(&RequestId::from("x")));

    let err = decode_err(r#"{"id":"y","method":"tools/list"}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::from("y")));
}

#[test]
fn missing_method_keeps_the_id() {
    let err = decode_err(r#"{"jsonrpc":"2.0","id":9,"params":{}}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::Number(9)));
}

#[test]
fn ids_of_the_wrong_type_are_invalid_requests() {
    for id in ["1.5", "true", "{}", "[1]", "1e3"] {
        let err = decode_err(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"}}"#));
        assert_eq!(err.code(), ErrorCode::INVALID_REQUEST, "{id}");
        assert_eq!(err.id(), None, "{id}");
    }
    let err = decode_err(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    let err = decode_err(r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"x"}"#);
    assert!(err.to_string().contains("out of range"), "{err}");
}

#[test]
fn method_of_the_wrong_type_keeps_the_id() {
    let err = decode_err(r#"{"jsonrpc":"2.0","id":3,"method":42}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::Number(3)));
}

#[test]
fn params_must_be_an_object() {
    let err = decode_err(r#"{"jsonrpc":"2.0","id":4,"method":"x","params":[1,2]}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::Number(4)));
}

#[test]
fn batches_and_scalars_are_invalid_requests() {
    let err = decode_err(r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert!(err.to_string().contains("batch"));
    assert_eq!(decode_err("42").code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(decode_err("\"x\"").code(), ErrorCode::INVALID_REQUEST);
}

#[test]
fn duplicate_members_are_invalid_and_keep_the_id() {
    let err = decode_err(r#"{"jsonrpc":"2.0","id":8,"method":"a","method":"b"}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::Number(8)));
}

#[test]
fn responses_need_exactly_one_payload() {
    let err =
        decode_err(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(err.id(), Some(&RequestId::Number(1)));
    let err = decode_err(r#"{"jsonrpc":"2.0","result":{}}"#);
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
    let err = decode_err(r#"{"jsonrpc":"2.0","id":2,"error":{"message":"no code"}}"#);
    assert_eq!(err.id(), Some(&RequestId::Number(2)));
}

#[test]
fn error_responses_may_lack_an_id() {
    let Message::Response(r) =
        Message::decode(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}"#)
            .unwrap()
    else {
        panic!()
    };
    assert_eq!(r.id, None);
    assert!(matches!(r.payload, ResponsePayload::Error(e) if e.code == ErrorCode::PARSE_ERROR));
}

#[test]
fn encoders_write_valid_envelopes() {
    let id = RequestId::from("r-1");
    let out = jsonrpc::encode_request(&id, "tools/list", &serde_json::json!({})).unwrap();
    assert_eq!(
        out,
        br#"{"jsonrpc":"2.0","id":"r-1","method":"tools/list","params":{}}"#
    );

    let out = jsonrpc::encode_error(
        None,
        &ErrorObject::new(ErrorCode::PARSE_ERROR, "Parse error"),
    );
    assert_eq!(
        out,
        br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#
    );

    let out = jsonrpc::encode_notification::<()>("notifications/initialized", None).unwrap();
    assert_eq!(
        out,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
    );

    let out = jsonrpc::encode_result(&RequestId::Number(3), &serde_json::json!({"a":1})).unwrap();
    let Message::Response(r) = Message::decode_slice(&out).unwrap() else {
        panic!()
    };
    assert_eq!(r.id, Some(RequestId::Number(3)));
}

#[test]
fn decode_error_converts_to_error_object() {
    let err = decode_err("{");
    let obj = err.to_error_object();
    assert_eq!(obj.code, ErrorCode::PARSE_ERROR);
    assert!(obj.message.starts_with("Parse error"));
}

#[test]
fn a_member_that_does_not_decode_is_named_with_its_path() {
    let text = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":1}},"name":"echo"}"#;
    let error = serde_json::from_str::<modelctx_types::CallToolRequestParams>(text).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with(
            "_meta: io.modelcontextprotocol/clientCapabilities: elicitation: invalid type: integer `1`"
        ),
        "{message}"
    );
    // The position is given once, for the whole path.
    assert_eq!(message.matches(" at line ").count(), 1, "{message}");
}
