//! The loopback redirect (RFC 8252 §7.3): a listener on 127.0.0.1 receives the browser's
//! redirect after the user signed in; and opening the browser.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::Url;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::error::AuthError;
use super::handler::{AuthorizationHandler, AuthorizationRequest, AuthorizationResponse};

/// How long one browser connection may take to send its request.
const REQUEST_READ_WAIT: Duration = Duration::from_secs(10);
/// The largest request head read from the browser.
const MAX_REQUEST_HEAD: usize = 16 * 1024;

type Opener = Arc<dyn Fn(&Url) -> io::Result<()> + Send + Sync>;

/// An [`AuthorizationHandler`] for command-line and desktop apps: shows the authorization URL
/// (typically by opening the browser) and waits on a loopback listener for the redirect.
///
/// ```no_run
/// use modelctx::client::Client;
/// use modelctx::client::auth::{LoopbackRedirect, OAuthConfig, open_in_browser};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let redirect = LoopbackRedirect::bind(|url| {
///     eprintln!("Opening {url} to sign in");
///     open_in_browser(url)
/// })
/// .await?;
/// let client = Client::builder()
///     .oauth(OAuthConfig::new(redirect).client_name("my-app"))
///     .connect_http("https://mcp.example.com/mcp")
///     .await?;
/// # drop(client); Ok(()) }
/// ```
pub struct LoopbackRedirect {
    listener: tokio::sync::Mutex<TcpListener>,
    redirect_uri: String,
    path: String,
    open: Opener,
    timeout: Duration,
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1` at a free port, redirect URI `http://127.0.0.1:<port>/callback`;
    /// `open` shows the authorization URL to the user (see [`open_in_browser`]).
    ///
    /// # Errors
    /// The listener could not be bound.
    pub async fn bind(
        open: impl Fn(&Url) -> io::Result<()> + Send + Sync + 'static,
    ) -> io::Result<Self> {
        Self::bind_to(SocketAddr::from(([127, 0, 0, 1], 0)), "/callback", open).await
    }

    /// Listens on `addr` (a loopback address; port 0 picks a free one) with the redirect path
    /// `path`.
    ///
    /// # Errors
    /// `addr` is not a loopback address, or the listener could not be bound.
    pub async fn bind_to(
        addr: SocketAddr,
        path: &str,
        open: impl Fn(&Url) -> io::Result<()> + Send + Sync + 'static,
    ) -> io::Result<Self> {
        if !addr.ip().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the redirect listener must be bound to a loopback address",
            ));
        }
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let path = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        let host = match local {
            SocketAddr::V4(v4) => v4.ip().to_string(),
            SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
        };
        Ok(Self {
            listener: tokio::sync::Mutex::new(listener),
            redirect_uri: format!("http://{host}:{}{path}", local.port()),
            path,
            open: Arc::new(open),
            timeout: Duration::from_secs(300),
        })
    }

    /// How long to wait for the user to come back (default 5 minutes).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The redirect URI (`http://127.0.0.1:<port>/callback`).
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits for the browser's redirect to the redirect path (other requests, e.g. for
    /// `/favicon.ico`, get a 404) and answers it with a page telling the user to go back to
    /// the application.
    ///
    /// # Errors
    /// The timeout passed, or accepting failed.
    pub async fn wait_for_redirect(&self) -> Result<AuthorizationResponse, AuthError> {
        self.wait_for(None).await
    }

    /// Waits for the redirect carrying `state` (`None`: any); a redirect with another state
    /// (a stale tab, a forged link) is answered with an error page and the wait goes on.
    async fn wait_for(&self, state: Option<&str>) -> Result<AuthorizationResponse, AuthError> {
        let listener = self.listener.lock().await;
        tokio::time::timeout(self.timeout, async {
            loop {
                let (stream, _) = listener.accept().await.map_err(|e| {
                    AuthError::Handler(format!("the redirect listener failed: {e}"))
                })?;
                if let Some(response) = self.serve(stream, state).await {
                    return Ok(response);
                }
            }
        })
        .await
        .map_err(|_| AuthError::Handler(format!("no redirect arrived within {:?}", self.timeout)))?
    }

    /// Answers one connection; the response when it was the awaited redirect.
    async fn serve(
        &self,
        mut stream: TcpStream,
        state: Option<&str>,
    ) -> Option<AuthorizationResponse> {
        let Ok(Ok(head)) = tokio::time::timeout(REQUEST_READ_WAIT, read_head(&mut stream)).await
        else {
            return None;
        };
        let target = head
            .lines()
            .next()
            .and_then(|line| {
                let mut parts = line.split(' ');
                match (parts.next(), parts.next()) {
                    (Some("GET"), Some(target)) => Some(target.to_owned()),
                    _ => None,
                }
            })
            .unwrap_or_default();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let response = AuthorizationResponse::from_query(query);
        let is_redirect =
            path == self.path && (response.code.is_some() || response.error.is_some());
        let state_matches =
            state.is_none_or(|expected| response.state.as_deref() == Some(expected));
        let (status, body) = if !is_redirect {
            ("404 Not Found", "Not found.")
        } else if !state_matches {
            (
                "400 Bad Request",
                "This sign-in response does not belong to the sign-in in progress.",
            )
        } else if response.error.is_some() {
            (
                "200 OK",
                "Authorization was not granted. You can close this window and return to the application.",
            )
        } else {
            (
                "200 OK",
                "Signed in. You can close this window and return to the application.",
            )
        };
        let page = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Sign-in</title></head><body><p>{body}</p></body></html>"
        );
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        (is_redirect && state_matches).then_some(response)
    }
}

/// Reads an HTTP request head (up to the blank line).
async fn read_head(stream: &mut TcpStream) -> io::Result<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_REQUEST_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

