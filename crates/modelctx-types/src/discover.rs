//! `server/discover`.

use crate::{
    CacheScope, Meta, ProtocolVersion, ResultType, ServerCapabilities, result::impl_wire_result,
};

wire_struct! {
    /// The result of `server/discover`: the versions, capabilities and instructions of a
    /// 2026-07-28 server (its name and version travel in `_meta`).
    #[derive(Default)]
    pub struct DiscoverResult {
        /// The revisions the server speaks.
        req "supportedVersions" => supported_versions: Vec<ProtocolVersion>,
        /// What it supports.
        req "capabilities" => capabilities: ServerCapabilities,
        /// How to use the server, for the model.
        opt "instructions" => instructions: String,
        /// How long the result may be cached, in milliseconds.
        opt "ttlMs" => ttl_ms: u64,
        /// Who may cache it.
        opt "cacheScope" => cache_scope: CacheScope,
        /// `"complete"`.
        opt "resultType" => result_type: ResultType,
        /// Metadata, with `io.modelcontextprotocol/serverInfo`.
        opt "_meta" => meta: Meta,
    }
}

impl_wire_result!(DiscoverResult);
