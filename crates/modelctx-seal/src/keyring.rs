//! The rotation keyring of the built-in codec: operator secrets → AES-256-GCM keys + key ids.
//!
//! Every secret (at least 32 bytes, any format) is stretched with
//! HKDF-SHA256(secret, no salt, info `mcp/request-state/v1/aes-256-gcm`) into an AES-256 key; its
//! non-secret key id is the first 4 bytes of SHA-256(`mcp/request-state/v1/kid:` ‖ key). This is
//! the Python SDK 2.3.0 derivation, so both SDKs given the same secret mint and accept the same
//! tokens.
//!
//! `keys[0]` mints and every key verifies. Zero-downtime rotation goes through three phases, each
//! rolled out fully before the next: `[OLD, NEW]` (everyone can verify NEW), then `[NEW, OLD]`
//! (NEW mints, OLD tokens still verify), then `[NEW]` once one TTL has passed.

use std::fmt;

use aws_lc_rs::aead::{AES_256_GCM, LessSafeKey, UnboundKey};
use aws_lc_rs::{digest, hkdf};
use zeroize::Zeroizing;

use crate::error::ConfigError;

/// HKDF `info` for the AES-256-GCM key (Python `_KDF_INFO`).
const KDF_INFO: &[u8] = b"mcp/request-state/v1/aes-256-gcm";
/// Domain label hashed in front of the derived key to make its id (Python `_KID_INFO`).
const KID_LABEL: &[u8] = b"mcp/request-state/v1/kid:";
/// Minimum secret length in bytes: 256 bits of entropy if the secret is random.
pub const MIN_SECRET_LEN: usize = 32;
/// Length of a key id in bytes.
pub const KID_LEN: usize = 4;

/// One derived key of the ring.
pub(crate) struct RingKey {
    pub(crate) kid: [u8; KID_LEN],
    // The AES key schedule lives inside aws-lc's `EVP_AEAD_CTX`; aws-lc frees it with
    // `OPENSSL_free`, which cleanses the allocation, so the key is wiped on drop.
    pub(crate) key: LessSafeKey,
}

/// The built-in codec's keys: `keys[0]` mints, every key verifies.
///
/// Derived key bytes are zeroized as soon as the AEAD context holds them, and the context itself
/// is cleansed by aws-lc when the ring is dropped. `Debug` shows only the non-secret key ids.
///
/// ```
/// use modelctx_seal::Keyring;
///
/// let ring = Keyring::new([b"0123456789abcdef0123456789abcdef"])?;
/// assert_eq!(ring.len(), 1);
/// assert!(Keyring::new([b"too short"]).is_err());
/// # Ok::<(), modelctx_seal::ConfigError>(())
/// ```
pub struct Keyring {
    keys: Vec<RingKey>,
}

impl Keyring {
    /// Derives a ring from operator secrets, `secrets[0]` being the minting key.
    ///
    /// # Errors
    /// [`ConfigError::NoKeys`] for an empty list, [`ConfigError::KeyTooShort`] for a secret under
    /// [`MIN_SECRET_LEN`] bytes, [`ConfigError::DuplicateKey`] when two secrets are equal.
    pub fn new<I, K>(secrets: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        let mut keys: Vec<RingKey> = Vec::new();
        for (index, secret) in secrets.into_iter().enumerate() {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_LEN {
                return Err(ConfigError::KeyTooShort {
                    index,
                    len: secret.len(),
                });
            }
            let key = derive(secret)?;
            if keys.iter().any(|k| k.kid == key.kid) {
                return Err(ConfigError::DuplicateKey { index });
            }
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(ConfigError::NoKeys);
        }
        Ok(Self { keys })
    }

