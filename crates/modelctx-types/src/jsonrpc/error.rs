use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ClientCapabilities, ProtocolVersion};

/// A JSON-RPC error code. An open set: the constants are the codes MCP defines, any other
/// integer is kept as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received (`-32700`).
    pub const PARSE_ERROR: Self = Self(-32700);
    /// The JSON sent is not a valid request object (`-32600`).
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// The method does not exist, was removed in this revision, or is gated by a capability the
    /// server did not advertise (`-32601`; HTTP 404 on streamable HTTP).
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Invalid method parameters (`-32602`): unknown tool or prompt, bad arguments, missing
    /// `_meta`, resource not found (2026-07-28), invalid `requestState`.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// Internal error (`-32603`).
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// An HTTP header disagrees with the body, or a required header is missing or malformed
    /// (`-32020`, HTTP 400). New in 2026-07-28.
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// The request needs a client capability the client did not declare (`-32021`, HTTP 400);
    /// `data.requiredCapabilities` names it. New in 2026-07-28.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// The protocol version is not supported (`-32022`, HTTP 400); `data.supported` lists the
    /// versions the server speaks and `data.requested` echoes the request's. New in 2026-07-28.
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
    /// Resource not found in 2025-11-25 and earlier (`-32002`). 2026-07-28 servers must use
    /// [`Self::INVALID_PARAMS`] instead; clients still accept it from older servers.
    pub const HANDSHAKE_RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// URL elicitation required (`-32042`), 2025-11-25 only.
    pub const HANDSHAKE_URL_ELICITATION_REQUIRED: Self = Self(-32042);

    /// The spec's name for a known code.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::PARSE_ERROR => "Parse error",
            Self::INVALID_REQUEST => "Invalid request",
            Self::METHOD_NOT_FOUND => "Method not found",
            Self::INVALID_PARAMS => "Invalid params",
            Self::INTERNAL_ERROR => "Internal error",
            Self::HEADER_MISMATCH => "Header mismatch",
            Self::MISSING_REQUIRED_CLIENT_CAPABILITY => "Missing required client capability",
            Self::UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
            Self::HANDSHAKE_RESOURCE_NOT_FOUND => "Resource not found",
            Self::HANDSHAKE_URL_ELICITATION_REQUIRED => "URL elicitation required",
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description.
    pub message: String,
    /// Additional information; its shape depends on the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32601 "Method not found"` with the method name as `data`, as the reference peers send.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::METHOD_NOT_FOUND, "Method not found").with_data(Value::from(method))
    }

    /// `-32603` with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// `-32022 "Unsupported protocol version"` with `data.supported` and `data.requested`.
    pub fn unsupported_protocol_version(supported: &[ProtocolVersion], requested: &str) -> Self {
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// `-32021` with `data.requiredCapabilities`.
    pub fn missing_required_client_capability(
        message: impl Into<String>,
        required: &ClientCapabilities,
    ) -> Self {
        Self::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
            .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// `-32020` with a message naming the header.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::HEADER_MISMATCH, message)
    }

    /// `-32602 "Resource not found"` with `data.uri` (2026-07-28, SEP-2164).
    pub fn resource_not_found(uri: &str) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, "Resource not found")
            .with_data(serde_json::json!({ "uri": uri }))
    }

    /// `data.supported` of a `-32022` error, when present and well formed.
    pub fn supported_versions(&self) -> Option<Vec<ProtocolVersion>> {
        if self.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
            return None;
        }
        let supported = self.data.as_ref()?.get("supported")?;
        serde_json::from_value(supported.clone()).ok()
    }

    /// `data.requiredCapabilities` of a `-32021` error, when present and well formed.
    pub fn required_capabilities(&self) -> Option<ClientCapabilities> {
        if self.code != ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
            return None;
        }
        let required = self.data.as_ref()?.get("requiredCapabilities")?;
        serde_json::from_value(required.clone()).ok()
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.0, self.message)
    }
}

impl std::error::Error for ErrorObject {}
