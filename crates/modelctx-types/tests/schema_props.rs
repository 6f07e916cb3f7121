//! Property tests: values the SDK serializes validate against the official schema of their
//! revision (2026-07-28 and, for the handshake-era messages, 2025-11-25).

use modelctx_types::jsonrpc::{encode_notification, encode_request, encode_result};
use modelctx_types::*;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,16}"
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_.-]{0,20}"
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::from),
            btree_map(name(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Extra> {
    btree_map(name(), json_value(), 0..4).prop_map(|m| m.into_iter().collect())
}

fn annotations() -> impl Strategy<Value = Option<Annotations>> {
    option::of(
        (
            vec(prop_oneof![Just(Role::USER), Just(Role::ASSISTANT)], 0..3),
            0.0f64..=1.0,
        )
            .prop_map(|(audience, priority)| {
                let mut annotations = Annotations::new()
                    .with_audience(audience)
                    .with_last_modified("2026-07-28T00:00:00Z");
                annotations.priority = number(priority);
                annotations
            }),
    )
}

fn resource_contents() -> impl Strategy<Value = ResourceContents> {
    prop_oneof![
        ("[a-z]+://[a-z/]{1,12}", text()).prop_map(|(uri, t)| ResourceContents::text(
            uri,
            Some("text/plain".into()),
            t
        )),
        ("[a-z]+://[a-z/]{1,12}", "[A-Za-z0-9+/]{0,12}")
            .prop_map(|(uri, b)| ResourceContents::blob(uri, None, b)),
    ]
}

fn content_block() -> impl Strategy<Value = ContentBlock> {
    prop_oneof![
        (text(), annotations()).prop_map(|(t, a)| {
            let mut block = TextContent::new(t);
            block.annotations = a;
            ContentBlock::Text(block)
        }),
        "[A-Za-z0-9+/]{0,12}".prop_map(|d| ContentBlock::image(d, "image/png")),
        "[A-Za-z0-9+/]{0,12}".prop_map(|d| ContentBlock::audio(d, "audio/wav")),
        ("[a-z]+://[a-z]{1,8}", name(), option::of(0u64..10_000)).prop_map(|(uri, n, size)| {
            let mut link = ResourceLink::new(uri, n);
            link.size = size;
            ContentBlock::ResourceLink(link)
        }),
        resource_contents().prop_map(ContentBlock::resource),
    ]
}

fn client_capabilities() -> impl Strategy<Value = ClientCapabilities> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(form, url, sampling, tools, roots)| {
            let mut caps = ClientCapabilities::new();
            if form {
                caps = caps.with_elicitation_form();
            }
            if url {
                caps = caps.with_elicitation_url();
            }
            if sampling {
                caps = caps.with_sampling();
            }
            if tools {
                caps = caps.with_sampling_tools();
            }
            if roots {
                caps = caps.with_roots();
            }
            caps
        })
}

fn request_meta() -> impl Strategy<Value = RequestMeta> {
    (
        client_capabilities(),
        option::of(name()),
        option::of(any::<i64>()),
    )
        .prop_map(|(caps, client, token)| {
            let mut meta = RequestMeta::modern(
                ProtocolVersion::V2026_07_28,
                caps,
                client.map(|n| Implementation::new(n, "1.0.0")),
            );
            meta.progress_token = token.map(RequestId::Number);
            meta
        })
}

fn primitive_schema() -> impl Strategy<Value = PrimitiveSchema> {
    prop_oneof![
        option::of(text()).prop_map(|t| {
            let mut schema = StringSchema::new().with_format(StringFormat::EMAIL);
            schema.title = t;
            PrimitiveSchema::String(schema)
        }),
        (0i64..10, 10i64..100).prop_map(|(lo, hi)| PrimitiveSchema::Number(
            NumberSchema::new(NumberType::INTEGER)
                .with_minimum(lo)
                .with_maximum(hi)
        )),
        any::<bool>().prop_map(|d| PrimitiveSchema::Boolean(BooleanSchema::new().with_default(d))),
        vec(name(), 1..4).prop_map(|values| PrimitiveSchema::UntitledSingleSelect(
            UntitledSingleSelectEnumSchema::new(values)
        )),
        vec((name(), text()), 1..4).prop_map(|opts| PrimitiveSchema::TitledMultiSelect(
            TitledMultiSelectEnumSchema::new(TitledEnumItems::new(
                opts.into_iter()
                    .map(|(value, title)| EnumOption::new(value, title))
                    .collect::<Vec<_>>()
            ))
        )),
    ]
}

