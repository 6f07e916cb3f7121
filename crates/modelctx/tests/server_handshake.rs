//! The handshake era on the server: the stdio era lock, the back-channel with the same handler
//! code, results without `resultType`, methods without the 2026 envelope, and one HTTP endpoint
//! serving a handshake session and modern requests at the same time.

use modelctx::server::http::HttpConfig;
use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::server::{HttpPeer, StdioPeer, object, request};
use serde_json::{Value, json};

/// A tool that asks in whichever way the request's era allows.
fn asker() -> Server {
    Server::builder("era-test", "1.0.0")
        .tool(
            Tool::new("provision", object(json!({"type":"object","properties":{"name":{"type":"string"}}}))),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let schema: ElicitationSchema = serde_json::from_value(json!({"type":"object","properties":{"region":{"type":"string"}},"required":["region"]})).unwrap();
                let question = ElicitRequestFormParams::new("Which region?", schema);
                let region = match ctx.era() {
                    Era::Handshake => {
                        let answer = ctx.elicit(question).await?;
                        answer.content.unwrap_or_default()["region"].as_str().unwrap_or_default().to_owned()
                    }
                    Era::Modern => match params.input_responses.as_ref().and_then(|r| r.get("region")).and_then(|r| r.as_elicit().ok()) {
                        Some(answer) => answer.content.unwrap_or_default()["region"].as_str().unwrap_or_default().to_owned(),
                        None => return Ok(Outcome::InputRequired(InputRequiredResult::new().with_request("region", InputRequest::elicit(question)))),
                    },
                };
                Ok::<_, ErrorObject>(Outcome::Complete(CallToolResult::text(format!("{} in {region} ({})", params.arguments.unwrap_or_default()["name"], ctx.protocol_version()))))
            },
        )
        .tool(Tool::new("manual_irr", Tool::empty_input_schema()), |_ctx, _p| async {
            InputRequiredResult::new().with_state("manual:7")
        })
        .method("x/version", |ctx: RequestContext, _params: Value| async move {
            json!({"version": ctx.protocol_version().as_str()})
        })
        .build()
        .unwrap()
}

/// Opens a handshake-era session on the in-memory stdio pipe.
async fn handshake_peer(server: Server, capabilities: &Value) -> StdioPeer {
    let mut peer = StdioPeer::start(server);
    let (init, _) = peer.request(&initialize(1, capabilities)).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    peer.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    peer
}

