//! The per-request validation ladder of 2026-07-28, row by row, over the stdio code path and
//! over HTTP: the JSON-RPC code, the HTTP status, the request id kept, and the data members.

use std::time::Duration;

use modelctx::server::http::HttpConfig;
use modelctx_test_support::server::{HttpPeer, StdioPeer, fixture, request};
use serde_json::{Value, json};

/// A named request and the header overrides to send it with.
type HeaderRow<'a> = (&'a str, &'a Value, Vec<(&'a str, Option<&'a str>)>);

struct Case {
    name: &'static str,
    body: Value,
    code: i64,
    status: u16,
}

fn without_meta_key(mut body: Value, key: &str) -> Value {
    body["params"]["_meta"].as_object_mut().unwrap().remove(key);
    body
}

/// Rows that do not depend on HTTP headers (so they apply to stdio too).
fn body_cases() -> Vec<Case> {
    vec![
        Case {
            name: "missing _meta",
            body: json!({"jsonrpc":"2.0","id":101,"method":"server/discover","params":{}}),
            code: -32602,
            status: 400,
        },
        Case {
            name: "missing params altogether",
            body: json!({"jsonrpc":"2.0","id":"no-params","method":"tools/list"}),
            code: -32602,
            status: 400,
        },
        Case {
            name: "missing protocolVersion",
            body: without_meta_key(
                request(102, "server/discover", json!({})),
                "io.modelcontextprotocol/protocolVersion",
            ),
            code: -32602,
            status: 400,
        },
        Case {
            name: "missing clientCapabilities",
            body: without_meta_key(
                request(104, "tools/list", json!({})),
                "io.modelcontextprotocol/clientCapabilities",
            ),
            code: -32602,
            status: 400,
        },
        Case {
            name: "unsupported version",
            body: {
                let mut body = request(301, "server/discover", json!({}));
                body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
                    json!("v999.0.0");
                body
            },
            code: -32022,
            status: 400,
        },
        Case {
            name: "missing required capability",
            body: request(
                401,
                "tools/call",
                json!({"name":"needs_sampling","arguments":{}}),
            ),
            code: -32021,
            status: 400,
        },
        Case {
            name: "initialize removed",
            body: request(500, "initialize", json!({})),
            code: -32601,
            status: 404,
        },
        Case {
            name: "ping removed",
            body: request(501, "ping", json!({})),
            code: -32601,
            status: 404,
        },
        Case {
            name: "logging/setLevel removed",
            body: request(502, "logging/setLevel", json!({"level":"info"})),
            code: -32601,
            status: 404,
        },
        Case {
            name: "resources/subscribe removed",
            body: request(503, "resources/subscribe", json!({"uri":"test://doc"})),
            code: -32601,
            status: 404,
        },
        Case {
            name: "resources/unsubscribe removed",
            body: request(504, "resources/unsubscribe", json!({"uri":"test://doc"})),
            code: -32601,
            status: 404,
        },
        Case {
            name: "unknown method",
            body: request(601, "unknown/method", json!({})),
            code: -32601,
            status: 404,
        },
        Case {
            name: "resource not found",
            body: request(701, "resources/read", json!({"uri":"test://nope"})),
            code: -32602,
            status: 400,
        },
        Case {
            name: "unknown tool",
            body: request(702, "tools/call", json!({"name":"nope"})),
            code: -32602,
            status: 400,
        },
        Case {
            name: "bad arguments shape",
            body: request(703, "tools/call", json!({"name":"echo","arguments":[1]})),
            code: -32602,
            status: 400,
        },
        Case {
            name: "prompt missing a required argument",
            body: request(704, "prompts/get", json!({"name":"greet"})),
            code: -32602,
            status: 400,
        },
        Case {
            name: "invalid log level",
            body: {
                let mut body = request(705, "tools/list", json!({}));
                body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
                body
            },
            code: -32602,
            status: 400,
        },
        Case {
            name: "invalid cursor",
            body: request(706, "tools/list", json!({"cursor":"!!"})),
            code: -32602,
            status: 400,
        },
    ]
}

