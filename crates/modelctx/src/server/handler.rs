//! Handler traits. Async closures implement them, so registering a handler is passing a
//! closure; the traits exist so that handlers can be stored type-erased in the registry.

use std::future::Future;

use modelctx_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, ErrorObject,
    GetPromptRequestParams, GetPromptResult, InputRequiredResult, Outcome,
    ReadResourceRequestParams, ReadResourceResult,
};
use serde_json::Value;

use super::RequestContext;
use crate::uri_template::UriVariables;

/// A boxed, sendable future: the one the handler traits return (`futures`' own, re-exported so
/// implementations need no `futures` dependency).
pub use futures::future::BoxFuture;

/// What a multi-round-trip handler may return: its result, an [`InputRequiredResult`], an
/// [`Outcome`], or a `Result` of any of these with an error convertible to [`ErrorObject`].
///
/// An `InputRequiredResult` works in both eras: on 2026-07-28 it goes to the client, which
/// retries; on a 2025-11-25 session, which cannot receive one, the SDK asks its questions over
/// the back-channel and calls the handler again with the answers and the state.
pub trait IntoOutcome<T> {
    /// Converts to the outcome the server sends.
    ///
    /// # Errors
    /// The handler's JSON-RPC error.
    fn into_outcome(self) -> Result<Outcome<T>, ErrorObject>;
}

/// What a single-round handler may return: its result, or a `Result` of it with an error
/// convertible to [`ErrorObject`].
pub trait IntoResult<T> {
    /// Converts to the result the server sends.
    ///
    /// # Errors
    /// The handler's JSON-RPC error.
    fn into_result(self) -> Result<T, ErrorObject>;
}

impl<T> IntoOutcome<T> for Outcome<T> {
    fn into_outcome(self) -> Result<Outcome<T>, ErrorObject> {
        Ok(self)
    }
}

impl<T> IntoOutcome<T> for InputRequiredResult {
    fn into_outcome(self) -> Result<Outcome<T>, ErrorObject> {
        Ok(Outcome::InputRequired(self))
    }
}

impl<T, X: IntoOutcome<T>, E: Into<ErrorObject>> IntoOutcome<T> for Result<X, E> {
    fn into_outcome(self) -> Result<Outcome<T>, ErrorObject> {
        self.map_err(Into::into).and_then(IntoOutcome::into_outcome)
    }
}

impl<T, X: IntoResult<T>, E: Into<ErrorObject>> IntoResult<T> for Result<X, E> {
    fn into_result(self) -> Result<T, ErrorObject> {
        self.map_err(Into::into).and_then(IntoResult::into_result)
    }
}

macro_rules! outcome_types {
    ($($ty:ty),*) => {$(
        impl IntoOutcome<$ty> for $ty {
            fn into_outcome(self) -> Result<Outcome<$ty>, ErrorObject> {
                Ok(Outcome::Complete(self))
            }
        }
        impl IntoResult<$ty> for $ty {
            fn into_result(self) -> Result<$ty, ErrorObject> {
                Ok(self)
            }
        }
    )*};
}
outcome_types!(CallToolResult, GetPromptResult, ReadResourceResult);

impl IntoResult<CompleteResult> for CompleteResult {
    fn into_result(self) -> Result<CompleteResult, ErrorObject> {
        Ok(self)
    }
}

impl IntoResult<Value> for Value {
    fn into_result(self) -> Result<Value, ErrorObject> {
        Ok(self)
    }
}

/// Handles `tools/call` for one tool.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool. `params.request_state` is plaintext (sealing is the server's job).
    fn call(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<CallToolResult>, ErrorObject>>;
}

impl<F, Fut, R> ToolHandler for F
where
    F: Fn(RequestContext, CallToolRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoOutcome<CallToolResult>,
{
    fn call(
        &self,
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<CallToolResult>, ErrorObject>> {
        let future = self(ctx, params);
        Box::pin(async move { future.await.into_outcome() })
    }
}

/// Handles `prompts/get` for one prompt.
pub trait PromptHandler: Send + Sync + 'static {
    /// Renders the prompt.
    fn get(
        &self,
        ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<GetPromptResult>, ErrorObject>>;
}

impl<F, Fut, R> PromptHandler for F
where
    F: Fn(RequestContext, GetPromptRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoOutcome<GetPromptResult>,
{
    fn get(
        &self,
        ctx: RequestContext,
        params: GetPromptRequestParams,
    ) -> BoxFuture<'static, Result<Outcome<GetPromptResult>, ErrorObject>> {
        let future = self(ctx, params);
        Box::pin(async move { future.await.into_outcome() })
    }
}

/// Handles `resources/read` for one static resource. Static resources cannot ask for input.
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads the resource.
    fn read(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>>;
}

impl<F, Fut, R> ResourceHandler for F
where
    F: Fn(RequestContext, ReadResourceRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoResult<ReadResourceResult>,
{
    fn read(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>> {
        let future = self(ctx, params);
        Box::pin(async move { future.await.into_result() })
    }
}

/// Handles `resources/read` for URIs matching a template; may ask for input.
pub trait ResourceTemplateHandler: Send + Sync + 'static {
    /// Reads the resource named by `params.uri`, whose template variables are `variables`.
    fn read(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
        variables: UriVariables,
    ) -> BoxFuture<'static, Result<Outcome<ReadResourceResult>, ErrorObject>>;
}

impl<F, Fut, R> ResourceTemplateHandler for F
where
    F: Fn(RequestContext, ReadResourceRequestParams, UriVariables) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoOutcome<ReadResourceResult>,
{
    fn read(
        &self,
        ctx: RequestContext,
        params: ReadResourceRequestParams,
        variables: UriVariables,
    ) -> BoxFuture<'static, Result<Outcome<ReadResourceResult>, ErrorObject>> {
        let future = self(ctx, params, variables);
        Box::pin(async move { future.await.into_outcome() })
    }
}

/// Handles `completion/complete`.
pub trait CompletionHandler: Send + Sync + 'static {
    /// Completes an argument.
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> BoxFuture<'static, Result<CompleteResult, ErrorObject>>;
}

impl<F, Fut, R> CompletionHandler for F
where
    F: Fn(RequestContext, CompleteRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoResult<CompleteResult>,
{
    fn complete(
        &self,
        ctx: RequestContext,
        params: CompleteRequestParams,
    ) -> BoxFuture<'static, Result<CompleteResult, ErrorObject>> {
        let future = self(ctx, params);
        Box::pin(async move { future.await.into_result() })
    }
}

/// Handles a method this SDK does not define (an extension's), with raw JSON params and result.
pub trait MethodHandler: Send + Sync + 'static {
    /// Answers the request. The result must be a JSON object; it gets `resultType` and the
    /// server stamp like any other, and may not be an `InputRequiredResult`.
    fn handle(
        &self,
        ctx: RequestContext,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>>;
}

impl<F, Fut, R> MethodHandler for F
where
    F: Fn(RequestContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoResult<Value>,
{
    fn handle(
        &self,
        ctx: RequestContext,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let future = self(ctx, params);
        Box::pin(async move { future.await.into_result() })
    }
}
