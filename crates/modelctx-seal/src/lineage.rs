//! Where a sealed round stands in its multi-round call: which round sealed it, and the trace
//! context of the call's first round. Two optional claims beyond the Python SDK's envelope.
//!
//! * `"r"`: the number of the round that sealed the token, written only from round 2 on (a
//!   token without it was sealed by round 1, or by a peer that does not count: the Python SDK).
//!   Its retry is round `r + 1`. It is inside the AEAD, so a client cannot make a retry claim to
//!   be another round.
//! * `"tc"`: an opaque string (the server writes the W3C `traceparent` of the first round's
//!   span), carried unchanged from round to round so that every later round can link to the
//!   first even when another instance sharing the keys serves it. This crate never interprets
//!   it; its length is bounded at seal time ([`MAX_TRACE_CONTEXT_LEN`]).
//!
//! Interoperability: the Python SDK 2.3.0 reads the claims it knows with `dict.get` and ignores
//! the rest, so it opens tokens carrying `r`/`tc`, and a Python token (without them) opens here
//! as a round-1 token without trace context. A value of the wrong type or size in either claim
//! (which only a key holder could have written) is ignored rather than refused, so that both
//! SDKs accept exactly the same tokens.

use crate::claims::Field;

/// The longest `tc` claim sealed or accepted, in bytes: room for a W3C `traceparent` (55
/// bytes) and any plausible successor, not for a payload.
pub const MAX_TRACE_CONTEXT_LEN: usize = 256;

/// The round a token was sealed in and the call's first-round trace context.
///
/// [`crate::RequestStateSecurity::seal_round`] writes it into a token;
/// [`crate::RequestStateSecurity::open_round`] reads it back. A server sealing round `n` of a
/// call passes `RoundLineage::new(n)` with the trace context it opened (or, in round 1, its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundLineage {
    round: u32,
    trace_context: Option<String>,
}

impl Default for RoundLineage {
    fn default() -> Self {
        Self::FIRST
    }
}

impl RoundLineage {
    /// Round 1 without trace context: what a token without the claims says.
    pub const FIRST: Self = Self {
        round: 1,
        trace_context: None,
    };

    /// Round `round` (0 counts as 1), without trace context.
    pub const fn new(round: u32) -> Self {
        Self {
            round: if round == 0 { 1 } else { round },
            trace_context: None,
        }
    }

    /// With the call's first-round trace context (at most [`MAX_TRACE_CONTEXT_LEN`] bytes,
    /// checked when sealing).
    #[must_use]
    pub fn with_trace_context(mut self, trace_context: impl Into<String>) -> Self {
        self.trace_context = Some(trace_context.into());
        self
    }

    /// The round number, 1 or more.
    pub const fn round(&self) -> u32 {
        self.round
    }

    /// The first round's trace context, if the token carried one.
    pub fn trace_context(&self) -> Option<&str> {
        self.trace_context.as_deref()
    }

    /// The round that follows (the retry of a token sealed in this one), with the same trace
    /// context. Saturates at `u32::MAX`.
    #[must_use]
    pub fn next(self) -> Self {
        Self {
            round: self.round.saturating_add(1),
            trace_context: self.trace_context,
        }
    }

    /// Reads the claims of an opened, verified envelope (ignoring values out of type or range).
    pub(crate) fn from_claims(round: &Field<'_>, trace_context: &Field<'_>) -> Self {
        let round = round
            .as_num()
            .filter(|r| r.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(r))
            // In range and integral, so the conversion is exact.
            .map_or(1, |r| r as u32);
        let trace_context = trace_context
            .as_str()
            .filter(|text| text.len() <= MAX_TRACE_CONTEXT_LEN)
            .map(str::to_owned);
        Self {
            round,
            trace_context,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn reads_claims_strictly_and_defaults_to_round_one() {
        let tc = Field::Str(Cow::Borrowed("00-abc"));
        let read = RoundLineage::from_claims(&Field::Num(3.0), &tc);
        assert_eq!((read.round(), read.trace_context()), (3, Some("00-abc")));
        for odd in [
            Field::Absent,
            Field::Null,
            Field::Num(0.0),
            Field::Num(-2.0),
            Field::Num(2.5),
            Field::Num(f64::from(u32::MAX) + 1.0),
            Field::Str(Cow::Borrowed("2")),
            Field::Other,
        ] {
            let read = RoundLineage::from_claims(&odd, &Field::Absent);
            assert_eq!(read, RoundLineage::FIRST, "{odd:?}");
        }
        let long = "x".repeat(MAX_TRACE_CONTEXT_LEN + 1);
        for odd in [Field::Num(1.0), Field::Other, Field::Str(Cow::Owned(long))] {
            assert_eq!(
                RoundLineage::from_claims(&Field::Absent, &odd).trace_context(),
                None
            );
        }
        assert_eq!(RoundLineage::new(0), RoundLineage::FIRST);
        assert_eq!(RoundLineage::new(u32::MAX).next().round(), u32::MAX);
    }
}
