//! DPoP-bound access tokens (RFC 9449) at the resource server: the proof that comes with each
//! request, server-issued nonces, and the replay cache of proof ids.
//!
//! A token whose `cnf.jkt` names a key (a JWT claim, or the introspection response's `cnf`) is
//! accepted only as `Authorization: DPoP <token>` with one `DPoP` header holding a proof signed by
//! that key for this very request: its method (`htm`), its URL (`htu`), this token (`ath`), made
//! within a short window (`iat`), never seen before (`jti`), and carrying a nonce this server
//! issued when nonces are on. A stolen token is useless without the private key, and a stolen
//! proof is useless for any other request or after its window.
//!
//! What `htu` is compared with: the scheme and authority of the configured resource URI (the
//! public URL, so neither the `Host` a proxy forwards nor `X-Forwarded-*` headers are trusted),
//! then the path the request arrived on, query and fragment dropped, both sides normalized
//! (RFC 3986 §6.2.2–6.2.3: case, default port, dot segments). A proxy that rewrites the path
//! must therefore serve the endpoint at the path the resource URI names.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::hmac;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use modelctx_seal::ReplayKey;

use crate::dpop::{self, SignedProof};
use crate::server::single_use::{MemoryReplayGuard, Redemption, ReplayGuard};

/// The resource server's policy on DPoP ([`Dpop::allowed`], [`Dpop::required`]): whether Bearer
/// tokens are still accepted next to DPoP-bound ones. (The client's side of DPoP, when it binds
/// its tokens, is `client::auth::DpopUse`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DpopPolicy {
    /// Bearer tokens and DPoP-bound tokens (each with its own scheme). A DPoP-bound token sent
    /// as Bearer is refused under either policy.
    Allowed,
    /// DPoP-bound tokens only; a Bearer request gets a `DPoP` challenge.
    Required,
}

/// How the resource server checks DPoP proofs ([`super::ResourceServer::dpop`]).
///
/// Without it, DPoP-bound tokens are refused (the server cannot check their proofs) and only
/// Bearer tokens are accepted.
#[derive(Debug, Clone)]
pub struct Dpop {
    pub(super) policy: DpopPolicy,
    max_age: Duration,
    future_skew: Duration,
    replay: Arc<dyn ReplayGuard>,
    nonces: Option<Nonces>,
}

/// The default bound of the in-memory replay cache of proof ids: with the default 60 s window
/// (and 5 s of skew) it remembers every proof up to about 1 500 DPoP requests a second (about
/// 10 MB when full).
pub const DEFAULT_REPLAY_CAPACITY: usize = 100_000;

impl Dpop {
    fn new(policy: DpopPolicy) -> Self {
        Self {
            policy,
            max_age: Duration::from_secs(60),
            future_skew: Duration::from_secs(5),
            replay: Arc::new(MemoryReplayGuard::new(DEFAULT_REPLAY_CAPACITY)),
            nonces: None,
        }
    }

    /// Accepts DPoP-bound tokens with their proofs, and Bearer tokens.
    pub fn allowed() -> Self {
        Self::new(DpopPolicy::Allowed)
    }

    /// Accepts DPoP-bound tokens with their proofs only.
    pub fn required() -> Self {
        Self::new(DpopPolicy::Required)
    }

    /// The policy: whether Bearer tokens are accepted too.
    pub fn policy(&self) -> DpopPolicy {
        self.policy
    }

    /// How old a proof's `iat` may be (default 60 s). With [`Dpop::future_skew`] it is also how
    /// long after its arrival a proof id is remembered to refuse replays, so it bounds the replay
    /// cache's size at a given rate.
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// How far in the future a proof's `iat` may be, for clocks ahead of ours (default 5 s).
    #[must_use]
    pub fn future_skew(mut self, skew: Duration) -> Self {
        self.future_skew = skew;
        self
    }

    /// Where proof ids (`jti`) are remembered until their proof is too old (default: a
    /// [`MemoryReplayGuard`] of [`DEFAULT_REPLAY_CAPACITY`]). Instances behind one load balancer
    /// must share one, e.g. a `RedisReplayGuard` (feature `single-use-redis`) with a prefix of
    /// its own, or a proof refused as a replay by one instance is accepted by the next. A full
    /// in-memory guard forgets its oldest ids and refuses proofs as old as them; a guard that
    /// cannot answer gets the request a 503.
    #[must_use]
    pub fn replay_guard(mut self, guard: Arc<dyn ReplayGuard>) -> Self {
        self.replay = guard;
        self
    }

