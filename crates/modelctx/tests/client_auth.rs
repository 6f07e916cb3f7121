//! The OAuth client end to end: our `Client` against our `ResourceServer`-protected server and
//! the local authorization server of `modelctx-conformance`, all on 127.0.0.1 (the pieces are in
//! `modelctx_test_support::client::auth`). Sign-in in both eras, stored and refreshed tokens, scope
//! step-up and its limit, the loopback redirect, pre-registered and metadata-document clients, and the
//! refusals: wrong or missing `iss`, wrong `state`, a resource that is not this server, an
//! authorization server without PKCE or with a mismatched issuer, a new authorization server
//! (re-registration). What a hostile MCP or authorization server cannot do is in
//! tests/client_auth_hostile.rs.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::auth::{
    AuthError, AuthorizationHandler, ClientRegistration, LoopbackRedirect, MemoryTokenStore,
    OAuthConfig, TokenStore, handler_fn,
};
use modelctx::client::{Client, ClientError, Mode};
use modelctx::server::http::HttpConfig;
use modelctx_test_support::client::auth::auth_server::{AuthServer, AuthServerConfig, IssMode};
use modelctx_test_support::client::auth::{
    Protected, REDIRECT, auth_error, connect, fetcher, server, service_client, whoami,
    with_service_client,
};
use serde_json::json;

#[tokio::test]
async fn signs_in_on_401_in_both_eras() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let store = Arc::new(MemoryTokenStore::new());

    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher())
            .client_name("tests")
            .shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    assert_eq!(client.protocol_version().as_ref(), "2026-07-28");
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");

    let stats = auth.stats();
    assert_eq!(stats.registrations, 1);
    assert_eq!(stats.last_application_type.as_deref(), Some("native"));
    assert_eq!(stats.authorization_requests, 1);
    assert_eq!(stats.code_exchanges, 1);
    // The challenge's scope, plus offline_access because the AS lists it.
    assert_eq!(
        stats.last_scope.as_deref(),
        Some("mcp:tools offline_access")
    );
    assert_eq!(stats.last_resource.as_deref(), Some(rs.url.as_str()));
    let tokens = store.load_tokens(&rs.url).await.unwrap().unwrap();
    assert_eq!(tokens.issuer, auth.issuer());
    assert_eq!(tokens.resource, rs.url);
    assert!(tokens.refresh_token.is_some());
    let registration = store.load_client(auth.issuer()).await.unwrap().unwrap();
    assert_eq!(registration.redirect_uris, [REDIRECT]);
    // Every request after the first carried the token, in the header only.
    assert_eq!(rs.seen.token_in_query.load(Ordering::SeqCst), 0);
    assert_eq!(
        rs.seen.with_bearer.load(Ordering::SeqCst) + 1,
        rs.seen.requests.load(Ordering::SeqCst)
    );
    client.close().await.unwrap();

    // The handshake era: `initialize` is refused first; the stored token is reused by a new
    // client without asking the user again.
    let handshake = Client::builder()
        .mode(Mode::Handshake)
        .oauth(OAuthConfig::new(fetcher()).shared_token_store(store.clone()))
        .connect_http(&rs.url)
        .await
        .unwrap();
    assert_eq!(handshake.protocol_version().as_ref(), "2025-11-25");
    assert_eq!(whoami(&handshake).await, "alice mcp:tools,offline_access");
    assert_eq!(auth.stats().authorization_requests, 1);
    handshake.close().await.unwrap();

    // A new store: a new sign-in, in the handshake era from the start.
    let fresh = Client::builder()
        .mode(Mode::Handshake)
        .oauth(OAuthConfig::new(fetcher()))
        .connect_http(&rs.url)
        .await
        .unwrap();
    assert_eq!(whoami(&fresh).await, "alice mcp:tools,offline_access");
    assert_eq!(auth.stats().authorization_requests, 2);
    assert_eq!(auth.stats().registrations, 2);
    fresh.close().await.unwrap();
}

