//! A custom [`Codec`] doing envelope encryption, the KMS pattern.
//!
//! The operator asks the KMS once for a data key and stores only its *wrapped* (KMS-encrypted)
//! form in configuration. At start-up the server asks the KMS to unwrap it — one network call
//! per process, never one per token, because `Codec::seal`/`unseal` run synchronously on every
//! request — and then seals `requestState` locally with AES-256-GCM under the data key.
//! The KMS is simulated here by a local key-encryption key.
//!
//! The policy around the codec is unchanged: `RequestStateSecurity::with_codec` still stamps
//! and verifies expiry, request binding, audience and principal.
//!
//! Run with `cargo run -p modelctx-seal --example envelope_codec`.

#![allow(clippy::print_stdout, reason = "an example reports what it does")]

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::{digest, rand};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx_seal::{
    Codec, InvalidRequestState, Reason, RequestBinding, RequestStateSecurity, SealError,
};
use serde_json::json;
use zeroize::Zeroizing;

const TAG_LEN: usize = 16;

/// Stand-in for a cloud KMS: holds a key-encryption key that never leaves it.
struct SimulatedKms {
    kek: LessSafeKey,
}

impl SimulatedKms {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let mut kek = Zeroizing::new([0u8; 32]);
        rand::fill(kek.as_mut()).map_err(|_| "no randomness")?;
        let kek = UnboundKey::new(&AES_256_GCM, kek.as_ref()).map_err(|_| "bad KEK")?;
        Ok(Self {
            kek: LessSafeKey::new(kek),
        })
    }

    /// `GenerateDataKey`: a fresh data key, returned only in wrapped form here because the
    /// operator stores nothing else.
    fn generate_wrapped_data_key(&self) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let mut data_key = Zeroizing::new(vec![0u8; 32]);
        rand::fill(data_key.as_mut()).map_err(|_| "no randomness")?;
        let mut nonce = [0u8; NONCE_LEN];
        rand::fill(&mut nonce).map_err(|_| "no randomness")?;
        let mut wrapped = data_key.to_vec();
        self.kek
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(b"wrapped-data-key"),
                &mut wrapped,
            )
            .map_err(|_| "wrap failed")?;
        wrapped.splice(0..0, nonce);
        Ok(wrapped)
    }

    /// `Decrypt`: unwraps a data key (in real life a network call, hence once per process).
    fn unwrap(&self, wrapped: &[u8]) -> Result<Zeroizing<Vec<u8>>, Box<dyn std::error::Error>> {
        if wrapped.len() < NONCE_LEN + TAG_LEN {
            return Err("wrapped key too short".into());
        }
        let (nonce, sealed) = wrapped.split_at(NONCE_LEN);
        let mut buf = Zeroizing::new(sealed.to_vec());
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| "bad nonce")?;
        let plain_len = self
            .kek
            .open_in_place(nonce, Aad::from(b"wrapped-data-key"), buf.as_mut_slice())
            .map_err(|_| "unwrap failed")?
            .len();
        buf.truncate(plain_len);
        Ok(buf)
    }
}

/// Token format: `env1.` + base64url(nonce ‖ ciphertext ‖ tag); the associated data is the
/// prefix plus an id of the wrapped data key, so a token only opens under the key it was made
/// with and never in another format version.
const PREFIX: &str = "env1.";

/// AES-256-GCM under a data key unwrapped once at start-up.
struct EnvelopeCodec {
    key: LessSafeKey,
    aad: Vec<u8>,
}

impl EnvelopeCodec {
    fn unwrap_once(kms: &SimulatedKms, wrapped: &[u8]) -> Result<Self, Box<dyn std::error::Error>> {
        let data_key = kms.unwrap(wrapped)?;
        let key = UnboundKey::new(&AES_256_GCM, &data_key).map_err(|_| "bad data key")?;
        // The key id is public: a digest of the wrapped blob, not of the key.
        let key_id = digest::digest(&digest::SHA256, wrapped);
        let mut aad = PREFIX.as_bytes().to_vec();
        aad.extend_from_slice(&key_id.as_ref()[..8]);
        Ok(Self {
            key: LessSafeKey::new(key),
            aad,
        })
    }
}

impl fmt::Debug for EnvelopeCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvelopeCodec")
            .field("key", &"<redacted>")
            .finish()
    }
}

impl Codec for EnvelopeCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::fill(&mut nonce).map_err(|_| SealError::Random)?;
        let mut raw = Vec::with_capacity(NONCE_LEN + payload.len() + TAG_LEN);
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(payload);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&self.aad),
                &mut raw[NONCE_LEN..],
            )
            .map_err(|_| SealError::Crypto)?;
        raw.extend_from_slice(tag.as_ref());
        Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw)))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let malformed = InvalidRequestState::new(Reason::Malformed);
        let body = token.strip_prefix(PREFIX).ok_or(malformed)?;
        let mut raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| malformed)?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return Err(malformed);
        }
        let nonce = Nonce::try_assume_unique_for_key(&raw[..NONCE_LEN]).map_err(|_| malformed)?;
        let plain_len = self
            .key
            .open_in_place(nonce, Aad::from(&self.aad), &mut raw[NONCE_LEN..])
            .map_err(|_| InvalidRequestState::new(Reason::Seal))?
            .len();
        raw.copy_within(NONCE_LEN..NONCE_LEN + plain_len, 0);
        raw.truncate(plain_len);
        Ok(raw)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Operator, once: create a data key and store the wrapped blob in configuration.
    let kms = SimulatedKms::new()?;
    let wrapped = kms.generate_wrapped_data_key()?;
    println!("wrapped data key in config: {} bytes", wrapped.len());

    // Server start-up: one KMS call, then every instance seals locally.
    let codec = EnvelopeCodec::unwrap_once(&kms, &wrapped)?;
    let security = RequestStateSecurity::with_codec(Arc::new(codec)).with_audience("inventory");

    let args = json!({"sku": "A-100"});
    let binding = RequestBinding::tool_call("reserve", Some(&args));
    let token = security.seal(r#"{"step":"confirm"}"#, &binding)?;
    println!("sealed requestState: {token}");
    println!("opened: {}", security.open(&token, &binding)?);

    // Another instance unwrapping the same blob opens the same tokens.
    let peer =
        RequestStateSecurity::with_codec(Arc::new(EnvelopeCodec::unwrap_once(&kms, &wrapped)?))
            .with_audience("inventory");
    assert_eq!(peer.open(&token, &binding)?, r#"{"step":"confirm"}"#);

    // The policy still enforces the request binding around the custom codec.
    let other = json!({"sku": "B-200"});
    let err = security
        .open(&token, &binding.with_arguments(Some(&other)))
        .expect_err("other arguments must be refused");
    println!(
        "replayed for other arguments: {err} (wire: {})",
        err.wire_error()
    );
    Ok(())
}
