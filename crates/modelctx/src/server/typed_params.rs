//! The requests the transports decode in one pass (DESIGN.md, "How is a message decoded?"):
//! the router's [`ParamsSeed`], and the request a transport owns while serving it.

use std::borrow::Cow;

use modelctx_types::jsonrpc::{
    Decoded, MessageRef, MethodSeed, ParamsSeed, RequestRef, TypedRequest,
};
use modelctx_types::methods::CallTool;
use modelctx_types::{CallToolRequestParams, Method, RequestId};
use serde::Deserializer;

/// Params the envelope's pass decoded, by method. Boxed: the request travels through several
/// futures, each of which would otherwise hold room for the params.
pub(crate) enum TypedParams {
    CallTool(Box<CallToolRequestParams>),
}

/// Decodes the params of `tools/call`, the request served most, in the envelope's pass; every
/// other method's params stay raw until the router decodes them.
pub(crate) struct Router;

const CALL_TOOL: MethodSeed<CallTool> = MethodSeed::new();

impl ParamsSeed for Router {
    type Params = TypedParams;

    fn accepts(&self, method: &str) -> bool {
        CALL_TOOL.accepts(method)
    }

    fn deserialize<'de, D: Deserializer<'de>>(
        &self,
        method: &str,
        params: D,
    ) -> Result<TypedParams, D::Error> {
        CALL_TOOL
            .deserialize(method, params)
            .map(|params| TypedParams::CallTool(Box::new(params)))
    }
}

/// A message as the transports decode it: [`MessageRef::decode_slice_with`] through the
/// [`Router`].
pub(crate) fn decode(
    bytes: &[u8],
) -> Result<Decoded<'_, TypedParams>, modelctx_types::DecodeError> {
    MessageRef::decode_slice_with(bytes, &Router)
}

/// A request a transport owns while serving it: its params as JSON text (checked by the
/// decoder), and typed when the envelope's pass decoded them.
pub(crate) struct OwnedRequest {
    pub(crate) id: RequestId,
    /// A typed request's is the router's constant (no allocation).
    pub(crate) method: Cow<'static, str>,
    pub(crate) params: Option<Box<str>>,
    pub(crate) typed: Option<TypedParams>,
}

impl OwnedRequest {
    /// A request whose params are raw.
    pub(crate) fn raw(request: &RequestRef<'_>) -> Self {
        let modelctx_types::jsonrpc::Request { id, method, params } = request.to_owned_request();
        Self {
            id,
            method: Cow::Owned(method),
            params: params.map(Box::<str>::from),
            typed: None,
        }
    }

    /// A request whose params the envelope's pass decoded.
    pub(crate) fn typed(request: TypedRequest<'_, TypedParams>) -> Self {
        Self {
            id: request.id,
            method: Cow::Borrowed(match request.params {
                TypedParams::CallTool(_) => CallTool::NAME,
            }),
            params: Some(request.params_text.into()),
            typed: Some(request.params),
        }
    }
}

/// A request as decoded, borrowing from the input: params raw, or typed by the [`Router`].
pub(crate) enum Received<'a> {
    Raw(RequestRef<'a>),
    Typed(TypedRequest<'a, TypedParams>),
}

impl Received<'_> {
    pub(crate) fn id(&self) -> &RequestId {
        match self {
            Self::Raw(request) => &request.id,
            Self::Typed(request) => &request.id,
        }
    }

    pub(crate) fn method(&self) -> &str {
        match self {
            Self::Raw(request) => &request.method,
            Self::Typed(request) => &request.method,
        }
    }

    /// The params object as JSON text.
    pub(crate) fn params(&self) -> Option<&str> {
        match self {
            Self::Raw(request) => request.params.map(serde_json::value::RawValue::get),
            Self::Typed(request) => Some(request.params_text),
        }
    }

    /// An owned copy.
    pub(crate) fn into_owned(self) -> OwnedRequest {
        match self {
            Self::Raw(request) => OwnedRequest::raw(&request),
            Self::Typed(request) => OwnedRequest::typed(request),
        }
    }
}