fn check(case: &Case, transport: &str, response: &Value, status: Option<u16>) {
    let error = &response["error"];
    assert_eq!(
        error["code"], case.code,
        "{transport} {}: {response}",
        case.name
    );
    assert_eq!(
        response["id"], case.body["id"],
        "{transport} {}: the error keeps the request id",
        case.name
    );
    if let Some(status) = status {
        assert_eq!(
            status, case.status,
            "{transport} {}: HTTP status",
            case.name
        );
    }
    match case.code {
        -32022 => {
            assert_eq!(
                error["data"]["supported"],
                json!(["2026-07-28"]),
                "{}",
                case.name
            );
            if case.body["method"] != "initialize" {
                assert_eq!(error["data"]["requested"], "v999.0.0");
            }
        }
        -32021 => assert_eq!(
            error["data"]["requiredCapabilities"],
            json!({"sampling":{}})
        ),
        -32601 => assert_eq!(error["data"], case.body["method"]),
        _ => {}
    }
    if case.name == "resource not found" {
        assert_eq!(error["data"]["uri"], "test://nope");
    }
}

#[tokio::test]
async fn ladder_over_stdio() {
    // The first request fixes the era of a stdio connection: a modern one makes it modern.
    let mut peer = StdioPeer::start(fixture());
    let (first, _) = peer
        .request(&request(1, "server/discover", json!({})))
        .await;
    assert_eq!(first["result"]["resultType"], "complete");
    for mut case in body_cases() {
        if case.body["method"] == "initialize" {
            // On a stream connection locked to 2026-07-28, `initialize` names the versions the
            // connection speaks (the era rule), rather than "not found" as on HTTP.
            case.code = -32022;
        }
        let (response, _) = peer.request(&case.body).await;
        check(&case, "stdio", &response, None);
    }
    peer.close().await.unwrap();
}

/// `serve_io` runs its loop as a task of its own; dropping the `serve_io` future still stops
/// serving (the output ends) instead of leaving that task behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_serve_io_stops_the_connection() {
    let mut peer = StdioPeer::start(fixture());
    let (reply, _) = peer
        .request(&request(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ))
        .await;
    assert_eq!(reply["result"]["content"][0]["text"], "hi");
    peer.server.abort();
    assert!(peer.next().await.is_none(), "output ended");
}

#[tokio::test]
async fn ladder_over_http() {
    let peer = HttpPeer::start(fixture()).await;
    for case in body_cases() {
        let (status, _, messages) = peer.post(&case.body, &[]).await;
        check(&case, "http", messages.last().unwrap(), Some(status));
    }
}