/// A handshake-era request has no 2026 envelope to check, so an unknown
/// method is `-32601` (not the envelope's `-32602`), and an extension method is served with the
/// session's version.
#[tokio::test]
async fn unknown_and_extension_methods_on_a_handshake_session() {
    let mut peer = handshake_peer(asker(), &json!({})).await;
    let (unknown, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":2,"method":"x/nope","params":{}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["error"]["message"], "Method not found");
    let (bare, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":3,"method":"x/nope"}))
        .await;
    assert_eq!(bare["error"]["code"], -32601, "{bare}");
    let (extension, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":4,"method":"x/version"}))
        .await;
    assert_eq!(extension["result"], json!({"version": "2025-11-25"}));
    peer.close().await.unwrap();
}

/// A `requestState` that is not a string gets the one uniform request-state
/// error on a handshake-era session too, never serde's message.
#[tokio::test]
async fn non_string_request_state_on_a_handshake_session() {
    let mut peer = handshake_peer(asker(), &json!({})).await;
    for (id, state) in [
        (2, json!(7)),
        (3, json!({"forged": true})),
        (4, json!(["x"])),
    ] {
        let (reply, _) = peer
            .request(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                "params":{"name":"manual_irr","arguments":{},"requestState":state}}))
            .await;
        assert_eq!(
            reply["error"],
            json!({"code":-32602,"message":"Invalid or expired requestState",
                   "data":{"reason":"invalid_request_state"}}),
            "{reply}"
        );
    }
    peer.close().await.unwrap();
}

fn initialize(id: i64, capabilities: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":capabilities,"clientInfo":{"name":"legacy","version":"0"}}})
}

fn handshake_call(id: i64, name: &str, arguments: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

#[tokio::test]
async fn stdio_handshake_session_uses_the_back_channel() {
    let mut peer = StdioPeer::start(asker());
    let (init, _) = peer
        .request(&initialize(1, &json!({"elicitation":{}})))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "era-test");
    assert!(
        init["result"].get("resultType").is_none(),
        "handshake-era results carry no resultType"
    );
    peer.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;

    // The tool asks through a server→client request on the same connection.
    peer.send(&handshake_call(2, "provision", &json!({"name":"orders"})))
        .await;
    let ask = peer.next().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Which region?");
    let server_id = ask["id"].clone();
    peer.send(&json!({"jsonrpc":"2.0","id":server_id,"result":{"action":"accept","content":{"region":"eu-west-1"}}})).await;
    let result = peer.next().await.unwrap();
    assert_eq!(result["id"], 2);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "\"orders\" in eu-west-1 (2025-11-25)"
    );
    assert!(result["result"].get("resultType").is_none());

    // A refusal from the client fails the call (the handler passes the error on with `?`): as
    // `-32603` naming the question, the client's own error kept in `data.clientError` (its code
    // meant the client's request, not the call).
    peer.send(&handshake_call(3, "provision", &json!({"name":"x"})))
        .await;
    let ask = peer.next().await.unwrap();
    peer.send(
        &json!({"jsonrpc":"2.0","id":ask["id"],"error":{"code":-32001,"message":"user is away"}}),
    )
    .await;
    let refused = peer.next().await.unwrap();
    assert_eq!(
        refused["error"],
        json!({"code": -32603,
               "message": "The client could not answer elicitation/create: user is away (-32001)",
               "data": {"clientError": {"code":-32001,"message":"user is away"}}})
    );

    // (A handler that returns an InputRequiredResult instead is bridged: tests/server_bridge.rs.)

    // Handshake-era methods work; 2026-07-28 requests are refused on this connection.
    let (ping, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":5,"method":"ping"}))
        .await;
    assert_eq!(ping["result"], json!({}));
    let (level, _) = peer
        .request(
            &json!({"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"info"}}),
        )
        .await;
    assert_eq!(level["result"], json!({}));
    let (mixed, _) = peer.request(&request(7, "tools/list", json!({}))).await;
    assert_eq!(mixed["error"]["code"], -32600);
    let (list, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":8,"method":"tools/list"}))
        .await;
    assert!(list["result"].get("ttlMs").is_none() && list["result"]["tools"].is_array());
    peer.close().await.unwrap();
}

#[tokio::test]
async fn stdio_modern_connection_refuses_initialize() {
    let mut peer = StdioPeer::start(asker());
    let (first, _) = peer
        .request(&request(1, "tools/call", json!({"name":"manual_irr"})))
        .await;
    assert_eq!(first["result"]["resultType"], "input_required");
    let (init, _) = peer.request(&initialize(2, &json!({}))).await;
    assert_eq!(init["error"]["code"], -32022);
    assert_eq!(
        init["error"]["data"],
        json!({"supported":["2026-07-28"],"requested":"2025-11-25"})
    );
    peer.close().await.unwrap();
}

#[tokio::test]
async fn one_http_endpoint_serves_both_eras_at_once() {
    let peer = HttpPeer::start(asker()).await;
    let client = &peer.client;
    let post = |body: &Value, session: Option<&str>| {
        let mut builder = client
            .post(&peer.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(session) = session {
            builder = builder
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        builder.send()
    };
    // A handshake client opens a session (no MCP-Protocol-Version header on initialize).
    let response = post(&initialize(1, &json!({"elicitation":{}})), None)
        .await
        .unwrap();
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(session.len(), 32);
    let init: Value = response.json().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        post(
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            Some(&session)
        )
        .await
        .unwrap()
        .status(),
        202
    );

    // Its call asks through the back-channel on the response stream...
    let mut call = post(
        &handshake_call(2, "provision", &json!({"name":"orders"})),
        Some(&session),
    )
    .await
    .unwrap();
    assert_eq!(call.headers()["content-type"], "text/event-stream");
    let mut parser = modelctx::__fuzz::SseParser::default();
    let mut events = Vec::new();
    while events.is_empty() {
        events = parser.feed(&call.chunk().await.unwrap().unwrap()).unwrap();
    }
    let ask: Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(ask["method"], "elicitation/create");

    // ...while a modern client is served on the same endpoint, statelessly.
    let mut modern_call = request(
        10,
        "tools/call",
        json!({"name":"provision","arguments":{"name":"b"}}),
    );
    modern_call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation":{}});
    let (status, modern) = peer.call(&modern_call).await;
    assert_eq!(status, 200);
    assert_eq!(modern["result"]["resultType"], "input_required");
    assert_eq!(
        modern["result"]["inputRequests"]["region"]["method"],
        "elicitation/create"
    );

    // The handshake client answers with a POST (202) and gets its result on the first stream.
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"region":"ap-south-1"}}});
    assert_eq!(post(&answer, Some(&session)).await.unwrap().status(), 202);
    let mut result = None;
    while result.is_none() {
        let chunk = call
            .chunk()
            .await
            .unwrap()
            .expect("the result before the end of the stream");
        result = parser
            .feed(&chunk)
            .unwrap()
            .into_iter()
            .map(|e| serde_json::from_str::<Value>(&e.data).unwrap())
            .find(|m| m["id"] == 2);
    }
    let result = result.unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"],
        "\"orders\" in ap-south-1 (2025-11-25)"
    );

    // Without a session, or with an unknown one, handshake requests are refused; DELETE ends it.
    assert_eq!(
        post(&handshake_call(3, "provision", &json!({})), None)
            .await
            .unwrap()
            .status(),
        400
    );
    assert_eq!(
        post(&handshake_call(3, "provision", &json!({})), Some("nope"))
            .await
            .unwrap()
            .status(),
        404
    );
    let deleted = client
        .delete(&peer.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    assert_eq!(
        post(
            &json!({"jsonrpc":"2.0","id":4,"method":"ping"}),
            Some(&session)
        )
        .await
        .unwrap()
        .status(),
        404
    );
}

/// POSTs raw bytes on the handshake-era path (no 2026 header), with a session when given.
async fn handshake_post(peer: &HttpPeer, body: &[u8], session: Option<&str>) -> (u16, Value) {
    let mut builder = peer
        .client
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_vec());
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = builder.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn handshake_era_errors_travel_with_200_and_transport_failures_keep_their_status() {
    let peer = HttpPeer::start(asker()).await;
    let session = live_session(&peer).await;
    let session = Some(session.as_str());

    // JSON-RPC errors of requests on the session: 200, the error in the body.
    let cases = [
        (
            json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}),
            -32602,
        ),
        (
            json!({"jsonrpc":"2.0","id":4,"method":"server/discover"}),
            -32601,
        ),
        (
            request(5, "tools/call", json!({"name":"provision","arguments":{}})),
            -32600,
        ),
    ];
    for (body, code) in cases {
        let (status, answer) =
            handshake_post(&peer, &serde_json::to_vec(&body).unwrap(), session).await;
        assert_eq!(
            (status, &answer["error"]["code"]),
            (200, &json!(code)),
            "{body}: {answer}"
        );
        assert_eq!(answer["id"], body["id"]);
    }
    // (An unknown method is refused with some JSON-RPC error; which one is the dispatcher's.)
    let unknown = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":2,"method":"no/such"})).unwrap();
    let (status, answer) = handshake_post(&peer, &unknown, session).await;
    assert_eq!((status, answer["id"].as_i64()), (200, Some(2)), "{answer}");
    assert!(answer["error"]["code"].is_i64(), "{answer}");
    // initialize with malformed params is answered the same way.
    let bad_init =
        json!({"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":5}});
    let (status, answer) =
        handshake_post(&peer, &serde_json::to_vec(&bad_init).unwrap(), None).await;
    assert_eq!(
        (status, answer["error"]["code"].as_i64()),
        (200, Some(-32602)),
        "{answer}"
    );

    // Failures of the transport keep the statuses of the 2025-11-25 transport.
    let ping = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":7,"method":"ping"})).unwrap();
    assert_eq!(
        handshake_post(&peer, &ping, None).await.0,
        400,
        "no session id"
    );
    assert_eq!(
        handshake_post(&peer, &ping, Some("nope")).await.0,
        404,
        "unknown session"
    );
    let (status, answer) = handshake_post(&peer, b"{", session).await;
    assert_eq!(
        (status, answer["error"]["code"].as_i64()),
        (400, Some(-32700))
    );
    let (status, answer) = handshake_post(&peer, &ping, session).await;
    assert_eq!(
        (status, &answer["result"]),
        (200, &json!({})),
        "the session still serves"
    );
}

