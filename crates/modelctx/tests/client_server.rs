//! Our client against our server (`modelctx::server`), over the in-memory pipe, streamable HTTP on
//! 127.0.0.1 and stdio (this test binary re-run as the server process), in both eras: the
//! 2026-07-28 input-required loop with sealed state, and the handshake era's back-channel.

use std::collections::BTreeMap;

use modelctx::client::{Client, ClientBuilder, InputOrigin, Mode};
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ContentBlock, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestFormParams, Era, ErrorObject, GetPromptRequestParams,
    GetPromptResult, InputRequest, InputRequiredResult, ListRootsResult, Outcome, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, ResourceContents, Role,
    SamplingMessage, Tool,
};
use modelctx::uri_template::UriVariables;
use modelctx_test_support::client::{Recorder, answers, connect_in_memory, recording_builder};
use modelctx_test_support::server::{serve_http_background, stdio_child};
use serde_json::{Value, json};

fn schema(value: Value) -> modelctx::types::Extra {
    serde_json::from_value(value).unwrap()
}

fn one_field(field: &str, kind: &str) -> modelctx::types::ElicitationSchema {
    serde_json::from_value(json!({"type": "object",
        "properties": {field: {"type": kind}}, "required": [field]}))
    .unwrap()
}

fn arg<'a>(params: &'a CallToolRequestParams, name: &str) -> Option<&'a Value> {
    params.arguments.as_ref().and_then(|a| a.get(name))
}

fn elicited(params: &CallToolRequestParams, key: &str, field: &str) -> Option<Value> {
    params
        .input_responses
        .as_ref()?
        .get(key)?
        .accepted()?
        .remove(field)
}

/// `provision {name}`: asks the region (an input request on 2026-07-28, a back-channel
/// elicitation in the handshake era).
async fn provision(
    ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let name = arg(&params, "name")
        .and_then(Value::as_str)
        .unwrap_or("db")
        .to_owned();
    let question = ElicitRequestFormParams::new(
        "Which region should the database live in?",
        one_field("region", "string"),
    );
    let region = if ctx.era() == Era::Handshake {
        let answer = ctx.elicit(question).await?;
        answer.content.and_then(|c| c.get("region").cloned())
    } else {
        match elicited(&params, "region", "region") {
            Some(region) => Some(region),
            None => {
                return Ok(Outcome::InputRequired(
                    InputRequiredResult::new()
                        .with_request("region", InputRequest::elicit(question))
                        .with_state("provision-v1"),
                ));
            }
        }
    };
    Ok(Outcome::Complete(CallToolResult::text(format!(
        "Provisioned '{name}' in {} (protocol {}, state seen: {:?}).",
        region
            .and_then(|r| r.as_str().map(ToOwned::to_owned))
            .unwrap_or_default(),
        ctx.protocol_version(),
        params.request_state
    ))))
}

/// `ask_all`: one round asking an elicitation, a sampling and a roots question together.
async fn ask_all(
    ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let sampling = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("Summarize: long text")],
        50,
    );
    let (seat, model, root) = if ctx.era() == Era::Handshake {
        let seat = ctx
            .elicit(ElicitRequestFormParams::new(
                "Seat?",
                one_field("seat", "string"),
            ))
            .await?;
        let sample = ctx.create_message(&sampling).await?;
        let roots = ctx.list_roots().await?;
        (
            seat.content.and_then(|c| c.get("seat").cloned()),
            sample.model,
            roots.roots[0].uri.clone(),
        )
    } else {
        let Some(responses) = params.input_responses.as_ref() else {
            return Ok(Outcome::InputRequired(
                InputRequiredResult::new()
                    .with_request(
                        "seat",
                        InputRequest::elicit(ElicitRequestFormParams::new(
                            "Seat?",
                            one_field("seat", "string"),
                        )),
                    )
                    .with_request("llm", InputRequest::create_message(sampling))
                    .with_request("roots", InputRequest::list_roots())
                    .with_state("ask-all"),
            ));
        };
        let sample: CreateMessageResult = serde_json::from_value(responses["llm"].0.clone())
            .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
        let roots: ListRootsResult = serde_json::from_value(responses["roots"].0.clone())
            .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
        (
            elicited(&params, "seat", "seat"),
            sample.model,
            roots.roots[0].uri.clone(),
        )
    };
    Ok(Outcome::Complete(CallToolResult::text(format!(
        "seat={} model={model} root={root}",
        seat.unwrap_or_default()
    ))))
}

