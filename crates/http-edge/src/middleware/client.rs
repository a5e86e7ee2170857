//! Who the client is, for the rate limiter, the connection cap and V1 usage counts: the socket
//! peer, or behind `TRUSTED_PROXIES` reverse proxies the address the outermost trusted proxy
//! saw. IPv6 clients are counted by their /64: one host commonly holds a whole /64, so counting
//! single addresses would hand it 2^64 identities.

use std::net::{IpAddr, Ipv6Addr};

use actix_web::HttpMessage;
use actix_web::dev::ServiceRequest;
use actix_web::http::header::HeaderMap;

/// How many reverse proxies in front of the service append to `X-Forwarded-For`
/// (`TRUSTED_PROXIES`; `TRUST_FORWARDED_FOR=true` means one). Zero: the socket peer is the
/// client and `X-Forwarded-For` is ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrustedProxies(pub usize);

impl TrustedProxies {
    /// The client's address. Each trusted proxy appends the address it received the request
    /// from, so with `n` proxies the client is the `n`-th entry from the right; everything to
    /// its left was written by the client and proves nothing. A request that did not come
    /// through them all (fewer entries) is keyed by its leftmost entry, still proxy-written.
    pub fn client(self, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<IpAddr> {
        if self.0 == 0 {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let index = hops.len().saturating_sub(self.0);
        hops.get(index).and_then(|hop| parse_hop(hop)).or(peer)
    }

    pub fn of(self, req: &ServiceRequest) -> Option<IpAddr> {
        self.client(req.headers(), req.peer_addr().map(|a| a.ip()))
    }
}

/// The request's client address, decided once (by the app's [`crate::Edge`] proxies) and
/// kept in the request's extensions for every layer after the first that asks.
#[derive(Debug, Clone, Copy)]
struct ClientAddress(Option<IpAddr>);

/// The client of `req` (see the module's doc): every layer asks this, so all agree.
pub fn address(req: &ServiceRequest) -> Option<IpAddr> {
    if let Some(known) = req.extensions().get::<ClientAddress>() {
        return known.0;
    }
    let proxies = crate::Edge::of(req.request()).map_or(TrustedProxies(0), |e| e.proxies);
    let address = proxies.of(req);
    req.extensions_mut().insert(ClientAddress(address));
    address
}

/// [`address`] from a handler: the layers' decision when one made it, else the same rule.
pub fn of_request(req: &actix_web::HttpRequest) -> Option<IpAddr> {
    if let Some(known) = req.extensions().get::<ClientAddress>() {
        return known.0;
    }
    let proxies = crate::Edge::of(req).map_or(TrustedProxies(0), |e| e.proxies);
    proxies.client(req.headers(), req.peer_addr().map(|a| a.ip()))
}

/// An `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:443`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse() {
        return Some(ip);
    }
    let unbracketed = hop
        .strip_prefix('[')
        .and_then(|h| h.split_once(']'))
        .map(|(h, _)| h);
    unbracketed
        .or_else(|| hop.rsplit_once(':').map(|(h, _)| h))
        .and_then(|h| h.parse().ok())
}

/// The key a client is counted under: IPv4 as is (IPv4-mapped IPv6 too), IPv6 by its /64.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let [a, b, c, d, ..] = v6.segments();
                IpAddr::V6(Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(
                HeaderName::from_static("x-forwarded-for"),
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")),
            );
        }
        h
    }

    #[test]
    fn the_client_is_the_hop_the_outermost_trusted_proxy_saw() {
        let peer = Some(ip("10.0.0.9"));
        let h = forwarded(&["6.6.6.6, 7.7.7.7", "203.0.113.5"]);
        assert_eq!(
            TrustedProxies(0).client(&h, peer),
            peer,
            "no proxies: the peer"
        );
        assert_eq!(TrustedProxies(1).client(&h, peer), Some(ip("203.0.113.5")));
        assert_eq!(TrustedProxies(2).client(&h, peer), Some(ip("7.7.7.7")));
        // Fewer hops than proxies: the leftmost, which a trusted proxy wrote.
        assert_eq!(TrustedProxies(5).client(&h, peer), Some(ip("6.6.6.6")));
        // Rotating the leftmost entry changes nothing for one proxy.
        let rotated = forwarded(&["1.1.1.1, 203.0.113.5"]);
        assert_eq!(
            TrustedProxies(1).client(&rotated, peer),
            Some(ip("203.0.113.5"))
        );
        assert_eq!(TrustedProxies(1).client(&HeaderMap::new(), peer), peer);
        assert_eq!(TrustedProxies(1).client(&forwarded(&["junk"]), peer), peer);
    }

    #[test]
    fn hops_may_carry_ports() {
        assert_eq!(parse_hop("1.2.3.4:80"), Some(ip("1.2.3.4")));
        assert_eq!(parse_hop("[2001:db8::1]:443"), Some(ip("2001:db8::1")));
        assert_eq!(parse_hop("2001:db8::1"), Some(ip("2001:db8::1")));
        assert_eq!(parse_hop("unknown"), None);
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        assert_eq!(client_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            client_key(ip("2001:db8:1:2:aaaa::1")),
            client_key(ip("2001:db8:1:2:ffff:1:2:3"))
        );
        assert_ne!(
            client_key(ip("2001:db8:1:2::1")),
            client_key(ip("2001:db8:1:3::1"))
        );
        assert_eq!(client_key(ip("::ffff:10.1.2.3")), ip("10.1.2.3"));
        assert_eq!(client_key(ip("10.1.2.3")), ip("10.1.2.3"));
    }
}
