//! Client authentication at the token endpoint (RFC 6749 §2.3, RFC 7523 §2.2): which method a
//! registration uses, and what each method adds to a token request. The methods themselves,
//! by their registered names, are a leaf of `auth` (`token_endpoint_auth_method.rs`), since the
//! stored registration holds one too.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::RequestBuilder;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::json;

use super::{Discovered, OAuthClient};
use crate::client::auth::clock::now;
use crate::client::auth::discovery::ServerMetadata;
use crate::client::auth::error::AuthError;
use crate::client::auth::pkce::random_token;
use crate::client::auth::store::ClientRegistration;
use crate::client::auth::token_endpoint_auth_method::TokenEndpointAuthMethod;

/// An `application/x-www-form-urlencoded` body (RFC 6749 appendix B).
pub(super) fn form_body(pairs: &[(&str, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// One value, form-encoded (the parts of a `client_secret_basic` header, RFC 6749 §2.3.1).
fn form_value(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

impl OAuthClient {
    /// The token endpoint authentication method for `client`: its own, else chosen from what
    /// it holds and what the authorization server takes.
    fn auth_method(
        &self,
        client: &ClientRegistration,
        metadata: &ServerMetadata,
    ) -> TokenEndpointAuthMethod {
        if let Some(method) = &client.token_endpoint_auth_method {
            return method.clone();
        }
        if client.client_secret.is_some() {
            if !metadata.supports_auth_method(TokenEndpointAuthMethod::ClientSecretBasic.as_str())
                && metadata.supports_auth_method(TokenEndpointAuthMethod::ClientSecretPost.as_str())
            {
                return TokenEndpointAuthMethod::ClientSecretPost;
            }
            return TokenEndpointAuthMethod::ClientSecretBasic;
        }
        if self.config.assertion_key.is_some() {
            return TokenEndpointAuthMethod::PrivateKeyJwt;
        }
        TokenEndpointAuthMethod::None
    }

    /// Authenticates `client` on a token request: a header on `request`, or fields in `form`.
    pub(super) fn authenticate(
        &self,
        request: RequestBuilder,
        form: &mut Vec<(&'static str, String)>,
        client: &ClientRegistration,
        discovered: &Discovered,
    ) -> Result<RequestBuilder, AuthError> {
        let method = self.auth_method(client, &discovered.metadata);
        let secret = || {
            client
                .client_secret
                .clone()
                .ok_or_else(|| AuthError::Registration(format!("{method} needs a client secret")))
        };
        match &method {
            TokenEndpointAuthMethod::ClientSecretBasic => {
                // RFC 6749 §2.3.1: both parts form-encoded before base64.
                let credentials = format!(
                    "{}:{}",
                    form_value(&client.client_id),
                    form_value(&secret()?)
                );
                let mut value =
                    HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(credentials)))
                        .map_err(|_| {
                            AuthError::Registration("unusable client credentials".to_owned())
                        })?;
                value.set_sensitive(true);
                return Ok(request.header(AUTHORIZATION, value));
            }
            TokenEndpointAuthMethod::ClientSecretPost => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret()?));
            }
            TokenEndpointAuthMethod::PrivateKeyJwt => {
                form.push(("client_id", client.client_id.clone()));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push((
                    "client_assertion",
                    self.client_assertion(client, discovered)?,
                ));
            }
            TokenEndpointAuthMethod::None => form.push(("client_id", client.client_id.clone())),
            TokenEndpointAuthMethod::Other(other) => {
                return Err(AuthError::Registration(format!(
                    "unsupported token endpoint authentication method {other}"
                )));
            }
        }
        Ok(request)
    }

    /// A `private_key_jwt` client assertion (RFC 7523 §3) for the authorization server.
    fn client_assertion(
        &self,
        client: &ClientRegistration,
        discovered: &Discovered,
    ) -> Result<String, AuthError> {
        let key = self.config.assertion_key.as_ref().ok_or_else(|| {
            AuthError::InvalidConfig(
                "private_key_jwt needs OAuthConfig::private_key_jwt".to_owned(),
            )
        })?;
        let issued = now();
        let claims = json!({
            "iss": client.client_id,
            "sub": client.client_id,
            "aud": discovered.issuer,
            "iat": issued,
            "exp": issued + 300,
            "jti": random_token()?,
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(key.algorithm), &claims, &key.key).map_err(
            |e| AuthError::InvalidConfig(format!("signing the client assertion failed: {e}")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding() {
        assert_eq!(
            form_body(&[("a", "x y".to_owned()), ("b", "é&=/:".to_owned())]),
            "a=x+y&b=%C3%A9%26%3D%2F%3A"
        );
        // RFC 6749 appendix B as WHATWG's serializer implements it: `*` as is, `~` escaped.
        assert_eq!(form_value("*~"), "*%7E");
    }
}
