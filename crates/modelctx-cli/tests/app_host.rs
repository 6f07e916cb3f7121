//! `mcp app` in a real browser (headless Chromium, `modelctx_test_support::browser`): the
//! official example app `@modelcontextprotocol/server-basic-vanillajs` 2.0.3 (its `App` class
//! inside the iframe; `scripts/app-example.sh` installs it under `.cache/`) over stdio, and a
//! test app of our own (`app_host/test_app.html`, served by `app_host/test_server.rs` over HTTP
//! in both eras) for what the example cannot show: the sandbox's CSP at work, a tool hidden
//! from apps, forged and malformed messages, a question the server asks mid-call.
//!
//! Everything runs on 127.0.0.1; every wait polls with a bound (`BOUND`), none sleeps.

mod app_host {
    pub(crate) mod test_server;
}

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use modelctx_test_support::browser::{AppPage, Chromium};
use modelctx_test_support::cli::{mcp, repo_root, stderr};
use modelctx_test_support::mcp_app::McpApp;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::app_host::test_server;

/// The most any step may take (a cold Node server, a browser starting on a loaded machine).
const BOUND: Duration = Duration::from_secs(60);

/// The example server: (Node 22, its entry point), installed once per test process.
fn example_server() -> &'static (String, String) {
    static EXAMPLE: OnceLock<(String, String)> = OnceLock::new();
    EXAMPLE.get_or_init(|| {
        let output = std::process::Command::new("bash")
            .arg(repo_root().join("scripts/app-example.sh"))
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run scripts/app-example.sh");
        assert!(output.status.success(), "scripts/app-example.sh failed");
        let text = String::from_utf8(output.stdout).unwrap();
        let mut lines = text.lines().map(str::to_owned);
        (lines.next().unwrap(), lines.next().unwrap())
    })
}

/// A loopback HTTP server that counts the requests it gets and answers each with `body`
/// (readable cross-origin): the other end of the app's `fetch`es.
async fn counting_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\nContent-Type: text/plain\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (port, count)
}

/// What a `fetch` of `url` from the app's frame comes to: `{"fetched": body}`, or the CSP
/// violation it raised (`{"directive": …, "blocked": …}`).
async fn fetch_from_app(page: &AppPage, url: &str) -> Value {
    let probe = format!(
        r#"new Promise((resolve) => {{
            const url = {url:?};
            document.addEventListener("securitypolicyviolation", (e) => {{
                if (e.blockedURI.startsWith(url.slice(0, 20))) {{
                    resolve({{ directive: e.effectiveDirective, blocked: e.blockedURI }});
                }}
            }});
            fetch(url).then((r) => r.text()).then((body) => resolve({{ fetched: body }}), () => {{}});
        }})"#
    );
    page.eval_app(&probe).await.expect("the probe runs")
}

