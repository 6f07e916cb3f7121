//! The grants (authorization code with PKCE, client credentials, identity assertion, refresh)
//! and the token endpoint request they end in.

use std::sync::Arc;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode, Url};
use serde::Deserialize;
use serde_json::Value;

use super::client_auth::form_body;
use super::{Discovered, OAuthClient, read_limited};
use crate::client::auth::clock::now;
use crate::client::auth::discovery::secure_url;
use crate::client::auth::egress::request_error;
use crate::client::auth::error::AuthError;
use crate::client::auth::handler::{AuthorizationHandler, AuthorizationRequest};
use crate::client::auth::pkce::{Pkce, constant_time_eq, random_token};
use crate::client::auth::proof::{ALGORITHM, NonceBook, ProofKey};
use crate::client::auth::store::{ClientRegistration, StoredTokens};
use crate::client::auth::{AssertionRequest, DpopUse, Grant};
use crate::dpop::{PROOF_HEADER, USE_NONCE_ERROR};

/// A token endpoint response (RFC 6749 §5.1).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default, deserialize_with = "number_or_string")]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

fn number_or_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// An OAuth error body (RFC 6749 §5.2).
#[derive(Deserialize, Default)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) error: Option<String>,
    #[serde(default)]
    pub(super) error_description: Option<String>,
}

