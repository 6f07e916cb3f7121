//! Messages of the handshake era (2025-11-25 and earlier) that 2026-07-28 removed.

use crate::{
    ClientCapabilities, Implementation, LoggingLevel, Meta, ProtocolVersion, RequestMeta,
    ResultType, ServerCapabilities, requests::impl_request_params, result::impl_wire_result,
};

wire_struct! {
    /// Parameters of `initialize`.
    pub struct InitializeRequestParams {
        /// The newest revision the client speaks.
        req "protocolVersion" => protocol_version: ProtocolVersion,
        /// The client's capabilities for the session.
        req "capabilities" => capabilities: ClientCapabilities,
        /// The client's name and version.
        req "clientInfo" => client_info: Implementation,
        /// Metadata.
        opt "_meta" => meta: Box<RequestMeta>,
    }
}

wire_struct! {
    /// The result of `initialize`.
    pub struct InitializeResult {
        /// The revision the server chose.
        req "protocolVersion" => protocol_version: ProtocolVersion,
        /// The server's capabilities.
        req "capabilities" => capabilities: ServerCapabilities,
        /// The server's name and version.
        req "serverInfo" => server_info: Implementation,
        /// How to use the server.
        opt "instructions" => instructions: String,
        /// Never set by handshake-era servers; kept for symmetry.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// A result with no members (`ping`, `logging/setLevel`, `resources/subscribe`, …).
    #[derive(Default)]
    pub struct EmptyResult {
        /// `"complete"` on 2026-07-28; absent in the handshake era.
        opt "resultType" => result_type: ResultType,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// Parameters of `logging/setLevel`.
    pub struct SetLevelRequestParams {
        /// The minimum level to send.
        req "level" => level: LoggingLevel,
        /// Metadata.
        opt "_meta" => meta: Box<RequestMeta>,
    }
}

wire_struct! {
    /// Parameters of `notifications/elicitation/complete` (2025-11-25 URL mode).
    #[derive(Default)]
    pub struct ElicitationCompleteParams {
        /// The id of the URL elicitation that completed.
        req "elicitationId" => elicitation_id: String,
    }
}

impl_request_params!(InitializeRequestParams, SetLevelRequestParams);
impl_wire_result!(InitializeResult, EmptyResult);