/// `mcp app [ARGS…] TARGET show greeting=GREETING` (the test app) in the browser, once the
/// app shows the tool's result.
async fn show_test_app(
    target: &str,
    args: &[&str],
    greeting: &str,
) -> (McpApp, String, Chromium, AppPage) {
    let greeting_arg = format!("greeting={greeting}");
    let mut line = vec!["--timeout", "600"];
    line.extend_from_slice(args);
    line.extend([target, "show", &greeting_arg]);
    let (app, url) = McpApp::start(&line).await;
    let browser = Chromium::launch().await;
    let page = browser.open(&url).await;
    page.wait_app(
        &format!(r#"document.getElementById("result").textContent === "shown: {greeting}""#),
        BOUND,
    )
    .await;
    (app, url, browser, page)
}

/// The app calls `refresh` (visible to apps only) through the host.
async fn assert_app_calls_refresh(page: &AppPage) {
    let refreshed = page
        .eval_app(r#"rpc("tools/call", { name: "refresh" })"#)
        .await
        .unwrap();
    assert_eq!(
        refreshed["result"]["content"][0]["text"], "refreshed",
        "{refreshed}"
    );
}

/// Ctrl-C: `mcp app` tells the app it is torn down, the app answers in time, and `mcp` exits 0.
/// Returns what it printed on stdout.
async fn close_with_ctrl_c(app: McpApp, browser: Chromium) -> Vec<String> {
    let (status, out, err) = app.interrupt(BOUND).await;
    assert!(status.success(), "{status}: {err:#?}");
    assert!(
        err.iter()
            .any(|l| l == "app closed: the user closed mcp app (Ctrl-C)"),
        "{err:#?}"
    );
    assert!(
        err.iter()
            .any(|l| l == "the app answered ui/resource-teardown"),
        "{err:#?}"
    );
    browser.close().await;
    out
}

/// What the app sees of its host page's origin: reading the parent's document, its own
/// referrer (which would carry the page's token), and the channel (`channel_url`).
async fn assert_host_out_of_reach(page: &AppPage, channel_url: &str) {
    let parent = page
        .eval_app(
            "(() => { try { return parent.document.title; } catch (e) { return e.name; } })()",
        )
        .await
        .unwrap();
    assert_eq!(parent, "SecurityError");
    assert_eq!(page.eval_app("document.referrer").await.unwrap(), "");
    let channel = fetch_from_app(page, channel_url).await;
    assert_eq!(channel["directive"], "connect-src", "{channel}");
}

/// The official example: `ui/initialize` completes and the tool's result shows; its buttons
/// call the tool again through the host, send a message to mcp's stdout, a log to its stderr,
/// and ask to open a link (asked in the terminal: with stdin closed, refused); it cannot reach
/// anywhere undeclared, nor its host page; Ctrl-C tears it down and it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_example_app_runs_in_the_host() {
    let (node, entry) = example_server();
    let (mut app, url) =
        McpApp::start(&["--timeout", "600", "get-time", "--", node, entry, "--stdio"]).await;
    let browser = Chromium::launch().await;
    let page = browser.open(&url).await;

    app.stderr_line("the app started: Get Time App 1.0.0", BOUND)
        .await;
    let shown = r#"(() => {
        const time = document.getElementById("server-time")?.textContent;
        return time && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(time) && time;
    })()"#;
    let first = page.wait_app(shown, BOUND).await;

    page.eval_app(r#"document.getElementById("get-time-btn").click()"#)
        .await
        .unwrap();
    app.stderr_line("the app calls tool get-time", BOUND).await;
    let changed = format!("{shown} !== {first}");
    page.wait_app(&format!("({changed}) && {shown}"), BOUND)
        .await;

    page.eval_app(
        r#"(() => {
            document.getElementById("message-text").value = "hello from the browser test";
            document.getElementById("send-message-btn").click();
        })()"#,
    )
    .await
    .unwrap();
    app.stdout_line("message from the app: hello from the browser test", BOUND)
        .await;
    page.eval_app(r#"document.getElementById("send-log-btn").click()"#)
        .await
        .unwrap();
    app.stderr_line("app log [info]: This is log text.", BOUND)
        .await;
    page.eval_app(r#"document.getElementById("open-link-btn").click()"#)
        .await
        .unwrap();
    app.stderr_line(
        "app asks you to open a link on: modelcontextprotocol.io",
        BOUND,
    )
    .await;

    // Nothing declared: a fetch anywhere is a CSP violation and never leaves the browser.
    let (port, requests) = counting_server("reached").await;
    let fetched = fetch_from_app(&page, &format!("http://127.0.0.1:{port}/exfiltrate")).await;
    assert_eq!(fetched["directive"], "connect-src", "{fetched}");
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    assert_host_out_of_reach(&page, &format!("{url}channel")).await;

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("app-host/basic-vanillajs.png");
    page.screenshot(&shot).await;
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        png.len()
    );

    close_with_ctrl_c(app, browser).await;
}

