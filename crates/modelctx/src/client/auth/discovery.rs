//! Discovery: protected resource metadata (RFC 9728) and authorization server metadata
//! (RFC 8414 and OpenID Connect Discovery), the URLs to try and in which order, and the checks
//! on what they return.

use reqwest::Url;
use serde::Deserialize;

use super::error::AuthError;

/// Protected resource metadata (RFC 9728 §2), the members this client uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The protected resource's identifier.
    #[serde(default)]
    pub(crate) resource: Option<String>,
    /// Issuer identifiers of the authorization servers.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414 §2), the members this client uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: Option<bool>,
    /// The JWS algorithms the server takes in DPoP proofs (RFC 9449 §5.1).
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// Whether the server takes PKCE with `S256` (absent means no: the client must refuse).
    pub(crate) fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
    }

    /// Whether the token endpoint takes `method` (RFC 8414 default: `client_secret_basic`).
    pub(crate) fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether `scopes_supported` lists `scope`.
    pub(crate) fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|scopes| scopes.iter().any(|s| s == scope))
    }
}

/// `scheme://authority` of an absolute URL string, and the rest (path, query, fragment).
pub(crate) fn split_origin(url: &str) -> Option<(&str, &str)> {
    let scheme_end = url.find("://")?;
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let cut = scheme_end + 3 + authority_end;
    Some((&url[..cut], &url[cut..]))
}

/// The path of an absolute URL string (query and fragment removed).
fn path_of(url: &str) -> &str {
    split_origin(url)
        .map(|(_, rest)| rest.split(['?', '#']).next().unwrap_or_default())
        .unwrap_or_default()
}

/// Where to look for the protected resource metadata of `server_url`, in order (RFC 9728
/// §3.1, MCP authorization discovery): the `resource_metadata` of the challenge, then the
/// path-suffixed well-known URL, then the root one.
pub(crate) fn resource_metadata_urls(challenge_url: Option<&str>, server_url: &str) -> Vec<String> {
    let mut urls = Vec::new();
    if let Some(url) = challenge_url {
        urls.push(url.to_owned());
    }
    if let Some((origin, _)) = split_origin(server_url) {
        let path = path_of(server_url).trim_end_matches('/');
        if !path.is_empty() {
            urls.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    }
    urls.dedup();
    urls
}

/// Where to look for the metadata of the authorization server `issuer`, in the order of the
/// MCP specification: for an issuer with a path, RFC 8414 path insertion, OpenID Connect path
/// insertion, then OpenID Connect path appending; for one without, RFC 8414 then OpenID
/// Connect.
pub(crate) fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let Some((origin, _)) = split_origin(issuer) else {
        return Vec::new();
    };
    let path = path_of(issuer).trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// The canonical URI of the MCP server (RFC 8707, MCP "canonical server URI"): lower-case
/// scheme and host, no fragment; otherwise as given.
pub(crate) fn canonical_resource(server_url: &str) -> String {
    let without_fragment = server_url.split('#').next().unwrap_or_default();
    match split_origin(without_fragment) {
        Some((origin, rest)) => format!("{}{rest}", origin.to_ascii_lowercase()),
        None => without_fragment.to_owned(),
    }
}

/// Whether the protected resource `resource` covers the server at `server_url`: same origin
/// (scheme, host and port, case-insensitively), and the server's path is the resource's path
/// or below it (whole segments).
pub(crate) fn resource_covers(resource: &str, server_url: &str) -> bool {
    let (Some((resource_origin, _)), Some((server_origin, _))) =
        (split_origin(resource), split_origin(server_url))
    else {
        return false;
    };
    if !resource_origin.eq_ignore_ascii_case(server_origin) {
        return false;
    }
    let mut resource_path = path_of(resource).to_owned();
    let mut server_path = path_of(server_url).to_owned();
    if !resource_path.ends_with('/') {
        resource_path.push('/');
    }
    if !server_path.ends_with('/') {
        server_path.push('/');
    }
    server_path.starts_with(&resource_path)
}

/// Whether `url` is a loopback URL (`localhost`, `127.0.0.0/8`, `[::1]`).
pub(crate) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let host = host.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

/// Parses `url` and requires `https`, or `http` on loopback (or anywhere when
/// `allow_insecure`).
pub(crate) fn secure_url(url: &str, allow_insecure: bool) -> Result<Url, AuthError> {
    let parsed =
        Url::parse(url).map_err(|_| AuthError::Discovery(format!("invalid URL {url:?}")))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if allow_insecure || is_loopback(&parsed) => Ok(parsed),
        _ => Err(AuthError::InsecureUrl(url.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_order() {
        assert_eq!(
            resource_metadata_urls(Some("https://h/custom.json"), "https://h:8443/api/mcp/"),
            [
                "https://h/custom.json",
                "https://h:8443/.well-known/oauth-protected-resource/api/mcp",
                "https://h:8443/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            resource_metadata_urls(None, "http://localhost:3000"),
            ["http://localhost:3000/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_order() {
        assert_eq!(
            server_metadata_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn resource_coverage() {
        assert!(resource_covers(
            "http://localhost:3000",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_covers(
            "http://localhost:3000/mcp",
            "http://LOCALHOST:3000/mcp"
        ));
        assert!(resource_covers(
            "http://localhost:3000/mcp/",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "https://evil.example.com/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_covers(
            "http://localhost:3001/mcp",
            "http://localhost:3000/mcp"
        ));
        assert_eq!(
            canonical_resource("HTTP://Example.COM/MCP#x"),
            "http://example.com/MCP"
        );
    }

    #[test]
    fn secure_urls() {
        assert!(secure_url("https://a.example/token", false).is_ok());
        assert!(secure_url("http://127.0.0.1:9/token", false).is_ok());
        assert!(secure_url("http://localhost/token", false).is_ok());
        assert!(secure_url("http://[::1]:4/token", false).is_ok());
        assert!(matches!(
            secure_url("http://a.example/token", false),
            Err(AuthError::InsecureUrl(_))
        ));
        assert!(secure_url("http://a.example/token", true).is_ok());
    }
}
