//! Where tokens and client registrations live between requests (and, with a persistent
//! store, between runs).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::token_endpoint_auth_method::TokenEndpointAuthMethod;
use crate::sync::lock;

/// The tokens obtained for one MCP server.
///
/// `Debug` never shows the tokens.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The access token, sent as `Authorization: Bearer …` (or `DPoP …`) and nowhere else.
    pub access_token: String,
    /// `Bearer`, or `DPoP` for a token bound to [`Self::dpop_key`] (RFC 9449).
    pub token_type: String,
    /// The refresh token, when the authorization server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The granted scopes (space separated): the token response's `scope`, else the requested
    /// ones (RFC 6749 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The authorization server that issued the tokens (its issuer identifier). Tokens are
    /// only ever sent to a server whose metadata names this issuer.
    pub issuer: String,
    /// The resource indicator (RFC 8707) the tokens were issued for.
    pub resource: String,
    /// The private key a `DPoP` token (and its refresh token) is bound to: its PKCS#8 DER,
    /// base64url. Keep it as confidential as the refresh token: it is what makes a stolen
    /// DPoP token useless. A `DPoP` token stored without it is not used (the client signs in
    /// again rather than presenting it as a bearer token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

impl StoredTokens {
    /// Tokens as a token response describes them.
    pub fn new(
        access_token: impl Into<String>,
        issuer: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            access_token: access_token.into(),
            token_type: "Bearer".to_owned(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            issuer: issuer.into(),
            resource: resource.into(),
            dpop_key: None,
        }
    }

    /// Whether the access token is DPoP-bound (`token_type` `DPoP`, compared as RFC 9449 §7.1
    /// says auth schemes are: without regard to case).
    pub(crate) fn is_dpop(&self) -> bool {
        self.token_type.eq_ignore_ascii_case("dpop")
    }

    /// With a refresh token.
    #[must_use]
    pub fn with_refresh_token(mut self, token: impl Into<String>) -> Self {
        self.refresh_token = Some(token.into());
        self
    }

    /// With an expiry (seconds since the Unix epoch).
    #[must_use]
    pub fn with_expires_at(mut self, at: u64) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// With the granted scopes.
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Whether the access token expires within `margin` seconds of `now`.
    pub(crate) fn expires_within(&self, now: u64, margin: u64) -> bool {
        self.expires_at
            .is_some_and(|at| now.saturating_add(margin) >= at)
    }

    /// The granted scopes, one by one.
    pub(crate) fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scope.as_deref().unwrap_or_default().split_whitespace()
    }
}

impl fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTokens")
            .field("access_token", &"<redacted>")
            .field("token_type", &self.token_type)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("dpop_key", &self.dpop_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The client's registration with one authorization server: pre-registered, from a client
/// ID metadata document, or from dynamic client registration.
///
/// `Debug` never shows the secret.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The client identifier.
    pub client_id: String,
    /// The client secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint. When absent it is chosen from the
    /// authorization server's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<TokenEndpointAuthMethod>,
    /// The registered redirect URIs (empty: unknown, e.g. pre-registered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_uris: Vec<String>,
    /// When the secret expires (seconds since the Unix epoch; 0 or absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
}

impl ClientRegistration {
    /// A public client (`token_endpoint_auth_method` chosen from the metadata).
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uris: Vec::new(),
            client_secret_expires_at: None,
        }
    }

    /// With a client secret (a confidential client).
    #[must_use]
    pub fn with_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// With a fixed token endpoint authentication method (a [`TokenEndpointAuthMethod`] or its
    /// registered name, e.g. `"client_secret_basic"`).
    #[must_use]
    pub fn with_auth_method(mut self, method: impl Into<TokenEndpointAuthMethod>) -> Self {
        self.token_endpoint_auth_method = Some(method.into());
        self
    }

    /// With the registered redirect URIs.
    #[must_use]
    pub fn with_redirect_uris(mut self, uris: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.redirect_uris = uris.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the registration still works for `redirect_uri` at `now`.
    pub(crate) fn usable(&self, redirect_uri: Option<&str>, now: u64) -> bool {
        let secret_valid = self
            .client_secret_expires_at
            .is_none_or(|at| at == 0 || at > now);
        let redirect_ok = match redirect_uri {
            Some(uri) => {
                self.redirect_uris.is_empty()
                    || self.redirect_uris.iter().any(|r| same_redirect(r, uri))
            }
            None => true,
        };
        secret_valid && redirect_ok
    }
}

