//! The OAuth client as the HTTP transport's authorization layer.

use futures::future::BoxFuture;
use reqwest::header::HeaderMap;
use reqwest::{Method, Response, Url};

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

    fn credentials_for<'a>(&'a self, method: &'a Method, url: &'a Url) -> BoxFuture<'a, HeaderMap> {
        Box::pin(OAuthClient::credentials_for(self, method, url))
    }

    fn pause_clock(&self) -> &PauseClock {
        self.clock()
    }
}
