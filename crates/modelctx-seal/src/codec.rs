//! The codec seam and the built-in AES-256-GCM codec.
//!
//! A codec only provides authenticated encryption of an opaque payload; expiry, request binding,
//! audience and principal are stamped and checked by [`crate::RequestStateSecurity`] around any
//! codec, so a custom codec cannot weaken them.
//!
//! Built-in token format (byte-compatible with the Python SDK 2.3.0
//! `AESGCMRequestStateCodec`): `v1.` + base64url-no-padding(kid 4 ‖ nonce 12 ‖ ciphertext ‖
//! tag 16), sealed with AES-256-GCM under a random 96-bit nonce with associated data `v1.` ‖ kid,
//! so a token cannot be moved to another format version or ring slot. Only the canonical
//! unpadded base64url spelling decodes.

use std::fmt;

use aws_lc_rs::aead::{Aad, NONCE_LEN, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::{ConfigError, InvalidRequestState, Reason, SealError};
use crate::keyring::{KID_LEN, Keyring};
use crate::single_use::{REPLAY_KEY_LEN, ReplayKey};

/// Authenticated encryption of the sealed claims envelope.
///
/// Contract, as in the Python SDK's `RequestStateCodec` protocol:
/// * `unseal(seal(payload)) == payload`;
/// * `unseal` fails for any token it did not mint unmodified (never panics on any input);
/// * tokens never name their algorithm: version them with a prefix bound under the tag;
/// * both methods are synchronous and run on every request, so cache key material (unwrap a KMS
///   data key once at start-up, see `examples/envelope_codec.rs`) instead of calling out per token.
///
/// A codec that panics is treated as a failure: the policy catches the unwind and fails closed.
pub trait Codec: Send + Sync + fmt::Debug {
    /// Returns an opaque, URL-safe token protecting `payload`.
    ///
    /// # Errors
    /// Any failure; the server answers a generic internal error and logs the cause.
    fn seal(&self, payload: &[u8]) -> Result<String, SealError>;

    /// Reverses [`Codec::seal`].
    ///
    /// # Errors
    /// [`InvalidRequestState`] (usually [`Reason::Malformed`], [`Reason::UnknownKey`] or
    /// [`Reason::Seal`]) for any token this codec did not mint unmodified.
    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState>;

    /// Names `token` — one [`Codec::unseal`] just accepted — for a replay guard (single-use
    /// rounds only; never called otherwise). Every seal must get a different key, and every
    /// spelling of one token that `unseal` accepts the same key.
    ///
    /// The default is a digest of the token, which is right for any codec that keeps the
    /// contract above (only unmodified tokens open, so a token has one spelling). A codec with a
    /// random nonce should return it instead (cheaper; the built-in codec returns `kid ‖
    /// nonce`). A codec that mints the same token twice for the same payload (no nonce) makes
    /// the second identical token a replay of the first: refused, never wrongly accepted.
    fn replay_key(&self, token: &str) -> ReplayKey {
        ReplayKey::digest(token.as_bytes())
    }
}

/// Prefix of every built-in token; also the start of the associated data.
const TOKEN_PREFIX: &str = "v1.";
const TAG_LEN: usize = 16;
const HEADER_LEN: usize = KID_LEN + NONCE_LEN;
/// Smallest well-formed raw token: an empty payload still carries kid, nonce and tag.
const MIN_RAW_LEN: usize = HEADER_LEN + TAG_LEN;
/// Base64 characters that decode to the header and a little more (24 → 18 bytes).
const HEADER_CHARS: usize = HEADER_LEN.div_ceil(3) * 4;
const _: () = assert!(HEADER_LEN == REPLAY_KEY_LEN);

/// The built-in codec: AES-256-GCM under a [`Keyring`], Python SDK 2.3.0 token format.
///
/// ```
/// use modelctx_seal::{AesGcmCodec, Codec};
///
/// let codec = AesGcmCodec::new([b"0123456789abcdef0123456789abcdef"])?;
/// let token = codec.seal(b"payload").unwrap();
/// assert!(token.starts_with("v1."));
/// assert_eq!(codec.unseal(&token).unwrap(), b"payload");
/// # Ok::<(), modelctx_seal::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct AesGcmCodec {
    ring: Keyring,
}

