//! Decode + encode cost of the two hottest messages: a `tools/call` request (server side) and an
//! `InputRequiredResult` response (client side).

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use modelctx_types::jsonrpc::{MessageRef, encode_request, encode_result};
use modelctx_types::methods::CallTool;
use modelctx_types::{CallToolRequestParams, Outcome, ResultTypes, decode_result};

const TOOLS_CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{}}}}}"#;

const INPUT_REQUIRED: &str = r#"{"jsonrpc":"2.0","id":42,"result":{"inputRequests":{"region":{"method":"elicitation/create","params":{"message":"Which region should the database live in?","mode":"form","requestedSchema":{"properties":{"region":{"type":"string"}},"required":["region"],"type":"object"}}}},"requestState":"v1.HQIIGw2zqwrgMcJt3B6VaSWMJCLN7ABdWY0Xbhm7BG7m5zca5UNG54DkgxPNkv91nPu4ZGOS59CF6muYpsIPNtqDwXOYUxdLoFfvLunMpAqKNROAZOMkgjShsoJ1oZ6heX3iPNij3mgIbHivyfMKJ103EgzRg","resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"Provisioner","version":"0.0.1"}}}}"#;

fn tools_call(c: &mut Criterion) {
    c.bench_function("tools/call request: decode envelope + params", |b| {
        b.iter(|| {
            let MessageRef::Request(request) = MessageRef::decode(black_box(TOOLS_CALL)).unwrap()
            else {
                unreachable!()
            };
            let params: CallToolRequestParams = request.params_as().unwrap();
            black_box((request.id, params))
        });
    });
    let MessageRef::Request(request) = MessageRef::decode(TOOLS_CALL).unwrap() else {
        unreachable!()
    };
    let params: CallToolRequestParams = request.params_as().unwrap();
    c.bench_function("tools/call request: encode", |b| {
        b.iter(|| {
            encode_request(black_box(&request.id), "tools/call", black_box(&params)).unwrap()
        });
    });
}

fn input_required(c: &mut Criterion) {
    let accepted = ResultTypes::core();
    c.bench_function(
        "InputRequiredResult response: decode envelope + result",
        |b| {
            b.iter(|| {
                let MessageRef::Response(response) =
                    MessageRef::decode(black_box(INPUT_REQUIRED)).unwrap()
                else {
                    unreachable!()
                };
                black_box(decode_result::<CallTool>(response.payload.unwrap(), &accepted).unwrap())
            });
        },
    );
    let MessageRef::Response(response) = MessageRef::decode(INPUT_REQUIRED).unwrap() else {
        unreachable!()
    };
    let outcome = decode_result::<CallTool>(response.payload.unwrap(), &accepted).unwrap();
    assert!(matches!(outcome, Outcome::InputRequired(_)));
    let id = response.id.unwrap();
    c.bench_function("InputRequiredResult response: encode", |b| {
        b.iter(|| encode_result(black_box(&id), black_box(&outcome)).unwrap());
    });
}

criterion_group!(benches, tools_call, input_required);
criterion_main!(benches);
