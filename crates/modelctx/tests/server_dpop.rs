//! DPoP-bound access tokens at the resource server (RFC 9449): every proof that does not fit
//! its request is refused with the right challenge, a DPoP-bound token never works as a bearer
//! token, nonces are demanded and issued when configured, and a fleet shares its replay cache.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use modelctx::server::Server;
use modelctx::server::auth::{Dpop, JwksSource, JwtVerifier, ResourceServer};
use modelctx::server::http::HttpConfig;
use modelctx::server::single_use::RedisReplayGuard;
use modelctx::types::*;
use modelctx_test_support::redis::{Persistence, Redis};
use modelctx_test_support::server::{HttpPeer, request};
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.com";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// An ES256 key pair: the authorization server's token signer, or a client's DPoP key.
struct Key {
    pkcs8: Vec<u8>,
    pair: EcdsaKeyPair,
}

impl Key {
    fn new() -> Self {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        Self {
            pkcs8: pkcs8.as_ref().to_vec(),
            pair,
        }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65])})
    }

    /// RFC 7638, written out here rather than taken from the SDK.
    fn thumbprint(&self) -> String {
        let jwk = self.jwk();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        b64(digest(&SHA256, canonical.as_bytes()))
    }

    /// A compact JWS of `header` and `claims`, signed with this key.
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(serde_json::to_vec(header).unwrap()),
            b64(serde_json::to_vec(claims).unwrap())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", b64(signature.as_ref()))
    }

    /// A DPoP proof with these claims and the standard header.
    fn proof(&self, claims: &Value) -> String {
        self.sign(
            &json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()}),
            claims,
        )
    }
}

/// The claims of a proof of `POST target` with `token`.
fn proof_claims(target: &str, token: &str) -> Value {
    json!({
        "jti": format!("{:x}", rand_u128()),
        "htm": "POST",
        "htu": target,
        "iat": now(),
        "ath": b64(digest(&SHA256, token.as_bytes())),
    })
}

fn rand_u128() -> u128 {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes).unwrap();
    u128::from_be_bytes(bytes)
}

/// The authorization server: signs access tokens, bound to a DPoP key when given one.
struct Issuer {
    key: Key,
}

impl Issuer {
    fn jwks(&self) -> JwkSet {
        let mut jwk = self.key.jwk();
        jwk["kid"] = json!("as");
        jwk["alg"] = json!("ES256");
        let jwk: Jwk = serde_json::from_value(jwk).unwrap();
        JwkSet { keys: vec![jwk] }
    }

    fn token(&self, resource: &str, bound_to: Option<&Key>) -> String {
        let mut claims = json!({"iss": ISSUER, "aud": resource, "sub": "alice",
            "client_id": "notes-app", "scope": "mcp", "iat": now(), "exp": now() + 300});
        if let Some(key) = bound_to {
            claims["cnf"] = json!({"jkt": key.thumbprint()});
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("as".into());
        encode(&header, &claims, &EncodingKey::from_ec_der(&self.key.pkcs8)).unwrap()
    }
}

struct Endpoint {
    url: String,
    resource: String,
    client: reqwest::Client,
    _peer: HttpPeer,
}

/// What a request got back.
#[derive(Debug)]
struct Answer {
    status: u16,
    challenges: Vec<String>,
    nonce: Option<String>,
    body: Value,
}

impl Answer {
    /// The challenge of `scheme`.
    fn challenge(&self, scheme: &str) -> Option<&str> {
        self.challenges
            .iter()
            .find(|c| c.starts_with(&format!("{scheme} ")))
            .map(String::as_str)
    }

    fn assert_refused(&self, scheme: &str, error: &str, what: &str) {
        assert_eq!(self.status, 401, "{what}: {self:?}");
        let challenge = self
            .challenge(scheme)
            .unwrap_or_else(|| panic!("{what}: no {scheme} challenge in {self:?}"));
        assert!(
            challenge.contains(&format!("error=\"{error}\"")),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains("resource_metadata="),
            "{what}: {challenge}"
        );
        if scheme == "DPoP" {
            assert!(challenge.contains("algs=\"ES256\""), "{what}: {challenge}");
        }
    }
}

impl Endpoint {
    async fn start(issuer: &Issuer, dpop: Option<Dpop>) -> Self {
        let jwks = issuer.jwks();
        let server = Server::builder("Protected", "1.0.0")
            .tool(
                Tool::new("hello", Tool::empty_input_schema()),
                |_ctx, _p: CallToolRequestParams| async move {
                    Outcome::Complete(CallToolResult::text("hello"))
                },
            )
            .build()
            .unwrap();
        let peer = HttpPeer::start_configured(server, |addr| {
            let resource = format!("http://localhost:{}/mcp", addr.port());
            let mut rs = ResourceServer::new(
                &resource,
                JwtVerifier::new(ISSUER, &resource, JwksSource::Static(jwks)),
            )
            .authorization_server(ISSUER);
            if let Some(dpop) = dpop {
                rs = rs.dpop(dpop);
            }
            HttpConfig::default().auth(rs)
        })
        .await;
        let resource = format!("http://localhost:{}/mcp", peer.addr.port());
        Self {
            url: peer.url.clone(),
            resource,
            client: peer.client.clone(),
            _peer: peer,
        }
    }

