//! The round claims (`r`, `tc`): what `seal_round` writes, `open_round` and `open_single_use`
//! read back, and what a token without them (round 1, or the Python SDK's) opens as.

use modelctx_seal::{
    AesGcmCodec, Codec as _, MAX_TRACE_CONTEXT_LEN, RequestBinding, RequestStateSecurity,
    RoundLineage, SealError,
};
use serde_json::json;

const KEY: &[u8; 32] = b"round-lineage-secret-0123456789a";
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn security() -> RequestStateSecurity {
    RequestStateSecurity::with_keys([KEY])
        .unwrap()
        .with_audience("rounds")
}

#[test]
fn the_round_and_trace_context_round_trip() {
    let args = json!({"n": 1});
    let binding = RequestBinding::tool_call("provision", Some(&args));
    let lineage = RoundLineage::new(3).with_trace_context(TRACEPARENT);
    let token = security().seal_round("s3", &binding, &lineage).unwrap();

    let (state, opened) = security().open_round(&token, &binding).unwrap();
    assert_eq!(state, "s3");
    assert_eq!(opened, lineage);
    assert_eq!(opened.clone().next().round(), 4);
    assert_eq!(opened.next().trace_context(), Some(TRACEPARENT));
    // The claims change nothing else: plain and single-use opening accept the token.
    assert_eq!(security().open(&token, &binding).unwrap(), "s3");
    let single = security().open_single_use(&token, &binding).unwrap();
    assert_eq!(single.lineage, lineage);
    // And they are claims, inside the AEAD, after Python's.
    let payload = AesGcmCodec::new([KEY]).unwrap().unseal(&token).unwrap();
    let payload = String::from_utf8(payload).unwrap();
    assert!(
        payload.ends_with(&format!(r#","aud":"rounds","r":3,"tc":"{TRACEPARENT}"}}"#)),
        "{payload}"
    );
}

#[test]
fn a_token_without_the_claims_is_round_one() {
    let binding = RequestBinding::prompt_get("summary", None);
    for token in [
        security().seal("s", &binding).unwrap(),
        security()
            .seal_round("s", &binding, &RoundLineage::FIRST)
            .unwrap(),
    ] {
        let payload = AesGcmCodec::new([KEY]).unwrap().unseal(&token).unwrap();
        let payload = String::from_utf8(payload).unwrap();
        assert!(
            !payload.contains(r#""r":"#) && !payload.contains(r#""tc":"#),
            "round 1 writes Python's claims only: {payload}"
        );
        let (state, lineage) = security().open_round(&token, &binding).unwrap();
        assert_eq!((state.as_str(), lineage), ("s", RoundLineage::FIRST));
    }
    // Round 1 with a trace context writes `tc` but no `r`.
    let first = RoundLineage::FIRST.with_trace_context(TRACEPARENT);
    let token = security().seal_round("s", &binding, &first).unwrap();
    assert_eq!(security().open_round(&token, &binding).unwrap().1, first);
}

#[test]
fn a_trace_context_too_long_is_refused_at_seal_time() {
    let binding = RequestBinding::resource_read("file:///x");
    let longest = RoundLineage::new(2).with_trace_context("t".repeat(MAX_TRACE_CONTEXT_LEN));
    let token = security().seal_round("s", &binding, &longest).unwrap();
    assert_eq!(security().open_round(&token, &binding).unwrap().1, longest);
    let too_long = RoundLineage::new(2).with_trace_context("t".repeat(MAX_TRACE_CONTEXT_LEN + 1));
    assert_eq!(
        security().seal_round("s", &binding, &too_long),
        Err(SealError::TraceContextTooLong)
    );
}
