//! The OAuth 2.1 resource server: protected resource metadata, 401/403 challenges, JWT (static
//! and remote JWKS with rotation) and introspection verifiers, and sealed state bound to the user.

mod server_support;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use mcp::seal::RequestStateSecurity;
use mcp::server::Server;
use mcp::server::auth::{IntrospectionVerifier, JwksSource, JwtVerifier, ResourceServer};
use mcp::server::http::HttpConfig;
use mcp::types::*;
use serde_json::{Value, json};
use server_support::request;

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
    Server::builder("Protected", "1.0.0")
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
        )
        .build()
        .unwrap()
}

struct Endpoint {
    url: String,
    resource: String,
    client: reqwest::Client,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Endpoint {
    async fn start(make: impl FnOnce(&str) -> ResourceServer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let resource = format!("http://localhost:{port}/mcp");
        let config = HttpConfig::default().auth(make(&resource));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            server()
                .serve_http_on(listener, config, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self {
            url: resource.clone(),
            resource,
            client: reqwest::Client::new(),
            _stop: stop,
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
    async fn legacy(
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
        .legacy(Method::POST, &initialize, &alice, None)
        .await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let as_bob = endpoint
        .legacy(Method::POST, &list, &bob, Some(&session))
        .await;
    assert_eq!(
        as_bob.status(),
        404,
        "another user's session does not exist"
    );
    let stream = endpoint
        .legacy(Method::GET, &Value::Null, &bob, Some(&session))
        .await;
    assert_eq!(stream.status(), 404);
    let delete = endpoint
        .legacy(Method::DELETE, &Value::Null, &bob, Some(&session))
        .await;
    assert_eq!(delete.status(), 404);
    let as_alice = endpoint
        .legacy(Method::POST, &list, &alice, Some(&session))
        .await;
    assert_eq!(as_alice.status(), 200);
    let listed: Value = as_alice.json().await.unwrap();
    assert_eq!(
        listed["result"]["tools"][0]["name"], "provision",
        "{listed}"
    );
    let delete = endpoint
        .legacy(Method::DELETE, &Value::Null, &alice, Some(&session))
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