    /// `tools/call hello` with `Authorization: <scheme> <token>` and these `DPoP` headers.
    async fn call(&self, authorization: Option<(&str, &str)>, proofs: &[&str]) -> Answer {
        let body = request(1, "tools/call", json!({"name": "hello"}));
        let mut builder = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "hello");
        if let Some((scheme, token)) = authorization {
            builder = builder.header("authorization", format!("{scheme} {token}"));
        }
        for proof in proofs {
            builder = builder.header("dpop", *proof);
        }
        let response = builder
            .body(serde_json::to_vec(&body).unwrap())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let challenges = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        let nonce = response
            .headers()
            .get("dpop-nonce")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        Answer {
            status,
            challenges,
            nonce,
            body,
        }
    }

    /// A DPoP call with one proof.
    async fn dpop(&self, token: &str, proof: &str) -> Answer {
        self.call(Some(("DPoP", token)), &[proof]).await
    }

    async fn metadata(&self) -> Value {
        let url = self
            .url
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
        let response = self.client.get(url).send().await.unwrap();
        response.json().await.unwrap()
    }
}

fn assert_called(answer: &Answer) {
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.body["result"]["content"][0]["text"],
        json!("hello"),
        "{answer:?}"
    );
}

#[tokio::test]
async fn a_good_proof_is_accepted_and_the_metadata_says_dpop() {
    let issuer = Issuer { key: Key::new() };
    let endpoint = Endpoint::start(&issuer, Some(Dpop::allowed())).await;
    let client = Key::new();
    let token = issuer.token(&endpoint.resource, Some(&client));
    let proof = client.proof(&proof_claims(&endpoint.resource, &token));
    assert_called(&endpoint.dpop(&token, &proof).await);
    // Another proof for the next request (a fresh jti) works too.
    let proof = client.proof(&proof_claims(&endpoint.resource, &token));
    assert_called(&endpoint.dpop(&token, &proof).await);
    // `Allowed`: an unbound token still works as Bearer.
    let bearer = issuer.token(&endpoint.resource, None);
    assert_called(&endpoint.call(Some(("Bearer", &bearer)), &[]).await);

    let metadata = endpoint.metadata().await;
    assert_eq!(
        metadata["dpop_signing_alg_values_supported"],
        json!(["ES256"])
    );
    assert_eq!(metadata["dpop_bound_access_tokens_required"], json!(false));
    let required = Endpoint::start(&issuer, Some(Dpop::required())).await;
    assert_eq!(
        required.metadata().await["dpop_bound_access_tokens_required"],
        json!(true)
    );
}

/// RFC 9449 §7.1: with DPoP allowed, a request without a token is told of both schemes.
#[tokio::test]
async fn a_missing_token_gets_bearer_and_dpop_challenges() {
    let issuer = Issuer { key: Key::new() };
    let endpoint = Endpoint::start(&issuer, Some(Dpop::allowed())).await;
    let answer = endpoint.call(None, &[]).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.challenges.len(), 2, "{answer:?}");
    assert!(
        answer.challenges[0].starts_with("Bearer resource_metadata="),
        "{answer:?}"
    );
    let dpop = answer.challenge("DPoP").unwrap();
    assert!(dpop.contains("algs=\"ES256\""), "{dpop}");
    assert!(!dpop.contains("error="), "{dpop}");

    // Required: DPoP only, and a Bearer token is refused with a DPoP challenge.
    let required = Endpoint::start(&issuer, Some(Dpop::required())).await;
    let answer = required.call(None, &[]).await;
    assert_eq!(answer.challenges.len(), 1, "{answer:?}");
    assert!(answer.challenges[0].starts_with("DPoP "), "{answer:?}");
    let bearer = issuer.token(&required.resource, None);
    required
        .call(Some(("Bearer", &bearer)), &[])
        .await
        .assert_refused("DPoP", "invalid_token", "bearer when DPoP is required");
}

