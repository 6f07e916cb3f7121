//! The OAuth 2.1 resource server: protected resource metadata, 401/403 challenges, JWT (static
//! and remote JWKS with rotation) and introspection verifiers, and sealed state bound to the user.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use modelctx::seal::RequestStateSecurity;
use modelctx::server::auth::{IntrospectionVerifier, JwksSource, JwtVerifier, ResourceServer};
use modelctx::server::http::HttpConfig;
use modelctx::server::{Server, ServerBuilder};
use modelctx::types::*;
use modelctx_test_support::server::{HttpPeer, request};
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.com";

/// A signing key and its public JWK.
struct Signer {
    kid: String,
    encoding: EncodingKey,
    jwk: Jwk,
}

impl Signer {
    fn new(kid: &str) -> Self {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let point = pair.public_key().as_ref();
        let jwk: Jwk = serde_json::from_value(json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        }))
        .unwrap();
        Self {
            kid: kid.to_owned(),
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
        }
    }

    fn token(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        encode(&header, claims, &self.encoding).unwrap()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(resource: &str, sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": resource, "sub": sub, "client_id": "notes-app", "scope": scope,
           "iat": now(), "exp": now() + 300})
}

/// A server whose `provision` tool mints sealed state on round 1.
fn server() -> Server {
    provisioner(|builder| builder)
}