fn elicit_params() -> impl Strategy<Value = ElicitRequestParams> {
    prop_oneof![
        (text(), btree_map(name(), primitive_schema(), 0..4)).prop_map(|(message, properties)| {
            let required: Vec<_> = properties.keys().take(1).cloned().collect();
            ElicitRequestFormParams::new(
                message,
                ElicitationSchema::new(properties).with_required(required),
            )
            .into()
        }),
        (text(), "https://[a-z]{1,8}\\.example/[a-z]{0,8}")
            .prop_map(|(m, url)| ElicitRequestUrlParams::new(m, url).into()),
    ]
}

fn sampling_params() -> impl Strategy<Value = CreateMessageRequestParams> {
    (vec(text(), 1..3), 1u64..4096, option::of(text())).prop_map(|(texts, max, system)| {
        let mut params = CreateMessageRequestParams::new(
            texts.into_iter().map(SamplingMessage::user_text).collect(),
            max,
        );
        params.system_prompt = system;
        params
    })
}

fn input_request() -> impl Strategy<Value = InputRequest> {
    prop_oneof![
        elicit_params().prop_map(InputRequest::elicit),
        sampling_params().prop_map(InputRequest::create_message),
        Just(InputRequest::list_roots()),
    ]
}

fn input_required_result() -> impl Strategy<Value = InputRequiredResult> {
    (
        btree_map(name(), input_request(), 0..4),
        option::of("[A-Za-z0-9._-]{1,40}"),
    )
        .prop_filter("at least one member", |(r, s)| !r.is_empty() || s.is_some())
        .prop_map(|(requests, state)| {
            let mut irr = InputRequiredResult::new();
            if !requests.is_empty() {
                irr.input_requests = Some(requests);
            }
            irr.request_state = state;
            irr
        })
}

fn input_response() -> impl Strategy<Value = InputResponse> {
    prop_oneof![
        btree_map(name(), text().prop_map(Value::from), 0..3)
            .prop_map(|c| InputResponse::elicit(&ElicitResult::accept(c.into_iter().collect()))),
        Just(InputResponse::elicit(&ElicitResult::decline())),
        (name(), text())
            .prop_map(|(m, t)| InputResponse::create_message(&CreateMessageResult::text(m, t))),
        vec("file:///[a-z]{1,10}", 0..3).prop_map(|uris| InputResponse::list_roots(
            &ListRootsResult::new(
                uris.into_iter()
                    .map(|u| Root::new(u, None))
                    .collect::<Vec<_>>()
            )
        )),
    ]
}

fn server_info_meta() -> impl Strategy<Value = Option<Meta>> {
    option::of(name().prop_map(|n| {
        let mut meta = Meta::new();
        meta.set_server_info(&Implementation::new(n, "0.1.0"));
        meta
    }))
}