#[tokio::test]
async fn header_rows_over_http() {
    let peer = HttpPeer::start(fixture()).await;
    let call = request(
        9,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"hi"}}),
    );
    let regional = request(
        10,
        "tools/call",
        json!({"name":"regional","arguments":{"region":"us-west1","count":3}}),
    );
    let rows: Vec<HeaderRow<'_>> = vec![
        (
            "version header differs from _meta",
            &call,
            vec![("mcp-protocol-version", Some("2026-08-01"))],
        ),
        (
            "method header differs",
            &call,
            vec![("mcp-method", Some("tools/list"))],
        ),
        (
            "method header is case-sensitive",
            &call,
            vec![("mcp-method", Some("TOOLS/CALL"))],
        ),
        ("method header missing", &call, vec![("mcp-method", None)]),
        (
            "name header differs",
            &call,
            vec![("mcp-name", Some("other"))],
        ),
        ("name header missing", &call, vec![("mcp-name", None)]),
        (
            "name header malformed base64",
            &call,
            vec![("mcp-name", Some("=?base64?@@@?="))],
        ),
        (
            "param header missing",
            &regional,
            vec![("mcp-param-count", Some("3"))],
        ),
        (
            "param header differs",
            &regional,
            vec![
                ("mcp-param-region", Some("eu-west1")),
                ("mcp-param-count", Some("3")),
            ],
        ),
        (
            "param integer differs",
            &regional,
            vec![
                ("mcp-param-region", Some("us-west1")),
                ("mcp-param-count", Some("4")),
            ],
        ),
        (
            "param base64 malformed",
            &regional,
            vec![
                ("mcp-param-region", Some("=?base64?SGVs!!!bG8=?=")),
                ("mcp-param-count", Some("3")),
            ],
        ),
    ];
    for (name, body, overrides) in rows {
        let (status, _, messages) = peer.post(body, &overrides).await;
        let response = messages.last().unwrap();
        assert_eq!(status, 400, "{name}: {response}");
        assert_eq!(response["error"]["code"], -32020, "{name}: {response}");
        assert_eq!(response["id"], body["id"], "{name}");
    }
    // Header name case does not matter, values are trimmed, integers compare numerically and the
    // base64 sentinel is decoded before comparing.
    let accepted: Vec<HeaderRow<'_>> = vec![
        (
            "upper-case header names",
            &call,
            vec![("MCP-METHOD", Some("tools/call"))],
        ),
        (
            "whitespace around the name",
            &call,
            vec![("mcp-name", Some("  echo  "))],
        ),
        (
            "sentinel-encoded name",
            &call,
            vec![("mcp-name", Some("=?base64?ZWNobw==?="))],
        ),
        (
            "param headers present",
            &regional,
            vec![
                ("Mcp-Param-Region", Some("us-west1")),
                ("mcp-param-count", Some("03")),
            ],
        ),
        (
            "param sentinel",
            &regional,
            vec![
                ("mcp-param-region", Some("=?base64?dXMtd2VzdDE=?=")),
                ("mcp-param-count", Some("3")),
            ],
        ),
    ];
    for (name, body, overrides) in accepted {
        let (status, _, messages) = peer.post(body, &overrides).await;
        assert_eq!(status, 200, "{name}: {messages:?}");
        assert_eq!(
            messages.last().unwrap()["result"]["resultType"],
            "complete",
            "{name}"
        );
    }
    // The precedence the suite checks: header 2026 with body v999 is a header mismatch, not an
    // unsupported version.
    let mut v999 = request(302, "server/discover", json!({}));
    v999["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let (status, _, messages) = peer
        .post(&v999, &[("mcp-protocol-version", Some("2026-07-28"))])
        .await;
    assert_eq!(
        (status, messages[0]["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
}

#[tokio::test]
async fn http_transport_rules() {
    let peer = HttpPeer::start(fixture()).await;
    let client = &peer.client;
    // GET and DELETE are not part of 2026-07-28.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = client
            .request(method.clone(), &peer.url)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(response.headers()["allow"], "POST");
    }
    // Notifications are accepted with 202 and no body.
    let note = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    let (status, _, messages) = peer.post(&note, &[]).await;
    assert_eq!((status, messages.len()), (202, 0));
    // Not JSON, or not a JSON-RPC message.
    let response = client
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700);
    // Wrong media types.
    let response = client
        .post(&peer.url)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let response = client
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "text/html")
        .body(serde_json::to_vec(&request(1, "tools/list", json!({}))).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 406);
    // A body over the limit.
    let huge = vec![b' '; 5 * 1024 * 1024];
    let response = client
        .post(&peer.url)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    // DNS rebinding: a foreign Host or Origin is refused before any JSON-RPC processing.
    let discover = serde_json::to_vec(&request(1, "server/discover", json!({}))).unwrap();
    let base = format!("http://127.0.0.1:{}/mcp", peer.addr.port());
    let response = client
        .post(&base)
        .header("host", "evil.example.com")
        .header("content-type", "application/json")
        .body(discover.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 421);
    let response = client
        .post(&base)
        .header("origin", "http://evil.example.com")
        .header("content-type", "application/json")
        .body(discover.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let (status, body) = peer.call(&request(1, "server/discover", json!({}))).await;
    assert_eq!(status, 200, "{body}");
    // The server is still serving after all of that.
    let (status, body) = peer
        .call(&request(
            2,
            "tools/call",
            json!({"name":"echo","arguments":{"text":"still here"}}),
        ))
        .await;
    assert_eq!(
        (status, body["result"]["content"][0]["text"].as_str()),
        (200, Some("still here"))
    );
}

/// Every result carries `resultType` and the server stamp; cacheable results carry hints.
async fn check_results(call: impl AsyncFnMut(Value) -> Value) {
    let mut call = call;
    let discover = call(request(1, "server/discover", json!({}))).await;
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["instructions"], "test instructions");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name":"ladder-test","version":"1.2.3"})
    );
    let caps = &result["capabilities"];
    assert_eq!(caps["tools"], json!({"listChanged":true}));
    assert_eq!(caps["prompts"], json!({"listChanged":true}));
    assert_eq!(
        caps["resources"],
        json!({"subscribe":true,"listChanged":true})
    );
    assert_eq!(caps["completions"], json!({}));
    for method in [
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let response = call(request(2, method, json!({}))).await;
        let result = &response["result"];
        assert_eq!(result["resultType"], "complete", "{method}");
        assert_eq!(result["ttlMs"], 0, "{method}");
        assert_eq!(result["cacheScope"], "private", "{method}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "ladder-test"
        );
    }
    let tools = call(request(3, "tools/list", json!({}))).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "regional",
            "needs_sampling",
            "progress",
            "logs",
            "announce",
            "announce_prompts",
            "ask"
        ],
        "registration order"
    );
    let read = call(request(
        4,
        "resources/read",
        json!({"uri":"test://items/42"}),
    ))
    .await;
    assert_eq!(read["result"]["contents"][0]["text"], "item 42");
    assert_eq!(read["result"]["ttlMs"], 0);
    let prompt = call(request(
        5,
        "prompts/get",
        json!({"name":"greet","arguments":{"who":"Ada"}}),
    ))
    .await;
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"],
        "Hello Ada"
    );
    let completion = call(request(
        6,
        "completion/complete",
        json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}),
    ))
    .await;
    assert_eq!(
        completion["result"]["completion"]["values"]
            .as_array()
            .unwrap()
            .len(),
        100,
        "capped at 100"
    );
    assert_eq!(completion["result"]["completion"]["hasMore"], true);
    let mut no_info = request(7, "server/discover", json!({}));
    no_info["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    assert_eq!(
        call(no_info).await["result"]["resultType"],
        "complete",
        "clientInfo is optional"
    );
    let irr = call(request(8, "tools/call", json!({"name":"ask"}))).await;
    assert_eq!(irr["result"]["resultType"], "input_required");
    assert_eq!(
        irr["result"]["requestState"], "asked",
        "low-level servers seal only when asked to"
    );
    assert!(
        irr["result"].get("ttlMs").is_none(),
        "no caching hints on input_required results"
    );
}