/// A stolen DPoP-bound token, sent as a bearer token without its key, is refused — also by a
/// server that does not do DPoP at all (it could not check the binding).
#[tokio::test]
async fn a_stolen_dpop_bound_token_is_refused_as_bearer() {
    let issuer = Issuer { key: Key::new() };
    let client = Key::new();
    for dpop in [None, Some(Dpop::allowed())] {
        let endpoint = Endpoint::start(&issuer, dpop.clone()).await;
        let token = issuer.token(&endpoint.resource, Some(&client));
        endpoint
            .call(Some(("Bearer", &token)), &[])
            .await
            .assert_refused("Bearer", "invalid_token", &format!("{dpop:?}"));
        // With a proof alongside, still not as Bearer.
        let proof = client.proof(&proof_claims(&endpoint.resource, &token));
        endpoint
            .call(Some(("Bearer", &token)), &[&proof])
            .await
            .assert_refused("Bearer", "invalid_token", &format!("{dpop:?} with a proof"));
    }
    // An unbound token cannot pose as DPoP-bound either.
    let endpoint = Endpoint::start(&issuer, Some(Dpop::allowed())).await;
    let unbound = issuer.token(&endpoint.resource, None);
    let proof = client.proof(&proof_claims(&endpoint.resource, &unbound));
    endpoint.dpop(&unbound, &proof).await.assert_refused(
        "DPoP",
        "invalid_token",
        "unbound token with DPoP",
    );
}

#[tokio::test]
async fn proofs_that_do_not_fit_the_request_are_refused() {
    let issuer = Issuer { key: Key::new() };
    let endpoint = Endpoint::start(&issuer, Some(Dpop::allowed())).await;
    let client = Key::new();
    let thief = Key::new();
    let token = issuer.token(&endpoint.resource, Some(&client));
    let good = || proof_claims(&endpoint.resource, &token);
    let with = |key: &str, value: Value| {
        let mut claims = good();
        claims[key] = value;
        claims
    };
    let header = |alg: &str| json!({"typ": "dpop+jwt", "alg": alg, "jwk": client.jwk()});
    let unsigned = |header: &Value, claims: &Value| {
        format!(
            "{}.{}.",
            b64(serde_json::to_vec(header).unwrap()),
            b64(serde_json::to_vec(claims).unwrap())
        )
    };
    let mut private_jwk = client.jwk();
    private_jwk["d"] = json!(b64([7u8; 32]));
    let port = endpoint
        .resource
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/mcp");
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "another URL",
            "another URL",
            client.proof(&with(
                "htu",
                json!(format!("http://localhost:{port}/other")),
            )),
        ),
        (
            "another host",
            "another URL",
            client.proof(&with(
                "htu",
                json!(format!("http://evil.example:{port}/mcp")),
            )),
        ),
        (
            "another method",
            "another method",
            client.proof(&with("htm", json!("GET"))),
        ),
        (
            "signed by another key (jkt mismatch)",
            "another key",
            thief.proof(&good()),
        ),
        (
            "wrong ath",
            "ath does not match",
            client.proof(&with("ath", json!(b64(digest(&SHA256, b"other token"))))),
        ),
        ("no ath", "ath does not match", {
            let mut claims = good();
            claims.as_object_mut().unwrap().remove("ath");
            client.proof(&claims)
        }),
        (
            "iat too old",
            "outside the accepted window",
            client.proof(&with("iat", json!(now() - 120))),
        ),
        (
            "iat in the future",
            "outside the accepted window",
            client.proof(&with("iat", json!(now() + 120))),
        ),
        (
            "alg none",
            "alg is not ES256",
            unsigned(&header("none"), &good()),
        ),
        ("alg HS256", "alg is not ES256", {
            let input = format!(
                "{}.{}",
                b64(serde_json::to_vec(&header("HS256")).unwrap()),
                b64(serde_json::to_vec(&good()).unwrap())
            );
            let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, b"guessable");
            let tag = aws_lc_rs::hmac::sign(&key, input.as_bytes());
            format!("{input}.{}", b64(tag.as_ref()))
        }),
        (
            "typ jwt",
            "typ is not dpop+jwt",
            client.sign(
                &json!({"typ": "jwt", "alg": "ES256", "jwk": client.jwk()}),
                &good(),
            ),
        ),
        (
            "a private key in the jwk",
            "private key",
            client.sign(
                &json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": private_jwk}),
                &good(),
            ),
        ),
        ("a tampered payload", "signature is invalid", {
            let proof = client.proof(&good());
            let parts: Vec<&str> = proof.split('.').collect();
            let forged = b64(serde_json::to_vec(&with("htm", json!("DELETE"))).unwrap());
            format!("{}.{forged}.{}", parts[0], parts[2])
        }),
        (
            "a huge proof",
            "too large",
            client.proof(&with("pad", json!("x".repeat(16 * 1024)))),
        ),
        ("garbage", "not base64url", "not.a.proof".to_owned()),
    ];
    for (what, reason, proof) in &cases {
        let answer = endpoint.dpop(&token, proof).await;
        answer.assert_refused("DPoP", "invalid_dpop_proof", what);
        assert!(answer.challenges[0].contains(reason), "{what}: {answer:?}");
    }
    // No proof, and two proofs.
    let proof = client.proof(&good());
    endpoint
        .call(Some(("DPoP", &token)), &[])
        .await
        .assert_refused("DPoP", "invalid_dpop_proof", "no proof");
    endpoint
        .call(Some(("DPoP", &token)), &[&proof, &proof])
        .await
        .assert_refused("DPoP", "invalid_dpop_proof", "two proofs");

    // A replayed proof: accepted once, refused the second time.
    assert_called(&endpoint.dpop(&token, &proof).await);
    let replay = endpoint.dpop(&token, &proof).await;
    replay.assert_refused("DPoP", "invalid_dpop_proof", "replayed");
    assert!(replay.challenges[0].contains("already used"), "{replay:?}");
    // The server kept serving.
    assert_called(&endpoint.dpop(&token, &client.proof(&good())).await);
}

