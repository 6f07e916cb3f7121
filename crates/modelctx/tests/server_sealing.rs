//! Request-state sealing on the server: every failure answers the same frozen error, null state is
//! absent, input requests respect the client's capabilities, only three methods may ask, and keys
//! rotate across two instances without dropping a flow.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use modelctx::seal::{ManualClock, Principal, RequestStateSecurity};
use modelctx::server::{RegistrationError, Server};
use modelctx::types::*;
use modelctx_test_support::server::{HttpPeer, StdioPeer, object, request};
use serde_json::{Value, json};

/// A key ring: the secrets of one instance, minting key first.
type Ring<'a> = &'a [&'a [u8; 32]];

const OLD: &[u8; 32] = b"old-key-old-key-old-key-old-key!";
const NEW: &[u8; 32] = b"new-key-new-key-new-key-new-key!";

fn frozen() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
}

/// A server whose `provision` tool asks for a region with state `provision-v1`, plus `echo`,
/// which never mints state.
fn provisioner(name: &str, policy: RequestStateSecurity) -> Server {
    Server::builder(name, "1.0.0")
        .tool(
            Tool::new(
                "provision",
                object(json!({"type":"object","properties":{"name":{"type":"string"}}})),
            ),
            |_ctx, p: CallToolRequestParams| async move {
                match p.request_state.as_deref() {
                    Some(state) => {
                        Outcome::Complete(CallToolResult::text(format!("state seen: {state}")))
                    }
                    None => Outcome::InputRequired(
                        InputRequiredResult::new()
                            .with_request("region", InputRequest::list_roots())
                            .with_state("provision-v1"),
                    ),
                }
            },
        )
        .tool(
            Tool::new("echo", Tool::empty_input_schema()),
            |_ctx, p: CallToolRequestParams| async move {
                CallToolResult::text(p.request_state.unwrap_or_else(|| "no state".into()))
            },
        )
        .seal_request_state(policy)
        .build()
        .unwrap()
}

