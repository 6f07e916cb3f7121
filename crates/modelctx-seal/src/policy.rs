//! `RequestStateSecurity`: the policy that seals a handler's plaintext state into a claims
//! envelope and verifies it when the client echoes it back.
//!
//! Everything here mirrors the Python SDK 2.3.0 `RequestStateBoundary`: the claims, their
//! order of verification, and the single wire error. The server layer decides *when* to call
//! [`RequestStateSecurity::open`] / [`RequestStateSecurity::seal`] (only for `tools/call`,
//! `prompts/get` and `resources/read`, only when `requestState` is present and not `null`) and
//! supplies the [`RequestBinding`] for the current request.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::binding::RequestBinding;
use crate::claims::{ClaimsIn, ClaimsOut, Field};
use crate::clock::{Clock, SystemClock, epoch_seconds};
use crate::codec::{AesGcmCodec, Codec};
use crate::error::{ConfigError, InvalidRequestState, Reason, SealError};
use crate::keyring::Keyring;
use crate::lineage::{MAX_TRACE_CONTEXT_LEN, RoundLineage};
use crate::principal::Principal;
use crate::single_use::{SingleUseState, expiry};

/// Default lifetime of a sealed state: ten minutes of think time per round.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// How far in the future `iat` may lie before a token is refused (clock skew between
/// instances sharing keys).
pub const FUTURE_SKEW: Duration = Duration::from_secs(60);

/// The methods whose results may carry `requestState`; the server seals and verifies only these.
pub const INPUT_REQUIRED_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// Policy protecting `requestState`: codec, TTL, audience, principal binding and clock.
///
/// * [`RequestStateSecurity::default`] / [`RequestStateSecurity::ephemeral`]: a random key
///   known only to this process (single-process servers; state dies with the process).
/// * [`RequestStateSecurity::with_keys`]: the built-in AES-256-GCM codec over shared secrets
///   (`keys[0]` mints, all verify), for fleets and restarts.
/// * [`RequestStateSecurity::with_codec`]: bring your own crypto (KMS, HSM). TTL, request,
///   audience and principal binding are still enforced here, around the codec.
///
/// Cloning is cheap (the codec and clock are shared).
///
/// ```
/// use std::time::Duration;
/// use modelctx_seal::{RequestBinding, RequestStateSecurity};
/// use serde_json::json;
///
/// let security = RequestStateSecurity::with_keys([b"0123456789abcdef0123456789abcdef"])?
///     .with_ttl(Duration::from_secs(120))?
///     .with_audience("bookshop");
/// let args = json!({"name": "orders"});
/// let binding = RequestBinding::tool_call("provision", Some(&args));
///
/// let token = security.seal("step-2", &binding).unwrap();
/// assert_eq!(security.open(&token, &binding).unwrap(), "step-2");
///
/// let other = json!({"name": "payroll"});
/// let err = security.open(&token, &binding.with_arguments(Some(&other))).unwrap_err();
/// assert_eq!(err.to_string(), "requestState rejected: request binding");
/// # Ok::<(), modelctx_seal::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct RequestStateSecurity {
    codec: Arc<dyn Codec>,
    /// `codec` itself when it is the built-in one, whose seal takes the claims written
    /// straight into the token body instead of a copy.
    builtin: Option<Arc<AesGcmCodec>>,
    ttl: Duration,
    audience: Option<Arc<str>>,
    clock: Arc<dyn Clock>,
    ephemeral: bool,
    bind_principal: bool,
}

impl Default for RequestStateSecurity {
    /// Same as [`RequestStateSecurity::ephemeral`].
    fn default() -> Self {
        Self::ephemeral()
    }
}

impl RequestStateSecurity {
    fn from_codec(codec: Arc<dyn Codec>, ephemeral: bool) -> Self {
        Self {
            codec,
            builtin: None,
            ttl: DEFAULT_TTL,
            audience: None,
            clock: Arc::new(SystemClock),
            ephemeral,
            bind_principal: true,
        }
    }

