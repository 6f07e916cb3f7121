//! The standard request headers of streamable HTTP (SEP-2243) checked against the body: the
//! ladder's `-32020` step, and the `Mcp-Param-*` mirrors of `x-mcp-header` tool arguments.

use modelctx_types::methods::{CallTool, GetPrompt, ReadResource};
use modelctx_types::{ErrorObject, Extra, Method, ProtocolVersion};

use crate::http::headers::{self, ParamHeader};

/// A header that appears more than once where one value is expected.
#[derive(Debug)]
pub(crate) struct Repeated;

/// Request headers, as the HTTP transport exposes them to the ladder.
pub(crate) trait HeaderAccess: Send + Sync {
    /// The one value of the header `name` (lower-case), if present.
    fn single(&self, name: &str) -> Result<Option<&[u8]>, Repeated>;
}

fn single_header<'h>(
    headers: &'h dyn HeaderAccess,
    name: &str,
    display: &str,
) -> Result<Option<&'h str>, ErrorObject> {
    match headers.single(name) {
        Ok(None) => Ok(None),
        Ok(Some(value)) => std::str::from_utf8(value)
            .map(|v| Some(v.trim_matches([' ', '\t'])))
            .map_err(|_| {
                ErrorObject::header_mismatch(format!("{display} header is not valid text"))
            }),
        Err(Repeated) => Err(ErrorObject::header_mismatch(format!(
            "{display} header is repeated"
        ))),
    }
}

/// The standard headers agree with the body (SEP-2243).
pub(crate) fn check_headers(
    headers: &dyn HeaderAccess,
    method: &str,
    version: Option<&ProtocolVersion>,
    target: Option<&str>,
) -> Result<(), ErrorObject> {
    match single_header(headers, headers::PROTOCOL_VERSION, "MCP-Protocol-Version")? {
        None => {
            return Err(ErrorObject::header_mismatch(
                "missing MCP-Protocol-Version header",
            ));
        }
        Some(value) => {
            if let Some(version) = version.filter(|v| *v != value) {
                return Err(ErrorObject::header_mismatch(format!(
                    "MCP-Protocol-Version header {value:?} does not match params._meta protocolVersion {:?}",
                    version.as_str()
                )));
            }
        }
    }
    match single_header(headers, headers::METHOD, "Mcp-Method")? {
        None => return Err(ErrorObject::header_mismatch("missing Mcp-Method header")),
        Some(value) if value != method => {
            return Err(ErrorObject::header_mismatch(format!(
                "Mcp-Method header {value:?} does not match the body method {method:?}"
            )));
        }
        Some(_) => {}
    }
    if matches!(
        method,
        CallTool::NAME | GetPrompt::NAME | ReadResource::NAME
    ) {
        let raw = single_header(headers, headers::NAME, "Mcp-Name")?
            .ok_or_else(|| ErrorObject::header_mismatch("missing Mcp-Name header"))?;
        let value = headers::decode_value(raw)
            .map_err(|e| ErrorObject::header_mismatch(format!("Mcp-Name: {e}")))?;
        if let Some(target) = target.filter(|t| *t != value) {
            return Err(ErrorObject::header_mismatch(format!(
                "Mcp-Name header value {value:?} does not match body value {target:?}"
            )));
        }
    }
    Ok(())
}

/// `Mcp-Param-*` headers agree with the `x-mcp-header` arguments of the tool.
pub(crate) fn check_param_headers(
    headers: &dyn HeaderAccess,
    declared: &[ParamHeader],
    arguments: Option<&Extra>,
) -> Result<(), ErrorObject> {
    for param in declared {
        let display = format!("Mcp-Param-{}", param.name);
        let header = single_header(headers, &param.header, &display)?;
        match (param.value_in(arguments), header) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "{display} header is present but the argument is absent"
                )));
            }
            (Some(_), None) => {
                return Err(ErrorObject::header_mismatch(format!(
                    "missing {display} header for argument {:?}",
                    param.path.join(".")
                )));
            }
            (Some(value), Some(raw)) => {
                let decoded = headers::decode_value(raw)
                    .map_err(|e| ErrorObject::header_mismatch(format!("{display}: {e}")))?;
                if !param.matches(&decoded, value) {
                    return Err(ErrorObject::header_mismatch(format!(
                        "{display} header value {decoded:?} does not match the argument {value}"
                    )));
                }
            }
        }
    }
    Ok(())
}
