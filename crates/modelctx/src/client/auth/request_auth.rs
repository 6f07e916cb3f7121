//! The OAuth client as the HTTP transport's authorization layer.

use futures::future::BoxFuture;
use reqwest::Response;
use reqwest::header::HeaderValue;

use super::OAuthClient;
use super::pause::PauseClock;
use crate::client::error::ClientError;
use crate::client::transport::http::{BuildRequest, RequestAuth};

impl RequestAuth for OAuthClient {
    fn send<'a>(
        &'a self,
        build: &'a BuildRequest<'a>,
    ) -> BoxFuture<'a, Result<Response, ClientError>> {
        Box::pin(OAuthClient::send(self, build))
    }

    fn current_authorization(&self) -> BoxFuture<'_, Option<HeaderValue>> {
        Box::pin(OAuthClient::current_authorization(self))
    }

    fn pause_clock(&self) -> &PauseClock {
        self.clock()
    }
}