    /// A ring holding one fresh random 32-byte secret known only to this process.
    ///
    /// # Panics
    /// If the system random generator fails, which leaves no safe way to continue.
    pub fn generate() -> Self {
        let mut secret = Zeroizing::new([0u8; MIN_SECRET_LEN]);
        // The kernel's generator (one `getrandom` call), not aws-lc's: its first use seeds a
        // DRBG from CPU jitter, tens of milliseconds that every `mcp serve` would pay at start-up.
        #[allow(clippy::expect_used, reason = "no key can be made without randomness")]
        getrandom::fill(secret.as_mut()).expect("system random generator failed");
        #[allow(
            clippy::expect_used,
            reason = "a 32-byte random secret is always valid"
        )]
        Self::new([secret.as_ref()]).expect("a fresh 32-byte key is a valid ring")
    }

    /// Number of keys in the ring.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Always `false`: a ring cannot be empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Key id of the minting key (non-secret; it is the first bytes of every token it mints).
    pub fn minting_kid(&self) -> [u8; KID_LEN] {
        self.keys[0].kid
    }

    /// Key ids of all keys, minting key first.
    pub fn kids(&self) -> impl Iterator<Item = [u8; KID_LEN]> + '_ {
        self.keys.iter().map(|k| k.kid)
    }

    pub(crate) fn minting(&self) -> &RingKey {
        &self.keys[0]
    }

    pub(crate) fn find(&self, kid: &[u8]) -> Option<&RingKey> {
        // Rings hold one to three keys; a scan beats hashing. Key ids are public, so the
        // comparison need not be constant-time.
        self.keys.iter().find(|k| k.kid == kid)
    }
}

fn derive(secret: &[u8]) -> Result<RingKey, ConfigError> {
    // Python's HKDF(salt=None) uses HashLen zero bytes as the salt, which HMAC pads to the same
    // key as an empty salt.
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(secret);
    let info = [KDF_INFO];
    let okm = prk
        .expand(&info, &AES_256_GCM)
        .map_err(|_| ConfigError::Crypto)?;
    let mut key_bytes = Zeroizing::new([0u8; 32]);
    okm.fill(key_bytes.as_mut())
        .map_err(|_| ConfigError::Crypto)?;

    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(KID_LABEL);
    ctx.update(key_bytes.as_ref());
    let hash = ctx.finish();
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&hash.as_ref()[..KID_LEN]);

    let unbound =
        UnboundKey::new(&AES_256_GCM, key_bytes.as_ref()).map_err(|_| ConfigError::Crypto)?;
    Ok(RingKey {
        kid,
        key: LessSafeKey::new(unbound),
    })
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Kids<'a>(&'a [RingKey]);
        impl fmt::Debug for Kids<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut list = f.debug_list();
                for key in self.0 {
                    list.entry(&format_args!(
                        "{:02x}{:02x}{:02x}{:02x}",
                        key.kid[0], key.kid[1], key.kid[2], key.kid[3]
                    ));
                }
                list.finish()
            }
        }
        f.debug_struct("Keyring")
            .field("kids", &Kids(&self.keys))
            .field("keys", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_secrets() {
        let empty: [&[u8]; 0] = [];
        assert_eq!(Keyring::new(empty).unwrap_err(), ConfigError::NoKeys);
        assert_eq!(
            Keyring::new([[1u8; 31]]).unwrap_err(),
            ConfigError::KeyTooShort { index: 0, len: 31 }
        );
        assert_eq!(
            Keyring::new([&[1u8; 32][..], &[2u8; 40], &[1u8; 32]]).unwrap_err(),
            ConfigError::DuplicateKey { index: 2 }
        );
        let msg = Keyring::new([&[1u8; 32][..], &[2u8; 3]])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("at least 32 bytes") && msg.contains("keys[1] is 3 bytes"),
            "{msg}"
        );
        assert_eq!(Keyring::new([[1u8; 32], [2u8; 32]]).unwrap().len(), 2);
    }

    #[test]
    fn debug_is_redacted() {
        let ring = Keyring::new([[7u8; 32]]).unwrap();
        let text = format!("{ring:?}");
        assert!(text.contains("<redacted>"), "{text}");
        assert!(!text.contains("7, 7"), "{text}");
    }

    #[test]
    fn generated_rings_differ() {
        assert_ne!(
            Keyring::generate().minting_kid(),
            Keyring::generate().minting_kid()
        );
    }
}