/// `server()`, with something more configured.
fn provisioner(configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Server {
    let builder = Server::builder("Protected", "1.0.0")
        .tool(
            Tool::new("provision", Tool::empty_input_schema()),
            |_ctx, p: CallToolRequestParams| async move {
                match p.request_state {
                    Some(state) => {
                        Outcome::Complete(CallToolResult::text(format!("resumed {state}")))
                    }
                    None => Outcome::InputRequired(InputRequiredResult::new().with_state("step-2")),
                }
            },
        )
        .seal_request_state(
            RequestStateSecurity::with_keys([b"0123456789abcdef0123456789abcdef"]).unwrap(),
        );
    configure(builder).build().unwrap()
}

struct Endpoint {
    url: String,
    resource: String,
    client: reqwest::Client,
    _peer: HttpPeer,
}

impl Endpoint {
    async fn start(make: impl FnOnce(&str) -> ResourceServer) -> Self {
        Self::serve(server(), make).await
    }

    async fn serve(server: Server, make: impl FnOnce(&str) -> ResourceServer) -> Self {
        let peer = HttpPeer::start_configured(server, |addr| {
            let resource = format!("http://localhost:{}/mcp", addr.port());
            HttpConfig::default().auth(make(&resource))
        })
        .await;
        Self {
            url: peer.url.clone(),
            resource: peer.url.clone(),
            client: peer.client.clone(),
            _peer: peer,
        }
    }

    async fn post(&self, body: &Value, token: Option<&str>) -> (u16, Option<String>, Value) {
        let mut builder = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", body["method"].as_str().unwrap());
        if let Some(name) = body["params"]["name"].as_str() {
            builder = builder.header("mcp-name", name);
        }
        if let Some(token) = token {
            builder = builder.bearer_auth(token);
        }
        let response = builder
            .body(serde_json::to_vec(body).unwrap())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        (status, challenge, body)
    }
}

#[tokio::test]
async fn metadata_and_challenges() {
    let signer = Signer::new("k1");
    let jwks = JwkSet {
        keys: vec![signer.jwk.clone()],
    };
    let endpoint = Endpoint::start(|resource| {
        ResourceServer::new(
            resource,
            JwtVerifier::new(ISSUER, resource, JwksSource::Static(jwks)),
        )
        .authorization_server(ISSUER)
        .require_scopes(["mcp:tools"])
        .resource_name("Protected")
    })
    .await;
    let port = endpoint
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();
    let metadata_url = format!("http://localhost:{port}/.well-known/oauth-protected-resource/mcp");

    // RFC 9728 metadata, unauthenticated, at the path-suffixed well-known location.
    let document: Value = endpoint
        .client
        .get(&metadata_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["resource"], endpoint.resource);
    assert_eq!(document["authorization_servers"], json!([ISSUER]));
    assert_eq!(document["scopes_supported"], json!(["mcp:tools"]));
    assert_eq!(document["bearer_methods_supported"], json!(["header"]));

    let discover = request(1, "server/discover", json!({}));
    let (status, challenge, _) = endpoint.post(&discover, None).await;
    assert_eq!(status, 401, "no token");
    let challenge = challenge.expect("a WWW-Authenticate challenge");
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");

    let other_key = Signer::new("k1");
    let cases = [
        ("forged signature", other_key.token(&claims(&endpoint.resource, "alice", "mcp:tools")), 401),
        ("another resource", signer.token(&claims("https://other.example.com/mcp", "alice", "mcp:tools")), 401),
        ("another issuer", signer.token(&json!({"iss":"https://evil","aud":endpoint.resource,"sub":"a","scope":"mcp:tools","exp":now()+60})), 401),
        ("expired", signer.token(&json!({"iss":ISSUER,"aud":endpoint.resource,"sub":"a","scope":"mcp:tools","exp":now()-600})), 401),
        ("garbage", "not-a-jwt".to_owned(), 401),
        ("insufficient scope", signer.token(&claims(&endpoint.resource, "alice", "mcp:read")), 403),
    ];
    for (name, token, expected) in cases {
        let (status, challenge, _) = endpoint.post(&discover, Some(&token)).await;
        assert_eq!(status, expected, "{name}");
        let challenge = challenge.unwrap_or_default();
        let error = if expected == 403 {
            "insufficient_scope"
        } else {
            "invalid_token"
        };
        assert!(
            challenge.contains(&format!("error=\"{error}\"")),
            "{name}: {challenge}"
        );
        assert!(
            challenge.contains("resource_metadata="),
            "{name}: {challenge}"
        );
    }
    let good = signer.token(&claims(&endpoint.resource, "alice", "mcp:tools other"));
    let (status, _, body) = endpoint.post(&discover, Some(&good)).await;
    assert_eq!(
        (status, &body["result"]["resultType"]),
        (200, &json!("complete"))
    );
}

#[tokio::test]
async fn state_minted_for_one_user_is_refused_for_another() {
    let signer = Signer::new("k1");
    let endpoint = Endpoint::trusting(&signer).await;
    // Two users signed in through the same OAuth client.
    let alice = signer.token(&claims(&endpoint.resource, "alice", ""));
    let bob = signer.token(&claims(&endpoint.resource, "bob", ""));
    let (_, _, round1) = endpoint
        .post(
            &request(1, "tools/call", json!({"name":"provision"})),
            Some(&alice),
        )
        .await;
    let state = round1["result"]["requestState"].clone();
    assert!(state.as_str().unwrap().starts_with("v1."));
    let mut retry = request(2, "tools/call", json!({"name":"provision"}));
    retry["params"]["requestState"] = state;
    let (status, _, body) = endpoint.post(&retry, Some(&bob)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"],
        json!({"code":-32602,"message":"Invalid or expired requestState","data":{"reason":"invalid_request_state"}})
    );
    let (status, _, body) = endpoint.post(&retry, Some(&alice)).await;
    assert_eq!(
        (status, body["result"]["content"][0]["text"].as_str()),
        (200, Some("resumed step-2"))
    );
}

#[tokio::test]
async fn a_principal_hook_sees_the_validated_token() {
    let signer = Signer::new("k1");
    let jwks = JwkSet {
        keys: vec![signer.jwk.clone()],
    };
    // Bind the user alone (not the OAuth client): a flow may move between a user's apps.
    let server = provisioner(|builder| {
        builder.bind_principal(|ctx| {
            assert!(ctx.principal().is_some(), "the auth layer's principal");
            let subject = ctx.access_token()?.subject.clone()?;
            Some(modelctx::seal::Principal::new(subject))
        })
    });
    let endpoint = Endpoint::serve(server, |resource| {
        ResourceServer::new(
            resource,
            JwtVerifier::new(ISSUER, resource, JwksSource::Static(jwks)),
        )
    })
    .await;
    let token = |sub: &str, client: &str| {
        let mut claims = claims(&endpoint.resource, sub, "");
        claims["client_id"] = json!(client);
        signer.token(&claims)
    };
    let (_, _, round1) = endpoint
        .post(
            &request(1, "tools/call", json!({"name":"provision"})),
            Some(&token("alice", "desktop")),
        )
        .await;
    let mut retry = request(2, "tools/call", json!({"name":"provision"}));
    retry["params"]["requestState"] = round1["result"]["requestState"].clone();
    let (status, _, _) = endpoint.post(&retry, Some(&token("alice", "phone"))).await;
    assert_eq!(status, 200, "the same user through another app");
    let (status, _, body) = endpoint.post(&retry, Some(&token("bob", "desktop"))).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(-32602))
    );
}