    fn from_builtin(codec: AesGcmCodec, ephemeral: bool) -> Self {
        let codec = Arc::new(codec);
        Self {
            builtin: Some(codec.clone()),
            ..Self::from_codec(codec, ephemeral)
        }
    }

    /// Protection under a random 32-byte key generated now and held only by this process.
    ///
    /// Suits one process (stdio, a single HTTP worker): state minted before a restart or by
    /// another worker is rejected. Multi-instance deployments share keys via
    /// [`RequestStateSecurity::with_keys`].
    ///
    /// # Panics
    /// If the system random generator fails.
    pub fn ephemeral() -> Self {
        Self::from_builtin(AesGcmCodec::from_keyring(Keyring::generate()), true)
    }

    /// The built-in AES-256-GCM codec over `keys` (each ≥ 32 bytes; `keys[0]` mints).
    ///
    /// # Errors
    /// The [`Keyring::new`] validation errors (empty list, short or duplicate key).
    pub fn with_keys<I, K>(keys: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        Ok(Self::with_keyring(Keyring::new(keys)?))
    }

    /// The built-in codec over an existing [`Keyring`].
    pub fn with_keyring(ring: Keyring) -> Self {
        Self::from_builtin(AesGcmCodec::from_keyring(ring), false)
    }

    /// A custom codec. The policy still stamps and checks every claim around it, and a codec
    /// that fails or panics fails closed.
    pub fn with_codec(codec: Arc<dyn Codec>) -> Self {
        Self::from_codec(codec, false)
    }

    /// Sets the lifetime of each sealed round (default [`DEFAULT_TTL`]); every seal stamps
    /// `exp = now + ttl` afresh, so it bounds the think time of one round, not of the whole call.
    ///
    /// # Errors
    /// [`ConfigError::ZeroTtl`] for a zero duration.
    pub fn with_ttl(mut self, ttl: Duration) -> Result<Self, ConfigError> {
        if ttl.is_zero() {
            return Err(ConfigError::ZeroTtl);
        }
        self.ttl = ttl;
        Ok(self)
    }

