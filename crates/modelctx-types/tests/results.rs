//! Phase two for results: discrimination by `resultType`.

use modelctx_types::methods::{CallTool, GetPrompt, ListTools};
use modelctx_types::*;
use serde_json::value::RawValue;

fn raw(text: &str) -> Box<RawValue> {
    serde_json::from_str(text).unwrap()
}

#[test]
fn input_required_decodes_to_input_required_result() {
    let r = raw(
        r#"{"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create",
        "params":{"mode":"form","message":"What is your name?","requestedSchema":{"type":"object",
        "properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"abc"}"#,
    );
    let Outcome::InputRequired(irr) = decode_result::<CallTool>(&r, &ResultTypes::core()).unwrap()
    else {
        panic!("expected InputRequired")
    };
    assert_eq!(irr.request_state.as_deref(), Some("abc"));
    let requests = irr.input_requests.unwrap();
    let InputRequest::Elicit(elicit) = &requests["user_name"] else {
        panic!()
    };
    assert_eq!(elicit.params.message(), "What is your name?");
}

#[test]
fn absent_and_complete_result_types_decode_as_complete() {
    for text in [
        r#"{"content":[{"type":"text","text":"hi"}]}"#,
        r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}]}"#,
    ] {
        let outcome = decode_result::<CallTool>(&raw(text), &ResultTypes::core()).unwrap();
        let Outcome::Complete(result) = outcome else {
            panic!("expected complete for {text}")
        };
        assert_eq!(result.first_text(), Some("hi"));
    }
}