#[tokio::test]
async fn refreshes_tokens_before_they_expire() {
    let auth = AuthServer::start(
        AuthServerConfig {
            access_token_ttl: 120,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    // Every token "expires" within the margin: each request refreshes first.
    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher()).refresh_margin(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    let stats = auth.stats();
    assert_eq!(stats.authorization_requests, 1);
    assert!(stats.refreshes >= 2, "{stats:?}");

    // A refused refresh (revoked) drops the tokens; the server's 401 starts a new sign-in.
    auth.revoke_refresh_tokens();
    assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    assert_eq!(auth.stats().authorization_requests, 2);
    client.close().await.unwrap();
}

/// A token that lives less than the refresh margin and has no refresh token is used until it
/// expires: one sign-in serves every call (before, each request dropped it at the margin and
/// the server's 401 asked the user again).
#[tokio::test]
async fn a_short_lived_token_without_refresh_is_used_until_it_expires() {
    let auth = AuthServer::start(
        AuthServerConfig {
            access_token_ttl: 120,
            refresh_tokens: false,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher()).refresh_margin(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    for _ in 0..3 {
        assert_eq!(whoami(&client).await, "alice mcp:tools,offline_access");
    }
    let stats = auth.stats();
    assert_eq!(stats.authorization_requests, 1, "{stats:?}");
    assert_eq!(stats.refreshes, 0, "{stats:?}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn steps_up_with_the_union_of_scopes() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(
        auth.issuer(),
        &auth.jwks_url(),
        &["mcp:tools"],
        Some("mcp:write"),
    )
    .await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(auth.stats().authorization_requests, 1);
    assert_eq!(
        whoami(&client).await,
        "alice mcp:tools,offline_access,mcp:write"
    );
    let stats = auth.stats();
    assert_eq!(stats.authorization_requests, 2);
    assert_eq!(
        stats.last_scope.as_deref(),
        Some("mcp:tools offline_access mcp:write")
    );
    // The step-up reused the registration.
    assert_eq!(stats.registrations, 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn step_up_stops_when_it_cannot_help() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    // The layer wants a scope the authorization server will not put in tokens ("mcp:admin"
    // is not among its scopes: the authorization is refused), so step-up fails; a scope
    // already granted is not asked for again.
    let rs = Protected::start(
        auth.issuer(),
        &auth.jwks_url(),
        &["mcp:tools"],
        Some("mcp:admin"),
    )
    .await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    let error = client.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::Denied { error, .. }) if error == "invalid_scope"),
        "{error}"
    );
    assert_eq!(auth.stats().authorization_requests, 2);

    // With max_step_ups(0) the 403 is final at once.
    let strict = connect(&rs.url, OAuthConfig::new(fetcher()).max_step_ups(0))
        .await
        .unwrap();
    let before = auth.stats().authorization_requests;
    let error = strict.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::InsufficientScope { scope }) if scope == "mcp:admin"),
        "{error}"
    );
    assert_eq!(auth.stats().authorization_requests, before);
    client.close().await.unwrap();
    strict.close().await.unwrap();
}

#[tokio::test]
async fn a_granted_scope_is_not_asked_for_again() {
    // The server keeps challenging for mcp:write even once the token has it.
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(
        auth.issuer(),
        &auth.jwks_url(),
        &["mcp:tools"],
        Some("!mcp:write"),
    )
    .await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    let error = client.call_tool("whoami", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Auth(AuthError::InsufficientScope { scope }) if scope == "mcp:write"),
        "{error}"
    );
    // The sign-in, and one step-up that obtained mcp:write: no third authorization.
    assert_eq!(auth.stats().authorization_requests, 2);
    assert_eq!(
        auth.stats().last_scope.as_deref(),
        Some("mcp:tools offline_access mcp:write")
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn refuses_a_wrong_or_missing_iss() {
    for (mode, found) in [
        (IssMode::Wrong, Some("https://evil.example.com")),
        (IssMode::Omit, None),
    ] {
        let auth = AuthServer::start(
            AuthServerConfig {
                iss_in_redirect: mode,
                ..AuthServerConfig::default()
            },
            0,
        )
        .await
        .unwrap();
        let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
        let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
        match error {
            AuthError::ResponseIssuer {
                expected,
                found: got,
            } => {
                assert_eq!(expected, auth.issuer());
                assert_eq!(got.as_deref(), found);
            }
            other => panic!("{other}"),
        }
        let stats = auth.stats();
        assert_eq!(stats.authorization_requests, 1);
        assert_eq!(stats.code_exchanges, 0, "the code must not be exchanged");
    }
}

#[tokio::test]
async fn accepts_a_missing_iss_when_not_advertised() {
    let auth = AuthServer::start(
        AuthServerConfig {
            iss_in_redirect: IssMode::Omit,
            advertise_iss: false,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let client = connect(&rs.url, OAuthConfig::new(fetcher())).await.unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn refuses_a_wrong_state() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let inner = Arc::new(fetcher());
    let tampering = handler_fn(REDIRECT, move |request| {
        let inner = Arc::clone(&inner);
        async move {
            let mut response = inner.authorize(request).await?;
            response.state = Some("forged".to_owned());
            Ok(response)
        }
    });
    let error = auth_error(connect(&rs.url, OAuthConfig::new(tampering)).await);
    assert!(matches!(error, AuthError::StateMismatch), "{error}");
    assert_eq!(auth.stats().code_exchanges, 0);
}

#[tokio::test]
async fn refuses_metadata_for_another_resource() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start_on(
        0,
        auth.issuer(),
        &auth.jwks_url(),
        Some("http://127.0.0.1:1/mcp"),
        &["mcp:tools"],
        None,
    )
    .await;
    // The challenge points at the other resource's origin (nothing listens there); the
    // well-known location of this server serves metadata naming the other resource.
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::ResourceMismatch { resource, .. } if resource == "http://127.0.0.1:1/mcp"),
        "{error}"
    );
    let stats = auth.stats();
    assert_eq!(
        stats.metadata_requests, 0,
        "no authorization server was contacted"
    );
    assert_eq!(stats.authorization_requests, 0);
}