    /// Demands a nonce this server issued in every proof (RFC 9449 §9): a proof without one, or
    /// with a stale one, gets 401 `use_dpop_nonce` and a fresh nonce in `DPoP-Nonce`. Nonces
    /// are stateless: a time slot of `period` and its HMAC under a random key, accepted during
    /// their slot and the next (so for `period` to `2 × period`). Instances behind one load
    /// balancer share the key with [`Dpop::nonce_key`].
    #[must_use]
    pub fn require_nonce(mut self, period: Duration) -> Self {
        let key = match self.nonces.take() {
            Some(nonces) => nonces.key,
            // From the kernel, like the sealing key: nothing seeds a generator at start-up. Without
            // system randomness no nonce is issued and every proof is refused (fail closed),
            // never a guessable key.
            None => {
                let mut secret = [0u8; 32];
                match getrandom::fill(&mut secret) {
                    Ok(()) => Some(hmac::Key::new(hmac::HMAC_SHA256, &secret)),
                    Err(error) => {
                        tracing::error!(%error, "no system randomness for DPoP nonces: every proof is refused");
                        None
                    }
                }
            }
        };
        self.nonces = Some(Nonces {
            key,
            period: period.max(Duration::from_secs(1)),
        });
        self
    }

    /// Demands nonces (as [`Dpop::require_nonce`], with a 5-minute period unless set) made
    /// with this secret key, which every instance of a fleet holds (at least 32 random bytes).
    #[must_use]
    pub fn nonce_key(mut self, secret: &[u8]) -> Self {
        let period = self
            .nonces
            .as_ref()
            .map_or(Duration::from_secs(300), |nonces| nonces.period);
        self.nonces = Some(Nonces {
            key: Some(hmac::Key::new(hmac::HMAC_SHA256, secret)),
            period,
        });
        self
    }

    /// A fresh nonce, when nonces are on (and could be keyed).
    pub(super) fn fresh_nonce(&self) -> Option<String> {
        self.nonces.as_ref().and_then(|nonces| nonces.issue(now()))
    }

    /// Checks the request's proof for everything but its key binding and replay (RFC 9449 §4.3):
    /// exactly one `DPoP` header, its form and signature, `htm`, `htu`, `iat`, `ath`, nonce.
    pub(super) fn check_proof(
        &self,
        headers: &HeaderMap,
        method: &http::Method,
        target: &str,
        token: &str,
    ) -> Result<SignedProof, ProofRefusal> {
        let mut values = headers.get_all(dpop::PROOF_HEADER).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(ProofRefusal::Invalid(
                "exactly one DPoP header must hold the proof",
            ));
        };
        if value.len() > dpop::MAX_PROOF_BYTES {
            return Err(ProofRefusal::Invalid("the proof is too large"));
        }
        let proof = value
            .to_str()
            .map_err(|_| ProofRefusal::Invalid("the proof is not ASCII"))?;
        let proof = dpop::verify_signed_proof(proof).map_err(ProofRefusal::Invalid)?;
        let claims = &proof.claims;
        if claims.htm != method.as_str() {
            return Err(ProofRefusal::Invalid("the proof is for another method"));
        }
        if !same_target(&claims.htu, target) {
            return Err(ProofRefusal::Invalid("the proof is for another URL"));
        }
        let now = now();
        let too_old = claims.iat.saturating_add(self.max_age.as_secs()) < now;
        let too_new = claims.iat > now.saturating_add(self.future_skew.as_secs());
        if too_old || too_new {
            return Err(ProofRefusal::Invalid(
                "the proof's iat is outside the accepted window",
            ));
        }
        if claims.ath.as_deref() != Some(dpop::access_token_hash(token).as_str()) {
            return Err(ProofRefusal::Invalid(
                "the proof's ath does not match the token",
            ));
        }
        if let Some(nonces) = &self.nonces {
            match claims.nonce.as_deref() {
                None => return Err(ProofRefusal::UseNonce("a nonce is required")),
                Some(nonce) if !nonces.accepts(nonce, now) => {
                    return Err(ProofRefusal::UseNonce("the nonce is stale or unknown"));
                }
                Some(_) => {}
            }
        }
        Ok(proof)
    }

    /// Records the proof's id until the proof is too old; a second use is a replay. Called last,
    /// once the request passed every other check, so refused requests fill nothing.
    pub(super) async fn redeem(&self, proof: &SignedProof) -> Result<(), ProofRefusal> {
        // Keyed by the signing key too: one client's ids never collide with another's.
        let mut named = proof.key.thumbprint().into_bytes();
        named.push(0);
        named.extend_from_slice(proof.claims.jti.as_bytes());
        let key = ReplayKey::digest(&named);
        // Accepted while `now <= iat + max_age`, so remembered one second past that. The client
        // chose `iat` (up to `future_skew` ahead), so the guard also gets the latest expiry a
        // proof arriving now could have, from our clock: a bounded guard keeps and forgets ids
        // in arrival order by it, so proofs dated ahead cannot outlast honest ones
        // (`ReplayGuard::redeem_presented`).
        let second = Duration::from_secs(1);
        let expires = UNIX_EPOCH + Duration::from_secs(proof.claims.iat) + self.max_age + second;
        let latest = SystemTime::now() + self.max_age + self.future_skew + second;
        match self.replay.redeem_presented(&key, expires, latest).await {
            Ok(Redemption::First) => Ok(()),
            Ok(Redemption::Replay) => Err(ProofRefusal::Invalid("the proof was already used")),
            Ok(_) => Err(ProofRefusal::Invalid(
                "the proof is too old to be checked for replay",
            )),
            Err(error) => Err(ProofRefusal::Unavailable(error.to_string())),
        }
    }
}

