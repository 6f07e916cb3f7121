//! The demo server's own MCP App (`pick_region`, `ui://demo/region-picker.html`) in `mcp app`, in
//! headless Chromium (the harness of `app_host.rs`): over stdio and HTTP, in both eras, the app's
//! `ui/initialize` completes, the tool's result shows (in its apps wording: `mcp app` advertised
//! `io.modelcontextprotocol/ui`, so the server's `client_supports_apps` said yes), and a button
//! calls `choose_region` — a tool only apps may call — back through the host, and the page
//! updates. A screenshot of the picker in the host is kept under `CARGO_TARGET_TMPDIR`.
//!
//! Everything runs on 127.0.0.1; every wait polls with a bound (`BOUND`), none sleeps.

use std::path::PathBuf;
use std::time::Duration;

use modelctx_test_support::browser::{AppPage, Chromium};
use modelctx_test_support::cli::{HttpServer, mcp_binary};
use modelctx_test_support::mcp_app::McpApp;

/// The most any step may take (a browser starting on a loaded machine).
const BOUND: Duration = Duration::from_secs(60);

/// Shows the picker with `mcp app ARGS…`, picks `region`, and closes with Ctrl-C; saves a
/// screenshot to `shot` once the choice shows.
async fn pick_in_the_browser(args: &[&str], region: &str, shot: Option<PathBuf>) {
    let mut line = vec!["--timeout", "600"];
    line.extend_from_slice(args);
    let (mut app, url) = McpApp::start(&line).await;
    let browser = Chromium::launch().await;
    let page = browser.open(&url).await;

    app.stderr_line("the app started: region-picker 1.0.0", BOUND)
        .await;
    page.wait_app(
        r##"document.querySelectorAll("#regions button").length === 4"##,
        BOUND,
    )
    .await;
    let summary = page
        .eval_app(r#"document.getElementById("summary").textContent"#)
        .await
        .unwrap();
    assert_eq!(
        summary,
        "The regions: eu-west-1, eu-central-1, us-east-1, ap-southeast-2. Pick one in the \
         region picker.",
        "{args:?}"
    );

    click(&page, region).await;
    app.stderr_line("the app calls tool choose_region", BOUND)
        .await;
    page.wait_app(
        &format!(r#"document.getElementById("chosen").textContent === {region:?}"#),
        BOUND,
    )
    .await;
    let pressed = page
        .eval_app(r#"document.querySelector('[aria-pressed="true"]').dataset.region"#)
        .await
        .unwrap();
    assert_eq!(pressed, region);

    if let Some(shot) = shot {
        page.screenshot(&shot).await;
        let png = std::fs::read(&shot).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{}",
            png.len()
        );
    }

    let (status, _, err) = app.interrupt(BOUND).await;
    assert!(status.success(), "{status}: {err:#?}");
    assert!(
        err.iter()
            .any(|l| l == "the app answered ui/resource-teardown"),
        "{err:#?}"
    );
    browser.close().await;
}

async fn click(page: &AppPage, region: &str) {
    page.eval_app(&format!(
        r#"document.querySelector('[data-region="{region}"]').click()"#
    ))
    .await
    .unwrap();
}

/// `mcp app pick_region -- mcp serve demo`, 2026-07-28 then 2025-11-25; the first run's
/// screenshot is the README's (`docs/images/demo-app.png`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_app_runs_over_stdio_in_both_eras() {
    let mcp = mcp_binary();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("app-host/demo-app.png");
    pick_in_the_browser(
        &["pick_region", "--", mcp, "serve", "demo"],
        "eu-central-1",
        Some(shot),
    )
    .await;
    pick_in_the_browser(
        &[
            "--mode",
            "2025-11-25",
            "pick_region",
            "--",
            mcp,
            "serve",
            "demo",
        ],
        "ap-southeast-2",
        None,
    )
    .await;
}

/// `mcp app URL pick_region` against `mcp serve demo --http 0`, in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_app_runs_over_http_in_both_eras() {
    let server = HttpServer::demo();
    pick_in_the_browser(&[&server.url, "pick_region"], "us-east-1", None).await;
    pick_in_the_browser(
        &["--mode", "2025-11-25", &server.url, "pick_region"],
        "eu-west-1",
        None,
    )
    .await;
}
