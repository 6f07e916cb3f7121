//! The authorization server's endpoints: which registration the client presents (and to
//! whom), dynamic client registration (RFC 7591), and token requests with client
//! authentication (`client_secret_basic`, `client_secret_post`, `private_key_jwt`, `none`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Discovered, OAuthClient, TokenResponse, now, read_limited};
use crate::client::auth::discovery::{ServerMetadata, is_loopback, secure_url};
use crate::client::auth::egress::request_error;
use crate::client::auth::error::AuthError;
use crate::client::auth::pkce::random_token;
use crate::client::auth::store::ClientRegistration;
use crate::client::auth::{ApplicationType, Grant};

/// An OAuth error body (RFC 6749 §5.2).
#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// A dynamic registration response (RFC 7591 §3.2.1).
#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    client_secret_expires_at: Option<u64>,
}

impl OAuthClient {
    /// The client's registration with the discovered authorization server: pre-registered,
    /// stored, a client ID metadata document, or a new dynamic registration.
    pub(super) async fn client_for(
        &self,
        discovered: &Discovered,
        redirect_uri: Option<&str>,
        scope: Option<&str>,
    ) -> Result<ClientRegistration, AuthError> {
        let issuer = discovered.issuer.as_str();
        // Credentials are presented to the issuer they belong to, and to no other.
        let pre_registered = self
            .config
            .pre_registered
            .iter()
            .find(|(binding, _)| self.binds(binding, issuer));
        if let Some((_, client)) = pre_registered {
            return Ok(client.clone());
        }
        if !matches!(self.config.grant, Grant::AuthorizationCode(_)) {
            return Err(AuthError::Registration(format!(
                "this grant needs credentials pre-registered with {issuer}"
            )));
        }
        if let Some(client) = self.config.store.load_client(issuer).await?
            && client.usable(redirect_uri, now())
        {
            return Ok(client);
        }
        if discovered.metadata.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &self.config.client_metadata_url
        {
            let mut client = ClientRegistration::new(url.clone()).with_auth_method("none");
            client.redirect_uris = redirect_uri.map(str::to_owned).into_iter().collect();
            return Ok(client);
        }
        if let Some(endpoint) = &discovered.metadata.registration_endpoint {
            let client = self
                .register(discovered, endpoint, redirect_uri, scope)
                .await?;
            self.config
                .store
                .save_client(issuer, client.clone())
                .await?;
            return Ok(client);
        }
        Err(AuthError::Registration(format!(
            "{issuer} offers neither client ID metadata documents (or none is configured) nor \
             dynamic registration; configure pre-registered credentials"
        )))
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(
        &self,
        discovered: &Discovered,
        endpoint: &str,
        redirect_uri: Option<&str>,
        scope: Option<&str>,
    ) -> Result<ClientRegistration, AuthError> {
        let url = secure_url(endpoint, self.config.allow_insecure_http)?;
        let metadata = &discovered.metadata;
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| metadata.supports_auth_method(m))
            .ok_or_else(|| {
                AuthError::Registration(format!(
                    "{} supports none of the token endpoint authentication methods none, \
                     client_secret_basic, client_secret_post",
                    discovered.issuer
                ))
            })?;
        let application_type = self.config.application_type.unwrap_or_else(|| {
            match redirect_uri.and_then(|u| Url::parse(u).ok()) {
                Some(url) if url.scheme() == "https" && !is_loopback(&url) => ApplicationType::Web,
                _ => ApplicationType::Native,
            }
        });
        let mut grant_types = vec!["authorization_code"];
        if self.config.refresh_tokens {
            grant_types.push("refresh_token");
        }
        let mut body = json!({
            "client_name": self.config.client_name,
            "redirect_uris": redirect_uri.into_iter().collect::<Vec<_>>(),
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": application_type.as_str(),
        });
        if let Some(uri) = &self.config.client_uri {
            body["client_uri"] = Value::from(uri.clone());
        }
        if let Some(scope) = scope {
            body["scope"] = Value::from(scope);
        }
        let mut response = self
            .client_for_issuer(&url, &discovered.issuer)?
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(serde_json::to_vec(&body).unwrap_or_default())
            .send()
            .await
            .map_err(|e| request_error(e, &url))?;
        let status = response.status();
        let bytes = read_limited(&mut response).await?;
        if !status.is_success() {
            let error: ErrorBody = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(AuthError::Registration(format!(
                "{} answered {status}{}",
                discovered.issuer,
                error.error.map(|e| format!(": {e}")).unwrap_or_default()
            )));
        }
        let registered: RegistrationResponse = serde_json::from_slice(&bytes).map_err(|e| {
            AuthError::Registration(format!("unreadable registration response: {e}"))
        })?;
        let method = registered
            .token_endpoint_auth_method
            .unwrap_or_else(|| method.to_owned());
        if matches!(
            method.as_str(),
            "client_secret_basic" | "client_secret_post"
        ) && registered.client_secret.is_none()
        {
            return Err(AuthError::Registration(format!(
                "registered for {method} without a client secret"
            )));
        }
        if !matches!(
            method.as_str(),
            "none" | "client_secret_basic" | "client_secret_post"
        ) {
            return Err(AuthError::Registration(format!(
                "registered for the unsupported method {method}"
            )));
        }
        Ok(ClientRegistration {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            token_endpoint_auth_method: Some(method),
            redirect_uris: registered
                .redirect_uris
                .unwrap_or_else(|| redirect_uri.map(str::to_owned).into_iter().collect()),
            client_secret_expires_at: registered.client_secret_expires_at,
        })
    }

