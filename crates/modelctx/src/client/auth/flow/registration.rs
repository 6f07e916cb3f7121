//! Which registration the client presents, and to whom: pre-registered credentials, a stored
//! registration, a client ID metadata document, or dynamic client registration (RFC 7591).

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::{Value, json};

use super::token::post;
use super::{Discovered, OAuthClient};
use crate::client::auth::clock::now;
use crate::client::auth::discovery::{is_loopback, secure_url};
use crate::client::auth::error::AuthError;
use crate::client::auth::store::ClientRegistration;
use crate::client::auth::token_endpoint_auth_method::TokenEndpointAuthMethod;
use crate::client::auth::{ApplicationType, Grant};

/// A dynamic registration response (RFC 7591 §3.2.1).
#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<TokenEndpointAuthMethod>,
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
            let mut client = ClientRegistration::new(url.clone())
                .with_auth_method(TokenEndpointAuthMethod::None);
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
        let method = [
            TokenEndpointAuthMethod::None,
            TokenEndpointAuthMethod::ClientSecretBasic,
            TokenEndpointAuthMethod::ClientSecretPost,
        ]
        .into_iter()
        .find(|m| metadata.supports_auth_method(m.as_str()))
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
            "token_endpoint_auth_method": method.as_str(),
            "application_type": application_type.as_str(),
        });
        if let Some(uri) = &self.config.client_uri {
            body["client_uri"] = Value::from(uri.clone());
        }
        if let Some(scope) = scope {
            body["scope"] = Value::from(scope);
        }
        let request = self
            .client_for_issuer(&url, &discovered.issuer)?
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(serde_json::to_vec(&body).unwrap_or_default());
        let (status, bytes, refused, _) = post(request, &url, None).await?;
        if let Some(error) = refused {
            return Err(AuthError::Registration(format!(
                "{} answered {status}{}",
                discovered.issuer,
                error.error.map(|e| format!(": {e}")).unwrap_or_default()
            )));
        }
        let registered: RegistrationResponse = serde_json::from_slice(&bytes).map_err(|e| {
            AuthError::Registration(format!("unreadable registration response: {e}"))
        })?;
        let method = registered.token_endpoint_auth_method.unwrap_or(method);
        if method.needs_secret() && registered.client_secret.is_none() {
            return Err(AuthError::Registration(format!(
                "registered for {method} without a client secret"
            )));
        }
        if matches!(
            method,
            TokenEndpointAuthMethod::PrivateKeyJwt | TokenEndpointAuthMethod::Other(_)
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
}