    /// Sets the audience claim: the service identity that stops state minted by another service
    /// sharing the same keys. Servers default it to their name ([`Self::for_server`]).
    pub fn with_audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(Arc::from(audience.into()));
        self
    }

    /// Uses `clock` instead of the system clock (tests, simulations).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Ignores [`RequestBinding::principal`]: tokens carry no `p` claim and any principal may
    /// redeem them (Python `bind_principal=None`). Principal binding is on by default.
    pub fn without_principal_binding(mut self) -> Self {
        self.bind_principal = false;
        self
    }

    /// Resolves the policy a server installs, exactly as the Python `MCPServer` does:
    ///
    /// * no policy supplied → an ephemeral policy with the server name as audience;
    /// * a policy with its own audience → kept;
    /// * a policy without audience → the server name becomes the audience; if the server has no
    ///   (or an empty) name that is [`ConfigError::MissingAudience`], because unnamed servers
    ///   sharing keys would all stamp the same placeholder.
    ///
    /// # Errors
    /// [`ConfigError::MissingAudience`] as described.
    pub fn for_server(
        policy: Option<Self>,
        server_name: Option<&str>,
    ) -> Result<Self, ConfigError> {
        match policy {
            None => {
                let policy = Self::ephemeral();
                Ok(match server_name {
                    Some(name) => policy.with_audience(name),
                    None => policy,
                })
            }
            Some(policy) if policy.audience.is_some() => Ok(policy),
            Some(policy) => match server_name {
                Some(name) if !name.is_empty() => Ok(policy.with_audience(name)),
                _ => Err(ConfigError::MissingAudience),
            },
        }
    }

    /// The per-round lifetime.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The audience stamped into and required of every token, if any.
    pub fn audience(&self) -> Option<&str> {
        self.audience.as_deref()
    }

    /// Whether the key is process-local ([`Self::ephemeral`] / [`Self::default`]) rather than
    /// operator-supplied keys or codec.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// Whether tokens are bound to [`RequestBinding::principal`].
    pub fn binds_principal(&self) -> bool {
        self.bind_principal
    }

    /// The codec in use.
    pub fn codec(&self) -> &Arc<dyn Codec> {
        &self.codec
    }

    /// The clock in use.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    fn principal<'b>(&self, binding: &RequestBinding<'b>) -> Option<&'b Principal> {
        if self.bind_principal {
            binding.principal()
        } else {
            None
        }
    }

    /// Seals the handler's plaintext `state` for `binding`, stamped with the clock's time.
    ///
    /// # Errors
    /// [`SealError`] when randomness or the codec fails; answer [`crate::SEAL_FAILURE_CODE`].
    pub fn seal(&self, state: &str, binding: &RequestBinding<'_>) -> Result<String, SealError> {
        self.seal_at(state, binding, self.clock.now())
    }

    /// [`Self::seal`] at an explicit time.
    ///
    /// # Errors
    /// As [`Self::seal`].
    pub fn seal_at(
        &self,
        state: &str,
        binding: &RequestBinding<'_>,
        now: SystemTime,
    ) -> Result<String, SealError> {
        self.seal_lineage_at(state, binding, &RoundLineage::FIRST, now)
    }

    /// [`Self::seal`] for round `lineage.round()` of a multi-round call, carrying the call's
    /// first-round trace context: the token gets the `r` claim (from round 2 on) and the `tc`
    /// claim (when there is a trace context), which [`Self::open_round`] reads back. Round 1
    /// without trace context seals exactly what [`Self::seal`] does. See [`RoundLineage`].
    ///
    /// # Errors
    /// As [`Self::seal`], and [`SealError::TraceContextTooLong`] for a trace context longer
    /// than [`crate::MAX_TRACE_CONTEXT_LEN`].
    pub fn seal_round(
        &self,
        state: &str,
        binding: &RequestBinding<'_>,
        lineage: &RoundLineage,
    ) -> Result<String, SealError> {
        self.seal_lineage_at(state, binding, lineage, self.clock.now())
    }

    fn seal_lineage_at(
        &self,
        state: &str,
        binding: &RequestBinding<'_>,
        lineage: &RoundLineage,
        now: SystemTime,
    ) -> Result<String, SealError> {
        let trace_context = lineage.trace_context();
        if trace_context.is_some_and(|tc| tc.len() > MAX_TRACE_CONTEXT_LEN) {
            return Err(SealError::TraceContextTooLong);
        }
        let args = binding.digest();
        let principal = match self.principal(binding) {
            Some(principal) => Some(principal.claim()?),
            None => None,
        };
        let iat = epoch_seconds(now);
        let claims = ClaimsOut {
            iat,
            exp: iat + self.ttl.as_secs_f64(),
            method: binding.method(),
            target: binding.target(),
            args: args.as_str(),
            state,
            audience: self.audience.as_deref(),
            principal: principal
                .as_ref()
                .map(|p| std::str::from_utf8(p).unwrap_or_default()),
            round: (lineage.round() > 1).then_some(lineage.round()),
            trace_context,
        };
        let len_hint = 160 + state.len() + binding.target().len();
        let sealed = catch_unwind(AssertUnwindSafe(|| match &self.builtin {
            Some(builtin) => builtin.seal_with(len_hint, |raw| claims.write(raw)),
            None => {
                let mut buf = Vec::with_capacity(len_hint);
                claims.write(&mut buf);
                self.codec.seal(&buf)
            }
        }));
        sealed.unwrap_or(Err(SealError::CodecPanicked))
    }

    /// Verifies `token` for `binding` and returns the plaintext state the server sealed.
    ///
    /// Checks, in the Python SDK's order: codec (format, key, seal) → envelope (`v == 1`,
    /// `iat`/`exp` present, `s` a string) → `iat ≤ now + 60 s` → `now < exp` → method, target
    /// and argument digest → audience → principal presence and match.
    ///
    /// # Errors
    /// [`InvalidRequestState`] with the failing [`Reason`]; every reason maps to the same wire
    /// error.
    pub fn open(
        &self,
        token: &str,
        binding: &RequestBinding<'_>,
    ) -> Result<String, InvalidRequestState> {
        self.open_at(token, binding, self.clock.now())
    }

    /// [`Self::open`] at an explicit time.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_at(
        &self,
        token: &str,
        binding: &RequestBinding<'_>,
        now: SystemTime,
    ) -> Result<String, InvalidRequestState> {
        self.verify(token, binding, now, |_, _| ())
            .map(|(state, ())| state)
    }

    /// [`Self::open`], also returning the token's [`RoundLineage`]: the round that sealed it
    /// (1 for a token without the `r` claim, such as the Python SDK's) and the call's first-round
    /// trace context. The retry being served is round `lineage.round() + 1`
    /// ([`RoundLineage::next`]).
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_round(
        &self,
        token: &str,
        binding: &RequestBinding<'_>,
    ) -> Result<(String, RoundLineage), InvalidRequestState> {
        self.verify(token, binding, self.clock.now(), |_, claims| {
            RoundLineage::from_claims(&claims.r, &claims.tc)
        })
    }

    /// [`Self::open`] for a round that may be redeemed only once: also returns the token's
    /// [`crate::ReplayKey`] and expiry, which the server records in its replay guard *before*
    /// the handler runs; a key already recorded is a replay ([`Reason::Replayed`]). The checks
    /// are exactly [`Self::open`]'s — without a guard a token can be redeemed until it expires.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_single_use(
        &self,
        token: &str,
        binding: &RequestBinding<'_>,
    ) -> Result<SingleUseState, InvalidRequestState> {
        self.open_single_use_at(token, binding, self.clock.now())
    }

    /// [`Self::open_single_use`] at an explicit time.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_single_use_at(
        &self,
        token: &str,
        binding: &RequestBinding<'_>,
        now: SystemTime,
    ) -> Result<SingleUseState, InvalidRequestState> {
        let (state, (replay_key, exp, lineage)) =
            self.verify(token, binding, now, |exp, claims| {
                // A codec that panics naming the token fails closed, as one that panics opening it.
                let key = catch_unwind(AssertUnwindSafe(|| self.codec.replay_key(token)));
                (key, exp, RoundLineage::from_claims(&claims.r, &claims.tc))
            })?;
        Ok(SingleUseState {
            state,
            replay_key: replay_key.map_err(|_| Reason::Codec)?,
            expires_at: expiry(exp),
            lineage,
        })
    }

    /// Every check of [`Self::open`]; `accepted` runs once they all passed, with the `exp`
    /// claim and the claims. Generic so that plain [`Self::open`] pays nothing for single use
    /// or the round claims.
    fn verify<T>(
        &self,
        token: &str,
        binding: &RequestBinding<'_>,
        now: SystemTime,
        accepted: impl FnOnce(f64, &ClaimsIn<'_>) -> T,
    ) -> Result<(String, T), InvalidRequestState> {
        let payload = match catch_unwind(AssertUnwindSafe(|| self.codec.unseal(token))) {
            Ok(result) => result?,
            Err(_) => return Err(Reason::Codec.into()),
        };
        let mut claims = ClaimsIn::parse(&payload).map_err(|_| Reason::Malformed)?;
        // Python reads claims["v"], ["iat"], ["exp"], ["s"] first: a missing one is malformed.
        if claims.v.as_num() != Some(1.0) || claims.iat.is_absent() || claims.exp.is_absent() {
            return Err(Reason::Malformed.into());
        }
        let Field::Str(state) = std::mem::take(&mut claims.s) else {
            return Err(Reason::Malformed.into());
        };
        let now = epoch_seconds(now);
        // Accept-conditions are stated positively, so a non-number fails them.
        if !claims
            .iat
            .as_num()
            .is_some_and(|iat| iat <= now + FUTURE_SKEW.as_secs_f64())
        {
            return Err(Reason::NotYetValid.into());
        }
        let Some(exp) = claims.exp.as_num().filter(|exp| now < *exp) else {
            return Err(Reason::Expired.into());
        };
        if claims.m.as_str() != Some(binding.method())
            || claims.t.as_str() != Some(binding.target())
            || claims.a.as_str() != Some(binding.arguments_digest())
        {
            return Err(Reason::RequestBinding.into());
        }
        let audience_ok = match self.audience.as_deref() {
            Some(audience) => claims.aud.as_str() == Some(audience),
            None => claims.aud.is_none(),
        };
        if !audience_ok {
            return Err(Reason::Audience.into());
        }
        let principal = self.principal(binding);
        if claims.p.is_none() != principal.is_none() {
            return Err(Reason::PrincipalDrift.into());
        }
        if let Some(principal) = principal
            && !claims
                .p
                .as_str()
                .is_some_and(|claim| principal.matches(claim))
        {
            return Err(Reason::Principal.into());
        }
        let accepted = accepted(exp, &claims);
        Ok((state.into_owned(), accepted))
    }

    /// Opens the raw `params.requestState` JSON value as the Python boundary does: absent or
    /// `null` → `Ok(None)` (nothing to verify), a string → [`Self::open`], anything else →
    /// [`Reason::NonString`].
    ///
    /// # Errors
    /// As [`Self::open`], plus [`Reason::NonString`].
    pub fn open_value(
        &self,
        value: Option<&Value>,
        binding: &RequestBinding<'_>,
    ) -> Result<Option<String>, InvalidRequestState> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(token)) => self.open(token, binding).map(Some),
            Some(_) => Err(Reason::NonString.into()),
        }
    }
}

