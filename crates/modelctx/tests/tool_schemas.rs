//! Tool schemas are enforced at both ends: the server checks arguments against `inputSchema`
//! before the handler runs and a successful result against `outputSchema` before it leaves
//! (both as tool errors the model can read); the client checks structured results against the
//! listed `outputSchema` (and, when asked to, reads `tools/list` once for a tool it has not
//! seen); a schema that does not compile is refused at registration.

use modelctx::client::{ClientBuilder, ClientError};
use modelctx::server::{RegistrationError, Server};
use modelctx::types::{CallToolRequestParams, CallToolResult, Tool};
use modelctx_test_support::client::{FakeServer, Log, pinned, result};
use modelctx_test_support::json::object;
use serde_json::{Value, json};

/// `stats` declares `{"mean": number}` as its output and returns what `reply` asks for.
fn stats_tool() -> Tool {
    let mut tool = Tool::new(
        "stats",
        object(json!({
            "type": "object",
            "properties": {
                "values": {"type": "array", "items": {"type": "number"}, "minItems": 1},
                "reply": {"enum": ["good", "wrong", "none"]}
            },
            "required": ["values"]
        })),
    );
    tool.output_schema = Some(object(json!({
        "type": "object",
        "properties": {"mean": {"type": "number"}},
        "required": ["mean"]
    })));
    tool
}

fn stats_server() -> Server {
    Server::builder("stats", "1.0.0")
        .tool(
            stats_tool(),
            |_ctx, params: CallToolRequestParams| async move {
                let arguments = params.arguments.unwrap_or_default();
                let values: Vec<f64> = serde_json::from_value(arguments["values"].clone())
                    .expect("the schema was checked before the handler ran");
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                let mut result = CallToolResult::text(mean.to_string());
                match arguments.get("reply").and_then(Value::as_str) {
                    Some("wrong") => result.structured_content = Some(json!({"mean": "high"})),
                    Some("none") => {}
                    _ => result.structured_content = Some(json!({"mean": mean})),
                }
                result
            },
        )
        .build()
        .expect("a valid server")
}

async fn connect(server: Server) -> modelctx::client::Client {
    let pipe = modelctx::memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    ClientBuilder::new()
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await
        .expect("connect")
}

#[tokio::test]
async fn the_server_checks_arguments_and_results_against_the_tool_schemas() {
    let client = connect(stats_server()).await;
    let good = client
        .call_tool("stats", json!({"values": [1, 2, 3]}))
        .await
        .unwrap();
    assert_ne!(good.is_error, Some(true));
    assert_eq!(good.structured_content, Some(json!({"mean": 2.0})));

    for (arguments, expected) in [
        (
            json!({"values": []}),
            "Input validation error: /values: [] has less than 1 item",
        ),
        (
            json!({"values": [1, "two"]}),
            "Input validation error: /values/1: \"two\" is not of type \"number\"",
        ),
        (
            json!({}),
            "Input validation error: \"values\" is a required property",
        ),
        (
            json!({"values": [1], "reply": "wrong"}),
            "Output validation error: /mean: \"high\" is not of type \"number\"",
        ),
        (
            json!({"values": [1], "reply": "none"}),
            "Output validation error: outputSchema defined but no structured output returned",
        ),
    ] {
        let result = client.call_tool("stats", arguments.clone()).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{arguments}");
        assert_eq!(result.first_text(), Some(expected), "{arguments}");
        assert_eq!(result.structured_content, None, "{arguments}");
    }
    client.close().await.unwrap();
}

#[test]
fn a_schema_that_does_not_compile_is_refused_at_registration() {
    let mut tool = stats_tool();
    tool.output_schema = Some(object(json!({"type": "no-such-type"})));
    let refused = Server::builder("stats", "1.0.0")
        .tool(tool, |_ctx, _params: CallToolRequestParams| async move {
            CallToolResult::text("unreachable")
        })
        .build()
        .expect_err("refused");
    assert!(
        matches!(
            &refused,
            RegistrationError::InvalidSchema { tool, which: "outputSchema", .. } if tool == "stats"
        ),
        "{refused}"
    );
}

/// A server that lists `stats` with an outputSchema, answers every call with the `mean`
/// argument as its structured result (breaking the schema when asked to), and calls of any
/// other tool with plain text.
fn breaking_server() -> FakeServer {
    let listed =
        json!({"resultType": "complete", "tools": [serde_json::to_value(stats_tool()).unwrap()]});
    FakeServer::start(move |request| match request["method"].as_str() {
        Some("tools/list") => vec![result(request, listed.clone())],
        Some("tools/call") if request["params"]["name"] == "stats" => {
            let mean = request["params"]["arguments"]["mean"].clone();
            vec![result(
                request,
                json!({"resultType": "complete", "content": [], "structuredContent": {"mean": mean}}),
            )]
        }
        Some("tools/call") => vec![result(
            request,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "hidden"}]}),
        )],
        _ => Vec::new(),
    })
}

fn methods(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|message| message["method"].as_str().map(str::to_owned))
        .collect()
}

fn invalid(error: ClientError) -> (String, String, Box<CallToolResult>) {
    match error {
        ClientError::InvalidStructuredContent {
            tool,
            reason,
            result,
        } => (tool, reason, result),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_client_checks_structured_results_listing_unseen_tools_once() {
    let (client, log, _received) = breaking_server()
        .connect(pinned().list_unseen_tools(true))
        .await;
    // Never listed: the first successful result makes the client read tools/list, then check.
    let error = client
        .call_tool("stats", json!({"mean": "high"}))
        .await
        .unwrap_err();
    let (tool, reason, result) = invalid(error);
    assert_eq!(tool, "stats");
    assert_eq!(reason, "/mean: \"high\" is not of type \"number\"");
    assert_eq!(result.structured_content, Some(json!({"mean": "high"})));
    let fine = client
        .call_tool("stats", json!({"mean": 2.5}))
        .await
        .unwrap();
    assert_eq!(fine.structured_content, Some(json!({"mean": 2.5})));
    // A tool the server never lists costs one listing, not one per call.
    for _ in 0..3 {
        let hidden = client.call_tool("hidden", json!({})).await.unwrap();
        assert_eq!(hidden.first_text(), Some("hidden"));
    }
    assert_eq!(
        methods(&log),
        [
            "tools/call",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/list",
            "tools/call",
            "tools/call"
        ]
    );
}

#[tokio::test]
async fn by_default_only_listed_tools_are_checked() {
    let (client, log, _received) = breaking_server().connect(pinned()).await;
    let unchecked = client
        .call_tool("stats", json!({"mean": "high"}))
        .await
        .unwrap();
    assert_eq!(unchecked.structured_content, Some(json!({"mean": "high"})));
    assert_eq!(methods(&log), ["tools/call"]);
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    let error = client
        .call_tool("stats", json!({"mean": "high"}))
        .await
        .unwrap_err();
    assert_eq!(
        invalid(error).1,
        "/mean: \"high\" is not of type \"number\""
    );
}
