//! One pass over the envelope and the typed params, when `method` comes before `params`.
//!
//! [`MessageRef::decode`] keeps `params` raw, so a request's params are scanned twice: once by
//! the envelope pass, once by the typed decode. [`MessageRef::decode_with`] reads the envelope
//! with a [`ParamsSeed`] chosen by the receiver: once `method` is known and the seed accepts it,
//! `params` decode straight into the seed's type in the same pass. Everything else — `params`
//! before `method`, a method the seed does not take, a member after the typed `params`, a
//! notification, and every malformed input — is [`MessageRef::decode`]'s, so the result and
//! every error are exactly what the two phases give.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::decode::{RawEnvelope, raw_str};
use super::{DecodeError, MessageRef, RequestId};
use crate::methods::Method;

/// Decodes the `params` of the methods a receiver knows, in the envelope's own pass.
///
/// The receiver (a server's router) owns which methods exist and what their params are; the
/// wire model only calls it. A seed that fails on some params costs nothing but the attempt:
/// the message is then decoded in two phases, so the typed decode that follows reports the
/// error exactly as it would have.
pub trait ParamsSeed {
    /// The typed params of every method the seed accepts (an enum, typically).
    type Params;

    /// Whether `params` of `method` should decode in the envelope's pass.
    fn accepts(&self, method: &str) -> bool;

    /// Decodes the params of `method` (one that [`Self::accepts`]).
    ///
    /// # Errors
    /// The params do not decode as the method's.
    fn deserialize<'de, D: Deserializer<'de>>(
        &self,
        method: &str,
        params: D,
    ) -> Result<Self::Params, D::Error>;
}

/// The seed of one method: accepts `M::NAME` and decodes `M::Params`. A router with one
/// method served far more than the rest (a server's `tools/call`) builds on it, and it is what a
/// test or fuzz target of the single pass decodes with.
pub struct MethodSeed<M>(PhantomData<fn() -> M>);

impl<M: Method> MethodSeed<M> {
    /// The seed of `M`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<M: Method> fmt::Debug for MethodSeed<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("MethodSeed").field(&M::NAME).finish()
    }
}

impl<M: Method> Default for MethodSeed<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Method> ParamsSeed for MethodSeed<M> {
    type Params = M::Params;

    fn accepts(&self, method: &str) -> bool {
        method == M::NAME
    }

    fn deserialize<'de, D: Deserializer<'de>>(
        &self,
        _method: &str,
        params: D,
    ) -> Result<M::Params, D::Error> {
        M::Params::deserialize(params)
    }
}

/// A request whose params were decoded in the envelope's pass.
#[derive(Debug, Clone)]
pub struct TypedRequest<'a, P> {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: Cow<'a, str>,
    /// The typed params.
    pub params: P,
    /// The raw text of the params object, as sent.
    pub params_text: &'a str,
}

/// What [`MessageRef::decode_with`] read.
#[derive(Debug, Clone)]
pub enum Decoded<'a, P> {
    /// A request whose params the seed decoded.
    Typed(TypedRequest<'a, P>),
    /// Any other message, params and results raw (as [`MessageRef::decode`] gives it).
    Raw(MessageRef<'a>),
}

impl<'a> MessageRef<'a> {
    /// Decodes one message like [`Self::decode`], and the params of a request whose method
    /// `seed` accepts in the same pass when `method` comes before `params` and nothing follows
    /// them (the order every SDK writes).
    ///
    /// # Errors
    /// Exactly those of [`Self::decode`].
    pub fn decode_with<S: ParamsSeed>(
        text: &'a str,
        seed: &S,
    ) -> Result<Decoded<'a, S::Params>, DecodeError> {
        if let Some(read) = single_pass(text, seed) {
            match read.typed {
                // The same raw members as the two-phase envelope: the same classification.
                None => return read.raw.classify().map(Decoded::Raw),
                Some((params, params_text)) => {
                    if let Ok(MessageRef::Request(request)) = read.raw.classify() {
                        return Ok(Decoded::Typed(TypedRequest {
                            id: request.id,
                            method: request.method,
                            params,
                            params_text,
                        }));
                    }
                }
            }
        }
        Self::decode(text).map(Decoded::Raw)
    }

    /// Like [`Self::decode_with`], for bytes (invalid UTF-8 is a parse error).
    ///
    /// # Errors
    /// Exactly those of [`Self::decode_slice`].
    pub fn decode_slice_with<S: ParamsSeed>(
        bytes: &'a [u8],
        seed: &S,
    ) -> Result<Decoded<'a, S::Params>, DecodeError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::decode_with(text, seed),
            Err(_) => Self::decode_slice(bytes).map(Decoded::Raw),
        }
    }
}

