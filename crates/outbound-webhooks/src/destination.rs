//! Where a delivery may go. Endpoint URLs are the owners' to choose, and the server fetches
//! them: without a check, a user could make it call what only it can reach (its own loopback
//! ports, the private network, a cloud's metadata service at 169.254.169.254). A destination
//! is refused when any address its host resolves to is loopback, private, link-local, shared
//! (100.64/10), unique-local, multicast, unspecified or otherwise not globally routable,
//! unless the operator's allow-list (`WEBHOOK_ENDPOINT_ALLOW`: host names or CIDRs,
//! comma-separated) names the host or holds the address.
//!
//! The check runs when an endpoint is registered and again when each delivery connects: the
//! dispatcher's HTTP client resolves names through [`Allow::resolve`], so a name that changes
//! its answer after registration (DNS rebinding) still cannot lead inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// The operator's allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allow {
    hosts: Vec<String>,
    networks: Vec<(IpAddr, u8)>,
}

impl Allow {
    /// `WEBHOOK_ENDPOINT_ALLOW`: comma-separated host names (`hooks.internal`), addresses
    /// (`10.0.0.7`) or networks (`10.0.0.0/8`, `::1/128`).
    pub fn parse(text: &str) -> Result<Allow, String> {
        let mut allow = Allow::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some((addr, bits)) = item.split_once('/') {
                let addr: IpAddr = addr.parse().map_err(|_| format!("{item}: not a network"))?;
                let max = if addr.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits
                    .parse()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("{item}: the prefix length must be 0 to {max}"))?;
                allow.networks.push((addr, bits));
            } else if let Ok(addr) = item.parse::<IpAddr>() {
                allow
                    .networks
                    .push((addr, if addr.is_ipv4() { 32 } else { 128 }));
            } else if item
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c))
            {
                allow.hosts.push(item.to_ascii_lowercase());
            } else {
                return Err(format!(
                    "{item}: expected a host name, an address or a network"
                ));
            }
        }
        Ok(allow)
    }

    fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        self.networks
            .iter()
            .any(|(net, bits)| within(ip, *net, *bits))
    }

    /// Why `ip` may not be reached, if it may not.
    pub fn refuses(&self, ip: IpAddr) -> Option<&'static str> {
        let why = internal(ip)?;
        (!self.allows_ip(ip)).then_some(why)
    }

    /// Checks a URL's host without resolving it (a request never waits on DNS): a literal
    /// address, and the names that always mean this machine or a metadata service. A name's
    /// addresses are checked when each delivery resolves it ([`Allow::resolve`]).
    pub fn check_url(&self, url: &url::Url) -> Result<(), String> {
        let ip = match url.host() {
            None => return Err("the URL has no host".into()),
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(url::Host::Domain(name)) => {
                if !self.allows_host(name) && is_internal_name(name) {
                    return Err(format!("{name} names this machine or its network"));
                }
                return Ok(());
            }
        };
        match self.refuses(ip) {
            Some(why) => Err(format!("{ip} is {why}")),
            None => Ok(()),
        }
    }

    /// Resolves `host` for a delivery, keeping only the addresses it may reach (an allowed
    /// host keeps all of them); none left is an error, and nothing is sent.
    pub fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
        if self.allows_host(host) {
            return Ok(addrs);
        }
        let reachable: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| self.refuses(a.ip()).is_none())
            .collect();
        if reachable.is_empty() {
            let why = addrs
                .first()
                .and_then(|a| self.refuses(a.ip()))
                .unwrap_or("no address");
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{host}: refused destination ({why}; see WEBHOOK_ENDPOINT_ALLOW)"),
            ));
        }
        Ok(reachable)
    }
}

/// Names that always mean this machine or a cloud's metadata service.
fn is_internal_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name == "metadata.google.internal"
        || name.ends_with(".internal") && name.starts_with("metadata")
}