#[tokio::test]
async fn a_missing_or_stale_nonce_gets_a_fresh_one_and_the_retry_works() {
    let issuer = Issuer { key: Key::new() };
    let secret = [9u8; 32];
    let dpop = || {
        Dpop::allowed()
            .require_nonce(Duration::from_secs(300))
            .nonce_key(&secret)
    };
    let endpoint = Endpoint::start(&issuer, Some(dpop())).await;
    let client = Key::new();
    let token = issuer.token(&endpoint.resource, Some(&client));
    let claims = |nonce: Option<&str>| {
        let mut claims = proof_claims(&endpoint.resource, &token);
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        claims
    };

    let first = endpoint.dpop(&token, &client.proof(&claims(None))).await;
    first.assert_refused("DPoP", "use_dpop_nonce", "no nonce");
    let nonce = first.nonce.clone().expect("a DPoP-Nonce header");
    assert_called(
        &endpoint
            .dpop(&token, &client.proof(&claims(Some(&nonce))))
            .await,
    );

    // A nonce this server did not issue (another key: as good as stale) is refused likewise,
    // with a fresh nonce.
    let stranger = Endpoint::start(&issuer, Some(Dpop::allowed().nonce_key(b"another"))).await;
    let stranger_token = issuer.token(&stranger.resource, Some(&client));
    let foreign = stranger
        .dpop(
            &stranger_token,
            &client.proof(&proof_claims(&stranger.resource, &stranger_token)),
        )
        .await
        .nonce
        .unwrap();
    let stale = endpoint
        .dpop(&token, &client.proof(&claims(Some(&foreign))))
        .await;
    stale.assert_refused("DPoP", "use_dpop_nonce", "foreign nonce");
    let fresh = stale.nonce.expect("a fresh DPoP-Nonce");
    assert_called(
        &endpoint
            .dpop(&token, &client.proof(&claims(Some(&fresh))))
            .await,
    );

    // A fleet sharing the nonce key accepts each other's nonces.
    let sibling = Endpoint::start(&issuer, Some(dpop())).await;
    let sibling_token = issuer.token(&sibling.resource, Some(&client));
    let mut claims = proof_claims(&sibling.resource, &sibling_token);
    claims["nonce"] = json!(fresh);
    assert_called(&sibling.dpop(&sibling_token, &client.proof(&claims)).await);
}