fn tool() -> impl Strategy<Value = Tool> {
    (
        name(),
        option::of(text()),
        btree_map(name(), Just(json!({"type": "string"})), 0..3),
    )
        .prop_map(|(n, description, props)| {
            let mut schema = Tool::empty_input_schema();
            schema.insert(
                "properties".into(),
                Value::Object(props.into_iter().collect()),
            );
            let mut tool = Tool::new(n, schema);
            tool.description = description;
            tool
        })
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

fn bytes_value(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn validate(revision: &str, name: &str, value: &Value) -> Result<(), TestCaseError> {
    let errors = modelctx_test_support::spec::schema_errors(revision, name, value);
    prop_assert!(
        errors.is_empty(),
        "{} invalid: {:?}\n{}",
        name,
        errors,
        value
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn call_tool_request(id in any::<i64>(), meta in request_meta(), tool in name(),
                         args in option::of(json_object()),
                         responses in option::of(btree_map(name(), input_response(), 1..3)),
                         state in option::of("[A-Za-z0-9]{1,30}")) {
        let mut params = CallToolRequestParams::new(tool, args);
        params.meta = Some(Box::new(meta));
        params.input_responses = responses;
        params.request_state = state;
        let bytes = encode_request(&RequestId::Number(id), "tools/call", &params).unwrap();
        validate("2026-07-28", "CallToolRequest", &bytes_value(&bytes))?;
    }

    #[test]
    fn call_tool_result(content in vec(content_block(), 0..4), structured in option::of(json_value()),
                        error in any::<bool>(), meta in server_info_meta()) {
        let mut result = if error { CallToolResult::error("boom") } else { CallToolResult::new(content) };
        result.structured_content = structured;
        result.result_type = Some(ResultType::COMPLETE);
        result.meta = meta;
        validate("2026-07-28", "CallToolResult", &to_value(&result))?;
        let bytes = encode_result(&RequestId::from("x"), &Outcome::Complete(result)).unwrap();
        validate("2026-07-28", "CallToolResultResponse", &bytes_value(&bytes))?;
    }

    #[test]
    fn input_required(irr in input_required_result(), meta in server_info_meta()) {
        let mut irr = irr;
        irr.meta = meta;
        validate("2026-07-28", "InputRequiredResult", &to_value(&irr))?;
        let bytes = encode_result(&RequestId::Number(2), &Outcome::<GetPromptResult>::InputRequired(irr)).unwrap();
        validate("2026-07-28", "GetPromptResultResponse", &bytes_value(&bytes))?;
    }

    #[test]
    fn list_tools(tools in vec(tool(), 0..4), ttl in 0u64..1_000_000, public in any::<bool>(),
                  cursor in option::of(name())) {
        let mut result = ListToolsResult::new(tools)
            .with_ttl_ms(ttl)
            .with_cache_scope(if public { CacheScope::PUBLIC } else { CacheScope::PRIVATE })
            .with_result_type(ResultType::COMPLETE);
        result.next_cursor = cursor;
        validate("2026-07-28", "ListToolsResult", &to_value(&result))?;
    }

    #[test]
    fn discover(instructions in option::of(text()), tools in any::<bool>(), ttl in 0u64..100_000) {
        let mut capabilities = ServerCapabilities::default();
        if tools {
            capabilities.tools = Some(ToolsCapability::new().with_list_changed(true));
        }
        let mut result = DiscoverResult::new(vec![ProtocolVersion::V2026_07_28], capabilities)
            .with_ttl_ms(ttl)
            .with_cache_scope(CacheScope::PUBLIC)
            .with_result_type(ResultType::COMPLETE);
        result.instructions = instructions;
        validate("2026-07-28", "DiscoverResult", &to_value(&result))?;
    }

    #[test]
    fn read_resource(contents in vec(resource_contents(), 1..3), ttl in 0u64..10_000) {
        let result = ReadResourceResult::new(contents)
            .with_ttl_ms(ttl)
            .with_cache_scope(CacheScope::PRIVATE)
            .with_result_type(ResultType::COMPLETE);
        validate("2026-07-28", "ReadResourceResult", &to_value(&result))?;
    }

    #[test]
    fn notifications(token in any::<i64>(), progress in 0.0f64..1e6, level_data in json_value(),
                     sub in name()) {
        let params = ProgressNotificationParams::new(RequestId::Number(token), progress, Some(1e6), None);
        let bytes = encode_notification("notifications/progress", Some(&params)).unwrap();
        validate("2026-07-28", "ProgressNotification", &bytes_value(&bytes))?;
        let params = LoggingMessageNotificationParams::new(LoggingLevel::Warning, Some("db".into()), level_data);
        let bytes = encode_notification("notifications/message", Some(&params)).unwrap();
        validate("2026-07-28", "LoggingMessageNotification", &bytes_value(&bytes))?;
        let params = NotificationParams::new().with_meta(Meta::for_subscription(&RequestId::from(sub)));
        let bytes = encode_notification("notifications/tools/list_changed", Some(&params)).unwrap();
        validate("2026-07-28", "ToolListChangedNotification", &bytes_value(&bytes))?;
    }

    #[test]
    fn answers(response in input_response()) {
        let kind = response.kind().unwrap();
        let def = match kind {
            InputResponseKind::Elicit => "ElicitResult",
            InputResponseKind::CreateMessage => "CreateMessageResult",
            InputResponseKind::ListRoots => "ListRootsResult",
            other => panic!("no schema for {other:?}"),
        };
        validate("2026-07-28", def, &response.0)?;
    }

    // --- the handshake era (2025-11-25) ---

    #[test]
    fn handshake_initialize(caps in client_capabilities(), client in name(), instructions in option::of(text())) {
        let params = InitializeRequestParams::new(ProtocolVersion::V2025_11_25, caps, Implementation::new(client, "1.0"));
        let bytes = encode_request(&RequestId::Number(1), "initialize", &params).unwrap();
        validate("2025-11-25", "InitializeRequest", &bytes_value(&bytes))?;
        let mut result = InitializeResult::new(ProtocolVersion::V2025_11_25, ServerCapabilities::default(), Implementation::new("srv", "1"));
        result.instructions = instructions;
        validate("2025-11-25", "InitializeResult", &to_value(&result))?;
    }

    #[test]
    fn handshake_back_channel(id in any::<i64>(), elicit in elicit_params(), sampling in sampling_params()) {
        // The 2025-11-25 URL mode requires an elicitationId.
        let elicit = match elicit {
            ElicitRequestParams::Url(mut url) => {
                url.elicitation_id = Some("e-1".into());
                ElicitRequestParams::Url(url)
            }
            other => other,
        };
        let bytes = encode_request(&RequestId::Number(id), "elicitation/create", &elicit).unwrap();
        validate("2025-11-25", "ElicitRequest", &bytes_value(&bytes))?;
        let bytes = encode_request(&RequestId::Number(id), "sampling/createMessage", &sampling).unwrap();
        validate("2025-11-25", "CreateMessageRequest", &bytes_value(&bytes))?;
        let bytes = encode_request(&RequestId::Number(id), "roots/list", &RootsListParams::default()).unwrap();
        validate("2025-11-25", "ListRootsRequest", &bytes_value(&bytes))?;
    }

    #[test]
    fn handshake_results(content in vec(content_block(), 0..3), response in input_response()) {
        // Handshake-era results carry no resultType.
        let result = CallToolResult::new(content);
        validate("2025-11-25", "CallToolResult", &to_value(&result))?;
        let def = match response.kind().unwrap() {
            InputResponseKind::Elicit => "ElicitResult",
            InputResponseKind::CreateMessage => "CreateMessageResult",
            InputResponseKind::ListRoots => "ListRootsResult",
            other => panic!("no schema for {other:?}"),
        };
        validate("2025-11-25", def, &response.0)?;
        validate("2025-11-25", "EmptyResult", &to_value(&EmptyResult::default()))?;
        let set_level = SetLevelRequestParams::new(LoggingLevel::Info);
        let bytes = encode_request(&RequestId::Number(1), "logging/setLevel", &set_level).unwrap();
        validate("2025-11-25", "SetLevelRequest", &bytes_value(&bytes))?;
    }
}

/// Guards the properties above against passing vacuously: the validators do reject.
#[test]
fn the_schema_checks_reject_invalid_values() {
    // 2026-07-28 requires resultType on every result; the handshake era has none.
    let result = to_value(&CallToolResult::text("x"));
    assert!(
        !modelctx_test_support::spec::schema_errors("2026-07-28", "CallToolResult", &result)
            .is_empty()
    );
    assert!(
        modelctx_test_support::spec::schema_errors("2025-11-25", "CallToolResult", &result)
            .is_empty()
    );
    let irr =
        json!({"resultType": "input_required", "inputRequests": {"k": {"method": "tools/list"}}});
    assert!(
        !modelctx_test_support::spec::schema_errors("2026-07-28", "InputRequiredResult", &irr)
            .is_empty()
    );
}
