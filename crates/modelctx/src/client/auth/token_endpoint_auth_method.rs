//! [`TokenEndpointAuthMethod`], the registered names of the ways a client authenticates at the
//! token endpoint. A leaf of `auth`: the stored registration (`store.rs`) keeps one and the
//! token requests (`flow/client_auth.rs`) apply it, so the store names no part of the flow.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a client authenticates at the token endpoint (`token_endpoint_auth_method`, RFC 7591
/// §2). Stored and sent as its registered name; a name this client does not know is kept as
/// [`Other`](Self::Other) (a token request with it fails with a clear error).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum TokenEndpointAuthMethod {
    /// `client_secret_basic`: the id and secret in an HTTP Basic `Authorization` header.
    ClientSecretBasic,
    /// `client_secret_post`: the id and secret in the request body.
    ClientSecretPost,
    /// `private_key_jwt`: a signed client assertion (RFC 7523), with
    /// [`OAuthConfig::private_key_jwt`](crate::client::auth::OAuthConfig::private_key_jwt).
    PrivateKeyJwt,
    /// `none`: a public client, identified by its id alone.
    None,
    /// Any other registered name, kept verbatim.
    Other(String),
}

impl TokenEndpointAuthMethod {
    /// The registered name (`client_secret_basic`, …).
    pub fn as_str(&self) -> &str {
        match self {
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::PrivateKeyJwt => "private_key_jwt",
            Self::None => "none",
            Self::Other(name) => name,
        }
    }

    /// Whether the method sends the client secret.
    pub(super) fn needs_secret(&self) -> bool {
        matches!(self, Self::ClientSecretBasic | Self::ClientSecretPost)
    }
}

impl From<&str> for TokenEndpointAuthMethod {
    fn from(name: &str) -> Self {
        match name {
            "client_secret_basic" => Self::ClientSecretBasic,
            "client_secret_post" => Self::ClientSecretPost,
            "private_key_jwt" => Self::PrivateKeyJwt,
            "none" => Self::None,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl From<String> for TokenEndpointAuthMethod {
    fn from(name: String) -> Self {
        match Self::from(name.as_str()) {
            Self::Other(_) => Self::Other(name),
            known => known,
        }
    }
}

impl From<TokenEndpointAuthMethod> for String {
    fn from(method: TokenEndpointAuthMethod) -> Self {
        match method {
            TokenEndpointAuthMethod::Other(name) => name,
            known => known.as_str().to_owned(),
        }
    }
}

impl fmt::Display for TokenEndpointAuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_methods_keep_their_names() {
        for name in [
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
            "none",
        ] {
            let method = TokenEndpointAuthMethod::from(name);
            assert!(
                !matches!(method, TokenEndpointAuthMethod::Other(_)),
                "{name}"
            );
            assert_eq!(method.as_str(), name);
            assert_eq!(String::from(method), name);
        }
        let other = TokenEndpointAuthMethod::from("tls_client_auth".to_owned());
        assert_eq!(
            other,
            TokenEndpointAuthMethod::Other("tls_client_auth".to_owned())
        );
        assert_eq!(other.to_string(), "tls_client_auth");
        // Stored registrations read and write the name itself.
        let json = serde_json::to_string(&TokenEndpointAuthMethod::ClientSecretPost).unwrap();
        assert_eq!(json, r#""client_secret_post""#);
        let back: TokenEndpointAuthMethod = serde_json::from_str(r#""none""#).unwrap();
        assert_eq!(back, TokenEndpointAuthMethod::None);
    }
}
