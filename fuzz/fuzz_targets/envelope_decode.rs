//! Envelope decoding and the typed second phase must never panic on any input, whatever decodes
//! must be UTF-8 (JSON text is, also inside members nobody reads), and whatever decodes must
//! re-encode to something that decodes the same way.

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx_types::jsonrpc::{MessageRef, encode_error, encode_request, encode_result};
use modelctx_types::methods::{CallTool, GetPrompt, ListTools, ReadResource};
use modelctx_types::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, InitializeRequestParams,
    ReadResourceRequestParams, ResultTypes, SubscriptionsListenRequestParams, decode_result,
};

fuzz_target!(|data: &[u8]| {
    let Ok(message) = MessageRef::decode_slice(data) else {
        return;
    };
    assert!(std::str::from_utf8(data).is_ok(), "decoded invalid UTF-8");
    match message {
        MessageRef::Request(request) => {
            let method = request.method.to_string();
            let reencoded = match method.as_str() {
                "tools/call" => request
                    .params_as::<CallToolRequestParams>()
                    .ok()
                    .map(|p| encode_request(&request.id, &method, &p)),
                "prompts/get" => request
                    .params_as::<GetPromptRequestParams>()
                    .ok()
                    .map(|p| encode_request(&request.id, &method, &p)),
                "resources/read" => request
                    .params_as::<ReadResourceRequestParams>()
                    .ok()
                    .map(|p| encode_request(&request.id, &method, &p)),
                "completion/complete" => request
                    .params_as::<CompleteRequestParams>()
                    .ok()
                    .map(|p| encode_request(&request.id, &method, &p)),
                "subscriptions/listen" => request
                    .params_as::<SubscriptionsListenRequestParams>()
                    .ok()
                    .map(|p| encode_request(&request.id, &method, &p)),
                "initialize" => request
                    .params_as::<InitializeRequestParams>()
                    .ok()
                    .map(|p| encode_request(&request.id, &method, &p)),
                _ => None,
            };
            if let Some(Ok(bytes)) = reencoded {
                let again = MessageRef::decode_slice(&bytes).expect("what we encode decodes");
                let MessageRef::Request(again) = again else {
                    panic!("a request re-decodes as a request")
                };
                assert_eq!(again.id, request.id);
                assert_eq!(again.method, request.method);
            }
        }
        MessageRef::Response(response) => match response.payload {
            Ok(raw) => {
                let accepted = ResultTypes::core();
                for outcome in [
                    decode_result::<CallTool>(raw, &accepted)
                        .ok()
                        .map(|o| encode_result(&modelctx_types::RequestId::Number(1), &o)),
                    decode_result::<GetPrompt>(raw, &accepted)
                        .ok()
                        .map(|o| encode_result(&modelctx_types::RequestId::Number(1), &o)),
                    decode_result::<ReadResource>(raw, &accepted)
                        .ok()
                        .map(|o| encode_result(&modelctx_types::RequestId::Number(1), &o)),
                    decode_result::<ListTools>(raw, &accepted)
                        .ok()
                        .map(|o| encode_result(&modelctx_types::RequestId::Number(1), &o)),
                ]
                .into_iter()
                .flatten()
                {
                    let bytes = outcome.expect("a decoded result encodes");
                    assert!(
                        MessageRef::decode_slice(&bytes).is_ok(),
                        "what we encode decodes"
                    );
                }
            }
            Err(error) => {
                let bytes = encode_error(response.id.as_ref(), &error);
                assert!(MessageRef::decode_slice(&bytes).is_ok());
            }
        },
        MessageRef::Notification(_) => {}
    }
});