/// Why a proof was refused.
#[derive(Debug)]
pub(super) enum ProofRefusal {
    /// 401 `invalid_dpop_proof`.
    Invalid(&'static str),
    /// 401 `use_dpop_nonce` with a fresh nonce.
    UseNonce(&'static str),
    /// The replay guard could not answer: 503.
    Unavailable(String),
}

/// Whether a proof's `htu` names `target` once both are normalized and stripped of query and
/// fragment (RFC 9449 §4.3 item 9).
fn same_target(htu: &str, target: &str) -> bool {
    match (url::Url::parse(htu), url::Url::parse(target)) {
        (Ok(htu), Ok(target)) => dpop::target_uri(&htu) == dpop::target_uri(&target),
        _ => false,
    }
}

/// Stateless nonces: `base64url(slot ‖ HMAC(key, slot)[..16])`, slot = Unix time / period.
#[derive(Clone)]
struct Nonces {
    /// `None`: the system had no randomness to key them; no nonce is issued or accepted.
    key: Option<hmac::Key>,
    period: Duration,
}

impl std::fmt::Debug for Nonces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nonces")
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

const NONCE_TAG_LEN: usize = 16;

impl Nonces {
    fn slot(&self, now: u64) -> u64 {
        now / self.period.as_secs().max(1)
    }

    fn tag(&self, slot: u64) -> Option<[u8; NONCE_TAG_LEN]> {
        let key = self.key.as_ref()?;
        let mut tag = [0u8; NONCE_TAG_LEN];
        tag.copy_from_slice(&hmac::sign(key, &slot.to_be_bytes()).as_ref()[..NONCE_TAG_LEN]);
        Some(tag)
    }

    fn issue(&self, now: u64) -> Option<String> {
        let slot = self.slot(now);
        let mut bytes = [0u8; 8 + NONCE_TAG_LEN];
        bytes[..8].copy_from_slice(&slot.to_be_bytes());
        bytes[8..].copy_from_slice(&self.tag(slot)?);
        Some(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// A nonce of the current slot or the one before, made with our key.
    fn accepts(&self, nonce: &str, now: u64) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(nonce) else {
            return false;
        };
        let Ok(bytes) = <[u8; 8 + NONCE_TAG_LEN]>::try_from(bytes.as_slice()) else {
            return false;
        };
        let mut slot = [0u8; 8];
        slot.copy_from_slice(&bytes[..8]);
        let slot = u64::from_be_bytes(slot);
        let current = self.slot(now);
        (slot == current || slot.checked_add(1) == Some(current))
            && self.tag(slot).is_some_and(|tag| {
                aws_lc_rs::constant_time::verify_slices_are_equal(&tag, &bytes[8..]).is_ok()
            })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_live_for_their_slot_and_the_next() {
        let nonces = Nonces {
            key: Some(hmac::Key::new(hmac::HMAC_SHA256, b"k")),
            period: Duration::from_secs(300),
        };
        let t = 1_000_000 * 300;
        let nonce = nonces.issue(t).unwrap();
        assert!(nonces.accepts(&nonce, t));
        assert!(nonces.accepts(&nonce, t + 599));
        assert!(!nonces.accepts(&nonce, t + 600), "two slots later: stale");
        assert!(!nonces.accepts(&nonce, t - 1), "from the future");
        let other = Nonces {
            key: Some(hmac::Key::new(hmac::HMAC_SHA256, b"other")),
            period: Duration::from_secs(300),
        };
        assert!(!other.accepts(&nonce, t), "another key");
        assert!(!nonces.accepts("garbage", t));
        assert!(!nonces.accepts("", t));
    }

    /// Without system randomness there is no key: no nonce is issued and none is accepted
    /// (fail closed), rather than nonces anyone could compute.
    #[test]
    fn keyless_nonces_issue_and_accept_nothing() {
        let keyed = Nonces {
            key: Some(hmac::Key::new(hmac::HMAC_SHA256, b"k")),
            period: Duration::from_secs(300),
        };
        let keyless = Nonces {
            key: None,
            period: Duration::from_secs(300),
        };
        let t = 1_000_000 * 300;
        assert_eq!(keyless.issue(t), None);
        assert!(!keyless.accepts(&keyed.issue(t).unwrap(), t));
    }

    #[test]
    fn targets_are_compared_normalized_without_query() {
        assert!(same_target(
            "HTTPS://RS.example:443/mcp?x=1#f",
            "https://rs.example/mcp"
        ));
        assert!(same_target(
            "https://rs.example/a/../mcp",
            "https://rs.example/mcp"
        ));
        assert!(!same_target(
            "https://rs.example/other",
            "https://rs.example/mcp"
        ));
        assert!(!same_target(
            "http://rs.example/mcp",
            "https://rs.example/mcp"
        ));
        assert!(!same_target(
            "https://evil.example/mcp",
            "https://rs.example/mcp"
        ));
        assert!(!same_target("not a url", "https://rs.example/mcp"));
    }

    /// A proof (its signature already checked) with this `jti` and `iat`, by one client's key.
    fn proof(jti: &str, iat: u64) -> SignedProof {
        SignedProof {
            key: dpop::EcPublicJwk::from_uncompressed_p256(&[4; 65]).unwrap(),
            claims: dpop::ProofClaims {
                jti: jti.to_owned(),
                htm: "POST".into(),
                htu: "https://rs.example/mcp".into(),
                iat,
                ath: None,
                nonce: None,
            },
        }
    }

    /// The replay cache stays within its bound however many proofs arrive: the in-memory guard
    /// it defaults to forgets its oldest ids and refuses proofs as old as them.
    #[tokio::test]
    async fn the_replay_cache_is_bounded() {
        let dpop = Dpop::allowed().replay_guard(Arc::new(MemoryReplayGuard::new(2)));
        let iat = now();
        assert!(dpop.redeem(&proof("a", iat - 2)).await.is_ok());
        assert!(matches!(
            dpop.redeem(&proof("a", iat - 2)).await,
            Err(ProofRefusal::Invalid("the proof was already used"))
        ));
        assert!(dpop.redeem(&proof("b", iat - 1)).await.is_ok());
        // Full: a newer proof pushes out the oldest id, and proofs as old are refused from then on.
        assert!(dpop.redeem(&proof("c", iat)).await.is_ok());
        assert!(matches!(
            dpop.redeem(&proof("a", iat - 2)).await,
            Err(ProofRefusal::Invalid(
                "the proof is too old to be checked for replay"
            ))
        ));
        assert!(matches!(
            dpop.redeem(&proof("b", iat - 1)).await,
            Err(ProofRefusal::Invalid("the proof was already used"))
        ));
    }

    /// A flood of proofs dated ahead (`iat` = now + the allowed skew) does not push the honest
    /// proof that arrived after them out of a full replay cache: ids go in the order they
    /// arrived, so the oldest proof of the flood is forgotten, and its replay is refused too.
    #[tokio::test]
    async fn proofs_dated_ahead_do_not_push_honest_ones_out() {
        let dpop = Dpop::allowed().replay_guard(Arc::new(MemoryReplayGuard::new(3)));
        let ahead = now() + 5;
        assert!(dpop.redeem(&proof("flood-1", ahead)).await.is_ok());
        assert!(dpop.redeem(&proof("flood-2", ahead)).await.is_ok());
        let honest = now();
        assert!(dpop.redeem(&proof("honest", honest)).await.is_ok());
        // Full: one more pushes out the first arrival.
        assert!(dpop.redeem(&proof("flood-3", ahead)).await.is_ok());
        assert!(matches!(
            dpop.redeem(&proof("honest", honest)).await,
            Err(ProofRefusal::Invalid("the proof was already used"))
        ));
        assert!(matches!(
            dpop.redeem(&proof("flood-1", ahead)).await,
            Err(ProofRefusal::Invalid(
                "the proof is too old to be checked for replay"
            ))
        ));
    }
}
