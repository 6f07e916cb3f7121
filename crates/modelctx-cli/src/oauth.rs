//! `--oauth`: signing in to an HTTP server that asks (401). The handler it installs pauses the
//! sign-in clock (`sign_in_clock.rs`) while the user signs in, so that `--connect-timeout` and
//! `--timeout` do not count that time.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use modelctx::client::auth::{
    AuthError, AuthorizationHandler, AuthorizationRequest, AuthorizationResponse,
    ClientRegistration, DpopUse, FileTokenStore, IdentityTokenSource, LoopbackRedirect,
    OAuthConfig, RedirectFetcher, open_in_browser,
};

use crate::cli::{ConnectArgs, DpopUseArg};
use crate::error::{CliError, Result};
use crate::sign_in_clock::SignInClock;

/// The redirect URI of a headless sign-in: nothing listens there, the redirect to it is read
/// from the authorization server's answer (a loopback URI: any port is the same registration).
const HEADLESS_REDIRECT: &str = "http://127.0.0.1/callback";

/// The identity token source of `--oauth-identity-token-file` / `--oauth-identity-token-env`.
fn identity_token(args: &ConnectArgs) -> Option<IdentityTokenSource> {
    match (
        &args.oauth_identity_token_file,
        &args.oauth_identity_token_env,
    ) {
        (Some(path), _) => Some(IdentityTokenSource::file(path)),
        (None, Some(name)) => Some(IdentityTokenSource::env(name)),
        (None, None) => None,
    }
}

/// The OAuth configuration of `--oauth` / `--oauth-headless` / an identity token flag, or
/// `None` without them.
pub(crate) async fn config(args: &ConnectArgs) -> Result<Option<OAuthConfig>> {
    let identity = identity_token(args);
    if !args.oauth && !args.oauth_headless && identity.is_none() {
        if args.oauth_issuer.is_some()
            || args.oauth_cross_origin_metadata
            || args.oauth_client_id.is_some()
            || args.oauth_dpop != DpopUseArg::Auto
        {
            return Err(CliError::usage(
                "--oauth-issuer, --oauth-client-id, --oauth-dpop and --oauth-cross-origin-metadata \
                 need --oauth, --oauth-headless or an identity token flag",
            ));
        }
        return Ok(None);
    }
    if identity.is_some() && (args.oauth_issuer.is_none() || args.oauth_client_id.is_none()) {
        // The identity token is a credential: it goes to the one authorization server named.
        return Err(CliError::usage(
            "--oauth-identity-token-file/-env need --oauth-issuer (the only authorization \
             server the token is sent to) and --oauth-client-id",
        ));
    }
    if identity.is_none() && args.oauth_client_id.is_some() {
        return Err(CliError::usage(
            "--oauth-client-id is for workload identity: pass --oauth-identity-token-file or \
             --oauth-identity-token-env",
        ));
    }
    let path = token_store_path(args)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .map_err(|e| CliError::failed(format!("token store {}: {e}", dir.display())))?;
    }
    let dpop = match args.oauth_dpop {
        DpopUseArg::Auto => DpopUse::WhenAdvertised,
        DpopUseArg::Required => DpopUse::Required,
        DpopUseArg::Off => DpopUse::Off,
    };
    if let (Some(source), Some(issuer), Some(client_id)) =
        (identity, &args.oauth_issuer, &args.oauth_client_id)
    {
        let config = OAuthConfig::workload_identity(
            issuer,
            ClientRegistration::new(client_id.clone()),
            source,
        )
        .client_name("modelctx-cli")
        .token_store(FileTokenStore::new(path))
        .cross_origin_resource_metadata(args.oauth_cross_origin_metadata)
        .dpop(dpop);
        return Ok(Some(config));
    }
    let inner: Box<dyn AuthorizationHandler> = if args.oauth_headless {
        // Follows the authorization server's redirects within its own origin only, up to the
        // redirect URI: a hostile server cannot bounce the request into the user's network.
        Box::new(Headless(RedirectFetcher::new(HEADLESS_REDIRECT)))
    } else {
        Box::new(
            LoopbackRedirect::bind(|url| {
                eprintln!("Sign in to continue: {url}");
                match open_in_browser(url) {
                    Ok(()) => eprintln!("(opened in your browser; waiting for you to sign in)"),
                    Err(error) => {
                        eprintln!("(cannot open a browser: {error}; open the URL yourself)");
                    }
                }
                Ok(())
            })
            .await?,
        )
    };
    let handler = Timed {
        inner,
        clock: args.sign_in.clone(),
    };
    let mut config = OAuthConfig::new(handler)
        .client_name("modelctx-cli")
        .token_store(FileTokenStore::new(path))
        .cross_origin_resource_metadata(args.oauth_cross_origin_metadata)
        .dpop(dpop);
    if let Some(issuer) = &args.oauth_issuer {
        config = config.issuer(issuer);
    }
    Ok(Some(config))
}

/// `--oauth-headless`: says where it signs in, then follows the authorization URL.
struct Headless(RedirectFetcher);

impl AuthorizationHandler for Headless {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }

    fn authorize<'a>(&'a self, request: AuthorizationRequest) -> Authorizing<'a> {
        eprintln!(
            "signing in at {} without a browser (--oauth-headless)",
            request.url.host_str().unwrap_or("?")
        );
        self.0.authorize(request)
    }
}

/// `--token-store`, else `$MCP_TOKEN_STORE`, else `mcp/tokens.json` in the user's config
/// directory.
fn token_store_path(args: &ConnectArgs) -> Result<PathBuf> {
    if let Some(path) = &args.token_store {
        return Ok(path.clone());
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var("MCP_TOKEN_STORE") {
        return Ok(PathBuf::from(path));
    }
    let config = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".config")))
        .or_else(|| var("APPDATA").map(PathBuf::from))
        .ok_or_else(|| {
            CliError::usage("no config directory (HOME is not set): pass --token-store FILE")
        })?;
    Ok(config.join("mcp").join("tokens.json"))
}

/// A handler that pauses the `--timeout` clock while the user signs in.
struct Timed {
    inner: Box<dyn AuthorizationHandler>,
    clock: SignInClock,
}

type Authorizing<'a> = Pin<
    Box<dyn Future<Output = std::result::Result<AuthorizationResponse, AuthError>> + Send + 'a>,
>;

impl AuthorizationHandler for Timed {
    fn redirect_uri(&self) -> String {
        self.inner.redirect_uri()
    }

    fn authorize<'a>(&'a self, request: AuthorizationRequest) -> Authorizing<'a> {
        Box::pin(async move {
            let _paused = self.clock.pause();
            self.inner.authorize(request).await
        })
    }
}