#[tokio::test]
async fn results_are_stamped_over_stdio() {
    let peer = std::rc::Rc::new(tokio::sync::Mutex::new(StdioPeer::start(fixture())));
    check_results(async |body| peer.lock().await.request(&body).await.0).await;
}

#[tokio::test]
async fn results_are_stamped_over_http() {
    let peer = HttpPeer::start(fixture()).await;
    check_results(async |body| peer.call(&body).await.1).await;
}

#[tokio::test]
async fn notifications_travel_with_their_request() {
    // stdio: progress precedes the response; logs only at or above the requested level.
    let mut peer = StdioPeer::start(fixture());
    let mut body = request(1, "tools/call", json!({"name":"progress"}));
    body["params"]["_meta"]["progressToken"] = json!("tok");
    let (response, notes) = peer.request(&body).await;
    assert_eq!(response["result"]["content"][0]["text"], "done");
    let progress: Vec<f64> = notes
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0]);
    assert!(notes.iter().all(|n| n["params"]["progressToken"] == "tok"));

    let (_, notes) = peer
        .request(&request(2, "tools/call", json!({"name":"logs"})))
        .await;
    assert!(notes.is_empty(), "no logLevel, no logs: {notes:?}");
    let mut body = request(3, "tools/call", json!({"name":"logs"}));
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let (_, notes) = peer.request(&body).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["params"]["level"], "warning");
    assert_eq!(notes[0]["params"]["data"], "warning line");

    // HTTP: the response switches to SSE when notifications are emitted, JSON otherwise.
    let http = HttpPeer::start(fixture()).await;
    let mut body = request(4, "tools/call", json!({"name":"progress"}));
    body["params"]["_meta"]["progressToken"] = json!(7);
    let (status, content_type, messages) = http.post(&body, &[]).await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[2]["result"]["content"][0]["text"], "done");
    let (_, content_type, _) = http
        .post(
            &request(
                5,
                "tools/call",
                json!({"name":"echo","arguments":{"text":"x"}}),
            ),
            &[],
        )
        .await;
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );

    // Configured for streams, the same silent call is answered with a one-event stream.
    let streaming =
        HttpPeer::start_with(fixture(), HttpConfig::default().sse_responses(true)).await;
    let echo = request(
        6,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"y"}}),
    );
    let (status, content_type, messages) = streaming.post(&echo, &[]).await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["id"], 6);
    assert_eq!(messages[0]["result"]["content"][0]["text"], "y");
    // A handler that is already done is answered with the whole stream as one sized body.
    let mut post = streaming
        .client
        .post(&streaming.url)
        .body(serde_json::to_vec(&echo).unwrap());
    for (name, value) in HttpPeer::standard_headers(&echo) {
        post = post.header(name, value);
    }
    let response = post.send().await.unwrap();
    assert!(response.content_length().is_some(), "not chunked");
    let body = response.text().await.unwrap();
    assert!(body.starts_with("event: message\ndata: {"), "{body}");
    assert!(body.ends_with("}\n\n"), "{body}");
    assert_eq!(body.matches("event: message").count(), 1, "{body}");
}

