//! The client's half of DPoP (RFC 9449): its ES256 key, the proofs it signs with it, and the
//! nonces servers hand out. What the client and the resource server share (claims, JWK,
//! `ath`, `htu`) is in `crate::dpop`.

use std::collections::HashMap;
use std::sync::Mutex;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;

use super::clock::now;
use super::error::AuthError;
use super::pkce::random_token;
use crate::dpop::{EcPublicJwk, NONCE_HEADER, PROOF_TYPE, ProofClaims, access_token_hash};
use crate::sync::lock;

/// The only proof algorithm this client signs with.
pub(crate) const ALGORITHM: &str = "ES256";

/// The most origins whose nonce is remembered (one client talks to one resource server and
/// its authorization server; the bound only stops a peer from growing the map).
const MAX_ORIGINS: usize = 16;
/// The longest nonce kept (RFC 9449 §8.1 sets no limit; a peer's bytes are bounded here).
const MAX_NONCE: usize = 512;

/// An ES256 key pair that signs DPoP proofs, with what every proof repeats precomputed.
pub(crate) struct ProofKey {
    pair: EcdsaKeyPair,
    /// The PKCS#8 DER, base64url: how the key is kept with the tokens bound to it.
    pkcs8: String,
    /// The encoded protected header (`typ`, `alg`, `jwk`): the same for every proof.
    header: String,
    /// The RFC 7638 thumbprint of the public key (the `cnf.jkt` of tokens bound to it).
    thumbprint: String,
}

impl ProofKey {
    /// A fresh key.
    pub(crate) fn generate() -> Result<Self, AuthError> {
        let document =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| AuthError::InvalidConfig("generating a DPoP key failed".to_owned()))?;
        Self::from_pkcs8(document.as_ref())
    }

    /// The key kept with stored tokens (base64url PKCS#8); `None` when it is not a P-256 key.
    pub(crate) fn restore(pkcs8: &str) -> Option<Self> {
        let der = URL_SAFE_NO_PAD.decode(pkcs8).ok()?;
        Self::from_pkcs8(&der).ok()
    }

    fn from_pkcs8(der: &[u8]) -> Result<Self, AuthError> {
        let unusable = || AuthError::InvalidConfig("the DPoP key is not a P-256 key".to_owned());
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|_| unusable())?;
        let jwk =
            EcPublicJwk::from_uncompressed_p256(pair.public_key().as_ref()).ok_or_else(unusable)?;
        let header = json!({ "typ": PROOF_TYPE, "alg": ALGORITHM, "jwk": jwk });
        Ok(Self {
            header: URL_SAFE_NO_PAD.encode(header.to_string()),
            thumbprint: jwk.thumbprint(),
            pkcs8: URL_SAFE_NO_PAD.encode(der),
            pair,
        })
    }

    /// The key as stored with the tokens bound to it.
    pub(crate) fn pkcs8(&self) -> &str {
        &self.pkcs8
    }

    /// The JWK thumbprint tokens bound to this key carry as `cnf.jkt`.
    pub(crate) fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for `method` on `url` (its `htu` is the URL without query and fragment), with
    /// `ath` for `access_token` and the server's `nonce` when given. Every proof has a fresh
    /// random `jti`.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
        nonce: Option<String>,
    ) -> Result<HeaderValue, AuthError> {
        let claims = ProofClaims {
            jti: random_token()?,
            htm: method.to_owned(),
            htu: crate::dpop::target_uri(url),
            iat: now(),
            ath: access_token.map(access_token_hash),
            nonce,
        };
        let claims = serde_json::to_vec(&claims)
            .map_err(|e| AuthError::InvalidConfig(format!("encoding a DPoP proof: {e}")))?;
        let signing_input = format!("{}.{}", self.header, URL_SAFE_NO_PAD.encode(claims));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| AuthError::InvalidConfig("signing a DPoP proof failed".to_owned()))?;
        let proof = format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        );
        let mut value = HeaderValue::from_str(&proof)
            .map_err(|_| AuthError::InvalidConfig("unusable DPoP proof".to_owned()))?;
        value.set_sensitive(true);
        Ok(value)
    }
}

