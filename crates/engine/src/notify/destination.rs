//! Where webhooks may go. In `production` a webhook must not reach this machine or the
//! installation's own network (SSRF): loopback, private, link-local, CGNAT, multicast,
//! unspecified, broadcast and reserved addresses are refused, in whatever form they are written
//! (decimal, octal or hex IPv4, IPv6, IPv4 inside IPv6).
//!
//! Two checks: the API refuses URLs whose host is such an address written out, or `localhost`;
//! for names, the delivery client's resolver drops such addresses after resolution, on the
//! connection actually made, so a name that changes its answer (DNS rebinding) cannot slip by.

use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::config::{Config, Environment};

/// The error code of an attempt refused for its destination, and the only thing said about it:
/// which address a name resolved to is not the merchant's business.
pub const DESTINATION_NOT_ALLOWED: &str = "DESTINATION_NOT_ALLOWED";

/// Which destinations an installation delivers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destinations {
    /// The sandbox (local receivers), or `--allow-private-webhooks` (on-premises receivers).
    Any,
    /// Production: public addresses only.
    PublicOnly,
}

impl Destinations {
    pub fn new(environment: Environment, allow_private: bool) -> Destinations {
        if environment.is_sandbox() || allow_private {
            Destinations::Any
        } else {
            Destinations::PublicOnly
        }
    }

    pub fn of(config: &Config) -> Destinations {
        Destinations::new(config.environment, config.allow_private_webhooks)
    }

    /// Whether a URL's host, as written, is acceptable. Names other than `localhost` pass here:
    /// they are checked when resolved, at each delivery.
    pub fn allows_url(self, url: &url::Url) -> bool {
        if self == Destinations::Any {
            return true;
        }
        match url.host() {
            Some(url::Host::Ipv4(ip)) => is_public(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => is_public(IpAddr::V6(ip)),
            Some(url::Host::Domain(name)) => !is_localhost_name(name),
            None => false,
        }
    }

    /// Whether a URL's host, when written as an address, may be connected to. An address in the
    /// URL is connected to without resolution, out of the resolver's reach, so it is checked
    /// here at each attempt; names (`localhost` included) are left to the resolver.
    pub fn allows_written_address(self, url: &url::Url) -> bool {
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.allows_ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => self.allows_ip(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => true,
            None => false,
        }
    }

    /// Whether a resolved (or literal) address may be connected to.
    pub fn allows_ip(self, ip: IpAddr) -> bool {
        self == Destinations::Any || is_public(ip)
    }
}

/// `localhost` and its subdomains (RFC 6761), with or without the final dot.
fn is_localhost_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Why an address is not a public destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    SharedAddressSpace,
    Multicast,
    Broadcast,
    Documentation,
    /// Other special-purpose ranges (IETF protocol assignments, benchmarking, future use, ...).
    SpecialPurpose,
}

/// `None` for an address on the public Internet, otherwise the reserved range it belongs to.
pub fn classify(ip: IpAddr) -> Option<Reserved> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

pub fn is_public(ip: IpAddr) -> bool {
    classify(ip).is_none()
}

