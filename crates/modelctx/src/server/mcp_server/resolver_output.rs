//! How a resolver's return value becomes its outcome ([`ResolverOutput`]): a plain value
//! ([`Ready`]), a question put to the client through the [`Resolution`], or [`Ask`] (either).
//!
//! It sits above both the questions and the resolution, which it joins: the questions know
//! nothing of the resolution that asks them.

use super::outcome::{Elicitation, Interrupt};
use super::questions::{Ask, Elicit, ElicitUrl, ListRoots, Question, Sample};
use super::resolve::Resolution;
use crate::server::BoxFuture;

/// How a resolver's return value becomes its outcome. `#[resolver]` picks the implementation
/// from the return type: a question ([`Elicit`], [`Sample`], [`ListRoots`]) or [`Ask`] is put to
/// the client, anything else is the value itself ([`Ready`]); a `Result`'s error fails the call.
pub trait ResolverOutput: Send + 'static {
    /// The resolved value.
    type Value: Clone + Send + Sync + 'static;
    /// Turns the return value into an outcome, asking through `resolution` under `key`.
    fn into_outcome<'a>(
        self,
        resolution: &'a Resolution,
        key: &'static str,
    ) -> BoxFuture<'a, Result<Elicitation<Self::Value>, Interrupt>>;
}

/// A plain resolver value (the macro wraps non-question return types in it).
#[derive(Debug, Clone)]
pub struct Ready<T>(pub T);

impl<T: Clone + Send + Sync + 'static> ResolverOutput for Ready<T> {
    type Value = T;
    fn into_outcome<'a>(
        self,
        _resolution: &'a Resolution,
        _key: &'static str,
    ) -> BoxFuture<'a, Result<Elicitation<T>, Interrupt>> {
        Box::pin(std::future::ready(Ok(Elicitation::Accept(self.0))))
    }
}

macro_rules! question_output {
    ($([$($generics:tt)*] $ty:ty),*) => {$(
        impl<$($generics)*> ResolverOutput for $ty
        where
            $ty: Question,
        {
            type Value = <$ty as Question>::Value;
            fn into_outcome<'a>(
                self,
                resolution: &'a Resolution,
                key: &'static str,
            ) -> BoxFuture<'a, Result<Elicitation<Self::Value>, Interrupt>> {
                Box::pin(resolution.ask(key, self))
            }
        }
    )*};
}
question_output!([T: Send + 'static] Elicit<T>, [] ElicitUrl, [] Sample, [] ListRoots);

impl<Q: Question> ResolverOutput for Ask<Q> {
    type Value = Q::Value;
    fn into_outcome<'a>(
        self,
        resolution: &'a Resolution,
        key: &'static str,
    ) -> BoxFuture<'a, Result<Elicitation<Q::Value>, Interrupt>> {
        match self {
            Self::Ready(value) => Box::pin(std::future::ready(Ok(Elicitation::Accept(value)))),
            Self::Question(question) => Box::pin(resolution.ask(key, question)),
        }
    }
}

impl<O: ResolverOutput, E: std::fmt::Display + Send + 'static> ResolverOutput for Result<O, E> {
    type Value = O::Value;
    fn into_outcome<'a>(
        self,
        resolution: &'a Resolution,
        key: &'static str,
    ) -> BoxFuture<'a, Result<Elicitation<O::Value>, Interrupt>> {
        match self {
            Ok(output) => output.into_outcome(resolution, key),
            Err(error) => Box::pin(std::future::ready(Err(Interrupt::Failed(
                error.to_string(),
            )))),
        }
    }
}