/// The latest nonce each server handed out (RFC 9449 §8, §9), by origin. The authorization
/// servers' and the resource server's are kept in separate books: a nonce is only ever sent
/// back to the origin that issued it.
#[derive(Default)]
pub(crate) struct NonceBook(Mutex<HashMap<String, String>>);

impl NonceBook {
    /// The nonce to put in the next proof for `url`.
    pub(crate) fn get(&self, url: &Url) -> Option<String> {
        lock(&self.0).get(&origin(url)).cloned()
    }

    /// Remembers the `DPoP-Nonce` of a response from `url`, if it has a usable one; whether it
    /// had.
    pub(crate) fn learn(&self, url: &Url, headers: &HeaderMap) -> bool {
        let Some(nonce) = headers
            .get(NONCE_HEADER)
            .and_then(|value| value.to_str().ok())
            .filter(|nonce| usable_nonce(nonce))
        else {
            return false;
        };
        let mut book = lock(&self.0);
        let origin = origin(url);
        if book.len() >= MAX_ORIGINS && !book.contains_key(&origin) {
            // Forgetting one costs at most one more `use_dpop_nonce` round trip.
            book.clear();
        }
        book.insert(origin, nonce.to_owned());
        true
    }
}

/// RFC 9449 §8.1: `nonce = 1*NQCHAR` (printable ASCII but `"` and `\`), within a bound.
fn usable_nonce(nonce: &str) -> bool {
    !nonce.is_empty()
        && nonce.len() <= MAX_NONCE
        && nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_key_is_the_same_key() {
        let key = ProofKey::generate().unwrap();
        let restored = ProofKey::restore(key.pkcs8()).unwrap();
        assert_eq!(restored.thumbprint(), key.thumbprint());
        assert!(ProofKey::restore("bm90IGEga2V5").is_none());
    }

    #[test]
    fn proofs_verify_with_their_jwk() {
        let key = ProofKey::generate().unwrap();
        let url = Url::parse("https://rs.example/mcp?q=1").unwrap();
        let proof = key.proof("POST", &url, Some("tok"), None).unwrap();
        let proof = proof.to_str().unwrap();
        let mut parts = proof.split('.');
        let (header, claims, signature) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        let jwk: EcPublicJwk = serde_json::from_value(header["jwk"].clone()).unwrap();
        assert_eq!(jwk.thumbprint(), key.thumbprint());
        let claims: ProofClaims =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(claims.htu, "https://rs.example/mcp");
        assert_eq!(
            claims.ath.as_deref(),
            Some(access_token_hash("tok").as_str())
        );
        let mut point = vec![4u8];
        point.extend(URL_SAFE_NO_PAD.decode(&jwk.x).unwrap());
        point.extend(URL_SAFE_NO_PAD.decode(&jwk.y).unwrap());
        let public = aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED,
            point,
        );
        let signed = &proof[..proof.rfind('.').unwrap()];
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .unwrap();
    }

    #[test]
    fn nonces_are_kept_per_origin_and_bounded() {
        let book = NonceBook::default();
        let a = Url::parse("https://a.example/token").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(NONCE_HEADER, HeaderValue::from_static("n1"));
        assert!(book.learn(&a, &headers));
        assert_eq!(
            book.get(&Url::parse("https://a.example/other").unwrap())
                .as_deref(),
            Some("n1")
        );
        assert_eq!(
            book.get(&Url::parse("https://b.example/token").unwrap()),
            None
        );
        headers.insert(NONCE_HEADER, HeaderValue::from_static("bad\"nonce"));
        assert!(!book.learn(&a, &headers));
        for i in 0..100 {
            let url = Url::parse(&format!("https://h{i}.example/")).unwrap();
            headers.insert(NONCE_HEADER, HeaderValue::from_static("n"));
            book.learn(&url, &headers);
        }
        assert!(lock(&book.0).len() <= MAX_ORIGINS);
    }
}