fn classify_v4(ip: Ipv4Addr) -> Option<Reserved> {
    let [a, b, c, _] = ip.octets();
    let reserved = match (a, b, c) {
        (0, _, _) => Reserved::Unspecified,
        (10, _, _) => Reserved::Private,
        (100, 64..=127, _) => Reserved::SharedAddressSpace,
        (127, _, _) => Reserved::Loopback,
        (169, 254, _) => Reserved::LinkLocal,
        (172, 16..=31, _) => Reserved::Private,
        (192, 0, 0) => Reserved::SpecialPurpose,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Reserved::Documentation,
        (192, 88, 99) => Reserved::SpecialPurpose,
        (192, 168, _) => Reserved::Private,
        (198, 18..=19, _) => Reserved::SpecialPurpose,
        (224..=239, _, _) => Reserved::Multicast,
        _ if ip == Ipv4Addr::BROADCAST => Reserved::Broadcast,
        (240..=255, _, _) => Reserved::SpecialPurpose,
        _ => return None,
    };
    Some(reserved)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Reserved> {
    if ip.is_unspecified() {
        return Some(Reserved::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Reserved::Loopback);
    }
    let s = ip.segments();
    // IPv4 carried inside IPv6 reaches that IPv4 address: judge it as such.
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return classify_v4(Ipv4Addr::from(embedded_v4(s[6], s[7])));
    }
    // 64:ff9b::/96, the well-known NAT64 prefix.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(Ipv4Addr::from(embedded_v4(s[6], s[7])));
    }
    // 2002::/16, 6to4: the IPv4 address follows the prefix.
    if s[0] == 0x2002 {
        return classify_v4(Ipv4Addr::from(embedded_v4(s[1], s[2])));
    }
    let reserved = match s[0] {
        0xfc00..=0xfdff => Reserved::Private,
        0xfe80..=0xfebf => Reserved::LinkLocal,
        // Site-local (deprecated), private in effect.
        0xfec0..=0xfeff => Reserved::Private,
        0xff00..=0xffff => Reserved::Multicast,
        0x2001 if s[1] == 0x0db8 => Reserved::Documentation,
        0x3fff if s[1] <= 0x0fff => Reserved::Documentation,
        // 64:ff9b:1::/48, local-use NAT64; 100::/64, discard-only.
        0x0064 if s[1] == 0xff9b && s[2] == 1 => Reserved::Private,
        0x0100 if s[1..4] == [0, 0, 0] => Reserved::SpecialPurpose,
        // Everything else below 2000::/3 is unassigned or special.
        0x0000..=0x1fff => Reserved::SpecialPurpose,
        _ => return None,
    };
    Some(reserved)
}

fn embedded_v4(high: u16, low: u16) -> [u8; 4] {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    [a, b, c, d]
}

/// A destination refused by the rule; its text is the attempt's error code, nothing more.
#[derive(Debug)]
pub struct NotAllowed;

impl fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(DESTINATION_NOT_ALLOWED)
    }
}

impl StdError for NotAllowed {}

