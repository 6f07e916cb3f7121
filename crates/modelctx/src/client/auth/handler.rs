//! The user's part of the authorization code flow: visiting the authorization URL and coming
//! back with the redirect.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::LOCATION;

use super::egress::request_error;
use super::error::AuthError;

/// The most redirects [`RedirectFetcher`] follows within the authorization server.
const MAX_REDIRECTS: usize = 10;

/// The authorization request to send the user to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The full authorization URL (endpoint, PKCE challenge, `state`, `resource`, `scope`…).
    pub url: Url,
    /// The redirect URI the authorization server will send the user back to.
    pub redirect_uri: String,
    /// The `state` the response must carry.
    pub state: String,
    /// The authorization server's issuer identifier (what the response's `iss` must be).
    pub issuer: String,
    /// The requested scopes (space separated), if any.
    pub scope: Option<String>,
    /// The client [`RedirectFetcher`] must fetch `url` with when the authorization server is
    /// neither on the MCP server's host nor one the user named: it connects to public
    /// addresses only, checked on every connection (one check before the request is handed
    /// over would let a name that resolves differently the second time reach inside).
    pub(crate) public_only: Option<reqwest::Client>,
}

/// What came back on the redirect URI: its query parameters.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` echoed by the authorization server.
    pub state: Option<String>,
    /// The issuer (RFC 9207), when the authorization server sends it.
    pub iss: Option<String>,
    /// The OAuth error code, when the authorization server refused.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code.as_ref().map(|_| "<redacted>"))
            .field("state", &self.state.as_ref().map(|_| "<redacted>"))
            .field("iss", &self.iss)
            .field("error", &self.error)
            .field("error_description", &self.error_description)
            .finish()
    }
}

impl AuthorizationResponse {
    /// A response with a code and the echoed state.
    pub fn new(code: impl Into<String>, state: impl Into<String>) -> Self {
        Self {
            code: Some(code.into()),
            state: Some(state.into()),
            ..Self::default()
        }
    }

    /// With the `iss` parameter.
    #[must_use]
    pub fn with_iss(mut self, iss: impl Into<String>) -> Self {
        self.iss = Some(iss.into());
        self
    }

    /// Reads the parameters of a URL query (`code=…&state=…&iss=…`), without the `?`.
    pub fn from_query(query: &str) -> Self {
        let mut response = Self::default();
        // A throwaway base gives the `url` crate's form decoding.
        let Ok(mut url) = Url::parse("http://localhost/") else {
            return response;
        };
        url.set_query(Some(query));
        for (name, value) in url.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut response.code,
                "state" => &mut response.state,
                "iss" => &mut response.iss,
                "error" => &mut response.error,
                "error_description" => &mut response.error_description,
                _ => continue,
            };
            // The first occurrence wins; a repeated parameter is not a second answer.
            if slot.is_none() {
                *slot = Some(value.into_owned());
            }
        }
        response
    }

    /// Reads the query of the URL the authorization server redirected to.
    ///
    /// # Errors
    /// `url` is not an absolute URL.
    pub fn from_redirect_url(url: &str) -> Result<Self, AuthError> {
        let parsed = Url::parse(url)
            .map_err(|e| AuthError::Handler(format!("the redirect location is not a URL: {e}")))?;
        Ok(Self::from_query(parsed.query().unwrap_or_default()))
    }
}

/// Takes the user through the authorization: shows or opens [`AuthorizationRequest::url`],
/// then returns what arrived on the redirect URI.
///
/// Implementations: [`super::LoopbackRedirect`] (a browser and a listener on 127.0.0.1, for
/// command-line and desktop apps), [`RedirectFetcher`] (no user: for authorization servers
/// that approve at once, e.g. in tests), or [`handler_fn`] for anything else.
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// The redirect URI to register and to send in authorization requests (loopback or
    /// `https`).
    fn redirect_uri(&self) -> String;

    /// Runs one authorization.
    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>>;
}

/// An [`AuthorizationHandler`] made of a redirect URI and an async closure.
pub fn handler_fn<F, Fut>(
    redirect_uri: impl Into<String>,
    authorize: F,
) -> impl AuthorizationHandler
where
    F: Fn(AuthorizationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AuthorizationResponse, AuthError>> + Send + 'static,
{
    FnHandler {
        redirect_uri: redirect_uri.into(),
        authorize: Arc::new(authorize),
    }
}

struct FnHandler<F> {
    redirect_uri: String,
    authorize: Arc<F>,
}

impl<F, Fut> AuthorizationHandler for FnHandler<F>
where
    F: Fn(AuthorizationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AuthorizationResponse, AuthError>> + Send + 'static,
{
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin((self.authorize)(request))
    }
}

/// Completes the authorization without a user: `GET`s the authorization URL, follows its
/// redirects within the authorization endpoint's origin (at most 10), and reads `code`,
/// `state` and `iss` from the redirect to the redirect URI.
///
/// For authorization servers that approve at once — test servers, the conformance suite's,
/// or a server that recognises the client by other means. Nothing is listening on the
/// redirect URI. A redirect to any other origin ends the sign-in with
/// [`AuthError::Handler`] and is not followed: a hostile authorization server cannot send the
/// client's requests elsewhere (into the user's network, say). An authorization server the MCP
/// server named on another host, and that the user did not name, is fetched at public
/// addresses only, whatever its name resolves to when connecting (so not with the client of
/// [`Self::http_client`]; see [`super::OAuthConfig::issuer`]).
#[derive(Debug, Clone)]
pub struct RedirectFetcher {
    redirect_uri: String,
    http: reqwest::Client,
}

impl RedirectFetcher {
    /// Registers `redirect_uri` (which need not be served).
    ///
    /// # Panics
    /// Never in practice: building a default `reqwest` client only fails when the TLS backend
    /// cannot initialise.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        Self {
            redirect_uri: redirect_uri.into(),
            http,
        }
    }

    /// With another HTTP client (it must not follow redirects), for authorization servers on
    /// the MCP server's host or named by the user.
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }
}