#[test]
fn unknown_result_type_is_an_error_unless_registered() {
    let r = raw(r#"{"resultType":"task","taskId":"t1","status":"working"}"#);
    let err = decode_result::<CallTool>(&r, &ResultTypes::core()).unwrap_err();
    assert!(
        matches!(err, ResultDecodeError::UnknownResultType(ref v) if v == "task"),
        "{err}"
    );

    let accepted = ResultTypes::core().with(ResultType::TASK);
    let Outcome::Extension(ext) = decode_result::<CallTool>(&r, &accepted).unwrap() else {
        panic!()
    };
    assert_eq!(ext.result_type, ResultType::TASK);

    let err = decode_result::<ListTools>(&raw(r#"{"resultType":"weird","tools":[]}"#), &accepted)
        .unwrap_err();
    assert!(matches!(err, ResultDecodeError::UnknownResultType(_)));
}

#[test]
fn call_tool_result_with_meta_is_never_an_input_required_result() {
    // The shape rmcp once misread (issue #1094): a complete result carrying `_meta` and members
    // that look like an InputRequiredResult's.
    let r = raw(
        r#"{"resultType":"complete","content":[{"type":"text","text":"done"}],
        "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},
        "requestState":"looks-like-state"}"#,
    );
    let Outcome::Complete(result) = decode_result::<CallTool>(&r, &ResultTypes::core()).unwrap()
    else {
        panic!("a complete result must stay complete")
    };
    assert_eq!(result.meta.unwrap().server_info().unwrap().name, "s");
    assert_eq!(result.extra["requestState"], "looks-like-state");

    // And an InputRequiredResult carrying _meta stays one.
    let r = raw(r#"{"resultType":"input_required","requestState":"s","_meta":{"x":1}}"#);
    assert!(matches!(
        decode_result::<CallTool>(&r, &ResultTypes::core()).unwrap(),
        Outcome::InputRequired(_)
    ));
}

#[test]
fn nested_input_request_with_unknown_method_is_an_error() {
    let r = raw(
        r#"{"resultType":"input_required","inputRequests":{"k":{"method":"tools/list","params":{}}}}"#,
    );
    let err = decode_result::<CallTool>(&r, &ResultTypes::core()).unwrap_err();
    assert!(
        err.to_string().contains("unknown InputRequest `method`"),
        "{err}"
    );
}

#[test]
fn input_required_needs_requests_or_state() {
    let r = raw(r#"{"resultType":"input_required"}"#);
    assert!(matches!(
        decode_result::<CallTool>(&r, &ResultTypes::core()),
        Err(ResultDecodeError::EmptyInputRequired)
    ));
    let state_only = raw(r#"{"resultType":"input_required","requestState":"1"}"#);
    assert!(decode_result::<GetPrompt>(&state_only, &ResultTypes::core()).is_ok());
}

#[test]
fn input_required_on_other_methods_is_an_error() {
    let r = raw(r#"{"resultType":"input_required","requestState":"1"}"#);
    let err = decode_result::<ListTools>(&r, &ResultTypes::core()).unwrap_err();
    assert!(matches!(
        err,
        ResultDecodeError::InputRequiredNotAllowed("tools/list")
    ));
}

#[test]
fn input_responses_are_read_against_the_question() {
    let question = InputRequest::elicit(ElicitRequestFormParams::new(
        "Region?",
        ElicitationSchema::default(),
    ));
    let answer: InputResponse =
        serde_json::from_str(r#"{"action":"accept","content":{"region":"eu-west-1"}}"#).unwrap();
    assert_eq!(answer.kind(), Some(InputResponseKind::Elicit));
    let InputAnswer::Elicit(result) = answer.read_for(&question).unwrap() else {
        panic!()
    };
    assert_eq!(result.action, ElicitAction::Accept);

    let wrong: InputResponse = serde_json::from_str("12345").unwrap();
    assert_eq!(wrong.kind(), None);
    assert!(wrong.read_for(&question).is_err());

    let roots: InputResponse = serde_json::from_str(r#"{"roots":[{"uri":"file:///x"}]}"#).unwrap();
    assert!(
        roots.read_for(&question).is_err(),
        "a roots answer does not answer an elicitation"
    );
    assert!(roots.read_for(&InputRequest::list_roots()).is_ok());
}

#[test]
fn accepted_is_the_content_of_an_accepted_elicitation_only() {
    let response = |text: &str| serde_json::from_str::<InputResponse>(text).unwrap();
    let accepted = response(r#"{"action":"accept","content":{"region":"eu-west-1"}}"#);
    assert_eq!(
        accepted.accepted().unwrap().get("region"),
        Some(&serde_json::json!("eu-west-1"))
    );
    assert_eq!(
        response(r#"{"action":"accept"}"#).accepted(),
        Some(Extra::new())
    );
    assert_eq!(response(r#"{"action":"decline"}"#).accepted(), None);
    assert_eq!(response(r#"{"action":"cancel"}"#).accepted(), None);
    assert_eq!(response(r#"{"roots":[]}"#).accepted(), None);
    assert_eq!(response("12345").accepted(), None);
}

#[test]
fn unknown_members_and_open_values_survive() {
    let text = r#"{"role":"moderator","content":{"type":"text","text":"x","future":true},
        "model":"m","stopReason":"contentFilter","vendor":{"a":1}}"#;
    let result: CreateMessageResult = serde_json::from_str(text).unwrap();
    assert_eq!(result.role, "moderator");
    assert!(!result.role.is_known());
    assert_eq!(result.stop_reason.as_ref().unwrap(), "contentFilter");
    let back = serde_json::to_value(&result).unwrap();
    let original: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(back, original);
}

#[test]
fn unknown_content_blocks_are_kept() {
    let block: ContentBlock = serde_json::from_str(r#"{"type":"hologram","data":"…"}"#).unwrap();
    assert!(matches!(block, ContentBlock::Unknown(_)));
    assert_eq!(block.tag(), "hologram");
}

#[test]
fn elicitation_primitives_are_classified_explicitly() {
    let schema: ElicitationSchema = serde_json::from_str(
        r#"{"type":"object","properties":{
            "s":{"type":"string","format":"email"},
            "n":{"type":"integer","minimum":1},
            "b":{"type":"boolean","default":true},
            "u":{"type":"string","enum":["a","b"]},
            "t":{"type":"string","oneOf":[{"const":"a","title":"A"}]},
            "l":{"type":"string","enum":["a"],"enumNames":["A"]},
            "um":{"type":"array","items":{"type":"string","enum":["a"]}},
            "tm":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}"#,
    )
    .unwrap();
    let p = &schema.properties;
    assert!(matches!(p["s"], PrimitiveSchema::String(_)));
    assert!(matches!(p["n"], PrimitiveSchema::Number(_)));
    assert!(matches!(p["b"], PrimitiveSchema::Boolean(_)));
    assert!(matches!(p["u"], PrimitiveSchema::UntitledSingleSelect(_)));
    assert!(matches!(p["t"], PrimitiveSchema::TitledSingleSelect(_)));
    assert!(matches!(p["l"], PrimitiveSchema::LegacyTitledEnum(_)));
    assert!(matches!(p["um"], PrimitiveSchema::UntitledMultiSelect(_)));
    assert!(matches!(p["tm"], PrimitiveSchema::TitledMultiSelect(_)));
}

#[test]
fn wrong_discriminator_is_rejected() {
    let err = serde_json::from_str::<TextContent>(r#"{"type":"image","text":"x"}"#).unwrap_err();
    assert!(err.to_string().contains("\"text\" as type"), "{err}");
}

#[test]
fn elicitation_mode_defaults_to_form() {
    let params: ElicitRequestParams = serde_json::from_str(
        r#"{"message":"m","requestedSchema":{"type":"object","properties":{}}}"#,
    )
    .unwrap();
    assert!(matches!(params, ElicitRequestParams::Form(_)));
    let params: ElicitRequestParams =
        serde_json::from_str(r#"{"mode":"url","message":"m","url":"https://x"}"#).unwrap();
    assert!(matches!(params, ElicitRequestParams::Url(_)));
    assert!(
        serde_json::from_str::<ElicitRequestParams>(r#"{"mode":"carrier-pigeon","message":"m"}"#)
            .is_err()
    );
}

#[test]
fn client_capabilities_checks() {
    let caps: ClientCapabilities = serde_json::from_str(r#"{"elicitation":{}}"#).unwrap();
    assert!(caps.elicitation_form());
    assert!(!caps.elicitation_url());
    let caps: ClientCapabilities = serde_json::from_str(r#"{"elicitation":{"url":{}}}"#).unwrap();
    assert!(!caps.elicitation_form());
    assert!(caps.elicitation_url());
    let caps: ClientCapabilities =
        serde_json::from_str(r#"{"sampling":{},"roots":{"listChanged":true}}"#).unwrap();
    assert!(caps.sampling() && !caps.sampling_tools() && caps.roots());
    let required = ClientCapabilities::new().with_elicitation_form();
    assert!(!caps.satisfies(&required));
    assert!(
        ClientCapabilities::new()
            .with_elicitation_form()
            .satisfies(&required)
    );
    let required = ClientCapabilities::new().with_sampling();
    assert!(caps.satisfies(&required));
    assert_eq!(
        serde_json::to_string(&required).unwrap(),
        r#"{"sampling":{}}"#
    );
}

#[test]
fn typed_error_data() {
    let e = ErrorObject::unsupported_protocol_version(&[ProtocolVersion::V2026_07_28], "v999.0.0");
    assert_eq!(
        e.supported_versions().unwrap(),
        vec![ProtocolVersion::V2026_07_28]
    );
    assert_eq!(e.data.as_ref().unwrap()["requested"], "v999.0.0");
    let e = ErrorObject::missing_required_client_capability(
        "needs sampling",
        &ClientCapabilities::new().with_sampling(),
    );
    assert!(e.required_capabilities().unwrap().sampling());
    let e = ErrorObject::resource_not_found("file:///nope");
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(e.data.unwrap()["uri"], "file:///nope");
}

#[test]
fn meta_reserved_keys() {
    use modelctx_types::meta::is_reserved_key;
    assert!(is_reserved_key("io.modelcontextprotocol/serverInfo"));
    assert!(is_reserved_key("dev.mcp/x"));
    assert!(!is_reserved_key("com.example/x"));
    assert!(!is_reserved_key("traceparent"));

    let mut meta = Meta::new();
    let info: std::sync::Arc<RawValue> =
        serde_json::value::to_raw_value(&Implementation::new("srv", "1.0"))
            .unwrap()
            .into();
    meta.set_server_info_raw(info);
    assert_eq!(meta.server_info().unwrap().name, "srv");
    assert_eq!(
        serde_json::to_string(&meta).unwrap(),
        r#"{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}"#
    );
}
