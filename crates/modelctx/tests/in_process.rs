//! In-process calls (`Server::in_process`, `RequestContext::read_resource`): the same answers a
//! remote client gets, with no transport — lists, tools, prompts, resources, the checks of
//! arguments and capabilities, an input-required round and its retry, the middleware, a
//! handler reading its own server's resources as its client, and the bound on nesting.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use modelctx::server::in_process::MAX_NESTING;
use modelctx::server::middleware::{Middleware, Next, Reply, Request};
use modelctx::server::{RequestContext, Server};
use modelctx::types::methods::CallTool;
use modelctx::types::*;
use modelctx::uri_template::UriVariables;
use modelctx_seal::Principal;
use modelctx_test_support::server::fixture;
use serde_json::json;

/// The text of a complete tool result, and whether it is an error.
fn text(outcome: Outcome<CallToolResult>) -> (String, bool) {
    let result = outcome.complete().expect("a complete result");
    let ContentBlock::Text(text) = &result.content[0] else {
        panic!("not text: {result:?}");
    };
    (text.text.clone(), result.is_error == Some(true))
}

#[tokio::test]
async fn lists_tools_prompts_and_resources_answer_as_they_would_remotely() {
    let calls = fixture().in_process();
    let tools = calls.list_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "echo"), "{tools:?}");
    let prompts = calls.list_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let resources = calls.list_resources().await.unwrap();
    assert_eq!(resources[0].uri, "test://doc");
    let templates = calls.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "test://items/{id}");

    let echoed = calls
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(echoed), ("hi".to_owned(), false));
    let item = calls
        .read_resource("test://items/7")
        .await
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(
        item.contents[0],
        ResourceContents::text("test://items/7", None, "item 7")
    );
    let mut greet = GetPromptRequestParams::new("greet");
    greet.arguments = Some([("who".to_owned(), "Ada".to_owned())].into_iter().collect());
    let prompt = calls.get_prompt(greet).await.unwrap().complete().unwrap();
    assert_eq!(prompt.messages.len(), 1);
}

#[tokio::test]
async fn the_server_s_checks_apply_to_in_process_calls() {
    let calls = fixture().in_process();
    // Arguments the schema refuses: a tool error the model can read, as over a transport.
    let (refused, is_error) = text(calls.call_tool("echo", json!({"text": 7})).await.unwrap());
    assert!(
        is_error && refused.contains("Input validation error"),
        "{refused}"
    );
    let unknown = calls.call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS, "{unknown:?}");
    let missing = calls.read_resource("test://missing").await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::INVALID_PARAMS, "{missing:?}");

    // A tool that needs sampling: refused until the calls declare it.
    let needs = calls
        .call_tool("needs_sampling", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        needs.code,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "{needs:?}"
    );
    let sampling = fixture()
        .in_process()
        .client_capabilities(ClientCapabilities::new().with_sampling())
        .call_tool("needs_sampling", json!({}))
        .await
        .unwrap();
    assert_eq!(text(sampling), ("sampled".to_owned(), false));
}

#[tokio::test]
async fn an_input_required_round_is_returned_and_its_retry_completes() {
    let calls = fixture().in_process();
    let first = calls.call_tool("ask", json!({})).await.unwrap();
    let asked = first.input_required().expect("the tool asks first");
    let state = asked.request_state.expect("it keeps state");
    let mut retry = CallToolRequestParams::new("ask", None);
    retry.request_state = Some(state);
    let second = calls.request::<CallTool>(retry).await.unwrap();
    assert_eq!(text(second), ("answered".to_owned(), false));
}

/// Counts the requests it sees.
struct Counting(Arc<AtomicUsize>);

impl Middleware for Counting {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.run(request)
    }
}

/// A tool that reads the `private://mine` resource, which answers with the principal's
/// subject; and a template that reads itself.
fn reading_server(seen: &Arc<AtomicUsize>) -> Server {
    Server::builder("reader", "1.0.0")
        .middleware(Counting(Arc::clone(seen)))
        .bind_principal(|ctx: &RequestContext| ctx.principal().cloned())
        .tool(
            Tool::new("whoami", Tool::empty_input_schema()),
            |ctx: RequestContext, _p: CallToolRequestParams| async move {
                let read = ctx.read_resource("private://mine").await?;
                let ResourceContents::Text(text) = &read.contents[0] else {
                    return Err(ErrorObject::internal("not text"));
                };
                Ok(CallToolResult::text(text.text.clone()))
            },
        )
        .resource(
            Resource::new("private://mine", "mine"),
            |ctx: RequestContext, params: ReadResourceRequestParams| async move {
                let who = ctx.principal().map(|p| p.as_str().to_owned()).unwrap_or_default();
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, who)])
            },
        )
        .resource_template(
            ResourceTemplate::new("loop://{n}", "loop"),
            |ctx: RequestContext, params: ReadResourceRequestParams, _vars: UriVariables| async move {
                ctx.read_resource(&params.uri).await
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_handler_reads_its_server_s_resources_as_its_client_through_the_middleware() {
    let seen = Arc::new(AtomicUsize::new(0));
    let server = reading_server(&seen);
    let principal = Principal::new("ada");
    let result = server
        .in_process()
        .principal(principal)
        .call_tool("whoami", json!({}))
        .await
        .unwrap();
    assert_eq!(text(result), ("ada".to_owned(), false));
    // The call and the read it made, each through the middleware.
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn reads_that_nest_without_end_stop_at_the_bound() {
    let seen = Arc::new(AtomicUsize::new(0));
    let error = reading_server(&seen)
        .in_process()
        .read_resource("loop://1")
        .await
        .unwrap_err();
    assert!(error.message.contains("nested"), "{error:?}");
    assert_eq!(seen.load(Ordering::SeqCst), MAX_NESTING);
}
