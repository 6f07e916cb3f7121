//! Roots: the client's file-system boundaries (deprecated in 2026-07-28).

use crate::Meta;

wire_struct! {
    /// A root directory or file (`file://` URI).
    #[derive(Default)]
    pub struct Root {
        @own new;
        /// A `file://` URI.
        req "uri" => uri: String,
        /// A display name.
        opt "name" => name: String,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl Root {
    /// A root with a URI and an optional name.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Self {
            uri: uri.into(),
            name,
            ..Self::default()
        }
    }
}

wire_struct! {
    /// Parameters of a `roots/list` request (optional).
    #[derive(Default)]
    pub struct RootsListParams {
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// The client's roots.
    #[derive(Default)]
    pub struct ListRootsResult {
        /// The roots.
        req "roots" => roots: Vec<Root>,
        /// Metadata (handshake era only).
        opt "_meta" => meta: Meta,
    }
}
