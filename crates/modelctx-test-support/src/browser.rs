//! Headless Chromium for the browser tests of `mcp app` (feature `browser`): Debian's
//! `chromium`, which `scripts/system-packages.sh` installs before the tests run (a test only
//! looks for it, and fails naming the script), driven over the DevTools protocol with
//! `chromiumoxide`.
//!
//! A page is opened on the host page's URL; the app runs in its iframe on another origin, so
//! [`AppPage::eval_app`] evaluates in that frame's own main world (where the app's globals,
//! DOM and Content-Security-Policy are), and [`AppPage::eval_host`] in the host page's. Waits
//! poll with a deadline: nothing sleeps a fixed time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::page::{CaptureScreenshotFormat, FrameId};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::page::{Page, ScreenshotParams};
use futures::StreamExt as _;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::tempdir::TempDir;

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);

/// The Chromium binary (Debian's `chromium`), or a panic that says how to install it.
pub fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
        .expect(
            "chromium is not installed: run scripts/system-packages.sh (as root), which .ci/run \
             runs before the tests",
        )
}

/// A headless Chromium with a fresh profile, closed (and its profile removed) by [`Self::close`]
/// or, failing that, killed when dropped.
#[derive(Debug)]
pub struct Chromium {
    browser: Browser,
    handler: JoinHandle<()>,
    _profile: TempDir,
}

impl Chromium {
    /// Starts the browser (a 1024×768 window; no sandbox, as the tests run as root in CI).
    pub async fn launch() -> Self {
        let profile = TempDir::new("chromium");
        let config = BrowserConfig::builder()
            .chrome_executable(chromium())
            .new_headless_mode()
            .no_sandbox()
            .user_data_dir(profile.path())
            .window_size(1024, 768)
            .launch_timeout(Duration::from_secs(60))
            .request_timeout(Duration::from_secs(30))
            .build()
            .expect("browser config");
        let (browser, mut events) = Browser::launch(config).await.expect("launch chromium");
        // The connection's events must be read for any command to complete.
        let handler = tokio::spawn(async move { while events.next().await.is_some() {} });
        Self {
            browser,
            handler,
            _profile: profile,
        }
    }

    /// Opens `url` (the host page) in a new tab.
    pub async fn open(&self, url: &str) -> AppPage {
        let page = self.browser.new_page(url).await.expect("open the page");
        AppPage { page }
    }

    /// Closes the browser and waits for it to exit.
    pub async fn close(mut self) {
        let _ = self.browser.close().await;
        let _ = self.browser.wait().await;
        self.handler.abort();
    }
}

/// The host page `mcp app` serves, with its app in an iframe.
#[derive(Debug)]
pub struct AppPage {
    page: Page,
}

impl AppPage {
    /// Evaluates `expression` in the host page (awaiting a promise); its value, or the thrown
    /// error's description as `Err`.
    pub async fn eval_host(&self, expression: &str) -> Result<Value, String> {
        let frame = self
            .page
            .mainframe()
            .await
            .ok()
            .flatten()
            .expect("main frame");
        self.eval_in(frame, expression).await
    }

    /// Evaluates `expression` in the app's frame (awaiting a promise).
    pub async fn eval_app(&self, expression: &str) -> Result<Value, String> {
        let frame = self
            .app_frame()
            .await
            .ok_or("the app's frame is not there")?;
        self.eval_in(frame, expression).await
    }

    /// Polls `expression` in the app's frame until it is truthy (returned), for at most
    /// `limit`; panics with the last value or error otherwise.
    pub async fn wait_app(&self, expression: &str, limit: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let last = self.eval_app(expression).await;
            if let Ok(value) = &last
                && truthy(value)
            {
                return value.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{expression} stayed falsy for {limit:?}: {last:?}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Saves a PNG of the page (the app in its host) at `path`, creating its folder.
    pub async fn screenshot(&self, path: &Path) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        let params = ScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        self.page
            .save_screenshot(params, path)
            .await
            .expect("screenshot");
    }

    /// The main frame's child: the app's iframe (not a frame the app nests).
    async fn app_frame(&self) -> Option<FrameId> {
        let main = self.page.mainframe().await.ok().flatten()?;
        for frame in self.page.frames().await.ok()? {
            if self.page.frame_parent(frame.clone()).await.ok().flatten() == Some(main.clone()) {
                return Some(frame);
            }
        }
        None
    }

    async fn eval_in(&self, frame: FrameId, expression: &str) -> Result<Value, String> {
        let context = self
            .page
            .frame_execution_context(frame)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the frame has no execution context yet")?;
        let params = EvaluateParams::builder()
            .expression(expression)
            .context_id(context)
            .await_promise(true)
            .return_by_value(true)
            .build()?;
        let evaluated = self.page.execute(params).await.map_err(|e| e.to_string())?;
        if let Some(thrown) = &evaluated.result.exception_details {
            return Err(thrown
                .exception
                .as_ref()
                .and_then(|e| e.description.clone())
                .unwrap_or_else(|| thrown.text.clone()));
        }
        let evaluated = evaluated.result;
        Ok(evaluated.result.value.unwrap_or(Value::Null))
    }
}

/// JavaScript's truthiness, for a value returned by value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0 && !n.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}