/// Whether two redirect URIs are the same registration: equal, or loopback `http` URIs that
/// differ only in the port (RFC 8252 §7.3: the authorization server must accept any port for
/// a loopback redirect URI, so a listener on a new port needs no new registration).
fn same_redirect(registered: &str, uri: &str) -> bool {
    if registered == uri {
        return true;
    }
    let without_port = |text: &str| {
        let url = reqwest::Url::parse(text).ok()?;
        if url.scheme() != "http" || !super::discovery::is_loopback(&url) {
            return None;
        }
        let mut url = url;
        url.set_port(None).ok()?;
        Some(url)
    };
    match (without_port(registered), without_port(uri)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("redirect_uris", &self.redirect_uris)
            .finish_non_exhaustive()
    }
}

/// Keeps tokens (per MCP server URL) and client registrations (per authorization server
/// issuer: credentials are never reused across authorization servers).
///
/// The default is [`MemoryTokenStore`]. A persistent implementation should keep the
/// values confidential (e.g. the OS keychain, or a file readable by the user only).
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens for the MCP server at `server` (its URL as given to `connect_http`).
    fn load_tokens<'a>(
        &'a self,
        server: &'a str,
    ) -> BoxFuture<'a, io::Result<Option<StoredTokens>>>;
    /// Replaces the tokens for `server`.
    fn save_tokens<'a>(
        &'a self,
        server: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, io::Result<()>>;
    /// Forgets the tokens for `server`.
    fn remove_tokens<'a>(&'a self, server: &'a str) -> BoxFuture<'a, io::Result<()>>;
    /// The client's registration with the authorization server `issuer`.
    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, io::Result<Option<ClientRegistration>>>;
    /// Replaces the registration with `issuer`.
    fn save_client<'a>(
        &'a self,
        issuer: &'a str,
        client: ClientRegistration,
    ) -> BoxFuture<'a, io::Result<()>>;
    /// Forgets the registration with `issuer`.
    fn remove_client<'a>(&'a self, issuer: &'a str) -> BoxFuture<'a, io::Result<()>>;
}

/// A [`TokenStore`] in memory: signing in lasts as long as the process.
#[derive(Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<String, StoredTokens>>,
    clients: Mutex<HashMap<String, ClientRegistration>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<String> = lock(&self.tokens).keys().cloned().collect();
        let issuers: Vec<String> = lock(&self.clients).keys().cloned().collect();
        f.debug_struct("MemoryTokenStore")
            .field("servers", &servers)
            .field("issuers", &issuers)
            .finish()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load_tokens<'a>(
        &'a self,
        server: &'a str,
    ) -> BoxFuture<'a, io::Result<Option<StoredTokens>>> {
        let found = lock(&self.tokens).get(server).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save_tokens<'a>(
        &'a self,
        server: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, io::Result<()>> {
        lock(&self.tokens).insert(server.to_owned(), tokens);
        Box::pin(async { Ok(()) })
    }

    fn remove_tokens<'a>(&'a self, server: &'a str) -> BoxFuture<'a, io::Result<()>> {
        lock(&self.tokens).remove(server);
        Box::pin(async { Ok(()) })
    }

    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, io::Result<Option<ClientRegistration>>> {
        let found = lock(&self.clients).get(issuer).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save_client<'a>(
        &'a self,
        issuer: &'a str,
        client: ClientRegistration,
    ) -> BoxFuture<'a, io::Result<()>> {
        lock(&self.clients).insert(issuer.to_owned(), client);
        Box::pin(async { Ok(()) })
    }

    fn remove_client<'a>(&'a self, issuer: &'a str) -> BoxFuture<'a, io::Result<()>> {
        lock(&self.clients).remove(issuer);
        Box::pin(async { Ok(()) })
    }
}

