//! The user's part of the authorization code flow: visiting the authorization URL and coming
//! back with the redirect.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::LOCATION;

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
/// client's requests elsewhere (into the user's network, say).
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

    /// With another HTTP client (it must not follow redirects).
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
            let mut url = request.url;
            for _ in 0..MAX_REDIRECTS {
                let response = self.http.get(url.clone()).send().await?;
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
    use super::*;

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
