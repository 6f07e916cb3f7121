//! What tool, prompt and resource functions may return, and how it goes on the wire.

use modelctx_types::{
    CallToolResult, ContentBlock, Extra, GetPromptResult, InputRequiredResult, Outcome,
    PromptMessage, ReadResourceResult, ResourceContents, Role,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::outcome::Interrupt;
use super::schema;

/// Structured tool output: the value goes out as `structuredContent` (and as a JSON text block,
/// for clients that read only `content`), and its schema is the tool's `outputSchema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

/// What a tool function may return.
///
/// | type | result |
/// |---|---|
/// | `String`, `&'static str` | one text block |
/// | [`ContentBlock`], `Vec<ContentBlock>` | those blocks |
/// | `()` | no content |
/// | [`CallToolResult`] | as is |
/// | [`Json<T>`] | `structuredContent` + a JSON text block; `outputSchema` from `T` |
/// | [`serde_json::Value`] | `structuredContent` + a JSON text block, no `outputSchema` |
/// | [`Outcome<X>`], [`InputRequiredResult`] | may ask for input (not with resolvers) |
/// | `Result<X, E: Display>` | `Err` is an `isError` result with the error's text |
pub trait IntoToolResult: Send {
    /// Whether this return type can carry an `InputRequiredResult`.
    const ASKS: bool = false;
    /// The `outputSchema`, for structured output.
    fn output_schema() -> Option<Extra> {
        None
    }
    /// Converts.
    ///
    /// # Errors
    /// A failed call (its message) or a JSON-RPC error.
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt>;
}

fn complete(content: Vec<ContentBlock>) -> Result<Outcome<CallToolResult>, Interrupt> {
    Ok(Outcome::Complete(CallToolResult::new(content)))
}

impl IntoToolResult for String {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        complete(vec![ContentBlock::text(self)])
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        complete(vec![ContentBlock::text(self)])
    }
}

impl IntoToolResult for () {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        complete(Vec::new())
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        complete(vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        complete(self)
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        Ok(Outcome::Complete(self))
    }
}

fn structured(value: Value) -> Result<Outcome<CallToolResult>, Interrupt> {
    let mut result = CallToolResult::text(value.to_string());
    result.structured_content = Some(value);
    Ok(Outcome::Complete(result))
}

impl IntoToolResult for Value {
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        structured(self)
    }
}

impl<T: Serialize + JsonSchema + Send> IntoToolResult for Json<T> {
    fn output_schema() -> Option<Extra> {
        Some(schema::output_schema::<T>())
    }

    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            tracing::error!(error = %e, "structured tool output does not serialise");
            Interrupt::Failed("the tool's output could not be serialised".to_owned())
        })?;
        structured(value)
    }
}

impl IntoToolResult for InputRequiredResult {
    const ASKS: bool = true;
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        Ok(Outcome::InputRequired(self))
    }
}

impl<X: IntoToolResult> IntoToolResult for Outcome<X> {
    const ASKS: bool = true;
    fn output_schema() -> Option<Extra> {
        X::output_schema()
    }
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        match self {
            Self::Complete(x) => x.into_tool_outcome(),
            Self::InputRequired(irr) => Ok(Outcome::InputRequired(irr)),
            Self::Extension(extension) => Ok(Outcome::Extension(extension)),
        }
    }
}

impl<X: IntoToolResult, E: std::fmt::Display + Send> IntoToolResult for Result<X, E> {
    const ASKS: bool = X::ASKS;
    fn output_schema() -> Option<Extra> {
        X::output_schema()
    }
    fn into_tool_outcome(self) -> Result<Outcome<CallToolResult>, Interrupt> {
        match self {
            Ok(x) => x.into_tool_outcome(),
            Err(error) => Err(Interrupt::Failed(error.to_string())),
        }
    }
}

/// What a prompt function may return: `String` / `&'static str` (one user message),
/// [`PromptMessage`], `Vec<PromptMessage>`, [`GetPromptResult`], [`Outcome<X>`] /
/// [`InputRequiredResult`] (to ask), or `Result<X, E: Display>` (`Err` is a JSON-RPC error).
pub trait IntoPromptResult: Send {
    /// Whether this return type can carry an `InputRequiredResult`.
    const ASKS: bool = false;
    /// Converts.
    ///
    /// # Errors
    /// A failed render.
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt>;
}