/// Our test app over HTTP, 2026-07-28: what it declared is reachable and nothing else is; a tool
/// hidden from apps is refused before the server sees the call; a question the server asks
/// mid-call goes to the terminal (here: answered by `--answer`); messages from another window,
/// or of the wrong shape, are dropped; display mode and size reach the page; Ctrl-C tears down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_holds_in_the_browser() {
    let (declared_port, declared) = counting_server("declared ok").await;
    let (undeclared_port, undeclared) = counting_server("undeclared").await;
    let secret_calls = Arc::new(AtomicUsize::new(0));
    let declared_origin = format!("http://127.0.0.1:{declared_port}");
    let server = test_server::server(&declared_origin, Arc::clone(&secret_calls));
    let target = test_server::serve(server).await;
    let (mut app, url, browser, page) =
        show_test_app(&target, &["--answer", "ok=true"], "hello").await;
    assert_eq!(
        page.eval_app("window.toolInput").await.unwrap(),
        json!({"greeting": "hello"})
    );
    let initialized = page.eval_app("window.initialized").await.unwrap();
    assert_eq!(
        initialized["hostContext"]["toolInfo"]["tool"]["name"],
        "show"
    );
    assert_eq!(
        initialized["hostCapabilities"]["sandbox"]["csp"]["connectDomains"],
        json!([declared_origin])
    );

    let fetched = fetch_from_app(&page, &format!("{declared_origin}/")).await;
    assert_eq!(fetched, json!({"fetched": "declared ok"}));
    assert_eq!(declared.load(Ordering::SeqCst), 1);
    let blocked = fetch_from_app(&page, &format!("http://127.0.0.1:{undeclared_port}/")).await;
    assert_eq!(blocked["directive"], "connect-src", "{blocked}");
    assert_eq!(undeclared.load(Ordering::SeqCst), 0);

    let secret = page
        .eval_app(r#"rpc("tools/call", { name: "secret", arguments: {} })"#)
        .await
        .unwrap();
    assert_eq!(secret["error"]["code"], -32000, "{secret}");
    assert!(
        secret["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not visible to apps"),
        "{secret}"
    );
    assert_eq!(secret_calls.load(Ordering::SeqCst), 0);
    app.stderr_line("refused the app's tools/call", BOUND).await;
    assert_app_calls_refresh(&page).await;

    let confirmed = page
        .eval_app(r#"rpc("tools/call", { name: "confirm", arguments: {} })"#)
        .await
        .unwrap();
    assert_eq!(
        confirmed["result"]["content"][0]["text"], "confirmed: true",
        "{confirmed}"
    );
    app.stderr_line("asks: Proceed with the app's request?", BOUND)
        .await;

    let read = page
        .eval_app(r#"rpc("resources/read", { uri: "ui://test/app.html" })"#)
        .await
        .unwrap();
    assert_eq!(
        read["result"]["contents"][0]["mimeType"],
        "text/html;profile=mcp-app"
    );

    // Forged from the host page's own window, and malformed from the app: dropped. The
    // genuine message after them arrives, so they would have arrived first.
    let say = |text: &str| {
        json!({"jsonrpc": "2.0", "id": 900, "method": "ui/message",
            "params": {"role": "user", "content": [{"type": "text", "text": text}]}})
    };
    page.eval_host(&format!(
        "window.postMessage({}, \"*\")",
        say("forged by another window")
    ))
    .await
    .unwrap();
    // A window on the app's own origin that is not the app's: a frame the app nests (it calls
    // back into the app, so it did run and post).
    let nested = format!(
        r#"new Promise((resolve) => {{
            window.nestedRan = resolve;
            const frame = document.createElement("iframe");
            frame.srcdoc = "<script>parent.parent.postMessage(" + JSON.stringify({}) + ", '*'); parent.nestedRan(true);</" + "script>";
            document.body.append(frame);
        }})"#,
        say("forged by a nested frame")
    );
    assert_eq!(page.eval_app(&nested).await.unwrap(), json!(true));
    for malformed in [
        json!("ui/message"),
        json!({"jsonrpc": "1.0", "id": 901, "method": "ui/message", "params": say("old jsonrpc")["params"]}),
        json!({"jsonrpc": "2.0", "id": 902, "method": "ui/message\n", "params": say("bad method")["params"]}),
        json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ui/message", "params": say("bad id")["params"]}),
        json!({"jsonrpc": "2.0", "id": 903, "method": "ui/message", "params": [say("array params")]}),
    ] {
        page.eval_app(&format!("parent.postMessage({malformed}, \"*\")"))
            .await
            .unwrap();
    }
    page.eval_app(&format!("parent.postMessage({}, \"*\")", say("genuine")))
        .await
        .unwrap();
    app.stdout_line("message from the app: genuine", BOUND)
        .await;

    let context = page
        .eval_app(
            r#"rpc("ui/update-model-context", {
                content: [{ type: "text", text: "the user picked eu-west-1" }],
                structuredContent: { region: "eu-west-1" },
            })"#,
        )
        .await
        .unwrap();
    assert_eq!(context["result"], json!({}), "{context}");
    app.stderr_line(
        "the app updated the model context: 1 content block(s) and structured content",
        BOUND,
    )
    .await;
    let unknown = page
        .eval_app(r#"rpc("sampling/createMessage", { messages: [] })"#)
        .await
        .unwrap();
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    let mode = page
        .eval_app(r#"rpc("ui/request-display-mode", { mode: "fullscreen" })"#)
        .await
        .unwrap();
    assert_eq!(mode["result"]["mode"], "fullscreen");
    page.eval_app(r#"notify("ui/notifications/size-changed", { width: 300, height: 444 })"#)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + BOUND;
    while page
        .eval_host(r#"document.body.classList.contains("fullscreen") && document.getElementById("app").style.height === "444px""#)
        .await
        .unwrap()
        != json!(true)
    {
        assert!(tokio::time::Instant::now() < deadline, "the page never resized");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_host_out_of_reach(&page, &format!("{url}channel")).await;

    let out = close_with_ctrl_c(app, browser).await;
    let messages: Vec<&String> = out
        .iter()
        .filter(|l| l.starts_with("message from"))
        .collect();
    assert_eq!(messages, ["message from the app: genuine"], "{out:#?}");
}

/// The same app over a 2025-11-25 session: it starts, shows the result, and calls a tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_speaks_the_handshake_era_too() {
    let server = test_server::server("http://127.0.0.1:9", Arc::new(AtomicUsize::new(0)));
    let target = test_server::serve(server).await;
    let (mut app, _, browser, page) =
        show_test_app(&target, &["--mode", "2025-11-25"], "handshake").await;
    assert_app_calls_refresh(&page).await;
    app.stderr_line("the app calls tool refresh", BOUND).await;
    close_with_ctrl_c(app, browser).await;
}

/// What a host must refuse, refused before anything is served, with the reason: a UI that is
/// not `ui://`, a resource that is not `text/html;profile=mcp-app`, a CSP domain that would
/// inject a directive, a tool without UI, a tool the server does not list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_a_host_must_not_show_are_refused() {
    let server = test_server::server("http://127.0.0.1:9", Arc::new(AtomicUsize::new(0)));
    let target = test_server::serve(server).await;
    for (tool, said) in [
        (
            "not_ui",
            "tool not_ui: the tool's UI resource \"https://evil.example/app.html\" is not a ui:// URI",
        ),
        (
            "plain_html",
            "ui://test/plain.html is of type text/html, not text/html;profile=mcp-app",
        ),
        (
            "hostile_csp",
            "refusing the app ui://test/hostile.html: _meta.ui.csp.connectDomains[0] \"https://x.example; script-src *\" is not an http(s) origin or host pattern",
        ),
        ("secret", "tool secret: the tool has no UI"),
        ("nothing", "the server lists no tool nothing"),
    ] {
        let target = target.clone();
        let output = tokio::task::spawn_blocking(move || {
            mcp(&["app", "--no-open", "--timeout", "60", &target, tool], "")
        })
        .await
        .unwrap();
        assert_eq!(output.status.code(), Some(1), "{tool}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(said),
            "{tool}: {}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty(), "{tool}: nothing was served");
    }
}

/// The two origins answer only what they are for: the page and its channel to a request that
/// names the exact host, the token, and (for the channel) the page's own origin, with JSON of
/// the protocol's shapes and at most 1 MiB; the app's origin serves its document, under its
/// policy, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_origin_answers_only_its_own_requests() {
    let server = test_server::server("https://api.example.com", Arc::new(AtomicUsize::new(0)));
    let target = test_server::serve(server).await;
    let (app, url) = McpApp::start(&["--timeout", "600", &target, "show"]).await;
    // A connection per request: the server may close one after refusing a body unread.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let origin = url
        .trim_end_matches('/')
        .rsplit_once('/')
        .unwrap()
        .0
        .to_owned();
    let status = |response: reqwest::Response| response.status().as_u16();

    let page = http.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy.starts_with("default-src 'none'; script-src 'nonce-"),
        "{policy}"
    );
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    let html = page.text().await.unwrap();
    let app_url = html
        .split_once("const APP_URL = \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .unwrap()
        .0
        .to_owned();

    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let rebound = http
        .get(&url)
        .header("host", host.replace("127.0.0.1", "evil.example"))
        .send()
        .await
        .unwrap();
    assert_eq!(status(rebound), 421);
    for wrong in [format!("{origin}/"), format!("{origin}/not-the-token/")] {
        assert_eq!(
            status(http.get(&wrong).send().await.unwrap()),
            404,
            "{wrong}"
        );
    }

    let channel = format!("{url}channel");
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let post = |from: Option<&str>, kind: &str, body: String| {
        let mut request = http
            .post(&channel)
            .header("content-type", kind.to_owned())
            .body(body);
        if let Some(from) = from {
            request = request.header("origin", from.to_owned());
        }
        request.send()
    };
    assert_eq!(
        status(
            post(Some(&origin), "application/json", ping.into())
                .await
                .unwrap()
        ),
        204
    );
    assert_eq!(
        status(post(None, "application/json", ping.into()).await.unwrap()),
        403
    );
    assert_eq!(
        status(
            post(Some("http://evil.example"), "application/json", ping.into())
                .await
                .unwrap()
        ),
        403
    );
    assert_eq!(
        status(
            post(Some(&origin), "text/plain", ping.into())
                .await
                .unwrap()
        ),
        415
    );
    assert_eq!(
        status(
            post(
                Some(&origin),
                "application/json",
                r#"{"method":"ping"}"#.into()
            )
            .await
            .unwrap()
        ),
        400
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","method":"x","params":{{"p":"{}"}}}}"#,
        "a".repeat(2 << 20)
    );
    assert_eq!(
        status(post(Some(&origin), "application/json", huge).await.unwrap()),
        413
    );
    let events = http
        .get(format!("{url}events"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(status(events), 403);

    let document = http.get(&app_url).send().await.unwrap();
    assert_eq!(document.status(), 200);
    let policy = document.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy.contains("connect-src https://api.example.com;"),
        "{policy}"
    );
    assert!(
        policy.ends_with(&format!("frame-ancestors {origin}")),
        "{policy}"
    );
    let app_origin = app_url.rsplitn(3, '/').nth(2).unwrap();
    for other in [
        format!("{app_origin}/"),
        app_url.replace("app.html", "other.html"),
    ] {
        assert_eq!(
            status(http.get(&other).send().await.unwrap()),
            404,
            "{other}"
        );
    }
    drop(app);
}

/// `--timeout` ends the session (counted from the connection): the page was never opened, so
/// there is no app to tear down, and `mcp app` exits 0 saying why it closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_ends_at_timeout() {
    let server = test_server::server("https://api.example.com", Arc::new(AtomicUsize::new(0)));
    let target = test_server::serve(server).await;
    let (app, _) = McpApp::start(&["--timeout", "2", &target, "show"]).await;
    let (status, _, err) = app.exit(BOUND).await;
    assert!(status.success(), "{status}: {err:#?}");
    assert!(
        err.iter()
            .any(|l| l == "app closed: mcp app's --timeout ran out"),
        "{err:#?}"
    );
}