#[tokio::test]
async fn listen_streams_over_stdio() {
    let mut peer = StdioPeer::start(fixture());
    let listen = request(
        77,
        "subscriptions/listen",
        json!({"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://doc"]}}),
    );
    peer.send(&listen).await;
    let ack = peer.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        77
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://doc"]})
    );
    peer.send(&request(78, "tools/call", json!({"name":"announce"})))
        .await;
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let message = peer.next().await.unwrap();
        if message.get("id") == Some(&json!(78)) {
            seen.push("response".to_owned());
            continue;
        }
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 77,
            "{message}"
        );
        seen.push(message["method"].as_str().unwrap().to_owned());
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "notifications/resources/updated",
            "notifications/tools/list_changed",
            "response"
        ]
    );
    // Cancelling the listen ends it without a response; the connection keeps serving.
    peer.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}),
    )
    .await;
    let (response, notes) = peer
        .request(&request(
            79,
            "tools/call",
            json!({"name":"echo","arguments":{"text":"after"}}),
        ))
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "after");
    assert!(
        notes.is_empty(),
        "nothing more for the cancelled listen: {notes:?}"
    );
    peer.close().await.unwrap();
}

#[tokio::test]
async fn listen_filters_and_tags_over_http() {
    let peer = HttpPeer::start(fixture()).await;
    let listen = request(
        900,
        "subscriptions/listen",
        json!({"notifications":{"promptsListChanged":true}}),
    );
    let mut response = peer
        .client
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(serde_json::to_vec(&listen).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut parser = modelctx::__fuzz::SseParser::default();
    let mut events = Vec::new();
    while events.is_empty() {
        events.extend(
            parser
                .feed(&response.chunk().await.unwrap().unwrap())
                .unwrap(),
        );
    }
    let ack: Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        900
    );
    // A tools change and a resource update are not asked for; a prompt change is. Changes are
    // delivered in order, so a broken filter would show the tools change first.
    peer.call(&request(901, "tools/call", json!({"name":"announce"})))
        .await;
    peer.call(&request(
        902,
        "tools/call",
        json!({"name":"announce_prompts"}),
    ))
    .await;
    let next = async {
        loop {
            let chunk = response
                .chunk()
                .await
                .unwrap()
                .expect("the listen stream stays open");
            for event in parser.feed(&chunk).unwrap() {
                if !event.data.is_empty() {
                    return serde_json::from_str::<Value>(&event.data).unwrap();
                }
            }
        }
    };
    let message = tokio::time::timeout(Duration::from_secs(10), next)
        .await
        .expect("a notification");
    assert_eq!(
        message["method"], "notifications/prompts/list_changed",
        "filter honoured: {message}"
    );
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        900
    );
}

#[tokio::test]
async fn a_stalled_body_gets_408_and_an_unaffordable_one_503() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let config = HttpConfig::default()
        .body_timeout(Duration::from_millis(200))
        .max_buffered_body_bytes(64 * 1024);
    let peer = HttpPeer::start_with(fixture(), config).await;
    let body = request(
        1,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"x"}}),
    );
    let head = |length: usize| {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost:{}\r\n",
            peer.addr.port()
        );
        for (name, value) in HttpPeer::standard_headers(&body) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {length}\r\nConnection: close\r\n\r\n"
        ));
        head
    };
    // The answer, even when the server resets the connection after it (it stops reading a body
    // it refuses).
    let answer = |mut stream: tokio::net::TcpStream| async move {
        let mut text = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(read @ 1..) = stream.read(&mut chunk).await {
            text.extend_from_slice(&chunk[..read]);
        }
        String::from_utf8_lossy(&text).into_owned()
    };
    // Half a body, then silence: the server gives up on it after the body timeout.
    let mut stalled = tokio::net::TcpStream::connect(peer.addr).await.unwrap();
    stalled
        .write_all(format!("{}{{\"jsonrpc\":", head(200)).as_bytes())
        .await
        .unwrap();
    let text = answer(stalled).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    // A body the budget cannot cover (though under the per-request limit) is refused as soon as
    // its bytes exceed it.
    let mut greedy = tokio::net::TcpStream::connect(peer.addr).await.unwrap();
    greedy.write_all(head(100 * 1024).as_bytes()).await.unwrap();
    let _ = greedy.write_all(&vec![b' '; 100 * 1024]).await;
    let text = answer(greedy).await;
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    // Neither kept anything: an ordinary request is served.
    let (status, _, messages) = peer.post(&body, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(messages[0]["result"]["content"][0]["text"], "x");
}

