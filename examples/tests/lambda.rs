//! The demo's `provision` as an AWS Lambda function (`modelctx::server::lambda`), driven as the
//! Lambda runtime drives it: each invocation is an API Gateway REST API, HTTP API or function
//! URL event (`examples/lambda-events/`; the function URL's recorded from the `cargo lambda`
//! emulator by `scripts/lambda-emulator.sh`, the API Gateway ones from `aws_lambda_events`'
//! samples), handed to `lambda_http`'s adapter, the response read as the runtime posts it. A
//! cold start is a new instance: its own server, given only the sealing keys.

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::BodyExt as _;
use lambda_http::lambda_runtime::Context;
use lambda_http::{RequestExt as _, Service as _};

use modelctx::seal::RequestStateSecurity;
use modelctx::server::http::SseConfig;
use modelctx::server::lambda::{LambdaConfig, LambdaError, LambdaFunction, Unfit};
use modelctx::server::single_use::{DEFAULT_CAPACITY, MemoryReplayGuard, SingleUse};
use modelctx_examples::lambda::{Source, event, instance, invoke, message, meta, modern_headers};
use serde_json::{Value, json};

type Result<T = ()> = std::result::Result<T, Box<dyn Error>>;

/// What `MCP_REQUEST_STATE_KEYS` holds on every instance.
const KEYS: &str = "the key every instance of the function is given (32+ bytes)";

