//! The server's name for the crate's RFC 6570 templates ([`crate::uri_template`], shared with
//! the client): the registry and the high-level server import them from this leaf, and
//! `server::{UriTemplate, UriVariables, InvalidTemplate}` re-export them.

pub use crate::uri_template::{InvalidTemplate, UriTemplate, UriVariables};