impl OAuthClient {
    /// Obtains tokens with the configured grant.
    pub(super) async fn sign_in(
        &self,
        discovered: &Discovered,
        scope: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        match &self.config.grant {
            Grant::AuthorizationCode(handler) => {
                self.authorization_code(handler.as_ref(), discovered, scope)
                    .await
            }
            Grant::ClientCredentials => {
                let client = self.client_for(discovered, None, scope.as_deref()).await?;
                let mut form = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    ("resource", discovered.resource.clone()),
                ];
                if let Some(scope) = &scope {
                    form.push(("scope", scope.clone()));
                }
                let response = self.token_request(discovered, &client, form).await?;
                Ok(tokens_from(response, discovered, scope, None))
            }
            Grant::IdentityAssertion(provider) => {
                let client = self.client_for(discovered, None, scope.as_deref()).await?;
                let assertion = {
                    let _user_time = self.clock.pause();
                    provider
                        .assertion(AssertionRequest {
                            audience: discovered.issuer.clone(),
                            resource: discovered.resource.clone(),
                            scope: scope.clone(),
                        })
                        .await?
                };
                let mut form = vec![
                    (
                        "grant_type",
                        "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
                    ),
                    ("assertion", assertion),
                    ("resource", discovered.resource.clone()),
                ];
                if let Some(scope) = &scope {
                    form.push(("scope", scope.clone()));
                }
                let response = self.token_request(discovered, &client, form).await?;
                Ok(tokens_from(response, discovered, scope, None))
            }
        }
    }

    /// The authorization code flow with PKCE.
    pub(super) async fn authorization_code(
        &self,
        handler: &dyn AuthorizationHandler,
        discovered: &Discovered,
        scope: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let metadata = &discovered.metadata;
        if !metadata.supports_s256() {
            return Err(AuthError::PkceUnsupported {
                issuer: discovered.issuer.clone(),
            });
        }
        let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Discovery(format!(
                "{} has no authorization_endpoint",
                discovered.issuer
            ))
        })?;
        let mut url = secure_url(endpoint, self.config.allow_insecure_http)?;
        let public_only = self
            .egress
            .hand_over(&url, self.user_named(&discovered.issuer))
            .await?;
        let redirect_uri = handler.redirect_uri();
        let client = self
            .client_for(discovered, Some(&redirect_uri), scope.as_deref())
            .await?;
        let pkce = Pkce::new()?;
        let state = random_token()?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &discovered.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
                if scope.split_whitespace().any(|s| s == "offline_access") {
                    // OpenID Connect issues refresh tokens for offline_access after consent.
                    query.append_pair("prompt", "consent");
                }
            }
        }
        let request = AuthorizationRequest {
            url,
            redirect_uri: redirect_uri.clone(),
            state: state.clone(),
            issuer: discovered.issuer.clone(),
            scope: scope.clone(),
            public_only,
        };
        let response = {
            let _user_time = self.clock.pause();
            handler.authorize(request).await?
        };
        // RFC 9207 before anything else in the response: from another issuer, even an error
        // is not to be acted on.
        match &response.iss {
            Some(iss) if iss != &discovered.issuer => {
                return Err(AuthError::ResponseIssuer {
                    expected: discovered.issuer.clone(),
                    found: Some(iss.clone()),
                });
            }
            None if metadata.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(AuthError::ResponseIssuer {
                    expected: discovered.issuer.clone(),
                    found: None,
                });
            }
            _ => {}
        }
        if let Some(error) = response.error {
            return Err(AuthError::Denied {
                error,
                description: response.error_description,
            });
        }
        if !response
            .state
            .as_deref()
            .is_some_and(|s| constant_time_eq(s, &state))
        {
            return Err(AuthError::StateMismatch);
        }
        let code = response.code.ok_or(AuthError::MissingCode)?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier),
            ("resource", discovered.resource.clone()),
        ];
        let response = self.token_request(discovered, &client, form).await?;
        Ok(tokens_from(response, discovered, scope, None))
    }

    /// A refresh token grant for `tokens`.
    pub(super) async fn refresh(
        &self,
        discovered: &Discovered,
        tokens: &StoredTokens,
    ) -> Result<StoredTokens, AuthError> {
        let refresh_token = tokens
            .refresh_token
            .clone()
            .ok_or_else(|| AuthError::Token {
                status: 0,
                error: Some("no refresh token".to_owned()),
                description: None,
            })?;
        let redirect_uri = match &self.config.grant {
            Grant::AuthorizationCode(handler) => Some(handler.redirect_uri()),
            Grant::ClientCredentials | Grant::IdentityAssertion(_) => None,
        };
        let client = self
            .client_for(discovered, redirect_uri.as_deref(), None)
            .await?;
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
            ("resource", discovered.resource.clone()),
        ];
        let response = self.token_request(discovered, &client, form).await?;
        Ok(tokens_from(response, discovered, None, Some(tokens)))
    }

    /// A token endpoint request with client authentication (and a DPoP proof when DPoP is
    /// on for this authorization server); the parsed response, and the key the token is bound
    /// to when it is a DPoP token.
    async fn token_request(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        form: Vec<(&'static str, String)>,
    ) -> Result<(TokenResponse, Option<Arc<ProofKey>>), AuthError> {
        let endpoint = discovered
            .metadata
            .token_endpoint
            .as_deref()
            .ok_or_else(|| {
                AuthError::Discovery(format!("{} has no token_endpoint", discovered.issuer))
            })?;
        let url = secure_url(endpoint, self.config.allow_insecure_http)?;
        let key = self.dpop_for(discovered)?;
        let nonces = key.as_ref().map(|_| &self.as_nonces);
        let mut nonce_retried = false;
        let (status, bytes) = loop {
            // Built anew for a retry: a client assertion and a proof are each used once.
            let mut form = form.clone();
            let mut request = self
                .client_for_issuer(&url, &discovered.issuer)?
                .post(url.clone())
                .header(ACCEPT, "application/json")
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
            if let Some(key) = &key {
                let proof = key.proof("POST", &url, None, self.as_nonces.get(&url))?;
                request = request.header(PROOF_HEADER, proof);
            }
            let request = self.authenticate(request, &mut form, client, discovered)?;
            let (status, bytes, refused, learned) =
                post(request.body(form_body(&form)), &url, nonces).await?;
            let Some(error) = refused else {
                break (status, bytes);
            };
            // RFC 9449 §8: a 400 `use_dpop_nonce` with a fresh nonce is answered once.
            if learned
                && !nonce_retried
                && status == StatusCode::BAD_REQUEST
                && error.error.as_deref() == Some(USE_NONCE_ERROR)
            {
                nonce_retried = true;
                continue;
            }
            return Err(AuthError::Token {
                status: status.as_u16(),
                error: error.error,
                description: error.error_description,
            });
        };
        let token: TokenResponse =
            serde_json::from_slice(&bytes).map_err(|e| AuthError::Token {
                status: status.as_u16(),
                error: Some("unreadable token response".to_owned()),
                description: Some(e.to_string()),
            })?;
        let bound = if token.token_type.eq_ignore_ascii_case("dpop") {
            // A DPoP token is only usable with the key its proof was signed with: one issued
            // without a proof cannot be presented.
            Some(key.ok_or_else(|| AuthError::UnsupportedTokenType(token.token_type.clone()))?)
        } else if token.token_type.eq_ignore_ascii_case("bearer")
            && self.config.dpop != DpopUse::Required
        {
            // A proof the server ignored: the token is an ordinary bearer token.
            None
        } else {
            return Err(AuthError::UnsupportedTokenType(token.token_type));
        };
        Ok((token, bound))
    }

    /// The key to sign token request proofs with, when DPoP is on for this authorization
    /// server.
    fn dpop_for(&self, discovered: &Discovered) -> Result<Option<Arc<ProofKey>>, AuthError> {
        let advertised = discovered
            .metadata
            .dpop_signing_alg_values_supported
            .as_ref();
        let takes_es256 = advertised.is_some_and(|algs| algs.iter().any(|a| a == ALGORITHM));
        let on = match self.config.dpop {
            DpopUse::Off => false,
            DpopUse::WhenAdvertised => takes_es256,
            DpopUse::Required => {
                if advertised.is_some() && !takes_es256 {
                    return Err(AuthError::InvalidConfig(format!(
                        "DPoP is required but {} does not take {ALGORITHM} proofs",
                        discovered.issuer
                    )));
                }
                true
            }
        };
        on.then(|| self.proof_key()).transpose()
    }
}