impl AesGcmCodec {
    /// A codec over a ring derived from `secrets` (`secrets[0]` mints). See [`Keyring::new`].
    ///
    /// # Errors
    /// The [`Keyring::new`] validation errors.
    pub fn new<I, K>(secrets: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        Keyring::new(secrets).map(Self::from_keyring)
    }

    /// A codec over an existing ring.
    pub fn from_keyring(ring: Keyring) -> Self {
        Self { ring }
    }

    /// The ring this codec uses.
    pub fn keyring(&self) -> &Keyring {
        &self.ring
    }
}

fn aad(kid: &[u8]) -> [u8; TOKEN_PREFIX.len() + KID_LEN] {
    let mut aad = [0u8; TOKEN_PREFIX.len() + KID_LEN];
    aad[..TOKEN_PREFIX.len()].copy_from_slice(TOKEN_PREFIX.as_bytes());
    aad[TOKEN_PREFIX.len()..].copy_from_slice(kid);
    aad
}

impl AesGcmCodec {
    /// Seals the payload `write` appends (about `len_hint` bytes) without a copy of it: the
    /// policy writes its claims straight into the token body.
    pub(crate) fn seal_with(
        &self,
        len_hint: usize,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<String, SealError> {
        let key = self.ring.minting();
        // One buffer laid out as the token body: kid ‖ nonce ‖ payload→ciphertext ‖ tag.
        let mut raw = Vec::with_capacity(MIN_RAW_LEN + len_hint);
        raw.extend_from_slice(&key.kid);
        let mut nonce = [0u8; NONCE_LEN];
        // A fresh random nonce from the kernel per seal (see DESIGN.md, Request state: unique
        // per key across processes sharing the key, and across `fork`).
        getrandom::fill(&mut nonce).map_err(|_| SealError::Random)?;
        raw.extend_from_slice(&nonce);
        write(&mut raw);
        let tag = key
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(&key.kid)),
                &mut raw[HEADER_LEN..],
            )
            .map_err(|_| SealError::Crypto)?;
        raw.extend_from_slice(tag.as_ref());

        // The token is encoded into its final buffer in one pass (no chunked staging buffer).
        let mut token = vec![0u8; TOKEN_PREFIX.len() + base64_len(raw.len())];
        let (prefix, body) = token.split_at_mut(TOKEN_PREFIX.len());
        prefix.copy_from_slice(TOKEN_PREFIX.as_bytes());
        URL_SAFE_NO_PAD
            .encode_slice(&raw, body)
            .map_err(|_| SealError::Crypto)?;
        // base64url output is ASCII, so this never fails.
        String::from_utf8(token).map_err(|_| SealError::Crypto)
    }
}

/// Length of the unpadded base64 encoding of `len` bytes.
const fn base64_len(len: usize) -> usize {
    len / 3 * 4 + (len % 3 * 4).div_ceil(3)
}