/// Hosts and origins are separate settings: serving any `Host` (a public bind) keeps the Origin
/// allowlist, and an origin entry with a scheme matches exactly.
#[tokio::test]
async fn widening_hosts_keeps_the_origin_allowlist() {
    let config = HttpConfig::default().allow_any_host();
    let peer = HttpPeer::start_with(fixture(), config).await;
    let public = [("host", Some("mcp.example.net"))];
    let discover = request(1, "server/discover", json!({}));
    let status = |extra: &'static [(&'static str, Option<&'static str>)]| {
        let headers: Vec<_> = public.iter().chain(extra).copied().collect();
        let peer = &peer;
        let discover = &discover;
        async move { peer.post(discover, &headers).await.0 }
    };
    assert_eq!(status(&[]).await, 200, "any Host, no Origin");
    assert_eq!(
        status(&[("origin", Some("http://evil.example"))]).await,
        403
    );
    assert_eq!(status(&[("origin", Some("null"))]).await, 403);
    assert_eq!(
        status(&[("origin", Some("http://localhost:5173"))]).await,
        200
    );

    let config = HttpConfig::default()
        .allow_any_host()
        .allowed_origins(["https://app.example.com", "tools.example.com"]);
    let peer = HttpPeer::start_with(fixture(), config).await;
    for (origin, expected) in [
        ("https://app.example.com", 200),
        ("http://app.example.com", 403),
        ("https://app.example.com:8443", 403),
        ("http://tools.example.com:8080", 200),
        ("http://localhost", 403),
    ] {
        let (status, _, _) = peer
            .post(
                &discover,
                &[("host", Some("mcp.example.net")), ("origin", Some(origin))],
            )
            .await;
        assert_eq!(status, expected, "{origin}");
    }
}

/// HTTP/2 (cleartext, prior knowledge) is served, its host taken from `:authority` and checked
/// as `Host` is: a proxy speaking HTTP/2 to the instances is answered (it got 421 before), a
/// DNS-rebinding page still is not.
#[tokio::test]
async fn http2_requests_are_served_and_their_authority_checked() {
    let peer = HttpPeer::start(fixture()).await;
    for (host, expected) in [("localhost", 200), ("evil.example", 421)] {
        assert_eq!(http2_discover(&peer, host, None).await, expected, "{host}");
    }
}

/// The status of a `server/discover` POSTed over HTTP/2 (cleartext, prior knowledge) to `peer`
/// as `authority` (`:authority`, port included), with a `Host` header when given.
async fn http2_discover(peer: &HttpPeer, authority: &str, host: Option<&str>) -> u16 {
    let discover = request(1, "server/discover", json!({}));
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .resolve(authority, peer.addr)
        .build()
        .unwrap();
    let mut post = client
        .post(format!("http://{authority}:{}/mcp", peer.addr.port()))
        .body(serde_json::to_vec(&discover).unwrap());
    for (name, value) in HttpPeer::standard_headers(&discover) {
        post = post.header(name, value);
    }
    if let Some(host) = host {
        post = post.header("host", host);
    }
    let response = post.send().await.unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    response.status().as_u16()
}

/// Over HTTP/2 the host checked is `:authority`, what the client connected for, and a `Host`
/// header naming anything else makes the request malformed (400, RFC 9113 8.3.1): a disallowed
/// `:authority` no longer passes behind an allowed `Host`, nor the other way round.
#[tokio::test]
async fn http2_refuses_a_host_header_that_contradicts_the_authority() {
    let peer = HttpPeer::start(fixture()).await;
    let port = peer.addr.port();
    let allowed = format!("localhost:{port}");
    let evil = format!("evil.example:{port}");
    for (authority, host, expected) in [
        ("evil.example", Some(allowed.as_str()), 400),
        ("localhost", Some(evil.as_str()), 400),
        ("localhost", Some("localhost"), 400),
        ("localhost", Some(allowed.as_str()), 200),
        ("localhost", Some(&*allowed.to_uppercase()), 200),
        ("evil.example", None, 421),
    ] {
        let status = http2_discover(&peer, authority, host).await;
        assert_eq!(status, expected, "{authority} with Host {host:?}");
    }
}
