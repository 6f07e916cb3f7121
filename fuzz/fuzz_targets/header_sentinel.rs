//! Header values: decoding never panics, and every string survives encode → decode.

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx::__fuzz::{decode_value, encode_value, needs_sentinel};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = decode_value(text);
    let encoded = encode_value(text);
    assert!(
        encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "a header value is visible ASCII"
    );
    if needs_sentinel(text) {
        assert!(encoded.starts_with("=?base64?"));
    }
    // HTTP trims optional whitespace, which the sentinel exists to protect.
    assert_eq!(decode_value(&encoded).expect("our encoding decodes"), text);
});
