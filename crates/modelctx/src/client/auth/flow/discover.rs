//! Discovery: the protected resource's metadata (RFC 9728), then its authorization server's
//! (RFC 8414 / OpenID Connect), and which issuers sign-in may use.

use reqwest::header::ACCEPT;
use reqwest::{StatusCode, Url};

use super::{Discovered, OAuthClient, read_limited};
use crate::client::auth::IssuerBinding;
use crate::client::auth::discovery::{
    ResourceMetadata, ServerMetadata, canonical_resource, resource_covers, resource_metadata_urls,
    secure_url, server_metadata_urls,
};
use crate::client::auth::egress::request_error;
use crate::client::auth::error::AuthError;

impl OAuthClient {
    /// Protected resource metadata, then the authorization server's.
    pub(super) async fn discover(
        &self,
        challenge_url: Option<&str>,
    ) -> Result<Discovered, AuthError> {
        let mut resource_metadata = None;
        let mut refused = None;
        for url in resource_metadata_urls(challenge_url, &self.server_url) {
            let fetched = match self
                .egress
                .resource_metadata_client(&url, self.config.cross_origin_resource_metadata)
            {
                Ok((client, url)) => self.fetch_json::<ResourceMetadata>(client, &url).await,
                Err(error) => {
                    refused.get_or_insert(error);
                    continue;
                }
            };
            // An unreachable location is one more that has nothing: try the next.
            match fetched {
                Ok(Some(document)) if !document.authorization_servers.is_empty() => {
                    resource_metadata = Some(document);
                    break;
                }
                Ok(_) => tracing::debug!(%url, "no usable protected resource metadata"),
                Err(error @ AuthError::ForbiddenUrl { .. }) => {
                    refused.get_or_insert(error);
                }
                Err(error) => {
                    tracing::debug!(%url, %error, "protected resource metadata unreachable");
                }
            }
        }
        let Some(prm) = resource_metadata else {
            // A location that was not fetched explains more than "nothing found".
            return Err(refused.unwrap_or_else(|| {
                AuthError::Discovery(format!(
                    "no protected resource metadata for {}",
                    self.server_url
                ))
            }));
        };
        let resource = match &prm.resource {
            Some(resource) if resource_covers(resource, &self.server_url) => resource.clone(),
            Some(resource) => {
                return Err(AuthError::ResourceMismatch {
                    resource: resource.clone(),
                    server: self.server_url.clone(),
                });
            }
            None => canonical_resource(&self.server_url),
        };
        let allowed: Vec<&String> = prm
            .authorization_servers
            .iter()
            .filter(|issuer| self.may_sign_in_with(issuer))
            .collect();
        if allowed.is_empty() {
            return Err(AuthError::IssuerNotAllowed {
                expected: self.bound_issuer().unwrap_or_default(),
                named: prm.authorization_servers,
            });
        }
        let mut first_error = None;
        for issuer in allowed {
            match self.server_metadata(issuer).await {
                Ok(metadata) => {
                    self.first_issuer.get_or_init(|| issuer.clone());
                    return Ok(Discovered {
                        resource,
                        issuer: issuer.clone(),
                        metadata,
                        resource_scopes: prm.scopes_supported,
                    });
                }
                Err(error) => {
                    tracing::debug!(%issuer, %error, "authorization server unusable");
                    first_error.get_or_insert(error);
                }
            }
        }
        Err(first_error
            .unwrap_or_else(|| AuthError::Discovery("no authorization server".to_owned())))
    }

    /// Whether `binding` names `issuer`.
    pub(super) fn binds(&self, binding: &IssuerBinding, issuer: &str) -> bool {
        match binding {
            IssuerBinding::Issuer(bound) => bound == issuer,
            IssuerBinding::FirstDiscovered => self.first_issuer.get().is_some_and(|f| f == issuer),
        }
    }

    /// Whether sign-in may use the authorization server `issuer` ([`OAuthConfig::issuer`]).
    pub(super) fn may_sign_in_with(&self, issuer: &str) -> bool {
        match &self.config.issuer {
            None => true,
            Some(IssuerBinding::FirstDiscovered) if self.first_issuer.get().is_none() => true,
            Some(binding) => self.binds(binding, issuer),
        }
    }

    /// The issuer sign-in is bound to, when it is known.
    pub(super) fn bound_issuer(&self) -> Option<String> {
        match self.config.issuer.as_ref()? {
            IssuerBinding::Issuer(issuer) => Some(issuer.clone()),
            IssuerBinding::FirstDiscovered => self.first_issuer.get().cloned(),
        }
    }

    /// Whether the user named the authorization server `issuer` (so that it may be anywhere,
    /// a private network included).
    pub(super) fn user_named(&self, issuer: &str) -> bool {
        let named =
            |binding: &IssuerBinding| matches!(binding, IssuerBinding::Issuer(i) if i == issuer);
        self.config.issuer.as_ref().is_some_and(named)
            || self
                .config
                .pre_registered
                .iter()
                .any(|(binding, _)| named(binding))
    }

    /// The client to request `url` of the authorization server `issuer` with.
    pub(super) fn client_for_issuer(
        &self,
        url: &Url,
        issuer: &str,
    ) -> Result<&reqwest::Client, AuthError> {
        self.egress.client_for(url, self.user_named(issuer))
    }

    /// The metadata of the authorization server `issuer`, its `issuer` checked.
    pub(super) async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        secure_url(issuer, self.config.allow_insecure_http)?;
        for url in server_metadata_urls(issuer) {
            let Ok(parsed) = Url::parse(&url) else {
                continue;
            };
            let client = self.client_for_issuer(&parsed, issuer)?;
            if let Some(metadata) = self.fetch_json::<ServerMetadata>(client, &parsed).await? {
                if metadata.issuer != issuer {
                    return Err(AuthError::IssuerMismatch {
                        expected: issuer.to_owned(),
                        found: metadata.issuer,
                        url,
                    });
                }
                return Ok(metadata);
            }
        }
        Err(AuthError::Discovery(format!(
            "no authorization server metadata for {issuer}"
        )))
    }

    /// `GET`s a JSON document; `None` when the answer is not a 200 with such a document.
    pub(super) async fn fetch_json<T: serde::de::DeserializeOwned>(
        &self,
        client: &reqwest::Client,
        url: &Url,
    ) -> Result<Option<T>, AuthError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Ok(None);
        }
        let mut response = client
            .get(url.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| request_error(e, url))?;
        if response.status() != StatusCode::OK {
            return Ok(None);
        }
        let body = read_limited(&mut response).await?;
        Ok(serde_json::from_slice(&body).ok())
    }
}
