//! `open_single_use`: the same verdicts as `open`, plus the replay key and expiry a server's
//! replay guard records — kid ‖ nonce for the built-in codec, a token digest for custom codecs.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx_seal::{
    Codec, InvalidRequestState, ManualClock, Reason, ReplayKey, RequestBinding,
    RequestStateSecurity, SealError,
};
use serde_json::json;

const KEY: &[u8; 32] = b"single-use-secret-0123456789abcd";

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_796_005_576)
}

#[test]
fn single_use_open_agrees_with_open_and_names_the_nonce() {
    let clock = Arc::new(ManualClock::new(start()));
    let security = RequestStateSecurity::with_keys([KEY])
        .unwrap()
        .with_ttl(Duration::from_secs(120))
        .unwrap()
        .with_audience("svc")
        .with_clock(clock.clone());
    let args = json!({"repo": "prod"});
    let binding = RequestBinding::tool_call("delete_repo", Some(&args));
    let token = security.seal("confirm", &binding).unwrap();

    let opened = security.open_single_use(&token, &binding).unwrap();
    assert_eq!(opened.state, security.open(&token, &binding).unwrap());
    let raw = URL_SAFE_NO_PAD.decode(&token[3..]).unwrap();
    assert_eq!(opened.replay_key.as_bytes()[..], raw[..16], "kid ‖ nonce");
    assert_eq!(opened.expires_at, start() + Duration::from_secs(120));

    // The same key for every open of one token; another seal, another key.
    let again = security.open_single_use(&token, &binding).unwrap();
    assert_eq!(again.replay_key, opened.replay_key);
    let other = security.seal("confirm", &binding).unwrap();
    assert_ne!(
        security
            .open_single_use(&other, &binding)
            .unwrap()
            .replay_key,
        opened.replay_key
    );

    // Rejections are exactly open's.
    let wrong = json!({"repo": "staging"});
    let err = security
        .open_single_use(&token, &binding.with_arguments(Some(&wrong)))
        .unwrap_err();
    assert_eq!(err.reason(), Reason::RequestBinding);
    clock.advance(Duration::from_secs(121));
    let err = security.open_single_use(&token, &binding).unwrap_err();
    assert_eq!(err.reason(), Reason::Expired);
}

/// A codec without a nonce: the payload, base64url-encoded (deterministic).
#[derive(Debug)]
struct NoNonce {
    panic_naming: bool,
}

impl Codec for NoNonce {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        Ok(URL_SAFE_NO_PAD.encode(payload))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| InvalidRequestState::new(Reason::Malformed))
    }

    fn replay_key(&self, token: &str) -> ReplayKey {
        assert!(!self.panic_naming, "codec bug");
        ReplayKey::digest(token.as_bytes())
    }
}

#[test]
fn a_codec_without_nonce_is_keyed_by_its_token() {
    let clock = Arc::new(ManualClock::new(start()));
    let security = RequestStateSecurity::with_codec(Arc::new(NoNonce {
        panic_naming: false,
    }))
    .with_audience("svc")
    .with_clock(clock.clone());
    let binding = RequestBinding::resource_read("file:///ledger");
    let first = security.seal("s", &binding).unwrap();
    let key = security
        .open_single_use(&first, &binding)
        .unwrap()
        .replay_key;
    assert_eq!(key, ReplayKey::digest(first.as_bytes()));
    // Sealed at the same instant, the same claims make the same token: one key, so the second
    // is refused as a replay (fails closed, never accepted twice).
    let twin = security.seal("s", &binding).unwrap();
    assert_eq!(twin, first);
    // A moment later the claims (iat) differ, and so does the key.
    clock.advance(Duration::from_millis(1));
    let later = security.seal("s", &binding).unwrap();
    assert_ne!(
        security
            .open_single_use(&later, &binding)
            .unwrap()
            .replay_key,
        key
    );

    let panicking = RequestStateSecurity::with_codec(Arc::new(NoNonce { panic_naming: true }))
        .with_audience("svc")
        .with_clock(clock);
    let token = panicking.seal("s", &binding).unwrap();
    assert_eq!(panicking.open(&token, &binding).unwrap(), "s");
    let err = panicking.open_single_use(&token, &binding).unwrap_err();
    assert_eq!(err.reason(), Reason::Codec, "a panic fails closed");
}