/// Whether an error (or any error under it) is a refused destination.
pub fn is_not_allowed(error: &(dyn StdError + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<NotAllowed>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// The delivery client's resolver in production: resolves with the system, then keeps only
/// public addresses. The connection is made to what this returns, so the address checked is
/// the address connected to.
pub struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            if is_localhost_name(&host) {
                return Err(Box::new(NotAllowed) as Box<dyn StdError + Send + Sync>);
            }
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> =
                resolved.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(Box::new(NotAllowed) as Box<dyn StdError + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn reserved_ipv4_ranges_are_refused() {
        for (addr, why) in [
            ("0.0.0.0", Reserved::Unspecified),
            ("0.1.2.3", Reserved::Unspecified),
            ("127.0.0.1", Reserved::Loopback),
            ("127.255.255.254", Reserved::Loopback),
            ("10.0.0.1", Reserved::Private),
            ("172.16.0.1", Reserved::Private),
            ("172.31.255.255", Reserved::Private),
            ("192.168.1.1", Reserved::Private),
            ("169.254.169.254", Reserved::LinkLocal),
            ("100.64.0.1", Reserved::SharedAddressSpace),
            ("100.127.255.255", Reserved::SharedAddressSpace),
            ("224.0.0.1", Reserved::Multicast),
            ("239.255.255.255", Reserved::Multicast),
            ("255.255.255.255", Reserved::Broadcast),
            ("240.0.0.1", Reserved::SpecialPurpose),
            ("192.0.0.8", Reserved::SpecialPurpose),
            ("198.18.0.1", Reserved::SpecialPurpose),
            ("192.0.2.1", Reserved::Documentation),
            ("198.51.100.7", Reserved::Documentation),
            ("203.0.113.9", Reserved::Documentation),
        ] {
            assert_eq!(classify(ip(addr)), Some(why), "{addr}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.169.0.1",
            "169.255.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82b::200e",
            "2002:0808:0808::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(classify(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn reserved_ipv6_ranges_and_embedded_ipv4_are_refused() {
        for (addr, why) in [
            ("::", Reserved::Unspecified),
            ("::1", Reserved::Loopback),
            ("fc00::1", Reserved::Private),
            ("fd12:3456::1", Reserved::Private),
            ("fe80::1", Reserved::LinkLocal),
            ("fec0::1", Reserved::Private),
            ("ff02::1", Reserved::Multicast),
            ("2001:db8::1", Reserved::Documentation),
            ("::ffff:127.0.0.1", Reserved::Loopback),
            ("::ffff:10.1.2.3", Reserved::Private),
            ("::ffff:0.0.0.0", Reserved::Unspecified),
            ("::127.0.0.1", Reserved::Loopback),
            ("64:ff9b::a9fe:a9fe", Reserved::LinkLocal),
            ("2002:7f00:0001::1", Reserved::Loopback),
            ("2002:c0a8:0101::1", Reserved::Private),
            ("100::1", Reserved::SpecialPurpose),
        ] {
            assert_eq!(classify(ip(addr)), Some(why), "{addr}");
        }
    }

    #[test]
    fn literal_hosts_in_every_spelling_are_judged_by_their_address() {
        let production = Destinations::new(Environment::Production, false);
        for refused in [
            "https://127.0.0.1/h",
            "https://2130706433/h",
            "https://0x7f000001/h",
            "https://0177.0.0.1/h",
            "https://0x7f.1/h",
            "https://127.1/h",
            "https://0.0.0.0/h",
            "https://0/h",
            "https://[::1]/h",
            "https://[::ffff:127.0.0.1]/h",
            "https://[::ffff:7f00:1]/h",
            "https://[fd00::1]:8443/h",
            "https://169.254.169.254/latest/meta-data",
            "https://10.0.0.1/h",
            "https://localhost/h",
            "https://LOCALHOST./h",
            "https://api.localhost:9000/h",
        ] {
            let url = url::Url::parse(refused).unwrap();
            assert!(!production.allows_url(&url), "{refused} should be refused");
        }
        for allowed in [
            "https://example.com/h",
            "https://8.8.8.8/h",
            "https://[2606:4700:4700::1111]/h",
            "https://localhost.example.com/h",
        ] {
            let url = url::Url::parse(allowed).unwrap();
            assert!(production.allows_url(&url), "{allowed} should pass");
            assert!(production.allows_written_address(&url), "{allowed}");
        }
        // At send time, only addresses are judged from the URL; names go to the resolver.
        for (url, allowed) in [
            ("https://2130706433/h", false),
            ("https://[::ffff:10.0.0.1]/h", false),
            ("https://localhost/h", true),
        ] {
            let url = url::Url::parse(url).unwrap();
            assert_eq!(production.allows_written_address(&url), allowed, "{url}");
        }
    }

    #[test]
    fn the_sandbox_and_the_on_premises_flag_allow_everything() {
        let local = url::Url::parse("https://127.0.0.1/h").unwrap();
        for d in [
            Destinations::new(Environment::Sandbox, false),
            Destinations::new(Environment::Production, true),
        ] {
            assert_eq!(d, Destinations::Any);
            assert!(d.allows_url(&local));
            assert!(d.allows_ip(ip("10.0.0.1")));
        }
        assert!(!Destinations::new(Environment::Production, false).allows_ip(ip("10.0.0.1")));
    }

    #[tokio::test]
    async fn the_resolver_drops_reserved_answers() {
        // `localhost` by name, and names the system resolver answers with loopback itself.
        for name in ["localhost", "127.0.0.1", "::1", "10.1.2.3"] {
            let err = match PublicOnlyResolver.resolve(name.parse().unwrap()).await {
                Ok(addrs) => panic!("{name} resolved to {:?}", addrs.collect::<Vec<_>>()),
                Err(e) => e,
            };
            assert!(is_not_allowed(err.as_ref()), "{name}: {err}");
            assert_eq!(err.to_string(), DESTINATION_NOT_ALLOWED);
        }
        let addrs: Vec<SocketAddr> = PublicOnlyResolver
            .resolve("8.8.4.4".parse().unwrap())
            .await
            .expect("a public address resolves")
            .collect();
        assert_eq!(addrs, vec!["8.8.4.4:0".parse::<SocketAddr>().unwrap()]);
    }
}
