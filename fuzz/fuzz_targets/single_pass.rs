//! The single pass (`MessageRef::decode_slice_with`) against the two phases, on any input: the
//! same message, the same typed params, the same error (code, message and kept id).

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx_types::CallToolRequestParams;
use modelctx_types::jsonrpc::{Decoded, MessageRef, MethodSeed};
use modelctx_types::methods::CallTool;

/// The seed the server's router delegates `tools/call` to.
const CALL_TOOL: MethodSeed<CallTool> = MethodSeed::new();

fuzz_target!(|data: &[u8]| {
    let two_phases = MessageRef::decode_slice(data);
    match (MessageRef::decode_slice_with(data, &CALL_TOOL), two_phases) {
        (Err(one), Err(two)) => assert_eq!(one, two),
        (Ok(Decoded::Raw(one)), Ok(two)) => assert_eq!(format!("{one:?}"), format!("{two:?}")),
        (Ok(Decoded::Typed(one)), Ok(MessageRef::Request(two))) => {
            assert_eq!(one.id, two.id);
            assert_eq!(one.method, two.method);
            assert_eq!(Some(one.params_text), two.params.map(|raw| raw.get()));
            let typed = two
                .params_as::<CallToolRequestParams>()
                .expect("typed in one pass, typed in two");
            assert_eq!(
                serde_json::to_value(&one.params).unwrap(),
                serde_json::to_value(&typed).unwrap()
            );
        }
        (one, two) => panic!("single pass {one:?}, two phases {two:?}"),
    }
});