/// Opens a handshake-era session and makes one call on it; returns its id.
async fn live_session(peer: &HttpPeer) -> String {
    let init = serde_json::to_vec(&initialize(1, &json!({}))).unwrap();
    let response = peer
        .client
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let ping = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":2,"method":"ping"})).unwrap();
    assert_eq!(handshake_post(peer, &ping, Some(&session)).await.0, 200);
    session
}

/// `count` initializes from this test's address, `concurrency` at a time; the statuses and
/// `Retry-After` values of the answers.
async fn initialize_flood(
    client: &reqwest::Client,
    url: &str,
    count: usize,
    concurrency: usize,
) -> Vec<(u16, Option<String>)> {
    let body = serde_json::to_vec(&initialize(1, &json!({}))).unwrap();
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..concurrency {
        let (client, url, body) = (client.clone(), url.to_owned(), body.clone());
        let share = count / concurrency + usize::from(worker < count % concurrency);
        workers.spawn(async move {
            let mut answers = Vec::new();
            for _ in 0..share {
                let response = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                let retry = response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_owned());
                answers.push((response.status().as_u16(), retry));
            }
            answers
        });
    }
    let mut answers = Vec::new();
    while let Some(worker) = workers.join_next().await {
        answers.extend(worker.unwrap());
    }
    answers
}

