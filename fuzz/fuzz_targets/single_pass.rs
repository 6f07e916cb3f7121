//! The single pass (`MessageRef::decode_slice_with`) against the two phases, on any input: the
//! same message, the same typed params, the same error (code, message and kept id).

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx_types::CallToolRequestParams;
use modelctx_types::jsonrpc::{Decoded, MessageRef, ParamsSeed};
use serde::{Deserialize as _, Deserializer};

/// A router that knows `tools/call`, as the server's does.
struct Tools;

impl ParamsSeed for Tools {
    type Params = CallToolRequestParams;

    fn accepts(&self, method: &str) -> bool {
        method == "tools/call"
    }

    fn deserialize<'de, D: Deserializer<'de>>(
        &self,
        _method: &str,
        params: D,
    ) -> Result<CallToolRequestParams, D::Error> {
        CallToolRequestParams::deserialize(params)
    }
}

fuzz_target!(|data: &[u8]| {
    let two_phases = MessageRef::decode_slice(data);
    match (MessageRef::decode_slice_with(data, &Tools), two_phases) {
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