#[tokio::test]
async fn refuses_servers_without_pkce_or_with_a_mismatched_issuer() {
    let auth = AuthServer::start(
        AuthServerConfig {
            advertise_pkce: false,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(error, AuthError::PkceUnsupported { .. }),
        "{error}"
    );
    assert_eq!(auth.stats().authorization_requests, 0);
    assert_eq!(auth.stats().registrations, 0);

    let auth = AuthServer::start(
        AuthServerConfig {
            metadata_issuer: Some("https://attacker.example.com".to_owned()),
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(
        matches!(&error, AuthError::IssuerMismatch { found, .. } if found == "https://attacker.example.com"),
        "{error}"
    );
    assert_eq!(auth.stats().registrations, 0);
    assert_eq!(auth.stats().authorization_requests, 0);
}

#[tokio::test]
async fn pre_registered_and_metadata_document_clients() {
    // A confidential pre-registered client, no dynamic registration offered.
    let mut config = AuthServerConfig {
        registration: false,
        ..AuthServerConfig::default()
    };
    config
        .clients
        .insert("cli".to_owned(), (Some("s3cret".to_owned()), Vec::new()));
    let cimd = "https://app.example.com/oauth/client.json";
    config.metadata_documents.insert(
        cimd.to_owned(),
        json!({"client_id": cimd, "client_name": "app", "redirect_uris": [REDIRECT]}),
    );
    let auth = AuthServer::start(config, 0).await.unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;

    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher()).pre_registered_for(
            auth.issuer(),
            ClientRegistration::new("cli").with_secret("s3cret"),
        ),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    assert_eq!(auth.stats().last_client_id.as_deref(), Some("cli"));
    client.close().await.unwrap();

    // Credentials registered with another issuer are not presented here: the client falls
    // back to its metadata document.
    let client = connect(
        &rs.url,
        OAuthConfig::new(fetcher())
            .pre_registered_for(
                "https://elsewhere.example.com",
                ClientRegistration::new("cli"),
            )
            .client_metadata_url(cimd),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    assert_eq!(auth.stats().last_client_id.as_deref(), Some(cimd));
    assert_eq!(auth.stats().registrations, 0);
    client.close().await.unwrap();

    // Nothing usable: a registration error before any authorization request.
    let before = auth.stats().authorization_requests;
    let error = auth_error(connect(&rs.url, OAuthConfig::new(fetcher())).await);
    assert!(matches!(error, AuthError::Registration(_)), "{error}");
    assert_eq!(auth.stats().authorization_requests, before);
}

#[tokio::test]
async fn re_registers_when_the_authorization_server_changes() {
    let first = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let second = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());

    let rs = Protected::start(first.issuer(), &first.jwks_url(), &["mcp:tools"], None).await;
    let port = rs.port();
    let url = rs.url.clone();
    let client = connect(
        &url,
        OAuthConfig::new(fetcher()).shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    client.close().await.unwrap();
    let first_client = first.stats().last_client_id.unwrap();
    rs.shutdown().await;

    // Same URL, now trusting the second authorization server only.
    let rs = Protected::restart_on(port, second.issuer(), &second.jwks_url()).await;
    let client = connect(
        &url,
        OAuthConfig::new(fetcher()).shared_token_store(store.clone()),
    )
    .await
    .unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    let stats = second.stats();
    assert_eq!(
        stats.registrations, 1,
        "registered again with the new server"
    );
    assert_ne!(stats.last_client_id.as_deref(), Some(first_client.as_str()));
    assert_eq!(first.stats().authorization_requests, 1);
    // Registrations are kept per issuer.
    assert_eq!(
        store
            .load_client(first.issuer())
            .await
            .unwrap()
            .unwrap()
            .client_id,
        first_client
    );
    assert!(store.load_client(second.issuer()).await.unwrap().is_some());
    assert_eq!(
        store.load_tokens(&url).await.unwrap().unwrap().issuer,
        second.issuer()
    );
    client.close().await.unwrap();
    drop(rs);
}

#[tokio::test]
async fn loopback_redirect_signs_in_through_a_browser() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let opened = Arc::new(Mutex::new(Vec::new()));
    let redirect = {
        let opened = Arc::clone(&opened);
        LoopbackRedirect::bind(move |url| {
            opened.lock().unwrap().push(url.to_string());
            // The "browser": follows the authorization server's redirect to the listener.
            let url = url.clone();
            tokio::spawn(async move {
                let page = reqwest::get(url).await.unwrap().text().await.unwrap();
                assert!(page.contains("Signed in"), "{page}");
            });
            Ok(())
        })
        .await
        .unwrap()
    };
    let redirect_uri = redirect.redirect_uri().to_owned();
    let client = connect(&rs.url, OAuthConfig::new(redirect)).await.unwrap();
    assert!(whoami(&client).await.starts_with("alice"));
    let opened = opened.lock().unwrap().clone();
    assert_eq!(opened.len(), 1);
    let authorization = reqwest::Url::parse(&opened[0]).unwrap();
    let params: std::collections::HashMap<_, _> =
        authorization.query_pairs().into_owned().collect();
    assert_eq!(params["redirect_uri"], redirect_uri);
    assert_eq!(params["code_challenge_method"], "S256");
    assert_eq!(params["resource"], rs.url);
    assert_eq!(params["response_type"], "code");
    assert!(params["state"].len() >= 43);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_without_auth_is_unaffected() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        server()
            .serve_http_on(listener, HttpConfig::default(), async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    let client = connect(&url, OAuthConfig::new(fetcher())).await.unwrap();
    assert_eq!(whoami(&client).await, " ");
    client.close().await.unwrap();
    drop(stop);
}

#[tokio::test]
async fn the_users_time_does_not_count_against_time_bounds() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let inner = Arc::new(fetcher());
    // The "user" takes longer than the probe and request bounds.
    let slow_user = handler_fn(REDIRECT, move |request| {
        let inner = Arc::clone(&inner);
        async move {
            tokio::time::sleep(Duration::from_millis(1200)).await;
            inner.authorize(request).await
        }
    });
    let client = Client::builder()
        .probe_timeout(Duration::from_millis(500))
        .request_timeout(Duration::from_millis(500))
        .oauth(OAuthConfig::new(slow_user))
        .connect_http(&rs.url)
        .await
        .unwrap();
    // The probe was not taken for a handshake-era server's silence.
    assert_eq!(client.protocol_version().as_ref(), "2026-07-28");
    assert_eq!(auth.stats().authorization_requests, 1);
    assert!(whoami(&client).await.starts_with("alice"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn client_credentials_sign_in_as_the_client() {
    let auth = AuthServer::start(with_service_client(AuthServerConfig::default()), 0)
        .await
        .unwrap();
    let rs = Protected::start(auth.issuer(), &auth.jwks_url(), &["mcp:tools"], None).await;
    let client = connect(
        &rs.url,
        OAuthConfig::client_credentials(auth.issuer(), service_client()),
    )
    .await
    .unwrap();
    // No offline_access for a machine client: just the challenged scope.
    assert_eq!(whoami(&client).await, "alice mcp:tools");
    let stats = auth.stats();
    assert_eq!(stats.client_credentials, 1);
    assert_eq!(stats.authorization_requests, 0);
    assert_eq!(stats.registrations, 0);
    client.close().await.unwrap();

    // A wrong secret: the token endpoint's refusal is the error.
    let error = auth_error(
        connect(
            &rs.url,
            OAuthConfig::client_credentials(
                auth.issuer(),
                ClientRegistration::new("svc").with_secret("wrong"),
            ),
        )
        .await,
    );
    assert!(
        matches!(&error, AuthError::Token { status: 401, error: Some(code), .. } if code == "invalid_client"),
        "{error}"
    );
}