impl Codec for AesGcmCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        self.seal_with(payload.len(), |raw| raw.extend_from_slice(payload))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let body = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or(InvalidRequestState::new(Reason::Malformed))?;
        // The engine rejects padding, characters outside the URL-safe alphabet, impossible
        // lengths and non-zero trailing bits, so exactly the canonical spelling decodes (the
        // Python SDK checks the same by re-encoding).
        let mut raw = Vec::with_capacity(body.len() / 4 * 3 + 3);
        URL_SAFE_NO_PAD
            .decode_vec(body, &mut raw)
            .map_err(|_| InvalidRequestState::new(Reason::Malformed))?;
        if raw.len() < MIN_RAW_LEN {
            return Err(Reason::Malformed.into());
        }
        let (header, sealed) = raw.split_at_mut(HEADER_LEN);
        let (kid, nonce) = header.split_at(KID_LEN);
        let key = self
            .ring
            .find(kid)
            .ok_or(InvalidRequestState::new(Reason::UnknownKey))?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Reason::Malformed)?;
        let plain_len = key
            .key
            .open_in_place(nonce, Aad::from(aad(kid)), sealed)
            .map_err(|_| Reason::Seal)?
            .len();
        // Shift the plaintext to the front instead of copying it into a second allocation.
        raw.copy_within(HEADER_LEN..HEADER_LEN + plain_len, 0);
        raw.truncate(plain_len);
        Ok(raw)
    }

    /// `kid ‖ nonce`: the nonce is random per seal and authenticated by the tag, so an opened
    /// token's header names it uniquely (and only the canonical spelling opens).
    fn replay_key(&self, token: &str) -> ReplayKey {
        let mut head = [0u8; HEADER_CHARS / 4 * 3];
        let decoded = token
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|body| body.get(..HEADER_CHARS))
            .and_then(|chars| URL_SAFE_NO_PAD.decode_slice(chars, &mut head).ok());
        match decoded {
            Some(len) if len >= HEADER_LEN => {
                let mut key = [0u8; REPLAY_KEY_LEN];
                key.copy_from_slice(&head[..HEADER_LEN]);
                ReplayKey::from_bytes(key)
            }
            // Not a token `unseal` accepted; still a key, never a panic.
            _ => ReplayKey::digest(token.as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &[u8; 32] = b"A-secret-for-request-state-tests";
    const B: &[u8; 32] = b"B-secret-for-request-state-tests";

    #[test]
    fn round_trip_and_layout() {
        let codec = AesGcmCodec::new([A]).unwrap();
        for payload in [&b""[..], b"x", &[0u8; 300]] {
            let token = codec.seal(payload).unwrap();
            let raw = URL_SAFE_NO_PAD.decode(&token[3..]).unwrap();
            assert_eq!(raw.len(), MIN_RAW_LEN + payload.len());
            assert_eq!(raw[..KID_LEN], codec.keyring().minting_kid());
            assert_eq!(codec.unseal(&token).unwrap(), payload);
        }
    }

    #[test]
    fn replay_key_is_kid_and_nonce() {
        let codec = AesGcmCodec::new([A]).unwrap();
        let token = codec.seal(b"payload").unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&token[3..]).unwrap();
        assert_eq!(codec.replay_key(&token).as_bytes()[..], raw[..HEADER_LEN]);
        let again = codec.seal(b"payload").unwrap();
        assert_ne!(codec.replay_key(&token), codec.replay_key(&again));
        // Garbage (never passed to it by the policy) still gets a key.
        assert_eq!(codec.replay_key("v1.x"), ReplayKey::digest(b"v1.x"));
    }

    #[test]
    fn nonces_are_fresh() {
        let codec = AesGcmCodec::new([A]).unwrap();
        assert_ne!(codec.seal(b"same").unwrap(), codec.seal(b"same").unwrap());
    }

    #[test]
    fn rejects_foreign_and_malformed_tokens() {
        let a = AesGcmCodec::new([A]).unwrap();
        let b = AesGcmCodec::new([B]).unwrap();
        let token = a.seal(b"payload").unwrap();
        assert_eq!(b.unseal(&token).unwrap_err().reason(), Reason::UnknownKey);
        for bad in [
            "",
            "v1.",
            "v2.AAAA",
            "plaintext",
            "v1.AAAA",
            "v1.====",
            "v1.a+b/",
        ] {
            assert_eq!(
                a.unseal(bad).unwrap_err().reason(),
                Reason::Malformed,
                "{bad}"
            );
        }
        let padded = format!("{token}{}", "=".repeat((4 - (token.len() - 3) % 4) % 4));
        if padded != token {
            assert_eq!(a.unseal(&padded).unwrap_err().reason(), Reason::Malformed);
        }
    }
}