/// `state_only {n}`: n state-only rounds, then done.
async fn state_only(
    _ctx: RequestContext,
    params: CallToolRequestParams,
) -> Result<Outcome<CallToolResult>, ErrorObject> {
    let n = arg(&params, "n").and_then(Value::as_u64).unwrap_or(0);
    let done: u64 = params
        .request_state
        .as_deref()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if done < n {
        return Ok(Outcome::InputRequired(
            InputRequiredResult::new().with_state((done + 1).to_string()),
        ));
    }
    Ok(Outcome::Complete(CallToolResult::text(format!(
        "state_only completed after {n} round(s)"
    ))))
}

async fn briefing(
    _ctx: RequestContext,
    params: GetPromptRequestParams,
) -> Result<Outcome<GetPromptResult>, ErrorObject> {
    let topic = params
        .arguments
        .as_ref()
        .and_then(|a| a.get("topic"))
        .cloned()
        .unwrap_or_default();
    let audience = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("audience"))
        .and_then(|a| a.as_elicit().ok())
        .and_then(|a| a.content?.get("audience")?.as_str().map(ToOwned::to_owned));
    let Some(audience) = audience else {
        return Ok(Outcome::InputRequired(
            InputRequiredResult::new()
                .with_request(
                    "audience",
                    InputRequest::elicit(ElicitRequestFormParams::new(
                        format!("Who is the audience for the briefing on {topic}?"),
                        one_field("audience", "string"),
                    )),
                )
                .with_state(format!("briefing:{topic}")),
        ));
    };
    Ok(Outcome::Complete(GetPromptResult::new(vec![
        PromptMessage::new(
            Role::USER,
            ContentBlock::text(format!("Brief {audience} on {topic}.")),
        ),
    ])))
}

async fn report(
    _ctx: RequestContext,
    params: ReadResourceRequestParams,
    variables: UriVariables,
) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
    let quarter = variables.get("quarter").cloned().unwrap_or_default();
    let format = params
        .input_responses
        .as_ref()
        .and_then(|r| r.get("format"))
        .and_then(|a| a.as_elicit().ok())
        .and_then(|a| a.content?.get("format")?.as_str().map(ToOwned::to_owned));
    let Some(format) = format else {
        return Ok(Outcome::InputRequired(
            InputRequiredResult::new()
                .with_request(
                    "format",
                    InputRequest::elicit(ElicitRequestFormParams::new(
                        format!("Which format for the {quarter} report?"),
                        one_field("format", "string"),
                    )),
                )
                .with_state(format!("report:{quarter}")),
        ));
    };
    Ok(Outcome::Complete(ReadResourceResult::new(vec![
        ResourceContents::text(
            params.uri,
            Some("text/plain".to_owned()),
            format!("Report {quarter} ({format})"),
        ),
    ])))
}