/// One address opening sessions in a loop is answered 429 with `Retry-After` once past its burst
/// (64 by default, then 10 a second); sessions in use keep working.
#[tokio::test]
async fn initialize_is_rate_limited_per_peer() {
    let peer = HttpPeer::start(asker()).await;
    let live = live_session(&peer).await;
    let answers = initialize_flood(&peer.client, &peer.url, 300, 1).await;
    assert!(
        answers[..63].iter().all(|(status, _)| *status == 200),
        "the burst is served: {:?}",
        &answers[..63]
    );
    let limited: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status == 429)
        .collect();
    assert!(limited.len() > 100, "{} of 300 limited", limited.len());
    assert!(
        limited.iter().all(|(_, retry)| retry
            .as_deref()
            .is_some_and(|r| r.parse::<u64>().is_ok_and(|s| s >= 1))),
        "every 429 says when to retry: {limited:?}"
    );
    assert!(
        answers
            .iter()
            .all(|(status, _)| [200, 429].contains(status)),
        "{answers:?}"
    );
    let ping = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})).unwrap();
    assert_eq!(handshake_post(&peer, &ping, Some(&live)).await.0, 200);
}

/// Without the rate limit, 10 000 initializes fill the session table, and room is made from
/// the sessions that never served a call: the one in use survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_flood_does_not_evict_a_session_in_use() {
    let peer = HttpPeer::start_with(asker(), HttpConfig::default().session_rate(None)).await;
    let live = live_session(&peer).await;
    let answers = initialize_flood(&peer.client, &peer.url, 10_010, 8).await;
    assert!(answers.iter().all(|(status, _)| *status == 200));
    let ping = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})).unwrap();
    let (status, answer) = handshake_post(&peer, &ping, Some(&live)).await;
    assert_eq!((status, &answer["result"]), (200, &json!({})), "{answer}");
}

/// A router mounted in an app served with connect info limits by the peers' addresses too.
#[tokio::test]
async fn a_mounted_router_limits_peers_through_connect_info() {
    let config = HttpConfig::default().session_rate(Some(modelctx::server::http::RateLimit::new(
        2,
        std::time::Duration::from_secs(3600),
    )));
    let router = asker().http_router(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap();
    });
    let url = format!("http://localhost:{}/mcp", addr.port());
    let answers = initialize_flood(&reqwest::Client::new(), &url, 3, 1).await;
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, [200, 200, 429]);
    assert_eq!(answers[2].1.as_deref(), Some("3600"));
}