/// The envelope's raw members, and the typed params when the seed took them, with `T`: where
/// the member before them ended (while reading), then their text.
struct Read<'a, P, T> {
    raw: RawEnvelope<'a>,
    typed: Option<(P, T)>,
}

/// The optimistic pass: `None` on any failure, which the two phases then report.
fn single_pass<'a, S: ParamsSeed>(text: &'a str, seed: &S) -> Option<Read<'a, S::Params, &'a str>> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = deserializer
        .deserialize_map(EnvelopeVisitor { seed, text })
        .ok()?;
    deserializer.end().ok()?;
    let Read { raw, typed } = read;
    let typed = match typed {
        None => None,
        Some((params, after)) => Some((params, params_text(text, after)?)),
    };
    Some(Read { raw, typed })
}

/// The text of the typed params: from the member before them (which ended at `after`) to the
/// envelope's closing brace (they are its last member). The pass has checked the JSON, so only
/// separators, one key and whitespace lie around them.
fn params_text(text: &str, after: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let is_ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let skip_ws = |mut i: usize| {
        while bytes.get(i).is_some_and(|&b| is_ws(b)) {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(after);
    (bytes.get(i) == Some(&b',')).then_some(())?;
    i = skip_ws(i + 1);
    (bytes.get(i) == Some(&b'"')).then_some(())?;
    i += 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => break,
            _ => i += 1,
        }
    }
    i = skip_ws(i + 1);
    (bytes.get(i) == Some(&b':')).then_some(())?;
    let start = skip_ws(i + 1);
    // Back from the end: whitespace, the envelope's `}`, whitespace.
    let mut end = bytes.len();
    while end > start && is_ws(bytes[end - 1]) {
        end -= 1;
    }
    (end > start && bytes[end - 1] == b'}').then_some(())?;
    end -= 1;
    while end > start && is_ws(bytes[end - 1]) {
        end -= 1;
    }
    let params = text.get(start..end)?;
    // Only an object is typed (`params` of another type is the two phases' error).
    (params.len() >= 2 && params.starts_with('{') && params.ends_with('}')).then_some(params)
}

/// Where a raw member's value ends, as an offset into `text` (it borrows from it).
fn end_in(text: &str, raw: &RawValue) -> Option<usize> {
    let start = (raw.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    Some(start + raw.get().len())
}

/// Fails the optimistic pass (never reported: the two phases decode the message again).
fn fallback<E: de::Error>() -> E {
    E::custom("decoded in two phases")
}

enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
                Ok(match name {
                    "jsonrpc" => Field::Jsonrpc,
                    "id" => Field::Id,
                    "method" => Field::Method,
                    "params" => Field::Params,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

struct EnvelopeVisitor<'s, 'a, S> {
    seed: &'s S,
    text: &'a str,
}

impl<'de, S: ParamsSeed> Visitor<'de> for EnvelopeVisitor<'_, 'de, S> {
    type Value = Read<'de, S::Params, usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut raw = RawEnvelope::default();
        let mut typed = None;
        // Where the last member's value ended: the typed params' text starts after it.
        let mut last_end = None;
        while let Some(field) = map.next_key::<Field>()? {
            if typed.is_some() {
                // A member after the typed params: their end is not known.
                return Err(fallback());
            }
            let slot = match field {
                Field::Jsonrpc => &mut raw.jsonrpc,
                Field::Id => &mut raw.id,
                Field::Method => &mut raw.method,
                Field::Result => &mut raw.result,
                Field::Error => &mut raw.error,
                Field::Params => {
                    let method = raw.method.and_then(raw_str);
                    if let (Some(method), Some(after), None) = (method, last_end, raw.params)
                        && self.seed.accepts(&method)
                    {
                        let seed = TypedSeed {
                            seed: self.seed,
                            method: &method,
                        };
                        typed = Some((map.next_value_seed(seed)?, after));
                        continue;
                    }
                    &mut raw.params
                }
                Field::Other => {
                    let value = map.next_value::<&'de RawValue>()?;
                    last_end = Some(end_in(self.text, value).ok_or_else(fallback)?);
                    continue;
                }
            };
            if slot.is_some() {
                // A duplicate member: the two phases name it.
                return Err(fallback());
            }
            let value = map.next_value::<&'de RawValue>()?;
            last_end = Some(end_in(self.text, value).ok_or_else(fallback)?);
            *slot = Some(value);
        }
        Ok(Read { raw, typed })
    }
}

struct TypedSeed<'s, S> {
    seed: &'s S,
    method: &'s str,
}

impl<'de, S: ParamsSeed> DeserializeSeed<'de> for TypedSeed<'_, S> {
    type Value = S::Params;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Params, D::Error> {
        self.seed.deserialize(self.method, deserializer)
    }
}