    /// The token endpoint authentication method for `client`.
    fn auth_method(&self, client: &ClientRegistration, metadata: &ServerMetadata) -> String {
        if let Some(method) = &client.token_endpoint_auth_method {
            return method.clone();
        }
        if client.client_secret.is_some() {
            if !metadata.supports_auth_method("client_secret_basic")
                && metadata.supports_auth_method("client_secret_post")
            {
                return "client_secret_post".to_owned();
            }
            return "client_secret_basic".to_owned();
        }
        if self.config.assertion_key.is_some() {
            return "private_key_jwt".to_owned();
        }
        "none".to_owned()
    }

    /// A token endpoint request with client authentication; the parsed response.
    pub(super) async fn token_request(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<TokenResponse, AuthError> {
        let endpoint = discovered
            .metadata
            .token_endpoint
            .as_deref()
            .ok_or_else(|| {
                AuthError::Discovery(format!("{} has no token_endpoint", discovered.issuer))
            })?;
        let url = secure_url(endpoint, self.config.allow_insecure_http)?;
        let mut request = self
            .client_for_issuer(&url, &discovered.issuer)?
            .post(url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        let method = self.auth_method(client, &discovered.metadata);
        let secret = || {
            client
                .client_secret
                .clone()
                .ok_or_else(|| AuthError::Registration(format!("{method} needs a client secret")))
        };
        match method.as_str() {
            "client_secret_basic" => {
                // RFC 6749 §2.3.1: both parts form-encoded before base64.
                let credentials = format!(
                    "{}:{}",
                    form_encode_value(&client.client_id),
                    form_encode_value(&secret()?)
                );
                let mut value =
                    HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(credentials)))
                        .map_err(|_| {
                            AuthError::Registration("unusable client credentials".to_owned())
                        })?;
                value.set_sensitive(true);
                request = request.header(AUTHORIZATION, value);
            }
            "client_secret_post" => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret()?));
            }
            "private_key_jwt" => {
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
            "none" => form.push(("client_id", client.client_id.clone())),
            other => {
                return Err(AuthError::Registration(format!(
                    "unsupported token endpoint authentication method {other}"
                )));
            }
        }
        let mut response = request
            .body(form_encode(&form))
            .send()
            .await
            .map_err(|e| request_error(e, &url))?;
        let status = response.status();
        let bytes = read_limited(&mut response).await?;
        if !status.is_success() {
            let error: ErrorBody = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(AuthError::Token {
                status: status.as_u16(),
                error: error.error,
                description: error.error_description,
            });
        }
        let token: TokenResponse =
            serde_json::from_slice(&bytes).map_err(|e| AuthError::Token {
                status: status.as_u16(),
                error: Some("unreadable token response".to_owned()),
                description: Some(e.to_string()),
            })?;
        if !token.token_type.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::UnsupportedTokenType(token.token_type));
        }
        Ok(token)
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

/// `application/x-www-form-urlencoded`.
fn form_encode(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", form_encode_value(name), form_encode_value(value)))
        .collect::<Vec<_>>()
        .join("&")
}

fn form_encode_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(byte as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding() {
        assert_eq!(
            form_encode(&[("a", "x y".to_owned()), ("b", "é&=/:".to_owned())]),
            "a=x+y&b=%C3%A9%26%3D%2F%3A"
        );
    }
}