/// One way to learn the peer's address: `ConnectInfo`, which `serve_http_on` sets up itself and
/// a mounted router gets from `into_make_service_with_connect_info`. Handlers and the
/// principal hook see it through `RequestContext::peer_addr`.
#[tokio::test]
async fn the_peer_address_reaches_the_context_and_the_principal_hook() {
    let server = || {
        Server::builder("peers", "1.0.0")
            .bind_principal(|ctx| {
                let peer = ctx.peer_addr()?;
                Some(modelctx::seal::Principal::new(format!(
                    "peer:{}",
                    peer.ip()
                )))
            })
            .tool(
                Tool::new("whoami", Tool::empty_input_schema()),
                |ctx: RequestContext, _params: CallToolRequestParams| async move {
                    CallToolResult::text(format!(
                        "{:?} {:?}",
                        ctx.peer_addr().map(|a| a.ip()),
                        ctx.principal().map(modelctx::seal::Principal::as_str)
                    ))
                },
            )
            .build()
            .unwrap()
    };
    let whoami = request(1, "tools/call", json!({"name": "whoami"}));
    let served = HttpPeer::start(server()).await;
    let (status, reply) = served.call(&whoami).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"Some(127.0.0.1) Some("peer:127.0.0.1")"#
    );

    // A router served without connect info knows no address.
    let router = server().http_router(HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let url = format!("http://localhost:{}/mcp", addr.port());
    let mut post = reqwest::Client::new().post(&url).json(&whoami);
    for (name, value) in HttpPeer::standard_headers(&whoami) {
        post = post.header(name, value);
    }
    let reply: Value = post.send().await.unwrap().json().await.unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "None None");
}

/// `HttpConfig::max_sessions` bounds the sessions an endpoint keeps: with room for two, a third
/// `initialize` drops the session idle the longest (its id then gets 404), and the others serve.
#[tokio::test]
async fn the_session_count_is_a_setting() {
    let peer = HttpPeer::start_with(asker(), HttpConfig::default().max_sessions(2)).await;
    let first = live_session(&peer).await;
    let second = live_session(&peer).await;
    let third = live_session(&peer).await;
    let ping = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})).unwrap();
    assert_eq!(handshake_post(&peer, &ping, Some(&first)).await.0, 404);
    assert_eq!(handshake_post(&peer, &ping, Some(&second)).await.0, 200);
    assert_eq!(handshake_post(&peer, &ping, Some(&third)).await.0, 200);
}

/// An endpoint that serves 2026-07-28 only (`HttpConfig::refuse_handshake_era`, as a fleet
/// without sticky sessions or a Lambda function is): `initialize` gets `-32022` on a 400 with
/// the versions served, what was asked and the reason; no session is opened, and the era's `GET`
/// gets 405. Modern requests are served as ever.
#[tokio::test]
async fn an_endpoint_that_refuses_the_handshake_era_says_which_versions_it_serves() {
    let config = HttpConfig::default().refuse_handshake_era("no sticky sessions here");
    let peer = HttpPeer::start_with(asker(), config).await;
    let open = serde_json::to_vec(&initialize(7, &json!({}))).unwrap();
    let response = peer
        .client
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(open)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert!(response.headers().get("mcp-session-id").is_none());
    let refused: Value = response.json().await.unwrap();
    assert_eq!(refused["id"], 7);
    assert_eq!(refused["error"]["code"], -32022, "{refused}");
    assert_eq!(refused["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(refused["error"]["data"]["requested"], "2025-11-25");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("2026-07-28 only") && message.contains("no sticky sessions here"),
        "{message}"
    );

    let stream = peer.client.get(&peer.url).send().await.unwrap();
    assert_eq!(stream.status().as_u16(), 405);

    let discover = request(1, "server/discover", json!({}));
    let (status, _, answers) = peer.post(&discover, &[]).await;
    assert_eq!(status, 200, "{answers:?}");
    assert_eq!(
        answers[0]["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
}
