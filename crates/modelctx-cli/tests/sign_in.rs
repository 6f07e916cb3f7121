//! `mcp serve demo --auth-issuer …` protects the demo server with
//! OAuth, and `mcp call --oauth` signs in through a local test authorization server (the one of
//! `modelctx-conformance`, in-process), all on 127.0.0.1.

use std::path::Path;
use std::process::{Command, Stdio};

use modelctx_conformance::auth_server::{AuthServer, AuthServerConfig};
use modelctx_test_support::cli::{HttpServer, Running, TempDir, assert_ok, mcp, stderr, stdout};

/// The `mcp` binary under test.
const MCP: &str = env!("CARGO_BIN_EXE_mcp");

const REGION: &str = r#"region="eu-west-1""#;

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

/// `mcp serve demo` over HTTP, requiring tokens of `auth` (and `extra` arguments).
async fn demo_behind(auth: &AuthServer, extra: &'static [&'static str]) -> HttpServer {
    let issuer = auth.issuer().to_owned();
    blocking(move || {
        let mut args = vec![
            "serve",
            "demo",
            "--http",
            "127.0.0.1:0",
            "--auth-issuer",
            &issuer,
        ];
        args.extend_from_slice(extra);
        HttpServer::start(MCP, &args)
    })
    .await
}

/// `mcp SUBCOMMAND --timeout 30 --oauth --token-store STORE` (its arguments to add) with only
/// `path` on PATH, so that no browser can be opened.
fn signing_in(subcommand: &str, path: &Path, store: &str) -> Command {
    let mut command = Command::new(MCP);
    command
        .env("PATH", path)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    command.args([
        subcommand,
        "--timeout",
        "30",
        "--oauth",
        "--token-store",
        store,
    ]);
    command
}

/// The demo server behind OAuth: without a token a call fails with a clear message; `--oauth`
/// prints the authorization URL (the browser cannot be opened here: this test plays it) and
/// signs in; the tokens land in the token store and a later command reuses them without
/// asking; `--oauth-headless` signs in without a browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_server_with_sign_in() {
    let auth = AuthServer::start(AuthServerConfig::default(), 0)
        .await
        .unwrap();
    let server = demo_behind(&auth, &["--auth-scope", "mcp:tools"]).await;
    let url = server.url.clone();
    assert!(
        server
            .banner
            .iter()
            .any(|line| line.contains(&format!("tokens of {} required for {url}", auth.issuer()))),
        "{:?}",
        server.banner
    );
    let dir = TempDir::new("sign-in");
    // A directory that does not exist yet: the command creates it.
    let store = dir.path().join("config/mcp/tokens.json");
    let store_arg = store.display().to_string();

    // No sign-in: refused with a hint, and nothing asked of the authorization server.
    let target = url.clone();
    let refused = blocking(move || {
        mcp(
            &[
                "call",
                "--timeout",
                "30",
                &target,
                "provision",
                "name=orders",
                "--answer",
                REGION,
            ],
            "",
        )
    })
    .await;
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(message.contains("HTTP status 401"), "{message}");
    assert!(
        message.contains("requires signing in; pass --oauth"),
        "{message}"
    );
    assert!(stdout(&refused).is_empty());
    assert_eq!(auth.stats().authorization_requests, 0);

    // --oauth: the URL is printed for the user (no browser can be opened: PATH is empty);
    // this test follows it as the browser would, back to the command's loopback listener.
    let (target, path, store_file) = (url.clone(), dir.path().to_owned(), store_arg.clone());
    let (running, authorize_url) = blocking(move || {
        let mut running = Running::spawn(
            signing_in("call", &path, &store_file)
                .args([&target, "provision", "name=orders", "--answer", REGION])
                .stdout(Stdio::piped()),
        );
        let url = running.wait_for("Sign in to continue: ");
        (running, url)
    })
    .await;
    assert!(
        authorize_url.starts_with(&format!("{}/authorize?", auth.issuer())),
        "{authorize_url}"
    );
    assert!(authorize_url.contains("code_challenge_method=S256"));
    let landing = reqwest::get(&authorize_url).await.unwrap();
    assert!(landing.status().is_success(), "{}", landing.status());
    assert!(landing.url().as_str().starts_with("http://127.0.0.1:"));
    let (status, out, rest) = blocking(move || running.finish()).await;
    assert!(status.success(), "{status:?}\n{out}\n{rest:?}");
    assert_eq!(out.trim(), "Provisioned 'orders' in eu-west-1.");
    let stats = auth.stats();
    assert_eq!(stats.registrations, 1);
    assert_eq!(stats.authorization_requests, 1);
    assert_eq!(stats.code_exchanges, 1);
    assert_eq!(stats.last_resource.as_deref(), Some(url.as_str()));
    assert!(
        stats
            .last_scope
            .as_deref()
            .is_some_and(|scope| scope.split(' ').any(|s| s == "mcp:tools")),
        "{:?}",
        stats.last_scope
    );
    // The tokens and the registration are kept, privately.
    let kept = std::fs::read_to_string(&store).unwrap();
    assert!(kept.contains(&url), "{kept}");
    assert!(kept.contains(auth.issuer()), "{kept}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&store).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }

    // A later command reuses the stored token: no sign-in.
    let (target, path, store_file) = (url.clone(), dir.path().to_owned(), store_arg.clone());
    let tools = blocking(move || {
        signing_in("tools", &path, &store_file)
            .arg(&target)
            .output()
            .unwrap()
    })
    .await;
    assert_ok(&tools);
    assert!(stdout(&tools).contains("provision"), "{}", stdout(&tools));
    assert!(!stderr(&tools).contains("Sign in"), "{}", stderr(&tools));
    assert_eq!(auth.stats().authorization_requests, 1);

    // --oauth-headless, with a new token store: signs in without a browser.
    let (target, fresh) = (url.clone(), dir.path().join("other.json"));
    let headless = blocking(move || {
        mcp(
            &[
                "call",
                "--timeout",
                "30",
                "--oauth-headless",
                "--token-store",
                &fresh.display().to_string(),
                &target,
                "provision",
                "name=billing",
                "--answer",
                REGION,
            ],
            "",
        )
    })
    .await;
    assert_ok(&headless);
    assert_eq!(
        stdout(&headless).trim(),
        "Provisioned 'billing' in eu-west-1."
    );
    assert!(
        stderr(&headless).contains("without a browser"),
        "{}",
        stderr(&headless)
    );
    assert_eq!(auth.stats().authorization_requests, 2);
    assert_eq!(auth.stats().code_exchanges, 2);
    drop(server);
}

