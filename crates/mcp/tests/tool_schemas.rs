//! Tool schemas are enforced at both ends: the server checks arguments against `inputSchema`
//! before the handler runs and a successful result against `outputSchema` before it leaves
//! (both as tool errors the model can read); the client checks structured results of the tools
//! it has listed; a schema that does not compile is refused at registration.

mod client_support;

use client_support::{FakeServer, pinned, result};
use mcp::client::{ClientBuilder, ClientError};
use mcp::server::{RegistrationError, Server};
use mcp::types::{CallToolRequestParams, CallToolResult, Extra, Tool};
use serde_json::{Value, json};

fn object(value: Value) -> Extra {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

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

async fn connect(server: Server) -> mcp::client::Client {
    let pipe = mcp::transport::memory::pipe();
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

#[tokio::test]
async fn the_client_checks_structured_results_of_listed_tools() {
    // A server that lists `stats` with an outputSchema and then breaks it.
    let listed =
        json!({"resultType": "complete", "tools": [serde_json::to_value(stats_tool()).unwrap()]});
    let server = FakeServer::start(move |request| match request["method"].as_str() {
        Some("tools/list") => vec![result(request, listed.clone())],
        Some("tools/call") => {
            let mean = request["params"]["arguments"]["mean"].clone();
            vec![result(
                request,
                json!({"resultType": "complete", "content": [], "structuredContent": {"mean": mean}}),
            )]
        }
        _ => Vec::new(),
    });
    let (client, _log, _received) = server.connect(pinned()).await;
    // Not listed yet: nothing to check against.
    let unchecked = client
        .call_tool("stats", json!({"mean": "high"}))
        .await
        .unwrap();
    assert_eq!(unchecked.structured_content, Some(json!({"mean": "high"})));
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    let fine = client
        .call_tool("stats", json!({"mean": 2.5}))
        .await
        .unwrap();
    assert_eq!(fine.structured_content, Some(json!({"mean": 2.5})));
    let error = client
        .call_tool("stats", json!({"mean": "high"}))
        .await
        .unwrap_err();
    let ClientError::InvalidStructuredContent {
        tool,
        reason,
        result,
    } = error
    else {
        panic!("{error:?}")
    };
    assert_eq!(tool, "stats");
    assert_eq!(reason, "/mean: \"high\" is not of type \"number\"");
    assert_eq!(result.structured_content, Some(json!({"mean": "high"})));
}
