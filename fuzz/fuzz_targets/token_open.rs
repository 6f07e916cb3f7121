//! `requestState` open must be panic-free and forgery-free on any input.
//!
//! The first input byte picks a mode:
//! * raw token through the built-in AES-256-GCM codec and the full policy;
//! * a valid token with characters overwritten at fuzzer-chosen positions;
//! * raw claims bytes behind a pass-through codec, checked differentially against a small
//!   serde_json model of the verification rules (this is what reaches the claims reader);
//! * fuzzer bytes spliced into a valid claims envelope, checked the same way.

#![no_main]

use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use modelctx_seal::{
    Codec, InvalidRequestState, Reason, RequestBinding, RequestStateSecurity, SealError,
    arguments_digest,
};
use serde_json::Value;

const KEY: &[u8; 32] = b"fuzz-secret-0123456789abcdefghij";
/// A fixed clock reading so the valid token never expires.
const NOW_SECS: u64 = 1_800_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW_SECS)
}

static SECURITY: LazyLock<RequestStateSecurity> = LazyLock::new(|| {
    RequestStateSecurity::with_keys([KEY])
        .expect("valid key")
        .with_audience("fuzz")
});

static ARGS: LazyLock<Value> = LazyLock::new(|| serde_json::json!({"name": "orders", "n": 7}));

fn binding() -> RequestBinding<'static> {
    RequestBinding::tool_call("provision", Some(&ARGS))
}

static VALID: LazyLock<String> = LazyLock::new(|| {
    SECURITY
        .seal_at("state-\u{e9}", &binding(), now())
        .expect("sealing")
});

/// No crypto: the token is the hex of the claims payload, so arbitrary payload bytes reach the
/// claims reader.
#[derive(Debug)]
struct HexCodec;

impl Codec for HexCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        Ok(payload.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let bytes = token.as_bytes();
        if !bytes.len().is_multiple_of(2) {
            return Err(Reason::Malformed.into());
        }
        bytes
            .chunks(2)
            .map(|pair| {
                std::str::from_utf8(pair)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(InvalidRequestState::new(Reason::Malformed))
            })
            .collect()
    }
}

static PLAIN: LazyLock<RequestStateSecurity> =
    LazyLock::new(|| RequestStateSecurity::with_codec(Arc::new(HexCodec)));

/// The binding the plain-codec modes verify against; epoch 0 keeps numbers short.
fn plain_binding() -> RequestBinding<'static> {
    RequestBinding::resource_read("r")
}

/// The verification rules restated over serde_json::Value, for a differential check.
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
    let now = 0.0;
    if !number("iat").is_some_and(|iat| iat <= now + 60.0)
        || !number("exp").is_some_and(|exp| now < exp)
    {
        return None;
    }
    if text("m") != Some("resources/read")
        || text("t") != Some("r")
        || text("a") != Some(arguments_digest(None).as_str())
        || !is_none("aud")
        || !is_none("p")
    {
        return None;
    }
    Some(state.to_owned())
}

fn check_plain(payload: &[u8]) {
    let token: String = payload.iter().map(|b| format!("{b:02x}")).collect();
    let opened = PLAIN.open_at(&token, &plain_binding(), UNIX_EPOCH).ok();
    assert_eq!(
        opened,
        model(payload),
        "claims reader and serde_json model disagree on {:?}",
        String::from_utf8_lossy(payload)
    );
}

const TEMPLATE: &str =
    r#"{"v":1,"iat":0,"exp":1,"m":"resources/read","t":"r","a":"RBNvo1WzZ4oRRq0W9-hkng","s":"x"}"#;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            let token = String::from_utf8_lossy(rest);
            let opened = SECURITY.open_at(&token, &binding(), now());
            // Only the token actually minted may open.
            if opened.is_ok() {
                assert_eq!(token, VALID.as_str());
            }
            let _ = SECURITY.open_value(Some(&Value::String(token.into_owned())), &binding());
        }
        1 => {
            let mut chars: Vec<char> = VALID.chars().collect();
            for pair in rest.chunks(2) {
                let position = usize::from(pair[0]) * 7 % chars.len();
                let replacement = char::from(*pair.get(1).unwrap_or(&b'A'));
                chars[position] = replacement;
            }
            let tampered: String = chars.into_iter().collect();
            let opened = SECURITY.open_at(&tampered, &binding(), now());
            if tampered == *VALID {
                assert_eq!(opened.as_deref(), Ok("state-\u{e9}"));
            } else {
                let err = opened.expect_err("a modified token must be rejected");
                assert_eq!(
                    err.wire_error(),
                    InvalidRequestState::new(Reason::Seal).wire_error()
                );
            }
        }
        2 => check_plain(rest),
        _ => {
            // Splice the input into the template at a position chosen by its first byte.
            let Some((&at, insert)) = rest.split_first() else {
                return;
            };
            let at = usize::from(at) % (TEMPLATE.len() + 1);
            let mut payload = TEMPLATE.as_bytes()[..at].to_vec();
            payload.extend_from_slice(insert);
            payload.extend_from_slice(&TEMPLATE.as_bytes()[at..]);
            check_plain(&payload);
        }
    }
});