/// Sends a request to the authorization server: the status and the body (read within bounds),
/// with the OAuth error body (RFC 6749 §5.2) when the status is not a success, and whether the
/// response handed out a DPoP nonce (kept in `nonces`).
pub(super) async fn post(
    request: RequestBuilder,
    url: &Url,
    nonces: Option<&NonceBook>,
) -> Result<(StatusCode, Vec<u8>, Option<ErrorBody>, bool), AuthError> {
    let mut response = request.send().await.map_err(|e| request_error(e, url))?;
    let status = response.status();
    let learned = nonces.is_some_and(|nonces| nonces.learn(url, response.headers()));
    let bytes = read_limited(&mut response).await?;
    let refused =
        (!status.is_success()).then(|| serde_json::from_slice(&bytes).unwrap_or_default());
    Ok((status, bytes, refused, learned))
}

/// Stored tokens from a token response (a refresh keeps what the response leaves out).
fn tokens_from(
    (response, key): (TokenResponse, Option<Arc<ProofKey>>),
    discovered: &Discovered,
    requested_scope: Option<String>,
    previous: Option<&StoredTokens>,
) -> StoredTokens {
    StoredTokens {
        access_token: response.access_token,
        token_type: if key.is_some() { "DPoP" } else { "Bearer" }.to_owned(),
        dpop_key: key.map(|key| key.pkcs8().to_owned()),
        refresh_token: response
            .refresh_token
            .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
        expires_at: response.expires_in.map(|s| now().saturating_add(s)),
        scope: response
            .scope
            .or(requested_scope)
            .or_else(|| previous.and_then(|p| p.scope.clone())),
        issuer: discovered.issuer.clone(),
        resource: discovered.resource.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_in_number_or_string() {
        let a: TokenResponse =
            serde_json::from_str(r#"{"access_token":"x","token_type":"bearer","expires_in":"60"}"#)
                .unwrap();
        assert_eq!(a.expires_in, Some(60));
        let b: TokenResponse =
            serde_json::from_str(r#"{"access_token":"x","token_type":"Bearer","expires_in":3600}"#)
                .unwrap();
        assert_eq!(b.expires_in, Some(3600));
    }
}