impl AuthorizationHandler for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            (self.open)(&request.url).map_err(|e| {
                AuthError::Handler(format!("could not show the authorization URL: {e}"))
            })?;
            self.wait_for(Some(&request.state)).await
        })
    }
}

/// Opens `url` in the user's browser, without a shell: the `open` crate calls `ShellExecuteExW`
/// on Windows, `/usr/bin/open -- URL` on macOS and `xdg-open URL` (or `gio open`, `kde-open`…)
/// elsewhere, the URL always one argument. Only `http`/`https` URLs are opened: the
/// authorization URL comes from the authorization server's metadata, and another scheme
/// (`file:`, `javascript:`, an application's custom handler) would start something other than
/// a browser.
///
/// # Errors
/// The URL is not `http`/`https`, or no opener could be started.
pub fn open_in_browser(url: &Url) -> io::Result<()> {
    open::that_detached(browser_target(url)?)
}

/// What the browser is given: the URL, unchanged, when it is `http`/`https`.
fn browser_target(url: &Url) -> io::Result<&str> {
    if matches!(url.scheme(), "http" | "https") {
        Ok(url.as_str())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "only http and https URLs are opened, not {}: URLs",
                url.scheme()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn receives_the_redirect() {
        let redirect = LoopbackRedirect::bind(|_| Ok(())).await.unwrap();
        let uri = redirect.redirect_uri().to_owned();
        assert!(
            uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"),
            "{uri}"
        );
        let addr = uri
            .trim_start_matches("http://")
            .trim_end_matches("/callback")
            .to_owned();
        let browser = tokio::spawn(async move {
            // A stray request first: it gets a 404 and does not end the wait.
            let mut stray = TcpStream::connect(&addr).await.unwrap();
            stray
                .write_all(b"GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut answer = String::new();
            stray.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
            let mut stream = TcpStream::connect(&addr).await.unwrap();
            stream
                .write_all(b"GET /callback?code=c1&state=s1&iss=https%3A%2F%2Fas HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answer
        });
        let response = redirect.wait_for_redirect().await.unwrap();
        assert_eq!(response.code.as_deref(), Some("c1"));
        assert_eq!(response.state.as_deref(), Some("s1"));
        assert_eq!(response.iss.as_deref(), Some("https://as"));
        let page = browser.await.unwrap();
        assert!(
            page.starts_with("HTTP/1.1 200") && page.contains("Signed in"),
            "{page}"
        );
    }

    #[tokio::test]
    async fn ignores_a_redirect_of_another_sign_in() {
        let redirect = LoopbackRedirect::bind(|_| Ok(())).await.unwrap();
        let addr = redirect
            .redirect_uri()
            .trim_start_matches("http://")
            .trim_end_matches("/callback")
            .to_owned();
        let browser = tokio::spawn(async move {
            let mut answers = Vec::new();
            for state in ["stale", "current"] {
                let mut stream = TcpStream::connect(&addr).await.unwrap();
                let request =
                    format!("GET /callback?code=c&state={state} HTTP/1.1\r\nHost: x\r\n\r\n");
                stream.write_all(request.as_bytes()).await.unwrap();
                let mut answer = String::new();
                stream.read_to_string(&mut answer).await.unwrap();
                answers.push(answer);
            }
            answers
        });
        let response = redirect.wait_for(Some("current")).await.unwrap();
        assert_eq!(response.state.as_deref(), Some("current"));
        let answers = browser.await.unwrap();
        assert!(answers[0].starts_with("HTTP/1.1 400"), "{}", answers[0]);
        assert!(answers[1].starts_with("HTTP/1.1 200"), "{}", answers[1]);
    }

    /// An authorization URL with `&` and `|` (every real one has `&`) reaches
    /// the opener whole, as one argument of a program that is not a shell (or, for PowerShell
    /// on Windows and WSL, as data in an environment variable); other schemes never reach it.
    #[test]
    fn only_http_urls_reach_the_opener_whole_and_without_a_shell() {
        for refused in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "ms-settings:privacy",
            "smb://host/share",
        ] {
            let url = Url::parse(refused).unwrap();
            let error = browser_target(&url).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{refused}");
            assert_eq!(
                open_in_browser(&url).unwrap_err().kind(),
                io::ErrorKind::InvalidInput
            );
        }
        let url = Url::parse(
            "https://as.example/authorize?response_type=code&client_id=a&state=s|calc.exe&scope=x%20y",
        )
        .unwrap();
        let target = browser_target(&url).unwrap();
        assert_eq!(target, url.as_str());
        let launchers = open::commands(target);
        assert!(!launchers.is_empty());
        for command in &launchers {
            let program = std::path::Path::new(command.get_program())
                .file_stem()
                .map(|stem| stem.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            assert!(
                !matches!(program.as_str(), "cmd" | "sh" | "bash" | "dash" | "zsh"),
                "{command:?}"
            );
            let args: Vec<_> = command.get_args().collect();
            let as_argument = args.contains(&std::ffi::OsStr::new(target));
            let as_data = command
                .get_envs()
                .any(|(_, value)| value == Some(std::ffi::OsStr::new(target)));
            assert!(as_argument || as_data, "{command:?}");
            // Never spliced into a longer argument (a command line for some interpreter).
            assert!(
                args.iter()
                    .all(|arg| *arg == target || !arg.to_string_lossy().contains("client_id=a")),
                "{command:?}"
            );
        }
    }

    #[tokio::test]
    async fn refuses_non_loopback() {
        let error =
            LoopbackRedirect::bind_to(SocketAddr::from(([0, 0, 0, 0], 0)), "/cb", |_| Ok(()))
                .await
                .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
}
