//! Where a peer may send the OAuth client. The MCP server names the protected resource
//! metadata and the authorization servers, an authorization server names its endpoints; a
//! hostile one would name addresses inside the user's network (a cloud metadata service, an
//! admin port on loopback) and have the client request them — blind server-side request
//! forgery. So a URL a peer names is fetched only
//!
//! * on the MCP server's own host (it could serve that itself; and the development setup,
//!   everything on 127.0.0.1, keeps working), or
//! * at an authorization server the user named (the user vouches for it, wherever it is), or
//! * at public addresses only: a DNS resolver that drops every non-public address checks them
//!   when connecting, so a name that resolves differently the second time (DNS rebinding)
//!   still cannot reach inside; an IP literal is checked before. The authorization endpoint,
//!   which an [`super::AuthorizationHandler`] requests, is checked before it is handed over and
//!   carries that client to [`super::RedirectFetcher`], so every hop it follows is checked too.

use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::error::{AuthError, UrlRefusal};

/// How long one request to an authorization server may take.
pub(crate) const REQUEST_WAIT: Duration = Duration::from_secs(30);

/// The HTTP clients the OAuth client fetches with, and the rule that chooses between them.
pub(crate) struct Egress {
    /// For the MCP server's host and authorization servers the user named.
    trusted: reqwest::Client,
    /// For every other host: public addresses only, no proxy (a proxy would connect to
    /// addresses this client never sees).
    public: reqwest::Client,
    /// The MCP server's URL.
    server: Url,
    /// How names are looked up: the system resolver (tests substitute one that answers as a
    /// rebinding attacker's DNS server would).
    lookup: Arc<dyn Resolve>,
}

impl Egress {
    /// The clients for the MCP server at `server_url`; `trusted` is the user's or a default.
    pub(crate) fn new(trusted: reqwest::Client, server_url: &str) -> Result<Self, AuthError> {
        Self::with_lookup(trusted, server_url, Arc::new(System))
    }

    /// [`Self::new`], looking names up with `lookup`.
    pub(crate) fn with_lookup(
        trusted: reqwest::Client,
        server_url: &str,
        lookup: Arc<dyn Resolve>,
    ) -> Result<Self, AuthError> {
        let server = Url::parse(server_url).map_err(|_| {
            AuthError::InvalidConfig(format!("the server URL {server_url:?} is not a URL"))
        })?;
        let public = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_WAIT)
            .no_proxy()
            .dns_resolver(PublicOnly(Arc::clone(&lookup)))
            .build()?;
        Ok(Self {
            trusted,
            public,
            server,
            lookup,
        })
    }

    /// Whether `url` has the MCP server's origin (scheme, host and port).
    pub(crate) fn same_origin(&self, url: &Url) -> bool {
        url.origin() == self.server.origin()
    }

    /// The client to fetch the protected resource metadata at `url` with, and the parsed URL:
    /// on the MCP server's origin (RFC 9728 §3: the well-known locations, or a challenge's
    /// `resource_metadata` there); elsewhere only when `allow_cross_origin`, over `https`, at
    /// public addresses.
    pub(crate) fn resource_metadata_client(
        &self,
        url: &str,
        allow_cross_origin: bool,
    ) -> Result<(&reqwest::Client, Url), AuthError> {
        let parsed = Url::parse(url)
            .map_err(|_| AuthError::Discovery(format!("invalid resource metadata URL {url:?}")))?;
        if self.same_origin(&parsed) {
            return Ok((&self.trusted, parsed));
        }
        let refuse = |reason| AuthError::ForbiddenUrl {
            url: url.to_owned(),
            reason,
        };
        if !allow_cross_origin {
            return Err(refuse(UrlRefusal::CrossOrigin));
        }
        if parsed.scheme() != "https" {
            return Err(refuse(UrlRefusal::CrossOriginInsecure));
        }
        Ok((self.public_client_for(&parsed)?, parsed))
    }

    /// Whether `url` is on the MCP server's host (any scheme and port).
    fn on_server_host(&self, url: &Url) -> bool {
        match (url.host_str(), self.server.host_str()) {
            (Some(host), Some(server)) => host.eq_ignore_ascii_case(server),
            _ => false,
        }
    }

    /// The client to fetch `url` with, a URL some peer named; `user_named` when it belongs to
    /// an authorization server the user named.
    pub(crate) fn client_for(
        &self,
        url: &Url,
        user_named: bool,
    ) -> Result<&reqwest::Client, AuthError> {
        if user_named || self.on_server_host(url) {
            return Ok(&self.trusted);
        }
        self.public_client_for(url)
    }

    /// The public-addresses-only client for `url` (an IP literal must be public itself: no
    /// resolver sees it).
    pub(crate) fn public_client_for(&self, url: &Url) -> Result<&reqwest::Client, AuthError> {
        match (url.host_str(), literal_ip(url)) {
            (None, _) => Err(forbidden(url)),
            (_, Some(ip)) if !is_public(ip) => Err(forbidden(url)),
            _ => Ok(&self.public),
        }
    }

    /// Checks `url`, which someone else will request (the authorization endpoint, opened in
    /// the browser or followed by a headless handler), by the same rule: its host must resolve
    /// to public addresses only. The check is made now; a browser resolves again, which cannot
    /// be helped. So the answer is also the client a handler that fetches `url` itself must
    /// use ([`super::RedirectFetcher`]): the public-addresses-only one, whose resolver checks
    /// every connection, or `None` when `url` is trusted (the handler's own client then).
    pub(crate) async fn hand_over(
        &self,
        url: &Url,
        user_named: bool,
    ) -> Result<Option<reqwest::Client>, AuthError> {
        if user_named || self.on_server_host(url) {
            return Ok(None);
        }
        let public = self.public_client_for(url)?;
        if let (Some(host), None) = (url.host_str(), literal_ip(url)) {
            let cannot =
                |e: &dyn fmt::Display| AuthError::Discovery(format!("cannot resolve {host}: {e}"));
            let name = Name::from_str(host).map_err(|e| cannot(&e))?;
            let addrs: Vec<SocketAddr> = self
                .lookup
                .resolve(name)
                .await
                .map_err(|e| cannot(&e))?
                .collect();
            if addrs.is_empty() || !addrs.iter().all(|addr| is_public(addr.ip())) {
                return Err(forbidden(url));
            }
        }
        Ok(Some(public.clone()))
    }
}

