//! What [`McpServer::build`](super::McpServerBuilder::build) refuses, and why: the
//! low-level server's refusals and the high-level checks (static resources that would ask,
//! resolver graphs).

use crate::server::registry::RegistrationError;

/// A registration `McpServer::build` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Refused by the low-level server (duplicates, invalid schemas or templates, sealing).
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// A static resource that could ask for input (only templates may).
    #[error(
        "static resource {uri:?} cannot ask for input: only resource templates may return an \
         InputRequiredResult or use resolvers"
    )]
    StaticResourceAsks {
        /// The resource URI.
        uri: String,
    },
    /// A resolver takes an argument by name that its consumer does not have.
    #[error("{kind} {name:?}: {message}")]
    UnknownResolverArgument {
        /// `tool`, `prompt` or `resource template`.
        kind: &'static str,
        /// The consumer.
        name: String,
        /// Which resolver parameter.
        message: String,
    },
    /// Two different resolvers of the same name in one consumer's graph: keys are resolver
    /// names, so their questions would share one input-request key.
    #[error("{kind} {name:?}: resolvers {paths:?} share the input-request key {key:?}; rename one")]
    ResolverKeyClash {
        /// `tool`, `prompt` or `resource template`.
        kind: &'static str,
        /// The consumer.
        name: String,
        /// The key they share (their name).
        key: String,
        /// The two resolvers' full paths.
        paths: [String; 2],
    },
}