/// A [`TokenStore`] in a JSON file, so that signing in survives the process (e.g. a
/// command-line tool). The file is readable and writable by the user only (mode 0600 on Unix)
/// and replaced atomically on every change, through a fresh, randomly named temporary file
/// beside it that is created exclusively (a file or link someone planted is never written
/// through). It holds access and refresh tokens and client secrets, so keep it in a private
/// directory.
#[derive(Debug)]
pub struct FileTokenStore {
    path: std::path::PathBuf,
    /// Serialises read-modify-write cycles of this process.
    lock: tokio::sync::Mutex<()>,
}

/// The file's content.
#[derive(Default, Serialize, Deserialize)]
struct FileContent {
    #[serde(default)]
    tokens: HashMap<String, StoredTokens>,
    #[serde(default)]
    clients: HashMap<String, ClientRegistration>,
}

impl FileTokenStore {
    /// Keeps tokens in `path` (created on the first sign-in).
    pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    async fn read(&self) -> io::Result<FileContent> {
        let path = self.path.clone();
        blocking(move || match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(io::Error::other),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(FileContent::default()),
            Err(error) => Err(error),
        })
        .await
    }

    async fn update(
        &self,
        change: impl FnOnce(&mut FileContent) + Send + 'static,
    ) -> io::Result<()> {
        let _guard = self.lock.lock().await;
        let mut content = self.read().await?;
        change(&mut content);
        let bytes = serde_json::to_vec_pretty(&content).map_err(io::Error::other)?;
        let path = self.path.clone();
        blocking(move || write_private(&path, &bytes)).await
    }
}

/// Replaces `path` with `bytes`, atomically and privately: the bytes go to a fresh temporary
/// file beside `path` with a random name, created exclusively (`O_CREAT | O_EXCL`: a file or
/// symbolic link planted under any name is never opened, let alone followed) with mode 0600,
/// which is set again on the open file before anything is written (so neither the umask nor a
/// planted file decides it); the file is flushed to disk, renamed over `path`, and the
/// directory is flushed so that the rename survives a crash.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|error| error.error)?;
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}