fn call(id: u64, name: &str, arguments: Value, round: Option<(&Value, &str)>) -> Value {
    let mut params = json!({"_meta": meta(), "name": name});
    params["arguments"] = arguments;
    if let Some((responses, state)) = round {
        params["inputResponses"] = responses.clone();
        params["requestState"] = Value::from(state);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// One invocation on a new instance: a tool call through `source`.
async fn call_cold(source: Source, body: &Value, tool: &str) -> Result<(Value, Value)> {
    let function = instance(KEYS, LambdaConfig::default())?;
    let headers = modern_headers("tools/call", Some(tool));
    let payload = invoke(&function, event(source, body, &headers)?).await?;
    Ok((message(&payload)?, payload))
}

/// Round 1 of `provision` on a new instance: the region question, and the sealed state.
async fn round_one(source: Source) -> Result<String> {
    let start = call(1, "provision", json!({"name": "orders"}), None);
    let (answer, _) = call_cold(source, &start, "provision").await?;
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    assert_eq!(
        result["inputRequests"]["region"]["params"]["message"],
        "Which region should the database live in?"
    );
    Ok(result["requestState"]
        .as_str()
        .ok_or("no requestState")?
        .to_owned())
}

fn region_answer() -> Value {
    json!({"region": {"action": "accept", "content": {"region": "eu-west-1"}}})
}

#[tokio::test]
async fn discover_and_a_tool_call_through_every_event_source() -> Result {
    for source in Source::ALL {
        let function = instance(KEYS, LambdaConfig::default())?;
        let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                              "params": {"_meta": meta()}});
        let headers = modern_headers("server/discover", None);
        let payload = invoke(&function, event(source, &discover, &headers)?).await?;
        assert_eq!(payload["statusCode"], 200, "{source:?}: {payload}");
        let answer = message(&payload)?;
        assert_eq!(
            answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-demo",
            "{source:?}: {answer}"
        );
        assert_eq!(
            answer["result"]["supportedVersions"],
            json!(["2026-07-28"]),
            "{source:?}"
        );

        let echo = call(2, "echo", json!({"text": "hello"}), None);
        let (answer, _) = call_cold(source, &echo, "echo").await?;
        assert_eq!(
            answer["result"]["content"][0]["text"], "hello",
            "{source:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn the_two_rounds_of_provision_are_served_by_two_instances() -> Result {
    // Every pair of sources: the rounds may even arrive through different integrations.
    for first in Source::ALL {
        for second in Source::ALL {
            let state = round_one(first).await?;
            let answers = region_answer();
            let retry = call(
                2,
                "provision",
                json!({"name": "orders"}),
                Some((&answers, &state)),
            );
            let (round_two, _) = call_cold(second, &retry, "provision").await?;
            assert_eq!(
                round_two["result"]["content"][0]["text"], "Provisioned 'orders' in eu-west-1.",
                "{first:?} then {second:?}: {round_two}"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_tampered_request_state_is_refused() -> Result {
    let state = round_one(Source::FunctionUrl).await?;
    let answers = region_answer();
    let tampered = format!("{state}x");
    let retry = call(
        2,
        "provision",
        json!({"name": "orders"}),
        Some((&answers, &tampered)),
    );
    let (refused, _) = call_cold(Source::RestApi, &retry, "provision").await?;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Invalid or expired requestState"
    );

    // Sealed by another deployment's keys: the same refusal.
    let other = RequestStateSecurity::from_settings(
        Some("another function key that is 32+ bytes long"),
        None,
    )?
    .ok_or("keys")?;
    let other = LambdaFunction::new(
        modelctx_examples::lambda::server(other)?.server(),
        LambdaConfig::default(),
    )?;
    let retry = call(
        3,
        "provision",
        json!({"name": "orders"}),
        Some((&answers, &state)),
    );
    let headers = modern_headers("tools/call", Some("provision"));
    let payload = invoke(&other, event(Source::HttpApi, &retry, &headers)?).await?;
    assert_eq!(message(&payload)?["error"]["code"], -32602);
    Ok(())
}

#[tokio::test]
async fn a_2025_11_25_initialize_is_refused_naming_2026_07_28() -> Result {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "old-client", "version": "1"}}});
    for source in Source::ALL {
        let function = instance(KEYS, LambdaConfig::default())?;
        // A 2025-11-25 client sends no MCP-Protocol-Version on `initialize`.
        let payload = invoke(&function, event(source, &initialize, &[])?).await?;
        assert_eq!(payload["statusCode"], 400, "{source:?}: {payload}");
        let refused = message(&payload)?;
        assert_eq!(refused["id"], 1);
        let error = &refused["error"];
        assert_eq!(error["code"], -32022, "{refused}");
        assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
        assert_eq!(error["data"]["requested"], "2025-11-25");
        let text = error["message"].as_str().unwrap_or_default();
        assert!(
            text.contains("2026-07-28 only") && text.contains("AWS Lambda"),
            "{text}"
        );
        // No session was opened: nothing names one.
        assert!(
            payload["headers"].get("mcp-session-id").is_none(),
            "{payload}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn subscriptions_listen_is_refused_when_responses_are_buffered() -> Result {
    let function = instance(KEYS, LambdaConfig::default())?;
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}});
    let headers = modern_headers("subscriptions/listen", None);
    let payload = invoke(&function, event(Source::FunctionUrl, &listen, &headers)?).await?;
    let refused = message(&payload)?;
    assert_eq!(refused["id"], 9);
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    let text = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(text.contains("LambdaConfig::streamed()"), "{text}");
    Ok(())
}

/// Streamed, a listen stream is served, and ends `deadline_margin` before the invocation's
/// deadline instead of running into the function's timeout. Tokio's clock is paused: the wait
/// for the deadline passes as soon as nothing else is left to do.
#[tokio::test(start_paused = true)]
async fn a_streamed_listen_stream_ends_before_the_invocations_deadline() -> Result {
    let mut function = instance(KEYS, LambdaConfig::default().streamed())?;
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": {"toolsListChanged": true}}});
    let headers = modern_headers("subscriptions/listen", None);
    let event = event(Source::FunctionUrl, &listen, &headers)?;
    let mut context = Context::default();
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?;
    // A minute left, of which the last 2 s (the default margin) are not streamed.
    context.deadline = u64::try_from((now + Duration::from_secs(62)).as_millis())?;
    let request = lambda_http::request::from_str(&event.to_string())?.with_lambda_context(context);
    let Ok(response) = function.call(request).await;
    let content_type = response.headers().get("content-type").cloned();
    assert_eq!(
        content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let body = response.into_body().collect().await?.to_bytes();
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("notifications/subscriptions/acknowledged"),
        "{body}"
    );
    Ok(())
}