/// The host of `url` when it is an IP address.
fn literal_ip(url: &Url) -> Option<IpAddr> {
    url.host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// The error for a URL that leads to a non-public address.
pub(crate) fn forbidden(url: &Url) -> AuthError {
    AuthError::ForbiddenUrl {
        url: url.to_string(),
        reason: UrlRefusal::NotPublic {
            host: url.host_str().unwrap_or("the host").to_owned(),
        },
    }
}

/// `error` of a request to `url`: [`AuthError::ForbiddenUrl`] when the resolver refused the
/// host's addresses.
pub(crate) fn request_error(error: reqwest::Error, url: &Url) -> AuthError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(&error);
    while let Some(cause) = source {
        if cause.is::<NonPublicAddress>() {
            return forbidden(url);
        }
        source = cause.source();
    }
    AuthError::Http(error)
}

/// Looks names up with the system resolver.
struct System;

impl Resolve for System {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Resolves names with the inner resolver and keeps their public addresses only.
struct PublicOnly(Arc<dyn Resolve>);

/// Every address of a name is non-public.
#[derive(Debug)]
struct NonPublicAddress(String);

impl fmt::Display for NonPublicAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} has no public address", self.0)
    }
}

impl StdError for NonPublicAddress {}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let resolving = self.0.resolve(name);
        Box::pin(async move {
            let public: Vec<SocketAddr> = resolving
                .await?
                .filter(|addr| is_public(addr.ip()))
                .collect();
            if public.is_empty() {
                return Err(Box::new(NonPublicAddress(host)) as Box<dyn StdError + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// Whether `ip` is a public unicast address: not loopback, private (RFC 1918), shared
/// (RFC 6598), link-local (the cloud metadata services' 169.254.169.254 among them),
/// unique-local, unspecified, multicast, broadcast, documentation, benchmarking or reserved;
/// IPv6 addresses that embed an IPv4 address (mapped, NAT64, 6to4) are judged by it.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && (c == 0 || c == 2))
        || (a == 192 && b == 88 && c == 99)
        || (a == 192 && b == 168)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    let embedded = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    match segments {
        // NAT64 (RFC 6052): the IPv4 address in the last 32 bits.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => is_public_v4(embedded(high, low)),
        // 6to4 (RFC 3056): the IPv4 address after the prefix.
        [0x2002, high, low, ..] => is_public_v4(embedded(high, low)),
        // Global unicast is 2000::/3, less the IETF protocol assignments (2001::/23, Teredo
        // among them) and documentation (2001:db8::/32, 3fff::/20).
        [first, second, ..] => {
            (0x2000..0x3fff).contains(&first)
                && !(first == 0x2001 && (second < 0x0200 || second == 0x0db8))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses() {
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "172.32.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
        for internal in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "2002:a00:1::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "3fff::1",
            "100::1",
        ] {
            assert!(!is_public(internal.parse().unwrap()), "{internal}");
        }
    }

    fn egress() -> Egress {
        Egress::new(reqwest::Client::new(), "http://127.0.0.1:8000/mcp").unwrap()
    }

    #[test]
    fn which_client() {
        let egress = egress();
        let url = |text: &str| Url::parse(text).unwrap();
        // The server's host, any port: the trusted client.
        assert!(std::ptr::eq(
            egress
                .client_for(&url("http://127.0.0.1:9000/token"), false)
                .unwrap(),
            &egress.trusted
        ));
        // Named by the user: trusted wherever it is.
        assert!(std::ptr::eq(
            egress
                .client_for(&url("https://10.0.0.5/token"), true)
                .unwrap(),
            &egress.trusted
        ));
        // Another host: public addresses only; a non-public literal is refused at once.
        assert!(std::ptr::eq(
            egress
                .client_for(&url("https://auth.example.com/token"), false)
                .unwrap(),
            &egress.public
        ));
        for internal in [
            "http://10.0.0.5/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]:8000/",
            "http://127.0.0.2:8000/",
        ] {
            assert!(
                matches!(
                    egress.client_for(&url(internal), false),
                    Err(AuthError::ForbiddenUrl { .. })
                ),
                "{internal}"
            );
        }
        assert!(egress.same_origin(&url("http://127.0.0.1:8000/.well-known/x")));
        assert!(!egress.same_origin(&url("http://127.0.0.1:8001/.well-known/x")));
        assert!(!egress.same_origin(&url("https://127.0.0.1:8000/.well-known/x")));
    }

    /// A refusal says why and names the library setting that would allow the URL (never a
    /// command-line flag: the CLI names its own).
    #[test]
    fn refusals_name_the_settings() {
        let egress = egress();
        let cross_origin = egress
            .resource_metadata_client("http://127.0.0.1:9/meta", false)
            .unwrap_err();
        assert!(
            matches!(
                &cross_origin,
                AuthError::ForbiddenUrl {
                    reason: UrlRefusal::CrossOrigin,
                    ..
                }
            ),
            "{cross_origin}"
        );
        let internal = egress
            .client_for(&Url::parse("http://10.0.0.5/token").unwrap(), false)
            .unwrap_err();
        assert!(
            matches!(&internal, AuthError::ForbiddenUrl { reason: UrlRefusal::NotPublic { host }, .. } if host == "10.0.0.5"),
            "{internal}"
        );
        for (error, setting) in [
            (cross_origin, "OAuthConfig::cross_origin_resource_metadata"),
            (internal, "OAuthConfig::issuer"),
        ] {
            let text = error.to_string();
            assert!(text.contains(setting), "{text}");
            assert!(!text.contains("--") && !text.contains("mcp:"), "{text}");
        }
    }

    /// A name that resolves to loopback only (`localhost`) is refused by the resolver when
    /// connecting, and the error says why.
    #[tokio::test]
    async fn the_resolver_refuses_names_of_internal_addresses() {
        let egress = egress();
        let url = Url::parse("http://localhost:9/secret").unwrap();
        let client = egress.public_client_for(&url).unwrap();
        let error = client.get(url.clone()).send().await.unwrap_err();
        let error = request_error(error, &url);
        assert!(
            matches!(&error, AuthError::ForbiddenUrl { url, .. } if url.contains("localhost")),
            "{error}"
        );
        assert!(matches!(
            egress.hand_over(&url, false).await,
            Err(AuthError::ForbiddenUrl { .. })
        ));
        assert!(matches!(egress.hand_over(&url, true).await, Ok(None)));
    }
}