fn build_server() -> Server {
    let object = |props: Value| schema(json!({"type": "object", "properties": props}));
    Server::builder("RustPeer", "0.0.1")
        .tool(
            Tool::new("provision", object(json!({"name": {"type": "string"}}))),
            provision,
        )
        .tool(Tool::new("ask_all", object(json!({}))), ask_all)
        .tool(
            Tool::new("state_only", object(json!({"n": {"type": "integer"}}))),
            state_only,
        )
        .tool(
            Tool::new(
                "echo",
                object(json!({"text": {"type": "string", "x-mcp-header": "Text"}})),
            ),
            |_ctx, params: CallToolRequestParams| async move {
                let text = arg(&params, "text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                CallToolResult::text(text)
            },
        )
        .prompt(
            serde_json::from_value(json!({"name": "briefing",
                "arguments": [{"name": "topic", "required": true}]}))
            .unwrap(),
            briefing,
        )
        .resource_template(
            serde_json::from_value(json!({"uriTemplate": "report://{quarter}", "name": "report"}))
                .unwrap(),
            report,
        )
        .seal_request_state_ephemeral()
        .build()
        .unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Via {
    Memory,
    Http,
    Stdio,
}

/// Connects `builder` to a fresh server over `via`.
async fn connect(builder: ClientBuilder, via: Via) -> Client {
    match via {
        Via::Memory => connect_in_memory(build_server(), builder).await,
        Via::Http => {
            let url = serve_http_background(build_server()).await;
            builder.connect_http(&url).await.unwrap()
        }
        Via::Stdio => builder
            .connect_stdio(stdio_child(
                "child_stdio_server",
                "MCP_CLIENT_TEST_STDIO_SERVER",
            ))
            .await
            .unwrap(),
    }
}

/// The stdio server process (this binary re-run; ignored in normal runs). libtest's own lines
/// on stdout are not JSON-RPC; the client skips them.
#[tokio::test]
#[ignore = "entry point of the stdio server child process"]
async fn child_stdio_server() {
    if std::env::var_os("MCP_CLIENT_TEST_STDIO_SERVER").is_some() {
        build_server().serve_stdio().await.unwrap();
    }
}

fn text(result: &CallToolResult) -> &str {
    result.first_text().unwrap_or_default()
}

async fn modern(via: Via) {
    let recorder = Recorder::default();
    let client = connect(recording_builder(&recorder, answers()), via).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().unwrap().name, "RustPeer");
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 4);

    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    // The server sealed the state; its handler saw the plaintext.
    assert_eq!(
        text(&result),
        "Provisioned 'orders' in eu-west-1 (protocol 2026-07-28, state seen: Some(\"provision-v1\"))."
    );
    let result = client.call_tool("ask_all", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        "seat=\"aisle\" model=fake-llm-1 root=file:///tmp/mcp-rust-root"
    );
    let result = client
        .call_tool("state_only", json!({"n": 3}))
        .await
        .unwrap();
    assert_eq!(text(&result), "state_only completed after 3 round(s)");
    let result = client
        .call_tool("echo", json!({"text": " spaced ünïcode "}))
        .await
        .unwrap();
    assert_eq!(text(&result), " spaced ünïcode ");

    let prompt = client
        .get_prompt(
            "briefing",
            Some(BTreeMap::from([("topic".to_owned(), "Q3".to_owned())])),
        )
        .await
        .unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Brief the board on Q3.")
    );
    let resource = client.read_resource("report://q3").await.unwrap();
    assert_eq!(
        serde_json::to_value(&resource.contents).unwrap()[0]["text"],
        "Report q3 (pdf)"
    );

    let mut keys = recorder.keys();
    keys.sort();
    assert_eq!(
        keys,
        ["audience", "format", "llm", "region", "roots", "seat"]
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn modern_over_memory() {
    modern(Via::Memory).await;
}

#[tokio::test]
async fn modern_over_http() {
    modern(Via::Http).await;
}

#[tokio::test]
async fn modern_over_stdio() {
    modern(Via::Stdio).await;
}

async fn handshake(via: Via) {
    let recorder = Recorder::default();
    let client = connect(
        recording_builder(&recorder, answers()).mode(Mode::Handshake),
        via,
    )
    .await;
    assert_eq!(client.era(), Era::Handshake);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "Provisioned 'orders' in eu-west-1 (protocol 2025-11-25, state seen: None)."
    );
    let result = client.call_tool("ask_all", json!({})).await.unwrap();
    assert_eq!(
        text(&result),
        "seat=\"aisle\" model=fake-llm-1 root=file:///tmp/mcp-rust-root"
    );
    let calls = recorder.calls();
    assert_eq!(calls.len(), 4);
    assert!(
        calls
            .iter()
            .all(|c| matches!(c.origin, InputOrigin::ServerRequest { .. })),
        "{calls:?}"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn handshake_over_memory() {
    handshake(Via::Memory).await;
}

#[tokio::test]
async fn handshake_over_http() {
    handshake(Via::Http).await;
}

#[tokio::test]
async fn handshake_over_stdio() {
    handshake(Via::Stdio).await;
}

/// Many concurrent loops over one connection, each with its own sealed state.
#[tokio::test]
async fn concurrent_loops_share_a_connection() {
    for via in [Via::Memory, Via::Http] {
        let recorder = Recorder::default();
        let client = connect(recording_builder(&recorder, answers()), via).await;
        let tasks: Vec<_> = (0..24)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move {
                    let name = format!("db{i}");
                    let result = client
                        .call_tool("provision", json!({ "name": name }))
                        .await
                        .unwrap();
                    assert!(
                        text(&result).starts_with(&format!("Provisioned '{name}' in eu-west-1")),
                        "{}",
                        text(&result)
                    );
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(recorder.calls().len(), 24);
        client.close().await.unwrap();
    }
}

/// Without callbacks the client declares no capabilities; a server that needs them says so.
#[tokio::test]
async fn auto_mode_discovers_our_server() {
    let client = connect(ClientBuilder::new(), Via::Memory).await;
    assert_eq!(client.era(), Era::Modern);
    assert!(client.server_capabilities().unwrap().tools.is_some());
    assert_eq!(
        serde_json::to_value(client.session().client_capabilities()).unwrap(),
        json!({})
    );
    client.close().await.unwrap();
}