#[tokio::test]
async fn a_buffered_response_over_the_payload_limit_becomes_an_error() -> Result {
    // 2.9 M quotes: a 5.8 MB request, whose echo takes 11.6 MB JSON-escaped in the payload.
    let text = "\"".repeat(2_900_000);
    let echo = call(4, "echo", json!({"text": text}), None);
    let (answer, payload) = call_cold(Source::HttpApi, &echo, "echo").await?;
    assert_eq!(answer["id"], 4);
    assert_eq!(answer["error"]["code"], -32603, "{}", payload["statusCode"]);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("6 MB payload limit"), "{message}");
    Ok(())
}

#[tokio::test]
async fn the_host_and_origin_checks_name_the_functions_domains() -> Result {
    let template: Value = serde_json::from_str(include_str!("../lambda-events/http-api.json"))?;
    let domain = template["headers"]["host"]
        .as_str()
        .ok_or("a host")?
        .to_owned();
    let config = LambdaConfig::default().domains([domain.clone()]);
    let function = instance(KEYS, config)?;
    let echo = call(1, "echo", json!({"text": "hi"}), None);
    let mut headers = modern_headers("tools/call", Some("echo"));
    let served = invoke(&function, event(Source::HttpApi, &echo, &headers)?).await?;
    assert_eq!(served["statusCode"], 200, "{served}");

    let own_page = format!("https://{domain}");
    headers.push(("origin", &own_page));
    let from_own_page = invoke(&function, event(Source::HttpApi, &echo, &headers)?).await?;
    assert_eq!(from_own_page["statusCode"], 200, "{from_own_page}");
    headers.pop();
    headers.push(("origin", "https://elsewhere.example"));
    let from_elsewhere = invoke(&function, event(Source::HttpApi, &echo, &headers)?).await?;
    assert_eq!(from_elsewhere["statusCode"], 403, "{from_elsewhere}");

    // Another function's domain (the REST API's sample host) is not this one's.
    let other_host = invoke(&function, event(Source::RestApi, &echo, &headers[..3])?).await?;
    assert_eq!(other_host["statusCode"], 421, "{other_host}");
    Ok(())
}

#[test]
fn what_does_not_fit_a_function_is_refused_at_start_up() -> Result {
    let unfit = |result: std::result::Result<LambdaFunction, LambdaError>| match result {
        Err(LambdaError::Unfit(unfit)) => unfit,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let keys = || RequestStateSecurity::from_settings(Some(KEYS), None);

    // The full demo server keeps its tasks in memory.
    let demo = modelctx_cli::demo::server(keys()?)?;
    let refused = unfit(LambdaFunction::new(demo.server(), LambdaConfig::default()));
    assert_eq!(
        refused,
        [Unfit::TasksInOneInstance("this instance's memory")]
    );
    let message = LambdaError::Unfit(refused).to_string();
    assert!(message.contains("RedisTaskStore"), "{message}");

    // Keys made at start-up, a replay guard in memory, the 2024-11-05 sessions.
    let server = modelctx::server::McpServer::builder("fn", "1")
        .tool::<modelctx_cli::demo::echo>()
        .request_state_security(RequestStateSecurity::ephemeral())
        .low_level(|builder| {
            let guard = Arc::new(MemoryReplayGuard::new(DEFAULT_CAPACITY));
            builder.single_use(guard, SingleUse::All)
        })
        .build()?;
    let config = LambdaConfig::default().http(|http| http.sse(SseConfig::default()));
    let refused = unfit(LambdaFunction::new(server.server(), config));
    assert_eq!(
        refused,
        [
            Unfit::EphemeralSealingKeys,
            Unfit::ReplayGuardInOneInstance("this instance's memory"),
            Unfit::LegacySseSessions,
        ]
    );
    let message = LambdaError::Unfit(refused).to_string();
    for alternative in [
        "MCP_REQUEST_STATE_KEYS",
        "RedisReplayGuard",
        "2026-07-28 only",
    ] {
        assert!(message.contains(alternative), "{alternative}: {message}");
    }
    Ok(())
}