/// Why `ip` is not a public destination, if it is not.
fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        // `::ffff:a.b.c.d` and the old `::a.b.c.d` both carry an IPv4 address: judge that (this
        // also judges `::1` and `::` as 0.0.0.1 and 0.0.0.0, refused as unspecified).
        IpAddr::V6(v6) => match v6.to_ipv4() {
            Some(v4) => internal_v4(v4),
            None => internal_v6(v6),
        },
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address (cloud metadata lives there)")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("not a unicast address")
    } else if reserved_v4(ip) {
        Some("a reserved address")
    } else {
        None
    }
}

/// IETF protocol assignments, benchmarking, the documentation networks, 6to4 relays.
fn reserved_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    matches!(
        (a, b, c),
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) | (192, 88, 99)
    ) || a == 198 && (b == 18 || b == 19)
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let first = segments[0];
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a unique-local (private) address")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if first & 0xffc0 == 0xfec0 {
        Some("a site-local (private) address")
    } else if first == 0x2001 && (segments[1] == 0 || segments[1] == 0xdb8) {
        // Teredo tunnels to an address this side cannot judge; the documentation network.
        Some("a tunnel or documentation address")
    } else if first == 0x2002 {
        // 6to4 carries the IPv4 address of its relay: judge that.
        let v4 = Ipv4Addr::new(
            (segments[1] >> 8) as u8,
            segments[1] as u8,
            (segments[2] >> 8) as u8,
            segments[2] as u8,
        );
        internal_v4(v4)
    } else if ip.is_multicast() {
        Some("not a unicast address")
    } else if first == 0x64 && ip.segments()[1] == 0xff9b {
        // NAT64 (64:ff9b::/96) embeds an IPv4 address: judge that.
        let [.., c, d] = ip.segments();
        let v4 = Ipv4Addr::new((c >> 8) as u8, c as u8, (d >> 8) as u8, d as u8);
        internal_v4(v4)
    } else {
        None
    }
}

fn within(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V4(_)) => ip
            .to_ipv4_mapped()
            .is_some_and(|v4| within(IpAddr::V4(v4), net, bits)),
        (IpAddr::V4(_), IpAddr::V6(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn internal_destinations_are_refused_unless_allowed() {
        let none = Allow::default();
        for bad in [
            "http://127.0.0.1/x",
            "http://[::1]/x",
            "http://10.1.2.3/x",
            "http://172.16.0.1/x",
            "http://192.168.1.1/x",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/x",
            "http://0.0.0.0/x",
            "http://[fd00::1]/x",
            "http://[fe80::1]/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://[64:ff9b::a9fe:a9fe]/x",
            "http://[::127.0.0.1]/x",
            "http://[2002:7f00:1::1]/x",
            "http://[2001:0:4136:e378::1]/x",
            "http://[fec0::1]/x",
            "http://203.0.113.9/x",
            "http://192.0.2.1/x",
            "http://localhost:8080/x",
            "http://api.localhost/x",
            "http://metadata.google.internal/x",
            "http://2130706433/x",
        ] {
            assert!(none.check_url(&url(bad)).is_err(), "{bad} was allowed");
        }
        assert!(none.check_url(&url("http://93.184.215.14/x")).is_ok());
        assert!(none.check_url(&url("http://[2606:4700::1111]/x")).is_ok());

        let allow = Allow::parse("127.0.0.1, 10.0.0.0/8 ,hooks.local,::1/128").unwrap();
        for good in [
            "http://127.0.0.1:9/x",
            "http://10.9.9.9/x",
            "http://[::1]:80/",
        ] {
            assert!(allow.check_url(&url(good)).is_ok(), "{good} was refused");
        }
        assert!(allow.check_url(&url("http://127.0.0.2/x")).is_err());
        assert!(allow.check_url(&url("http://192.168.0.1/x")).is_err());
        assert!(allow.allows_host("HOOKS.local."));
        for bad in ["10.0.0.0/33", "::1/129", "a b", "1.2.3.4/x"] {
            assert!(Allow::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolution_keeps_only_reachable_addresses() {
        let none = Allow::default();
        let err = none.resolve("localhost", 80).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        let allow = Allow::parse("localhost").unwrap();
        assert!(!allow.resolve("localhost", 80).unwrap().is_empty());
        let allow = Allow::parse("127.0.0.0/8").unwrap();
        assert!(allow.resolve("127.0.0.1", 80).is_ok());
    }
}