/// Two instances sharing one Redis replay guard: a proof used on one is a replay on the other.
#[tokio::test]
async fn a_fleet_shares_its_replay_cache_over_redis() {
    let redis = Redis::start(Persistence::Off).await;
    let issuer = Issuer { key: Key::new() };
    let guard = Arc::new(
        RedisReplayGuard::connect(&redis.url, "dpop-jti")
            .await
            .unwrap(),
    );
    let dpop = Dpop::required().replay_guard(guard);
    let a = Endpoint::start(&issuer, Some(dpop.clone())).await;
    let b = Endpoint::start(&issuer, Some(dpop)).await;
    let client = Key::new();
    // Both serve the same public resource (behind one load balancer); here, the same path
    // on two ports, so the proof names each one's URL with the same jti.
    let token_a = issuer.token(&a.resource, Some(&client));
    let token_b = issuer.token(&b.resource, Some(&client));
    let claims_a = proof_claims(&a.resource, &token_a);
    let mut claims_b = proof_claims(&b.resource, &token_b);
    claims_b["jti"] = claims_a["jti"].clone();
    assert_called(&a.dpop(&token_a, &client.proof(&claims_a)).await);
    b.dpop(&token_b, &client.proof(&claims_b))
        .await
        .assert_refused("DPoP", "invalid_dpop_proof", "replayed on a sibling");
}

/// The local test authorization server issues DPoP-bound tokens for a token request with a
/// proof (after demanding its nonce), and the resource server accepts them with a proof only.
#[tokio::test]
async fn the_test_authorization_server_issues_tokens_the_resource_server_binds() {
    use modelctx_test_support::client::auth::auth_server::{AuthServer, AuthServerConfig};

    let mut config = AuthServerConfig {
        dpop: true,
        dpop_nonce: true,
        ..AuthServerConfig::default()
    };
    config
        .clients
        .insert("svc".into(), (Some("s3cret".into()), Vec::new()));
    let auth = AuthServer::start(config, 0).await.unwrap();
    let http = reqwest::Client::new();
    let metadata: Value = http
        .get(format!(
            "{}/.well-known/oauth-authorization-server",
            auth.issuer()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        metadata["dpop_signing_alg_values_supported"],
        json!(["ES256"])
    );

    let peer =
        HttpPeer::start_configured(Server::builder("Protected", "1.0.0").build().unwrap(), {
            let (issuer, jwks) = (auth.issuer().to_owned(), auth.jwks_url());
            move |addr| {
                let resource = format!("http://localhost:{}/mcp", addr.port());
                let verifier = JwtVerifier::new(&issuer, &resource, JwksSource::Url(jwks));
                HttpConfig::default()
                    .auth(ResourceServer::new(&resource, verifier).dpop(Dpop::required()))
            }
        })
        .await;
    let resource = format!("http://localhost:{}/mcp", peer.addr.port());
    let client = Key::new();
    let token_url = format!("{}/token", auth.issuer());
    let token_request = |nonce: Option<&str>| {
        let mut claims = json!({"jti": format!("{:x}", rand_u128()), "htm": "POST",
            "htu": token_url, "iat": now()});
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        http.post(&token_url)
            .header("dpop", client.proof(&claims))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "grant_type=client_credentials&client_id=svc&client_secret=s3cret&resource={}",
                resource.replace(':', "%3A").replace('/', "%2F")
            ))
            .send()
    };
    let first = token_request(None).await.unwrap();
    assert_eq!(first.status(), 400);
    let nonce = first.headers()["dpop-nonce"].to_str().unwrap().to_owned();
    let body: Value = first.json().await.unwrap();
    assert_eq!(body["error"], "use_dpop_nonce");
    let granted: Value = token_request(Some(&nonce))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(granted["token_type"], "DPoP", "{granted}");
    let token = granted["access_token"].as_str().unwrap();
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["cnf"]["jkt"], json!(client.thumbprint()));

    let endpoint = Endpoint {
        url: peer.url.clone(),
        resource: resource.clone(),
        client: peer.client.clone(),
        _peer: peer,
    };
    let discover = |authorization: String, proof: Option<String>| {
        let mut builder = endpoint
            .client
            .post(&endpoint.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .header("authorization", authorization);
        if let Some(proof) = proof {
            builder = builder.header("dpop", proof);
        }
        builder
            .body(serde_json::to_vec(&request(1, "server/discover", json!({}))).unwrap())
            .send()
    };
    let proof = client.proof(&proof_claims(&endpoint.resource, token));
    let answer = discover(format!("DPoP {token}"), Some(proof))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer = discover(format!("Bearer {token}"), None).await.unwrap();
    assert_eq!(answer.status(), 401);
}
