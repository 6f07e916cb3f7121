//! The authenticated principal a token may be bound to, and its salted claim.
//!
//! The `p` claim is `base64url(salt8 ‖ SHA-256("mcp/request-state/principal:" ‖ salt8 ‖
//! principal)[:16])`: a fresh random salt per token keeps the claim from linking one user's
//! tokens together, even though the payload is encrypted under the built-in codec anyway.

use std::fmt;

use aws_lc_rs::{constant_time, digest};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::canonical_json;
use crate::error::SealError;

const PRINCIPAL_LABEL: &[u8] = b"mcp/request-state/principal:";
const SALT_LEN: usize = 8;
const TAG_LEN: usize = 16;
/// Encoded length of a claim: 24 raw bytes are 32 base64url characters.
const CLAIM_LEN: usize = 32;

/// Who a request is made by, as the string the state is bound to.
///
/// Any stable string works ([`Principal::new`]); [`Principal::from_oauth`] builds the Python
/// SDK's default (`authenticated_principal`): the compact JSON of `[client_id, issuer, subject]`
/// of the validated OAuth access token. Servers without authentication (stdio) bind no principal.
///
/// ```
/// use modelctx_seal::Principal;
///
/// let p = Principal::from_oauth("app-1", Some("https://issuer.example"), None);
/// assert_eq!(p.as_str(), r#"["app-1","https://issuer.example",null]"#);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// A principal identified by an arbitrary stable string.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The Python SDK's default principal for an OAuth access token: compact, ASCII-escaped
    /// JSON of `[client_id, issuer, subject]`, where `issuer` is the token's `iss` claim
    /// (stringified) and `subject` its `sub`; missing parts are `null`.
    pub fn from_oauth(client_id: &str, issuer: Option<&str>, subject: Option<&str>) -> Self {
        let mut out = Vec::with_capacity(client_id.len() + 32);
        out.push(b'[');
        canonical_json::write_str(&mut out, client_id);
        for part in [issuer, subject] {
            out.push(b',');
            match part {
                Some(text) => canonical_json::write_str(&mut out, text),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b']');
        Self(String::from_utf8_lossy(&out).into_owned())
    }

    /// The principal string that is digested.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn tag(&self, salt: &[u8]) -> [u8; TAG_LEN] {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(PRINCIPAL_LABEL);
        ctx.update(salt);
        ctx.update(self.0.as_bytes());
        let hash = ctx.finish();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&hash.as_ref()[..TAG_LEN]);
        tag
    }

    /// A fresh salted `p` claim for this principal (32 base64url characters).
    pub(crate) fn claim(&self) -> Result<[u8; CLAIM_LEN], SealError> {
        let mut raw = [0u8; SALT_LEN + TAG_LEN];
        getrandom::fill(&mut raw[..SALT_LEN]).map_err(|_| SealError::Random)?;
        let tag = self.tag(&raw[..SALT_LEN]);
        raw[SALT_LEN..].copy_from_slice(&tag);
        let mut out = [0u8; CLAIM_LEN];
        URL_SAFE_NO_PAD
            .encode_slice(raw, &mut out)
            .map_err(|_| SealError::Crypto)?;
        Ok(out)
    }

    /// Whether `claim` was made for this principal (constant-time in the tag).
    pub(crate) fn matches(&self, claim: &str) -> bool {
        // Anything but the canonical 32-character encoding of 24 bytes can never match, which
        // is also what Python's decode-then-compare ends up deciding.
        if claim.len() != CLAIM_LEN {
            return false;
        }
        let mut raw = [0u8; SALT_LEN + TAG_LEN];
        match URL_SAFE_NO_PAD.decode_slice(claim, &mut raw) {
            Ok(len) if len == raw.len() => {}
            _ => return false,
        }
        let expected = self.tag(&raw[..SALT_LEN]);
        constant_time::verify_slices_are_equal(&raw[SALT_LEN..], &expected).is_ok()
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Principal").field(&self.0).finish()
    }
}

impl From<String> for Principal {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for Principal {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_salted_and_verify() {
        let alice = Principal::new("alice");
        let bob = Principal::new("bob");
        let c1 = alice.claim().unwrap();
        let c2 = alice.claim().unwrap();
        assert_ne!(c1, c2);
        let c1 = std::str::from_utf8(&c1).unwrap();
        assert!(alice.matches(c1));
        assert!(!bob.matches(c1));
        assert!(!alice.matches(&c1[..31]));
        assert!(!alice.matches(""));
    }

    #[test]
    fn oauth_principal_is_python_compact_json() {
        assert_eq!(
            Principal::from_oauth("c", Some("i"), Some("s\u{e9}")).as_str(),
            r#"["c","i","s\u00e9"]"#
        );
        assert_eq!(
            Principal::from_oauth("c", None, None).as_str(),
            r#"["c",null,null]"#
        );
    }
}