impl Endpoint {
    /// An endpoint accepting the tokens `signer` signs.
    async fn trusting(signer: &Signer) -> Self {
        let jwks = JwkSet {
            keys: vec![signer.jwk.clone()],
        };
        Self::start(|resource| {
            ResourceServer::new(
                resource,
                JwtVerifier::new(ISSUER, resource, JwksSource::Static(jwks)),
            )
            .authorization_server(ISSUER)
        })
        .await
    }

    /// A handshake-era request: no 2026 headers, the session when given.
    async fn handshake(
        &self,
        method: reqwest::Method,
        body: &Value,
        token: &str,
        session: Option<&str>,
    ) -> reqwest::Response {
        let mut builder = self
            .client
            .request(method, &self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(token)
            .body(serde_json::to_vec(body).unwrap());
        if let Some(session) = session {
            builder = builder
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        builder.send().await.unwrap()
    }
}

/// A handshake-era session opened by one user does not exist for another, even through the same
/// OAuth client: not for calls, nor its stream, nor DELETE.
#[tokio::test]
async fn a_handshake_era_session_belongs_to_the_user_who_opened_it() {
    use reqwest::Method;
    let signer = Signer::new("k1");
    let endpoint = Endpoint::trusting(&signer).await;
    let alice = signer.token(&claims(&endpoint.resource, "alice", ""));
    let bob = signer.token(&claims(&endpoint.resource, "bob", ""));
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy","version":"0"}}});
    let opened = endpoint
        .handshake(Method::POST, &initialize, &alice, None)
        .await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let as_bob = endpoint
        .handshake(Method::POST, &list, &bob, Some(&session))
        .await;
    assert_eq!(
        as_bob.status(),
        404,
        "another user's session does not exist"
    );
    let stream = endpoint
        .handshake(Method::GET, &Value::Null, &bob, Some(&session))
        .await;
    assert_eq!(stream.status(), 404);
    let delete = endpoint
        .handshake(Method::DELETE, &Value::Null, &bob, Some(&session))
        .await;
    assert_eq!(delete.status(), 404);
    let as_alice = endpoint
        .handshake(Method::POST, &list, &alice, Some(&session))
        .await;
    assert_eq!(as_alice.status(), 200);
    let listed: Value = as_alice.json().await.unwrap();
    assert_eq!(
        listed["result"]["tools"][0]["name"], "provision",
        "{listed}"
    );
    let delete = endpoint
        .handshake(Method::DELETE, &Value::Null, &alice, Some(&session))
        .await;
    assert_eq!(delete.status(), 200);
}

/// A tiny authorization server double: JWKS and introspection endpoints.
async fn authorization_server(jwks: Arc<std::sync::Mutex<JwkSet>>) -> String {
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let app = axum::Router::new()
        .route("/jwks", get(move || {
            let jwks = jwks.lock().unwrap().clone();
            async move { axum::Json(serde_json::to_value(jwks).unwrap()) }
        }))
        .route("/introspect", post(|headers: HeaderMap, body: String| async move {
            // The resource server authenticates as rs:secret.
            let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("rs:secret"));
            if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error":"invalid_client"})));
            }
            let token = body.split('&').find_map(|kv| kv.strip_prefix("token=")).unwrap_or_default().to_owned();
            let answer = match token.as_str() {
                "good" => json!({"active":true,"client_id":"app","iss":ISSUER,"sub":"carol","aud":"AUDIENCE","scope":"mcp","exp":now()+60}),
                "elsewhere" => json!({"active":true,"client_id":"app","sub":"carol","aud":"https://other/mcp","exp":now()+60}),
                _ => json!({"active":false}),
            };
            (StatusCode::OK, axum::Json(answer))
        }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

#[tokio::test]
async fn remote_jwks_follows_key_rotation() {
    let first = Signer::new("2026-11");
    let jwks = Arc::new(std::sync::Mutex::new(JwkSet {
        keys: vec![first.jwk.clone()],
    }));
    let base = authorization_server(Arc::clone(&jwks)).await;
    let url = format!("{base}/jwks");
    // One endpoint refreshes on every unknown key id, the other at most every 30 s (the default).
    let eager = Endpoint::start(|resource| {
        let verifier = JwtVerifier::new(ISSUER, resource, JwksSource::Url(url.clone()))
            .refresh_interval(std::time::Duration::ZERO);
        ResourceServer::new(resource, verifier)
    })
    .await;
    let limited = Endpoint::start(|resource| {
        ResourceServer::new(
            resource,
            JwtVerifier::new(ISSUER, resource, JwksSource::Url(url.clone())),
        )
    })
    .await;
    let discover = request(1, "server/discover", json!({}));
    for endpoint in [&eager, &limited] {
        let token = first.token(&claims(&endpoint.resource, "a", ""));
        assert_eq!(
            endpoint.post(&discover, Some(&token)).await.0,
            200,
            "keys fetched on first use"
        );
    }
    // The authorization server rotates to a new key; tokens name its new key id.
    let second = Signer::new("2026-12");
    jwks.lock().unwrap().keys.push(second.jwk.clone());
    let token = second.token(&claims(&eager.resource, "a", ""));
    assert_eq!(
        eager.post(&discover, Some(&token)).await.0,
        200,
        "an unknown kid triggers a refresh"
    );
    let token = second.token(&claims(&limited.resource, "a", ""));
    assert_eq!(
        limited.post(&discover, Some(&token)).await.0,
        401,
        "refreshes are rate limited"
    );
    let forged = Signer::new("2026-12").token(&claims(&eager.resource, "a", ""));
    assert_eq!(
        eager.post(&discover, Some(&forged)).await.0,
        401,
        "a known kid with a forged signature"
    );
}

#[tokio::test]
async fn introspection_checks_activity_and_audience() {
    let base =
        authorization_server(Arc::new(std::sync::Mutex::new(JwkSet { keys: Vec::new() }))).await;
    let endpoint = Endpoint::start(|_resource| {
        ResourceServer::new(
            "AUDIENCE",
            IntrospectionVerifier::new(format!("{base}/introspect"), "rs", "secret", "AUDIENCE"),
        )
    })
    .await;
    let discover = request(1, "server/discover", json!({}));
    assert_eq!(endpoint.post(&discover, Some("good")).await.0, 200);
    assert_eq!(endpoint.post(&discover, Some("revoked")).await.0, 401);
    assert_eq!(
        endpoint.post(&discover, Some("elsewhere")).await.0,
        401,
        "another resource's token"
    );
}

/// Each refused token gets 401 with `error="invalid_token"` and the metadata pointer.
async fn assert_invalid_token(endpoint: &Endpoint, name: &str, token: &str) {
    let discover = request(1, "server/discover", json!({}));
    let (status, challenge, _) = endpoint.post(&discover, Some(token)).await;
    let challenge = challenge.unwrap_or_default();
    assert_eq!(status, 401, "{name}");
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="),
        "{name}: {challenge}"
    );
}

#[tokio::test]
async fn jwt_claims_exp_iss_and_aud_are_required() {
    let signer = Signer::new("k1");
    let endpoint = Endpoint::trusting(&signer).await;
    let full = claims(&endpoint.resource, "alice", "");
    let without = |keys: &[&str]| {
        let mut claims = full.clone();
        for key in keys {
            claims.as_object_mut().unwrap().remove(*key);
        }
        signer.token(&claims)
    };
    let with = |key: &str, value: Value| {
        let mut claims = full.clone();
        claims[key] = value;
        signer.token(&claims)
    };
    let cases = [
        // A token minted for any other service of the same issuer.
        ("missing aud", without(&["aud"])),
        ("missing iss", without(&["iss"])),
        ("missing aud and iss", without(&["aud", "iss"])),
        ("missing exp", without(&["exp"])),
        ("empty aud", with("aud", json!([]))),
        ("null aud", with("aud", Value::Null)),
        (
            "other aud",
            with("aud", json!("https://other.example.com/mcp")),
        ),
        ("other iss", with("iss", json!("https://evil.example.com"))),
        (
            "iss as an array",
            with("iss", json!([ISSUER, "https://evil.example.com"])),
        ),
        ("expired", with("exp", json!(now() - 600))),
        ("not yet valid", with("nbf", json!(now() + 600))),
    ];
    for (name, token) in &cases {
        assert_invalid_token(&endpoint, name, token).await;
    }
    // The audience may be a list naming this resource among others.
    let listed = with(
        "aud",
        json!(["https://other.example.com", endpoint.resource]),
    );
    let (status, _, _) = endpoint
        .post(&request(1, "server/discover", json!({})), Some(&listed))
        .await;
    assert_eq!(status, 200);
}

/// A JWKS endpoint double: counts fetches; serves keys, fails, or never answers.
#[derive(Clone, Default)]
struct JwksDouble {
    fetches: Arc<std::sync::atomic::AtomicUsize>,
    entered: Arc<tokio::sync::Notify>,
    mode: Arc<std::sync::Mutex<JwksMode>>,
}

#[derive(Clone, Default)]
enum JwksMode {
    Serve(JwkSet),
    #[default]
    Fail,
    Stall,
}

impl JwksDouble {
    async fn start(&self) -> String {
        use axum::http::StatusCode;
        use axum::response::IntoResponse;
        let double = self.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://127.0.0.1:{}/jwks",
            listener.local_addr().unwrap().port()
        );
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let double = double.clone();
                async move {
                    double
                        .fetches
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    double.entered.notify_one();
                    let mode = double.mode.lock().unwrap().clone();
                    match mode {
                        JwksMode::Serve(keys) => axum::Json(keys).into_response(),
                        JwksMode::Fail => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                        JwksMode::Stall => std::future::pending().await,
                    }
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }

    fn fetches(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Posts `server/discover` with each token at once; returns the statuses.
async fn concurrently(endpoint: &Endpoint, tokens: &[String]) -> Vec<u16> {
    let discover = request(1, "server/discover", json!({}));
    let posts = tokens
        .iter()
        .map(|token| endpoint.post(&discover, Some(token)));
    // A guard against a hang (the bug this catches), not a timing assertion.
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        futures::future::join_all(posts),
    )
    .await
    .expect("every request is answered")
    .into_iter()
    .map(|(status, _, _)| status)
    .collect()
}

#[tokio::test]
async fn a_failing_jwks_endpoint_is_fetched_once_per_refresh_interval() {
    let double = JwksDouble::default();
    let url = double.start().await;
    let endpoint = Endpoint::start(|resource| {
        ResourceServer::new(
            resource,
            JwtVerifier::new(ISSUER, resource, JwksSource::Url(url.clone())),
        )
    })
    .await;
    // Tokens naming made-up key ids, all at once: one fetch, the others wait for its result.
    let tokens: Vec<String> = (0..8)
        .map(|i| Signer::new(&format!("made-up-{i}")).token(&claims(&endpoint.resource, "a", "")))
        .collect();
    assert_eq!(concurrently(&endpoint, &tokens).await, [503; 8]);
    assert_eq!(double.fetches(), 1, "one fetch in flight, shared");
    // Within the refresh interval a failed fetch is not retried: no request pays for it.
    assert_eq!(concurrently(&endpoint, &tokens[..3]).await, [503; 3]);
    assert_eq!(double.fetches(), 1, "failures are rate limited");

    // Once the endpoint serves keys, a new verifier picks them up: one fetch for many
    // concurrent requests.
    let signer = Signer::new("real");
    *double.mode.lock().unwrap() = JwksMode::Serve(JwkSet {
        keys: vec![signer.jwk.clone()],
    });
    let fresh = Endpoint::start(|resource| {
        ResourceServer::new(
            resource,
            JwtVerifier::new(ISSUER, resource, JwksSource::Url(url.clone())),
        )
    })
    .await;
    let good: Vec<String> = (0..8)
        .map(|_| signer.token(&claims(&fresh.resource, "a", "")))
        .collect();
    assert_eq!(concurrently(&fresh, &good).await, [200; 8]);
    assert_eq!(double.fetches(), 2, "one fetch for the new verifier");
    // A made-up key id after a successful fetch: invalid (401), and no fetch.
    let made_up = Signer::new("made-up").token(&claims(&fresh.resource, "a", ""));
    assert_eq!(concurrently(&fresh, &[made_up]).await, [401]);
    assert_eq!(double.fetches(), 2);
}

#[tokio::test]
async fn a_stalled_jwks_endpoint_costs_one_bounded_fetch() {
    let double = JwksDouble::default();
    *double.mode.lock().unwrap() = JwksMode::Stall;
    let url = double.start().await;
    let endpoint = Endpoint::start(|resource| {
        let verifier = JwtVerifier::new(ISSUER, resource, JwksSource::Url(url.clone()))
            .fetch_timeout(std::time::Duration::from_millis(300));
        ResourceServer::new(resource, verifier)
    })
    .await;
    let tokens: Vec<String> = (0..6)
        .map(|i| Signer::new(&format!("k{i}")).token(&claims(&endpoint.resource, "a", "")))
        .collect();
    // Without a deadline every one of these would hang forever.
    assert_eq!(concurrently(&endpoint, &tokens).await, [503; 6]);
    double.entered.notified().await;
    assert_eq!(double.fetches(), 1, "one fetch for all of them");
    assert_eq!(concurrently(&endpoint, &tokens[..2]).await, [503; 2]);
    assert_eq!(
        double.fetches(),
        1,
        "not retried within the refresh interval"
    );
}

/// An introspection endpoint double that never answers, or answers too much, or redirects.
async fn hostile_introspection(
    seen_by_redirect_target: Arc<std::sync::atomic::AtomicUsize>,
) -> String {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let target = format!("{base}/elsewhere");
    let app = axum::Router::new()
        .route(
            "/stall",
            axum::routing::post(std::future::pending::<String>),
        )
        .route(
            "/huge",
            axum::routing::post(|| async {
                let padding = "x".repeat(1024 * 1024);
                axum::Json(json!({"active": true, "aud": "AUDIENCE", "padding": padding}))
            }),
        )
        .route(
            "/redirect",
            axum::routing::post(move || {
                let target = target.clone();
                async move {
                    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, target)]).into_response()
                }
            }),
        )
        .route(
            "/elsewhere",
            axum::routing::post(move || {
                seen_by_redirect_target.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { axum::Json(json!({"active": true, "aud": "AUDIENCE"})) }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

#[tokio::test]
async fn introspection_is_bounded_in_time_size_and_destination() {
    let redirected = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let base = hostile_introspection(Arc::clone(&redirected)).await;
    for (path, what) in [
        ("stall", "an endpoint that never answers"),
        ("huge", "a 1 MiB answer"),
        ("redirect", "a redirect (the token would follow it)"),
    ] {
        let endpoint = Endpoint::start(|_resource| {
            let verifier =
                IntrospectionVerifier::new(format!("{base}/{path}"), "rs", "secret", "AUDIENCE")
                    .timeout(std::time::Duration::from_millis(300));
            ResourceServer::new("AUDIENCE", verifier)
        })
        .await;
        assert_eq!(
            concurrently(&endpoint, &["opaque".to_owned(), "other".to_owned()]).await,
            [503, 503],
            "{what}"
        );
    }
    assert_eq!(
        redirected.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the token was sent to the redirect target"
    );
}

#[tokio::test]
async fn introspection_calls_in_flight_are_capped() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // An endpoint that holds every call until the test lets one go, recording how many it
    // held at once.
    struct Gate {
        held: AtomicUsize,
        most: AtomicUsize,
        arrived: tokio::sync::Notify,
        release: tokio::sync::Semaphore,
    }
    let gate = Arc::new(Gate {
        held: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        arrived: tokio::sync::Notify::new(),
        release: tokio::sync::Semaphore::new(0),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let held = Arc::clone(&gate);
    let app = axum::Router::new()
        .route(
            "/introspect",
            axum::routing::post(move || {
                let gate = Arc::clone(&held);
                async move {
                    let now = gate.held.fetch_add(1, Ordering::SeqCst) + 1;
                    gate.most.fetch_max(now, Ordering::SeqCst);
                    gate.arrived.notify_one();
                    gate.release.acquire().await.unwrap().forget();
                    gate.held.fetch_sub(1, Ordering::SeqCst);
                    axum::Json(json!({"active": true, "aud": "AUDIENCE", "sub": "x"}))
                }
            }),
        )
        .route("/ping", axum::routing::get(|| async { "pong" }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let endpoint = Endpoint::start(|_resource| {
        let verifier =
            IntrospectionVerifier::new(format!("{base}/introspect"), "rs", "secret", "AUDIENCE")
                .max_concurrent(2);
        ResourceServer::new("AUDIENCE", verifier)
    })
    .await;
    let tokens: Vec<String> = (0..5).map(|i| format!("token-{i}")).collect();
    let calls = tokio::spawn(async move { concurrently(&endpoint, &tokens).await });
    for _ in 0..5 {
        loop {
            let arrived = gate.arrived.notified();
            if gate.held.load(Ordering::SeqCst) > 0 {
                break;
            }
            arrived.await;
        }
        // Give any call beyond the cap a round trip's time to show up, then let one go.
        reqwest::get(format!("{base}/ping")).await.unwrap();
        gate.release.add_permits(1);
    }
    assert_eq!(calls.await.unwrap(), [200; 5]);
    assert_eq!(gate.most.load(Ordering::SeqCst), 2, "calls held at once");
}

/// A key the authorization server withdraws stops being trusted once the cached keys are past
/// their age: a token naming a cached key never causes a fetch by itself. While the JWKS
/// endpoint fails, the cached keys stay in use.
#[tokio::test]
async fn a_withdrawn_key_stops_being_trusted_once_the_keys_are_old() {
    let old = Signer::new("old");
    let double = JwksDouble::default();
    *double.mode.lock().unwrap() = JwksMode::Serve(JwkSet {
        keys: vec![old.jwk.clone()],
    });
    let url = double.start().await;
    // Keys age at once, and a refresh may follow any attempt: every request refreshes.
    let endpoint = Endpoint::start(|resource| {
        let verifier = JwtVerifier::new(ISSUER, resource, JwksSource::Url(url.clone()))
            .max_key_age(std::time::Duration::ZERO)
            .refresh_interval(std::time::Duration::ZERO);
        ResourceServer::new(resource, verifier)
    })
    .await;
    let token = old.token(&claims(&endpoint.resource, "a", ""));
    assert_eq!(
        concurrently(&endpoint, std::slice::from_ref(&token)).await,
        [200]
    );
    assert_eq!(double.fetches(), 1);
    // The endpoint fails: the cached key is still used (and the refresh was attempted).
    *double.mode.lock().unwrap() = JwksMode::Fail;
    assert_eq!(
        concurrently(&endpoint, std::slice::from_ref(&token)).await,
        [200]
    );
    assert_eq!(double.fetches(), 2);
    // The authorization server withdraws the key.
    let new = Signer::new("new");
    *double.mode.lock().unwrap() = JwksMode::Serve(JwkSet {
        keys: vec![new.jwk.clone()],
    });
    assert_eq!(concurrently(&endpoint, &[token]).await, [401]);
    let fresh = new.token(&claims(&endpoint.resource, "a", ""));
    assert_eq!(concurrently(&endpoint, &[fresh]).await, [200]);
}