impl AuthorizationHandler for RedirectFetcher {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            let redirect_uri = Url::parse(&self.redirect_uri)
                .map_err(|e| AuthError::Handler(format!("the redirect URI is not a URL: {e}")))?;
            let origin = request.url.origin();
            // Every hop stays on the authorization endpoint's origin, so one client serves all.
            let http = request.public_only.as_ref().unwrap_or(&self.http);
            let mut url = request.url;
            for _ in 0..MAX_REDIRECTS {
                let response = http
                    .get(url.clone())
                    .send()
                    .await
                    .map_err(|e| request_error(e, &url))?;
                if !response.status().is_redirection() {
                    return Err(AuthError::Handler(format!(
                        "the authorization endpoint answered {} instead of a redirect",
                        response.status()
                    )));
                }
                let location = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| AuthError::Handler("the redirect has no Location".to_owned()))?;
                let next = url.join(location).map_err(|e| {
                    AuthError::Handler(format!("the redirect location is not a URL: {e}"))
                })?;
                if next.origin() == redirect_uri.origin() && next.path() == redirect_uri.path() {
                    return Ok(AuthorizationResponse::from_query(
                        next.query().unwrap_or_default(),
                    ));
                }
                if next.origin() != origin {
                    return Err(AuthError::Handler(format!(
                        "the authorization server redirected to {}, neither its own origin nor \
                         the redirect URI: not followed",
                        next.origin().ascii_serialization()
                    )));
                }
                url = next;
            }
            Err(AuthError::Handler(format!(
                "more than {MAX_REDIRECTS} redirects at the authorization server"
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddr};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use reqwest::dns::{Addrs, Name, Resolve, Resolving};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::client::auth::egress::Egress;

    /// A rebinding attacker's DNS: the first lookup answers a public address, every later one
    /// loopback.
    #[derive(Default)]
    struct Rebinding(AtomicUsize);

    impl Resolve for Rebinding {
        fn resolve(&self, _name: Name) -> Resolving {
            let ip = if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                Ipv4Addr::new(93, 184, 216, 34)
            } else {
                Ipv4Addr::LOCALHOST
            };
            let addrs: Addrs = Box::new(std::iter::once(SocketAddr::from((ip, 0))));
            Box::pin(async move { Ok(addrs) })
        }
    }

    /// A name that resolves to a public address when the authorization endpoint is checked and
    /// to loopback when the headless fetcher connects: the fetcher connects to no internal
    /// address (the service on 127.0.0.1 standing for one sees no connection).
    #[tokio::test]
    async fn a_rebinding_authorization_endpoint_is_not_fetched() {
        let internal = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = internal.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = internal.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1/callback?code=c&state=s\r\n\
                          Content-Length: 0\r\nConnection: close\r\n\r\n",
                    )
                    .await;
            }
        });
        let resolver = Arc::new(Rebinding::default());
        let egress = Egress::with_lookup(
            reqwest::Client::new(),
            "https://mcp.example.com/mcp",
            Arc::clone(&resolver) as Arc<dyn Resolve>,
        )
        .unwrap();
        // `localhost` so that a client resolving with the system reaches the internal service.
        let url = Url::parse(&format!("http://localhost:{port}/authorize")).unwrap();
        let public_only = egress.hand_over(&url, false).await.unwrap();
        assert!(public_only.is_some(), "checked as public, handed over");
        let request = AuthorizationRequest {
            url,
            redirect_uri: "http://127.0.0.1/callback".to_owned(),
            state: "s".to_owned(),
            issuer: "http://localhost".to_owned(),
            scope: None,
            public_only,
        };
        let outcome = RedirectFetcher::new("http://127.0.0.1/callback")
            .authorize(request)
            .await;
        assert!(
            matches!(&outcome, Err(AuthError::ForbiddenUrl { url, .. }) if url.contains("localhost")),
            "{outcome:?}"
        );
        assert!(resolver.0.load(Ordering::SeqCst) >= 2, "resolved again");
        assert_eq!(connections.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn reads_redirect_query() {
        let response = AuthorizationResponse::from_redirect_url(
            "http://127.0.0.1:3000/callback?code=abc%2Bdef&state=s1&iss=https%3A%2F%2Fas.example.com&code=second",
        )
        .unwrap();
        assert_eq!(response.code.as_deref(), Some("abc+def"));
        assert_eq!(response.state.as_deref(), Some("s1"));
        assert_eq!(response.iss.as_deref(), Some("https://as.example.com"));
        assert_eq!(response.error, None);
        let denied =
            AuthorizationResponse::from_query("error=access_denied&error_description=no+way");
        assert_eq!(denied.error.as_deref(), Some("access_denied"));
        assert_eq!(denied.error_description.as_deref(), Some("no way"));
        assert!(!format!("{response:?}").contains("abc"));
    }
}