impl fmt::Debug for RequestStateSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestStateSecurity")
            .field("codec", &self.codec)
            .field("ttl", &self.ttl)
            .field("audience", &self.audience)
            .field("clock", &self.clock)
            .field("ephemeral", &self.ephemeral)
            .field("bind_principal", &self.bind_principal)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8; 32] = b"builtin-path-secret-0123456789ab";

    /// The built-in codec seals through `seal_with` (claims written into the token body); the
    /// same codec behind `with_codec` goes through `Codec::seal`. Each opens the other's
    /// tokens, and the plaintext the codec sees is the same claims envelope.
    #[test]
    fn built_in_and_trait_paths_seal_the_same_envelope() {
        let direct = RequestStateSecurity::with_keys([KEY])
            .unwrap()
            .with_audience("svc");
        assert!(direct.builtin.is_some());
        let via_trait =
            RequestStateSecurity::with_codec(Arc::new(AesGcmCodec::new([KEY]).unwrap()))
                .with_audience("svc");
        assert!(via_trait.builtin.is_none());
        let args = serde_json::json!({"q": "é\"x"});
        let binding = RequestBinding::tool_call("t", Some(&args));
        let state = r#"{"v":3,"asked":{"k":"\u00e9"}}"#;
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let a = direct.seal_at(state, &binding, now).unwrap();
        let b = via_trait.seal_at(state, &binding, now).unwrap();
        assert_ne!(a, b, "fresh nonces");
        assert_eq!(via_trait.open_at(&a, &binding, now).unwrap(), state);
        assert_eq!(direct.open_at(&b, &binding, now).unwrap(), state);
        let codec = AesGcmCodec::new([KEY]).unwrap();
        assert_eq!(codec.unseal(&a).unwrap(), codec.unseal(&b).unwrap());
    }
}