fn call(id: i64, tool: &str, args: &Value, state: Option<Value>) -> Value {
    let mut body = request(id, "tools/call", json!({"name": tool, "arguments": args}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": {}});
    if let Some(state) = state {
        body["params"]["requestState"] = state;
        body["params"]["inputResponses"] = json!({"region": {"roots": []}});
    }
    body
}

async fn round_one(peer: &mut StdioPeer) -> String {
    let (response, _) = peer
        .request(&call(1, "provision", &json!({"name":"orders"}), None))
        .await;
    let state = response["result"]["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    assert!(
        state.starts_with("v1.") && state.len() > 100,
        "sealed, not plaintext: {state}"
    );
    assert!(!state.contains("provision-v1"));
    state
}

#[tokio::test]
async fn every_failure_gets_the_same_error() {
    let clock = Arc::new(ManualClock::new(SystemTime::now()));
    let policy = RequestStateSecurity::with_keys([OLD])
        .unwrap()
        .with_clock(clock.clone());
    let mut peer = StdioPeer::start(provisioner("Provisioner", policy));
    let state = round_one(&mut peer).await;

    // The genuine retry works and the handler sees the plaintext.
    let (ok, _) = peer
        .request(&call(
            2,
            "provision",
            &json!({"name":"orders"}),
            Some(json!(state)),
        ))
        .await;
    assert_eq!(
        ok["result"]["content"][0]["text"],
        "state seen: provision-v1"
    );

    let mut tampered = state.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let cases = [
        (
            "tampered",
            call(
                3,
                "provision",
                &json!({"name":"orders"}),
                Some(json!(tampered)),
            ),
        ),
        (
            "other arguments",
            call(
                4,
                "provision",
                &json!({"name":"payroll"}),
                Some(json!(state)),
            ),
        ),
        (
            "other tool (never mints)",
            call(5, "echo", &json!({"name":"orders"}), Some(json!(state))),
        ),
        (
            "plaintext",
            call(
                6,
                "provision",
                &json!({"name":"orders"}),
                Some(json!("provision-v1")),
            ),
        ),
        (
            "a number",
            call(7, "provision", &json!({"name":"orders"}), Some(json!(42))),
        ),
        (
            "an object",
            call(
                8,
                "provision",
                &json!({"name":"orders"}),
                Some(json!({"s": 1})),
            ),
        ),
        (
            "suffix",
            call(
                9,
                "provision",
                &json!({"name":"orders"}),
                Some(json!(format!("{state}-TAMPERED"))),
            ),
        ),
    ];
    for (name, body) in cases {
        let (response, _) = peer.request(&body).await;
        assert_eq!(response["error"], frozen(), "{name}: {response}");
        assert_eq!(response["id"], body["id"], "{name}");
    }
    // Expiry: the TTL (600 s by default) runs from this round's seal.
    clock.advance(Duration::from_secs(601));
    let (expired, _) = peer
        .request(&call(
            10,
            "provision",
            &json!({"name":"orders"}),
            Some(json!(state)),
        ))
        .await;
    assert_eq!(expired["error"], frozen(), "expired");
    // JSON null is absent: a fresh round 1.
    let mut null_state = call(11, "provision", &json!({"name":"orders"}), None);
    null_state["params"]["requestState"] = Value::Null;
    let (fresh, _) = peer.request(&null_state).await;
    assert_eq!(fresh["result"]["resultType"], "input_required");
    peer.close().await.unwrap();
}

#[tokio::test]
async fn state_is_bound_to_the_audience() {
    let mut bookshop = StdioPeer::start(provisioner(
        "Bookshop",
        RequestStateSecurity::with_keys([OLD]).unwrap(),
    ));
    let mut payroll = StdioPeer::start(provisioner(
        "Payroll",
        RequestStateSecurity::with_keys([OLD]).unwrap(),
    ));
    let state = round_one(&mut bookshop).await;
    let (response, _) = payroll
        .request(&call(
            2,
            "provision",
            &json!({"name":"orders"}),
            Some(json!(state)),
        ))
        .await;
    assert_eq!(
        response["error"],
        frozen(),
        "same keys, other server name: other audience"
    );
}

#[tokio::test]
async fn state_is_bound_to_the_principal() {
    // Identity established outside the SDK: a gateway header.
    let server = bound_server(|ctx| {
        ctx.http_parts()?
            .headers
            .get("x-user")
            .and_then(|u| u.to_str().ok())
            .map(|u| Principal::from_oauth("app", Some("https://idp"), Some(u)))
    });
    let peer = HttpPeer::start(server).await;
    let round1 = request(1, "tools/call", json!({"name":"provision"}));
    let (_, _, messages) = peer.post(&round1, &[("x-user", Some("alice"))]).await;
    let state = messages[0]["result"]["requestState"].clone();
    let mut retry = request(2, "tools/call", json!({"name":"provision"}));
    retry["params"]["requestState"] = state;
    let (status, _, messages) = peer.post(&retry, &[("x-user", Some("alice"))]).await;
    assert_eq!(
        (status, messages[0]["result"]["content"][0]["text"].as_str()),
        (200, Some("mine"))
    );
    let (status, _, messages) = peer.post(&retry, &[("x-user", Some("bob"))]).await;
    assert_eq!(
        (status, &messages[0]["error"]),
        (400, &frozen()),
        "another user"
    );
    let (status, _, messages) = peer.post(&retry, &[]).await;
    assert_eq!(
        (status, &messages[0]["error"]),
        (400, &frozen()),
        "no user at all"
    );
}

/// A server whose `provision` tool mints the state `mine`, bound to whatever principal `bind`
/// finds in the request context.
fn bound_server(
    bind: impl Fn(&modelctx::server::RequestContext) -> Option<Principal> + Send + Sync + 'static,
) -> Server {
    Server::builder("Bookshop", "1.0.0")
        .tool(
            Tool::new("provision", Tool::empty_input_schema()),
            |_ctx, p: CallToolRequestParams| async move {
                match p.request_state {
                    Some(state) => Outcome::Complete(CallToolResult::text(state)),
                    None => Outcome::InputRequired(InputRequiredResult::new().with_state("mine")),
                }
            },
        )
        .bind_principal(bind)
        .seal_request_state(RequestStateSecurity::with_keys([OLD]).unwrap())
        .build()
        .unwrap()
}

/// [`bound_server`] on the stdio code path.
fn bound_provisioner(
    bind: impl Fn(&modelctx::server::RequestContext) -> Option<Principal> + Send + Sync + 'static,
) -> StdioPeer {
    StdioPeer::start(bound_server(bind))
}

/// Round one on `peer` (with `_meta` additions), then the state it minted.
async fn minted(peer: &mut StdioPeer, meta: &Value) -> Value {
    let mut round1 = request(1, "tools/call", json!({"name":"provision"}));
    merge_meta(&mut round1, meta);
    let (response, _) = peer.request(&round1).await;
    response["result"]["requestState"].clone()
}

fn merge_meta(body: &mut Value, meta: &Value) {
    for (key, value) in meta.as_object().unwrap() {
        body["params"]["_meta"][key] = value.clone();
    }
}

/// The retry of round one with `state` (and `_meta` additions) on `peer`.
async fn redeem(peer: &mut StdioPeer, state: &Value, meta: &Value) -> Value {
    let mut retry = request(2, "tools/call", json!({"name":"provision"}));
    retry["params"]["requestState"] = state.clone();
    merge_meta(&mut retry, meta);
    peer.request(&retry).await.0
}

#[tokio::test]
async fn stdio_servers_bind_a_principal_from_the_request_context() {
    // Stdio servers launched for two users share keys and name; each binds its own user.
    let user =
        |name: &'static str| move |_: &modelctx::server::RequestContext| Some(Principal::new(name));
    let mut alice = bound_provisioner(user("alice"));
    let mut alice_again = bound_provisioner(user("alice"));
    let mut bob = bound_provisioner(user("bob"));
    let mut nobody = bound_provisioner(|_| None);
    let none = json!({});
    let state = minted(&mut alice, &none).await;
    assert_eq!(
        redeem(&mut alice_again, &state, &none).await["result"]["content"][0]["text"],
        "mine",
        "the same user, another process"
    );
    assert_eq!(
        redeem(&mut bob, &state, &none).await["error"],
        frozen(),
        "another user's server"
    );
    assert_eq!(
        redeem(&mut nobody, &state, &none).await["error"],
        frozen(),
        "a server that binds nobody"
    );

    // One connection serving several users, named by a host the server trusts in `_meta`.
    let mut shared = bound_provisioner(|ctx| {
        ctx.meta()
            .extra
            .get("example.com/user")
            .and_then(Value::as_str)
            .map(Principal::new)
    });
    let as_user = |name: &str| json!({"example.com/user": name});
    let state = minted(&mut shared, &as_user("carol")).await;
    assert_eq!(
        redeem(&mut shared, &state, &as_user("dave")).await["error"],
        frozen(),
        "another user on the same connection"
    );
    assert_eq!(
        redeem(&mut shared, &state, &as_user("carol")).await["result"]["content"][0]["text"],
        "mine"
    );
}

#[tokio::test]
async fn keys_rotate_across_two_instances_without_dropping_a_flow() {
    let instance = |keys: &[&[u8; 32]]| {
        provisioner(
            "Fleet",
            RequestStateSecurity::with_keys(keys.iter().copied()).unwrap(),
        )
    };
    // Round 1 on one instance, the retry on the other: both directions, at every phase.
    async fn flow(a: &Server, b: &Server) -> Value {
        let mut first = StdioPeer::start(a.clone());
        let mut second = StdioPeer::start(b.clone());
        let state = round_one(&mut first).await;
        second
            .request(&call(
                2,
                "provision",
                &json!({"name":"orders"}),
                Some(json!(state)),
            ))
            .await
            .0
    }
    let phases: [(Ring<'_>, Ring<'_>); 6] = [
        (&[OLD], &[OLD]),
        (&[OLD, NEW], &[OLD]), // one instance learns the new key first
        (&[OLD, NEW], &[OLD, NEW]),
        (&[NEW, OLD], &[OLD, NEW]), // one instance mints with the new key: the other verifies it
        (&[NEW, OLD], &[NEW, OLD]),
        (&[NEW], &[NEW, OLD]),
    ];
    for (i, (a_keys, b_keys)) in phases.iter().enumerate() {
        let (a, b) = (instance(a_keys), instance(b_keys));
        for (from, to, dir) in [(&a, &b, "a→b"), (&b, &a, "b→a")] {
            let response = flow(from, to).await;
            assert_eq!(
                response["result"]["content"][0]["text"], "state seen: provision-v1",
                "phase {i} {dir}: {response}"
            );
        }
    }
    // Skipping a phase fails: minting with a key the other instance does not know yet.
    let (early, lagging) = (instance(&[NEW, OLD]), instance(&[OLD]));
    assert_eq!(flow(&early, &lagging).await["error"], frozen());
}

#[tokio::test]
async fn input_requests_respect_declared_capabilities() {
    let server = Server::builder("asker", "1.0.0")
        .tool(
            Tool::new("ask_form", Tool::empty_input_schema()),
            |_ctx, _p| async {
                let schema = serde_json::from_value(
                    json!({"type":"object","properties":{"x":{"type":"string"}}}),
                )
                .unwrap();
                InputRequiredResult::new().with_request(
                    "q",
                    InputRequest::elicit(ElicitRequestFormParams::new("?", schema)),
                )
            },
        )
        .tool(
            Tool::new("ask_nothing", Tool::empty_input_schema()),
            |_ctx, _p| async { InputRequiredResult::new() },
        )
        .method("x/ask", |_ctx, _params: Value| async {
            json!({"resultType": "input_required", "requestState": "s"})
        })
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    let (response, _) = peer
        .request(&request(1, "tools/call", json!({"name":"ask_form"})))
        .await;
    assert_eq!(response["error"]["code"], -32021);
    assert_eq!(
        response["error"]["data"]["requiredCapabilities"],
        json!({"elicitation":{"form":{}}})
    );
    let mut declared = request(2, "tools/call", json!({"name":"ask_form"}));
    declared["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation":{}});
    let (response, _) = peer.request(&declared).await;
    assert_eq!(response["result"]["resultType"], "input_required");
    // At least one of inputRequests / requestState.
    let (response, _) = peer
        .request(&request(3, "tools/call", json!({"name":"ask_nothing"})))
        .await;
    assert_eq!(response["error"]["code"], -32603);
    // Only tools/call, prompts/get and resources/read may ask.
    let (response, _) = peer.request(&request(4, "x/ask", json!({}))).await;
    assert_eq!(response["error"]["code"], -32603);
    peer.close().await.unwrap();
}

#[test]
fn explicit_keys_need_an_audience() {
    let unnamed = Server::builder("", "1.0.0")
        .seal_request_state(RequestStateSecurity::with_keys([OLD]).unwrap())
        .build();
    assert!(
        matches!(unnamed, Err(RegistrationError::Sealing(_))),
        "explicit keys on an unnamed server"
    );
    // The policy's own error stays reachable as the source, and the message reads as before.
    let error = unnamed.unwrap_err();
    let source = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<modelctx::seal::ConfigError>());
    assert_eq!(source, Some(&modelctx::seal::ConfigError::MissingAudience));
    assert_eq!(
        error.to_string(),
        format!(
            "request-state sealing: {}",
            modelctx::seal::ConfigError::MissingAudience
        )
    );
    let with_audience = Server::builder("", "1.0.0")
        .seal_request_state(
            RequestStateSecurity::with_keys([OLD])
                .unwrap()
                .with_audience("svc"),
        )
        .build();
    assert!(with_audience.is_ok());
    assert!(
        Server::builder("", "1.0.0")
            .seal_request_state_ephemeral()
            .build()
            .is_ok(),
        "the ephemeral default is exempt"
    );
}
