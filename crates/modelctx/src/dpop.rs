//! What the DPoP client (RFC 9449) and the resource server that verifies DPoP-bound tokens share:
//! the proof's claims and header shape, the JWK thumbprint (RFC 7638) that binds a token to a key,
//! and the access-token hash (`ath`). One definition, so the two sides cannot drift apart.

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

/// The `typ` header of every DPoP proof (RFC 9449 §4.2).
pub(crate) const PROOF_TYPE: &str = "dpop+jwt";

/// The HTTP header that carries a proof, and the one a server answers a fresh nonce in.
pub(crate) const PROOF_HEADER: &str = "DPoP";
pub(crate) const NONCE_HEADER: &str = "DPoP-Nonce";

/// The error code of a server that wants a (fresh) nonce (RFC 9449 §8, §9).
pub(crate) const USE_NONCE_ERROR: &str = "use_dpop_nonce";

/// The one proof algorithm made and accepted: ES256 (asymmetric, as RFC 9449 §4.2 demands;
/// `none` and the HMAC algorithms would let anyone who saw a proof forge the next).
pub(crate) const PROOF_ALG: &str = "ES256";

/// The largest proof read: an ES256 proof is under 1 KiB, and nothing is parsed before this
/// bound is checked.
pub(crate) const MAX_PROOF_BYTES: usize = 8 * 1024;

/// The public half of an ES256 key as a JWK (P-256, uncompressed point split into `x` and `y`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EcPublicJwk {
    pub(crate) kty: String,
    pub(crate) crv: String,
    pub(crate) x: String,
    pub(crate) y: String,
}

impl EcPublicJwk {
    /// The JWK of a P-256 public key given as the uncompressed SEC1 point (`04 || x || y`), as
    /// aws-lc-rs hands it out. `None` for anything else.
    pub(crate) fn from_uncompressed_p256(point: &[u8]) -> Option<Self> {
        let (&tag, xy) = point.split_first()?;
        if tag != 0x04 || xy.len() != 64 {
            return None;
        }
        let (x, y) = xy.split_at(32);
        Some(Self {
            kty: "EC".to_owned(),
            crv: "P-256".to_owned(),
            x: URL_SAFE_NO_PAD.encode(x),
            y: URL_SAFE_NO_PAD.encode(y),
        })
    }

    /// The uncompressed SEC1 point (`04 || x || y`) of a P-256 JWK, as aws-lc-rs verifies with.
    /// `None` unless the key is an EC P-256 key with 32-byte coordinates.
    pub(crate) fn to_uncompressed_p256(&self) -> Option<[u8; 65]> {
        if self.kty != "EC" || self.crv != "P-256" {
            return None;
        }
        let mut point = [0u8; 65];
        point[0] = 0x04;
        let x = URL_SAFE_NO_PAD.decode(&self.x).ok()?;
        let y = URL_SAFE_NO_PAD.decode(&self.y).ok()?;
        if x.len() != 32 || y.len() != 32 {
            return None;
        }
        point[1..33].copy_from_slice(&x);
        point[33..].copy_from_slice(&y);
        Some(point)
    }