fn messages(messages: Vec<PromptMessage>) -> Result<Outcome<GetPromptResult>, Interrupt> {
    Ok(Outcome::Complete(GetPromptResult::new(messages)))
}

impl IntoPromptResult for String {
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        messages(vec![PromptMessage::new(
            Role::USER,
            ContentBlock::text(self),
        )])
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        messages(vec![PromptMessage::new(
            Role::USER,
            ContentBlock::text(self),
        )])
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        messages(vec![self])
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        messages(self)
    }
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoPromptResult for InputRequiredResult {
    const ASKS: bool = true;
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        Ok(Outcome::InputRequired(self))
    }
}

impl<X: IntoPromptResult> IntoPromptResult for Outcome<X> {
    const ASKS: bool = true;
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        match self {
            Self::Complete(x) => x.into_prompt_outcome(),
            Self::InputRequired(irr) => Ok(Outcome::InputRequired(irr)),
            Self::Extension(extension) => Ok(Outcome::Extension(extension)),
        }
    }
}

impl<X: IntoPromptResult, E: std::fmt::Display + Send> IntoPromptResult for Result<X, E> {
    const ASKS: bool = X::ASKS;
    fn into_prompt_outcome(self) -> Result<Outcome<GetPromptResult>, Interrupt> {
        match self {
            Ok(x) => x.into_prompt_outcome(),
            Err(error) => Err(Interrupt::Failed(error.to_string())),
        }
    }
}

/// What a resource function may return: `String` (text), `Vec<u8>` (a blob),
/// [`ResourceContents`], `Vec<ResourceContents>`, [`ReadResourceResult`], [`Outcome<X>`] /
/// [`InputRequiredResult`] (templates only), or `Result<X, E: Display>` (`Err` is a JSON-RPC
/// error). Text and blobs get the resource's URI and MIME type.
pub trait IntoResourceResult: Send {
    /// Whether this return type can carry an `InputRequiredResult`.
    const ASKS: bool = false;
    /// Converts, for the resource at `uri`.
    ///
    /// # Errors
    /// A failed read.
    fn into_resource_outcome(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt>;
}

fn contents(contents: Vec<ResourceContents>) -> Result<Outcome<ReadResourceResult>, Interrupt> {
    Ok(Outcome::Complete(ReadResourceResult::new(contents)))
}

impl IntoResourceResult for String {
    fn into_resource_outcome(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        contents(vec![ResourceContents::text(
            uri,
            mime_type.map(str::to_owned),
            self,
        )])
    }
}

impl IntoResourceResult for Vec<u8> {
    fn into_resource_outcome(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        use base64::Engine as _;
        let blob = base64::engine::general_purpose::STANDARD.encode(self);
        contents(vec![ResourceContents::blob(
            uri,
            mime_type.map(str::to_owned),
            blob,
        )])
    }
}

impl IntoResourceResult for ResourceContents {
    fn into_resource_outcome(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        contents(vec![self])
    }
}

impl IntoResourceResult for Vec<ResourceContents> {
    fn into_resource_outcome(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        contents(self)
    }
}

impl IntoResourceResult for ReadResourceResult {
    fn into_resource_outcome(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoResourceResult for InputRequiredResult {
    const ASKS: bool = true;
    fn into_resource_outcome(
        self,
        _uri: &str,
        _mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        Ok(Outcome::InputRequired(self))
    }
}

impl<X: IntoResourceResult> IntoResourceResult for Outcome<X> {
    const ASKS: bool = true;
    fn into_resource_outcome(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        match self {
            Self::Complete(x) => x.into_resource_outcome(uri, mime_type),
            Self::InputRequired(irr) => Ok(Outcome::InputRequired(irr)),
            Self::Extension(extension) => Ok(Outcome::Extension(extension)),
        }
    }
}

impl<X: IntoResourceResult, E: std::fmt::Display + Send> IntoResourceResult for Result<X, E> {
    const ASKS: bool = X::ASKS;
    fn into_resource_outcome(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, Interrupt> {
        match self {
            Ok(x) => x.into_resource_outcome(uri, mime_type),
            Err(error) => Err(Interrupt::Failed(error.to_string())),
        }
    }
}
