//! The Python-compatible JSON writer must be total and faithful: for any JSON value, the
//! sorted compact output parses back to the same value, is pure ASCII, and digesting never
//! panics.

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx_seal::{arguments_digest, canonical_json, question_digest};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let sorted = canonical_json::to_string_sorted(&value);
    assert!(sorted.is_ascii(), "non-ASCII output {sorted:?}");
    let reparsed: Value = serde_json::from_str(&sorted).expect("output must be valid JSON");
    assert_eq!(reparsed, value, "round trip changed the value: {sorted}");
    let ordered = canonical_json::to_string(&value).expect("a Value always serialises");
    let reparsed: Value = serde_json::from_str(&ordered).expect("output must be valid JSON");
    assert_eq!(reparsed, value);
    assert_eq!(arguments_digest(Some(&value)).len(), 22);
    assert_eq!(question_digest(Some(&value)).expect("digest").len(), 22);
});