    /// The RFC 7638 thumbprint: base64url(SHA-256) of the required members in lexicographic
    /// order with no whitespace. It is what `cnf.jkt` of a DPoP-bound token holds.
    pub(crate) fn thumbprint(&self) -> String {
        // The members are base64url text or fixed names, so no JSON escaping can be needed; the
        // serializer is used anyway so a hostile `kty`/`crv` cannot break out of its string.
        let canonical = format!(
            r#"{{"crv":{},"kty":{},"x":{},"y":{}}}"#,
            json_string(&self.crv),
            json_string(&self.kty),
            json_string(&self.x),
            json_string(&self.y),
        );
        URL_SAFE_NO_PAD.encode(digest(&SHA256, canonical.as_bytes()))
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The claims of a DPoP proof (RFC 9449 §4.2). `ath` is present on requests to a resource
/// server, `nonce` when a server asked for one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProofClaims {
    pub(crate) jti: String,
    pub(crate) htm: String,
    pub(crate) htu: String,
    pub(crate) iat: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ath: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nonce: Option<String>,
}

/// The JOSE header of a proof: the members that are checked.
#[derive(Deserialize)]
struct ProofHeader {
    typ: String,
    alg: String,
    jwk: serde_json::Map<String, serde_json::Value>,
}

/// A proof whose form and signature are valid: the key that signed it and what it claims. Whether
/// the claims fit the request (method, URL, time, token, nonce, replay) is the verifier's part.
#[derive(Debug, Clone)]
pub(crate) struct SignedProof {
    pub(crate) key: EcPublicJwk,
    pub(crate) claims: ProofClaims,
}

/// Parses a proof and checks its form and signature (RFC 9449 §4.3 items 1–6): one compact JWS
/// of at most [`MAX_PROOF_BYTES`], `typ` `dpop+jwt`, `alg` ES256, a public P-256 `jwk` (no
/// private member), signed by that key, with the required claims. The error is a short reason
/// fit for an `error_description`.
pub(crate) fn verify_signed_proof(proof: &str) -> Result<SignedProof, &'static str> {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    if proof.len() > MAX_PROOF_BYTES {
        return Err("the proof is too large");
    }
    let mut parts = proof.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the proof is not a compact JWS");
    };
    let decode = |part: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| "the proof is not base64url")
    };
    let header: ProofHeader =
        serde_json::from_slice(&decode(header)?).map_err(|_| "the proof header is malformed")?;
    if header.typ != PROOF_TYPE {
        return Err("the proof's typ is not dpop+jwt");
    }
    if header.alg != PROOF_ALG {
        return Err("the proof's alg is not ES256");
    }
    // A JWK with its private part is a leaked key, never a proof key (RFC 9449 §4.3 item 6).
    if header.jwk.contains_key("d") {
        return Err("the proof's jwk holds a private key");
    }
    let key: EcPublicJwk = serde_json::from_value(serde_json::Value::Object(header.jwk))
        .map_err(|_| "the proof's jwk is not an EC key")?;
    let point = key
        .to_uncompressed_p256()
        .ok_or("the proof's jwk is not a P-256 key")?;
    let signed = &proof[..proof.len() - signature.len() - 1];
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(signed.as_bytes(), &decode(signature)?)
        .map_err(|_| "the proof's signature is invalid")?;
    let claims: ProofClaims = serde_json::from_slice(&decode(payload)?)
        .map_err(|_| "the proof's claims are malformed")?;
    if claims.jti.is_empty() {
        return Err("the proof has no jti");
    }
    Ok(SignedProof { key, claims })
}

/// `ath`: base64url(SHA-256(access token)), binding a proof to the token it is sent with.
pub(crate) fn access_token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, token.as_bytes()))
}

/// The `htu` of a request: its URL without query and fragment (RFC 9449 §4.2, §4.3 item 9).
pub(crate) fn target_uri(url: &url::Url) -> String {
    let mut bare = url.clone();
    bare.set_query(None);
    bare.set_fragment(None);
    bare.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7638 §3.1 gives an RSA example only; this is the P-256 vector of RFC 9449 §4.1's
    /// example key, whose thumbprint the RFC prints in §6.1 (`cnf.jkt`).
    #[test]
    fn thumbprint_matches_rfc_9449() {
        let jwk = EcPublicJwk {
            kty: "EC".to_owned(),
            crv: "P-256".to_owned(),
            x: "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs".to_owned(),
            y: "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA".to_owned(),
        };
        assert_eq!(
            jwk.thumbprint(),
            "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        );
    }

    /// RFC 9449 §7.1's example: the token `Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU` and its `ath`.
    #[test]
    fn access_token_hash_matches_rfc_9449() {
        assert_eq!(
            access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn only_uncompressed_p256_points_make_a_jwk() {
        let mut point = vec![0x04];
        point.extend([1u8; 64]);
        assert!(EcPublicJwk::from_uncompressed_p256(&point).is_some());
        point[0] = 0x02;
        assert!(EcPublicJwk::from_uncompressed_p256(&point).is_none());
        assert!(EcPublicJwk::from_uncompressed_p256(&point[..33]).is_none());
    }

    #[test]
    fn the_target_uri_drops_query_and_fragment() {
        let url = url::Url::parse("https://rs.example/mcp?x=1#frag").unwrap();
        assert_eq!(target_uri(&url), "https://rs.example/mcp");
    }
}
