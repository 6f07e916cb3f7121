//! `mcp call --oauth-identity-token-file/-env` (workload identity federation) and `--oauth-dpop`:
//! the usage errors, and a sign-in whose identity token, read from the file, reaches the token
//! endpoint of the named issuer with a DPoP proof (mock servers on 127.0.0.1).

use std::sync::{Arc, Mutex};

use modelctx_test_support::cli::{TempDir, mcp, stderr};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

fn assert_usage_error(output: &std::process::Output, expected: &str) {
    let message = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains(expected), "{expected:?} in {message}");
}

#[test]
fn identity_token_flags_need_an_issuer_and_a_client_id() {
    let target = "http://127.0.0.1:9/mcp";
    let output = mcp(
        &[
            "tools",
            "--oauth-identity-token-file",
            "/nonexistent",
            target,
        ],
        "",
    );
    assert_usage_error(&output, "need --oauth-issuer");
    let output = mcp(
        &[
            "tools",
            "--oauth-identity-token-env",
            "TOKEN",
            "--oauth-issuer",
            "https://as.example",
            target,
        ],
        "",
    );
    assert_usage_error(&output, "--oauth-client-id");
    let output = mcp(
        &[
            "tools",
            "--oauth-identity-token-env",
            "TOKEN",
            "--oauth-identity-token-file",
            "/x",
            target,
        ],
        "",
    );
    assert_usage_error(&output, "cannot be used with");
    let output = mcp(&["tools", "--oauth-dpop", "off", target], "");
    assert_usage_error(&output, "--oauth-dpop");
    let output = mcp(&["tools", "--oauth-client-id", "w", "--oauth", target], "");
    assert_usage_error(&output, "--oauth-client-id is for workload identity");
    let output = mcp(
        &["tools", "--oauth-dpop", "sometimes", "--oauth", target],
        "",
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// A server on 127.0.0.1 that answers each request with `respond(request)` (its head and
/// body) and keeps the requests; returns `http://127.0.0.1:<port>`.
async fn mock(
    respond: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let kept = Arc::clone(&kept);
            let respond = Arc::clone(&respond);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 8192];
                loop {
                    let Ok(read) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..read]);
                    let text = String::from_utf8_lossy(&request).into_owned();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (name, value) = l.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            kept.lock().unwrap().push(text.clone());
                            let _ = stream.write_all(respond(&text).as_bytes()).await;
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, seen)
}

fn answer(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The identity token is read from the file and presented, with a DPoP proof, to the token
/// endpoint of the issuer named with --oauth-issuer; the refusal is reported.
#[tokio::test]
async fn the_identity_token_file_reaches_the_named_issuer_with_a_proof() {
    let (issuer, token_requests) = mock(|request| {
        if request.starts_with("GET /.well-known/oauth-authorization-server") {
            let issuer = request
                .lines()
                .find_map(|l| l.strip_prefix("host: ").or_else(|| l.strip_prefix("Host: ")))
                .unwrap()
                .trim()
                .to_owned();
            let body = format!(
                r#"{{"issuer":"http://{issuer}","token_endpoint":"http://{issuer}/token","code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["none"],"dpop_signing_alg_values_supported":["ES256"]}}"#
            );
            answer("200 OK", "", &body)
        } else {
            answer("400 Bad Request", "", r#"{"error":"invalid_grant"}"#)
        }
    })
    .await;
    let prm_issuer = issuer.clone();
    let (rs, _) = mock(move |request| {
        let host = request
            .lines()
            .find_map(|l| {
                l.strip_prefix("host: ")
                    .or_else(|| l.strip_prefix("Host: "))
            })
            .unwrap()
            .trim()
            .to_owned();
        if request.starts_with("GET /.well-known/oauth-protected-resource") {
            let body = format!(
                r#"{{"resource":"http://{host}/mcp","authorization_servers":["{prm_issuer}"]}}"#
            );
            answer("200 OK", "", &body)
        } else {
            answer(
                "401 Unauthorized",
                "WWW-Authenticate: Bearer\r\n",
                r#"{"error":"unauthorized"}"#,
            )
        }
    })
    .await;
    let dir = TempDir::new("workload-identity");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "projected-identity-token\n").unwrap();
    let store = dir.path().join("tokens.json");
    let target = format!("{rs}/mcp");
    let output = blocking(move || {
        mcp(
            &[
                "tools",
                "--timeout",
                "30",
                "--oauth-identity-token-file",
                &token_file.display().to_string(),
                "--oauth-issuer",
                &issuer,
                "--oauth-client-id",
                "workload-1",
                "--token-store",
                &store.display().to_string(),
                &target,
            ],
            "",
        )
    })
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("invalid_grant"),
        "{}",
        stderr(&output)
    );
    let requests = token_requests.lock().unwrap().clone();
    let token: Vec<&String> = requests
        .iter()
        .filter(|r| r.starts_with("POST /token"))
        .collect();
    assert_eq!(token.len(), 1, "{requests:?}");
    let token = token[0].to_ascii_lowercase();
    assert!(
        token.contains("grant_type=urn%3aietf%3aparams%3aoauth%3agrant-type%3ajwt-bearer"),
        "{token}"
    );
    assert!(
        token.contains("assertion=projected-identity-token"),
        "{token}"
    );
    assert!(token.contains("client_id=workload-1"), "{token}");
    assert!(token.contains("\r\ndpop: "), "a DPoP proof: {token}");
}