impl TokenStore for FileTokenStore {
    fn load_tokens<'a>(
        &'a self,
        server: &'a str,
    ) -> BoxFuture<'a, io::Result<Option<StoredTokens>>> {
        Box::pin(async move { Ok(self.read().await?.tokens.remove(server)) })
    }

    fn save_tokens<'a>(
        &'a self,
        server: &'a str,
        tokens: StoredTokens,
    ) -> BoxFuture<'a, io::Result<()>> {
        let server = server.to_owned();
        Box::pin(self.update(move |content| {
            content.tokens.insert(server, tokens);
        }))
    }

    fn remove_tokens<'a>(&'a self, server: &'a str) -> BoxFuture<'a, io::Result<()>> {
        let server = server.to_owned();
        Box::pin(self.update(move |content| {
            content.tokens.remove(&server);
        }))
    }

    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, io::Result<Option<ClientRegistration>>> {
        Box::pin(async move { Ok(self.read().await?.clients.remove(issuer)) })
    }

    fn save_client<'a>(
        &'a self,
        issuer: &'a str,
        client: ClientRegistration,
    ) -> BoxFuture<'a, io::Result<()>> {
        let issuer = issuer.to_owned();
        Box::pin(self.update(move |content| {
            content.clients.insert(issuer, client);
        }))
    }

    fn remove_client<'a>(&'a self, issuer: &'a str) -> BoxFuture<'a, io::Result<()>> {
        let issuer = issuer.to_owned();
        Box::pin(self.update(move |content| {
            content.clients.remove(&issuer);
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_secrets() {
        let tokens = StoredTokens::new("at-secret", "https://as", "https://rs/mcp")
            .with_refresh_token("rt-secret");
        let mut tokens = tokens;
        tokens.dpop_key = Some("key-secret".to_owned());
        let shown = format!("{tokens:?}");
        assert!(
            !shown.contains("at-secret")
                && !shown.contains("rt-secret")
                && !shown.contains("key-secret"),
            "{shown}"
        );
        let client = ClientRegistration::new("id").with_secret("cs-secret");
        assert!(!format!("{client:?}").contains("cs-secret"));
    }

    #[tokio::test]
    async fn file_store_round_trip() {
        let dir = std::env::temp_dir().join(format!("mcp-token-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let store = FileTokenStore::new(&path);
        assert_eq!(store.load_tokens("https://rs/mcp").await.unwrap(), None);
        let tokens = StoredTokens::new("at", "https://as", "https://rs/mcp").with_expires_at(5);
        store
            .save_tokens("https://rs/mcp", tokens.clone())
            .await
            .unwrap();
        store
            .save_client("https://as", ClientRegistration::new("id").with_secret("s"))
            .await
            .unwrap();
        let reopened = FileTokenStore::new(&path);
        assert_eq!(
            reopened.load_tokens("https://rs/mcp").await.unwrap(),
            Some(tokens)
        );
        assert_eq!(
            reopened
                .load_client("https://as")
                .await
                .unwrap()
                .unwrap()
                .client_secret
                .as_deref(),
            Some("s")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        reopened.remove_tokens("https://rs/mcp").await.unwrap();
        assert_eq!(store.load_tokens("https://rs/mcp").await.unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Another local user who can write the directory plants a symbolic link
    /// (and then a world-readable file) under the temporary name the store used to write
    /// through. The tokens must neither be written through the link nor inherit the planted
    /// file's mode.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_planted_temporary_file_is_neither_followed_nor_reused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "untouched").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("tokens.json.tmp")).unwrap();
        let store = FileTokenStore::new(&path);
        let tokens = StoredTokens::new("at-secret", "https://as", "https://rs/mcp");
        store
            .save_tokens("https://rs/mcp", tokens.clone())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        let kept = std::fs::symlink_metadata(&path).unwrap();
        assert!(kept.file_type().is_file(), "{kept:?}");
        assert_eq!(kept.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            store.load_tokens("https://rs/mcp").await.unwrap(),
            Some(tokens)
        );

        // A planted world-readable file: its mode does not carry over either.
        std::fs::remove_file(dir.path().join("tokens.json.tmp")).unwrap();
        std::fs::remove_file(&path).unwrap();
        let planted = dir.path().join("tokens.json.tmp");
        std::fs::write(&planted, "").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
        store.remove_tokens("https://rs/mcp").await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        // Nothing is left behind but the store and what was planted.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["tokens.json", "tokens.json.tmp", "victim.txt"]);
    }

    #[test]
    fn registration_usability() {
        let client = ClientRegistration::new("id").with_redirect_uris(["http://127.0.0.1:1/cb"]);
        assert!(client.usable(Some("http://127.0.0.1:1/cb"), 0));
        // Loopback: any port (RFC 8252 §7.3), but the same host and path.
        assert!(client.usable(Some("http://127.0.0.1:2/cb"), 0));
        assert!(!client.usable(Some("http://127.0.0.1:2/other"), 0));
        assert!(!client.usable(Some("http://localhost:1/cb"), 0));
        let web = ClientRegistration::new("id").with_redirect_uris(["https://app.example/cb"]);
        assert!(!web.usable(Some("https://app.example:8443/cb"), 0));
        let mut expired = ClientRegistration::new("id");
        expired.client_secret_expires_at = Some(10);
        assert!(!expired.usable(None, 11));
        assert!(expired.usable(None, 9));
    }
}