/// A host the command must not contact: counts each connection, then answers 404.
async fn logger() -> (String, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    answering(|_| {
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
    })
    .await
}

/// A server on 127.0.0.1 that counts each connection and answers it with `respond(path)`, the
/// request line's target; returns `http://127.0.0.1:<port>` and the count.
async fn answering(
    respond: impl Fn(&str) -> Vec<u8> + Send + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut head = [0u8; 4096];
            let read = stream.read(&mut head).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&head[..read]);
            let path = head.split(' ').nth(1).unwrap_or("/");
            let _ = stream.write_all(&respond(path)).await;
        }
    });
    (url, hits)
}

/// `mcp tools --timeout 30 --oauth-headless --token-store STORE EXTRA… TARGET`.
async fn headless_tools(
    target: String,
    store: String,
    extra: &'static [&'static str],
) -> std::process::Output {
    blocking(move || {
        let mut args = vec![
            "tools",
            "--timeout",
            "30",
            "--oauth-headless",
            "--token-store",
            &store,
        ];
        args.extend_from_slice(extra);
        args.push(&target);
        mcp(&args, "")
    })
    .await
}

/// A URL the client refuses is explained with the flag that allows it
/// (`--oauth-cross-origin-metadata`, `--oauth-issuer`), not the library's setting; the refused
/// host (a logger standing for an internal service) receives nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_url_names_the_flag() {
    let (internal, hits) = logger().await;
    // A challenge naming metadata on another origin (another port).
    let challenge = format!("Bearer resource_metadata=\"{internal}/meta\"");
    let (cross_origin, _) = answering(move |_| {
        format!(
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()
    })
    .await;
    // A server on `localhost` whose metadata names an authorization server on 127.0.0.1:
    // another host, and not a public address.
    let metadata = format!("{{\"authorization_servers\": [\"{internal}\"]}}");
    let (naming, _) = answering(move |path| {
        if path.starts_with("/.well-known/oauth-protected-resource") {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{metadata}",
                metadata.len()
            )
            .into_bytes()
        } else {
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\
              Connection: close\r\n\r\n"
                .to_vec()
        }
    })
    .await;
    let naming = naming.replace("127.0.0.1", "localhost");
    let dir = TempDir::new("sign-in-refused");
    let store = dir.path().join("tokens.json").display().to_string();
    for (server, flag) in [
        (cross_origin, "--oauth-cross-origin-metadata"),
        (naming, "--oauth-issuer"),
    ] {
        let refused = headless_tools(format!("{server}/mcp"), store.clone(), &[]).await;
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        let message = stderr(&refused);
        assert!(
            message.contains(&format!("refusing to contact {internal}")),
            "{message}"
        );
        assert!(message.contains(flag), "{message}");
        assert!(!message.contains("OAuthConfig"), "{message}");
    }
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// `--oauth-headless` follows no redirect of the authorization server
/// to another origin (here a logger standing for an internal service, which must receive
/// nothing), and `--oauth-issuer` refuses a server that names another authorization server
/// before anything is sent to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_sign_in_goes_nowhere_else() {
    let (elsewhere, hits) = logger().await;
    let auth = AuthServer::start(
        AuthServerConfig {
            authorize_redirect: Some(format!("{elsewhere}/steal")),
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let server = demo_behind(&auth, &[]).await;
    let dir = TempDir::new("sign-in-elsewhere");
    let store = dir.path().join("tokens.json").display().to_string();
    let run = |extra| headless_tools(server.url.clone(), store.clone(), extra);

    let refused = run(&[]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("not followed"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(auth.stats().authorization_requests, 1);
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);

    let before = auth.stats().requests;
    let refused = run(&["--oauth-issuer", "https://auth.example.com"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("https://auth.example.com") && message.contains(auth.issuer()),
        "{message}"
    );
    assert_eq!(
        auth.stats().requests,
        before,
        "the named server was contacted"
    );
    drop(server);
}

/// The first value of `key` anywhere in `value` (the token store's layout is the library's).
fn find_string<'a>(value: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    match value {
        serde_json::Value::Object(map) => map
            .get(key)
            .and_then(serde_json::Value::as_str)
            .or_else(|| map.values().find_map(|v| find_string(v, key))),
        serde_json::Value::Array(items) => items.iter().find_map(|v| find_string(v, key)),
        _ => None,
    }
}

/// DPoP end to end (issue 21): the authorization server issues DPoP-bound tokens and wants its
/// nonce, the demo server requires DPoP with nonces of its own; `mcp call --oauth-headless`
/// signs in with a proof, calls with `Authorization: DPoP` and a proof per request (each
/// nonce retried once), keeps the key with the tokens, and a later command reuses both. The
/// stored token without its key (a thief's copy) is refused with a DPoP challenge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_sign_in_end_to_end() {
    let auth = AuthServer::start(
        AuthServerConfig {
            dpop: true,
            dpop_nonce: true,
            ..AuthServerConfig::default()
        },
        0,
    )
    .await
    .unwrap();
    let server = demo_behind(&auth, &["--auth-dpop", "required", "--auth-dpop-nonce"]).await;
    let url = server.url.clone();
    let dir = TempDir::new("sign-in-dpop");
    let store = dir.path().join("tokens.json").display().to_string();
    let call = {
        let (url, store) = (url.clone(), store.clone());
        move || {
            mcp(
                &[
                    "call",
                    "--timeout",
                    "30",
                    "--oauth-headless",
                    "--token-store",
                    &store,
                    &url,
                    "provision",
                    "name=orders",
                    "--answer",
                    REGION,
                ],
                "",
            )
        }
    };
    let first = blocking(call.clone()).await;
    assert_ok(&first);
    assert_eq!(stdout(&first).trim(), "Provisioned 'orders' in eu-west-1.");
    assert_eq!(auth.stats().dpop_tokens, 1);

    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    assert!(
        find_string(&kept, "token_type").is_some_and(|t| t.eq_ignore_ascii_case("dpop")),
        "{kept}"
    );
    assert!(
        find_string(&kept, "dpop_key").is_some(),
        "the key is kept with the tokens"
    );
    let token = find_string(&kept, "access_token").unwrap().to_owned();

    // A later command signs with the stored key: no new sign-in.
    let again = blocking(call).await;
    assert_ok(&again);
    assert_eq!(auth.stats().authorization_requests, 1);
    assert_eq!(auth.stats().dpop_tokens, 1);

    // The token alone, as a thief would send it.
    let http = reqwest::Client::new();
    for scheme in ["Bearer", "DPoP"] {
        let stolen = http
            .post(&url)
            .header("Authorization", format!("{scheme} {token}"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(stolen.status(), 401, "{scheme}");
        let challenge = stolen
            .headers()
            .get_all("www-authenticate")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect::<Vec<_>>()
            .join(" | ");
        assert!(challenge.starts_with("DPoP "), "{scheme}: {challenge}");
    }
    drop(server);
}
