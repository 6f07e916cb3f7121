//! Differential test of the hand-written claims reader (reached through a pass-through codec)
//! against a serde_json model of the verification rules. The fuzz target `token_open` runs the
//! same comparison on arbitrary bytes; this keeps a deterministic slice of it in `cargo test`.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use modelctx_seal::{
    Codec, InvalidRequestState, Reason, RequestBinding, RequestStateSecurity, SealError,
    arguments_digest, canonical_json,
};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Map, Value, json};

/// The token is the payload's hex, so any payload bytes reach the claims reader.
#[derive(Debug)]
struct HexCodec;

impl Codec for HexCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        Ok(hex(payload))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        (0..token.len())
            .step_by(2)
            .map(|i| {
                token
                    .get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(InvalidRequestState::new(Reason::Malformed))
            })
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Verification rules restated over serde_json::Value (now = epoch 0, `resources/read` of
/// `r`, no audience, no principal).
fn model(payload: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    let claims = value.as_object()?;
    let number = |key: &str| claims.get(key).and_then(Value::as_f64);
    let text = |key: &str| claims.get(key).and_then(Value::as_str);
    let is_none = |key: &str| claims.get(key).is_none_or(Value::is_null);
    if number("v") != Some(1.0) || !claims.contains_key("iat") || !claims.contains_key("exp") {
        return None;
    }
    let state = text("s")?;
    if !number("iat").is_some_and(|iat| iat <= 60.0) || !number("exp").is_some_and(|e| e > 0.0) {
        return None;
    }
    let digest = arguments_digest(None);
    if text("m") != Some("resources/read")
        || text("t") != Some("r")
        || text("a") != Some(digest.as_str())
        || !is_none("aud")
        || !is_none("p")
    {
        return None;
    }
    Some(state.to_owned())
}

fn reader(payload: &[u8]) -> Option<String> {
    let security = RequestStateSecurity::with_codec(Arc::new(HexCodec));
    security
        .open_at(
            &hex(payload),
            &RequestBinding::resource_read("r"),
            UNIX_EPOCH,
        )
        .ok()
}

fn claim_value(valid: Value) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        30 => Just(Some(valid)),
        1 => Just(None),
        1 => Just(Some(Value::Null)),
        1 => Just(Some(json!(true))),
        1 => Just(Some(json!([1, {"x": "y"}]))),
        1 => any::<i32>().prop_map(|n| Some(json!(n))),
        1 => "\\PC{0,6}".prop_map(|s| Some(json!(s))),
    ]
}

fn claims_object() -> impl Strategy<Value = Value> {
    (
        claim_value(json!(1)),
        claim_value(json!(0)),
        claim_value(json!(1.5)),
        claim_value(json!("resources/read")),
        claim_value(json!("r")),
        claim_value(json!("RBNvo1WzZ4oRRq0W9-hkng")),
        claim_value(json!("state \"é\" 😀 \n")),
        prop_oneof![3 => Just(None), 1 => Just(Some(Value::Null)), 1 => Just(Some(json!("aud")))],
        prop::collection::btree_map("[a-z]{1,4}", any::<u16>(), 0..3),
    )
        .prop_map(|(v, iat, exp, m, t, a, s, aud, extra)| {
            let mut map = Map::new();
            for (key, value) in [
                ("v", v),
                ("iat", iat),
                ("exp", exp),
                ("m", m),
                ("t", t),
                ("a", a),
                ("s", s),
                ("aud", aud),
            ] {
                if let Some(value) = value {
                    map.insert(key.to_owned(), value);
                }
            }
            for (key, n) in extra {
                map.entry(key).or_insert(json!([n, {"nested": [null]}]));
            }
            Value::Object(map)
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(0xc1a1_5eed),
        ..ProptestConfig::default()
    })]

    #[test]
    fn reader_agrees_with_serde_model(
        claims in claims_object(),
        style in 0u8..3,
        edit in prop::option::of((any::<prop::sample::Index>(), any::<u8>(), any::<bool>())),
    ) {
        // Three spellings of the same object: serde compact (raw UTF-8), Python ASCII-escaped,
        // and pretty-printed with whitespace.
        let mut payload = match style {
            0 => serde_json::to_vec(&claims).unwrap(),
            1 => canonical_json::to_string(&claims).unwrap().into_bytes(),
            _ => serde_json::to_vec_pretty(&claims).unwrap(),
        };
        // Optionally break it: overwrite or insert one byte anywhere.
        if let Some((index, byte, insert)) = edit {
            let at = index.index(payload.len() + 1);
            if insert || at == payload.len() {
                payload.insert(at, byte);
            } else {
                payload[at] = byte;
            }
        }
        prop_assert_eq!(reader(&payload), model(&payload), "{}", String::from_utf8_lossy(&payload));
    }
}

#[test]
fn duplicate_members_keep_the_last_value() {
    let payload = br#"{"v":1,"iat":0,"exp":1,"m":"resources/read","t":"r","a":"RBNvo1WzZ4oRRq0W9-hkng","s":"first","s":"last","exp":0.5}"#;
    assert_eq!(reader(payload).as_deref(), Some("last"));
    assert_eq!(model(payload).as_deref(), Some("last"));
}
