//! Who a client is, for the abuse limits, and what it may do: how many joins
//! per second one address may make (`--ip-join-rate`) and how many places it
//! may hold in a room (`--ip-max-places`).
//!
//! The address is the TCP peer's, or the edge's `CF-Connecting-IP` when the
//! request proves it came through the edge (`Waiting-Room-Edge` carries the
//! `--edge-secret`); any other `CF-Connecting-IP` is ignored, so a client
//! cannot pick its own address. IPv6 clients are counted by their network
//! (`--ipv6-prefix`, default /64, the block one subscriber usually holds; a
//! provider that hands out /56 or /48 calls for that), so rotating addresses
//! within it gains nothing. Nothing here touches the store.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use tokio_util::sync::CancellationToken;

use queue::PlaceLimit;
use token::{EDGE_HEADER, Secret};

use crate::error::ApiError;

/// The header the edge names the client address in.
pub const CLIENT_IP_HEADER: &str = "cf-connecting-ip";
/// What a trusted proxy (`--trusted-proxies`) names the client in.
pub const FORWARDED_FOR_HEADER: &str = "x-forwarded-for";
/// How often addresses that are back to a full allowance are forgotten.
const FORGET_EVERY: Duration = Duration::from_secs(10);

/// The IPv6 network clients are counted by unless configured otherwise.
pub const DEFAULT_IPV6_PREFIX: u8 = 64;
/// The widest and narrowest IPv6 networks `--ipv6-prefix` accepts.
pub const IPV6_PREFIXES: std::ops::RangeInclusive<u8> = 32..=128;

/// A client as the abuse limits count it: an IPv4 address, or an IPv6
/// network (its prefix length beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey {
    /// The address, IPv6 cut to `prefix` bits.
    ip: IpAddr,
    /// 32 for IPv4; the network's length for IPv6.
    prefix: u8,
}

impl ClientKey {
    /// The key for `ip`: IPv4 (also when mapped into IPv6) as is, IPv6 cut
    /// to its first `ipv6_prefix` bits (held to [`IPV6_PREFIXES`]).
    pub fn of(ip: IpAddr, ipv6_prefix: u8) -> ClientKey {
        let v6 = match ip {
            IpAddr::V4(v4) => return ClientKey::v4(v4),
            IpAddr::V6(v6) => v6,
        };
        if let Some(v4) = v6.to_ipv4_mapped() {
            return ClientKey::v4(v4);
        }
        let prefix = ipv6_prefix.clamp(*IPV6_PREFIXES.start(), *IPV6_PREFIXES.end());
        // At least 32 bits, so the shift stays below 128.
        let mask = u128::MAX << (128 - u32::from(prefix));
        ClientKey {
            ip: IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask)),
            prefix,
        }
    }

    fn v4(v4: std::net::Ipv4Addr) -> ClientKey {
        ClientKey {
            ip: IpAddr::V4(v4),
            prefix: 32,
        }
    }

    /// The client's own address, where the key holds it whole (IPv4, or
    /// IPv6 at /128): for checks that want the visitor's address, never a
    /// network's (Turnstile's `remoteip`).
    pub fn exact_ip(&self) -> Option<IpAddr> {
        (self.ip.is_ipv4() || self.prefix == 128).then_some(self.ip)
    }

    /// The short text the store keeps beside every place given under the
    /// place cap (its length is paid per place): the address's bytes in
    /// base64url, 6 characters for IPv4; for IPv6 the prefix length and the
    /// network's bytes (12 characters for a /64), never 6, so the two
    /// families cannot collide.
    pub fn holder(&self) -> String {
        match self.ip {
            IpAddr::V4(v4) => URL_SAFE_NO_PAD.encode(v4.octets()),
            IpAddr::V6(v6) => {
                let bytes = usize::from(self.prefix).div_ceil(8);
                let mut key = vec![self.prefix];
                key.extend(v6.octets().iter().take(bytes));
                URL_SAFE_NO_PAD.encode(key)
            }
        }
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/{}", self.prefix),
        }
    }
}

/// The address a proxy appended last to `X-Forwarded-For` (the only one it
/// vouches for: the ones before it are what the client sent).
fn forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    let last = headers.get_all(FORWARDED_FOR_HEADER).iter().next_back()?;
    last.to_str()
        .ok()?
        .rsplit(',')
        .next()?
        .trim()
        .parse::<IpAddr>()
        .ok()
}

/// The operator's abuse settings and the join rate limiter's state.
pub struct ClientPolicy {
    edge_secret: Option<Secret>,
    joins: Option<DefaultKeyedRateLimiter<ClientKey>>,
    max_places: u32,
    ipv6_prefix: u8,
    trusted_proxies: Vec<IpAddr>,
}

impl Default for ClientPolicy {
    fn default() -> Self {
        ClientPolicy::new(None, 0, 0)
    }
}

impl fmt::Debug for ClientPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientPolicy")
            .field("edge_secret", &self.edge_secret.is_some())
            .field("join_rate", &self.joins.is_some())
            .field("max_places", &self.max_places)
            .field("ipv6_prefix", &self.ipv6_prefix)
            .field("trusted_proxies", &self.trusted_proxies)
            .finish()
    }
}

impl ClientPolicy {
    /// `join_rate`: joins per second per address (0 = off); `max_places`:
    /// places per address and room (0 = off); `edge_secret`: what the edge
    /// sends in `Waiting-Room-Edge` (`None`: `CF-Connecting-IP` is never trusted).
    pub fn new(edge_secret: Option<&str>, join_rate: u32, max_places: u32) -> ClientPolicy {
        ClientPolicy {
            edge_secret: edge_secret.map(Secret::new),
            joins: NonZeroU32::new(join_rate)
                .map(|rate| DefaultKeyedRateLimiter::keyed(Quota::per_second(rate))),
            max_places,
            ipv6_prefix: DEFAULT_IPV6_PREFIX,
            trusted_proxies: Vec::new(),
        }
    }

    /// Takes the client from `X-Forwarded-For` (the address the proxy
    /// appended last) when the TCP peer is one of `proxies`: a TLS proxy on
    /// the same host makes every client the loopback address otherwise.
    pub fn with_trusted_proxies(mut self, proxies: Vec<IpAddr>) -> ClientPolicy {
        self.trusted_proxies = proxies;
        self
    }

    /// Counts IPv6 clients by their first `bits` bits (held to
    /// [`IPV6_PREFIXES`]) for both limits, rather than by their /64.
    pub fn with_ipv6_prefix(mut self, bits: u8) -> ClientPolicy {
        self.ipv6_prefix = bits.clamp(*IPV6_PREFIXES.start(), *IPV6_PREFIXES.end());
        self
    }

    /// Whether the join limiter is on (and so needs its housekeeping).
    pub fn limits_joins(&self) -> bool {
        self.joins.is_some()
    }

    /// The client behind a request: the edge's `CF-Connecting-IP` when the
    /// request carries the edge secret, the last `X-Forwarded-For` address
    /// when the peer is a trusted proxy, else the TCP peer. `peer` is `None`
    /// only when the app is driven without a socket (tests); such requests
    /// share the unspecified address.
    pub fn client_of(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> ClientKey {
        let from_edge = self.edge_secret.as_ref().is_some_and(|secret| {
            headers
                .get(EDGE_HEADER)
                .is_some_and(|v| secret.matches(v.as_bytes()))
        });
        let named = from_edge
            .then(|| headers.get(CLIENT_IP_HEADER))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<IpAddr>().ok());
        let peer = peer.map(|p| p.ip());
        let forwarded = peer
            .filter(|p| self.trusted_proxies.contains(p))
            .and_then(|_| forwarded_for(headers));
        let ip = named
            .or(forwarded)
            .or(peer)
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        ClientKey::of(ip, self.ipv6_prefix)
    }

    /// Counts one join by `client`; over the rate, 429 with the time to wait.
    pub fn check_join(&self, client: &ClientKey) -> Result<(), ApiError> {
        let Some(joins) = &self.joins else {
            return Ok(());
        };
        joins.check_key(client).map_err(|not_until| {
            let wait = not_until.wait_time_from(joins.clock().now());
            metrics::counter!(crate::metric_names::JOINS_RATE_LIMITED).increment(1);
            ApiError::RateLimited {
                retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
            }
        })
    }

    /// The cap on places `client` may hold in a room at once, if there is
    /// one; the store knows the client by [`ClientKey::holder`].
    pub fn place_limit(&self, client: &ClientKey) -> Option<PlaceLimit> {
        (self.max_places > 0).then(|| PlaceLimit {
            holder: client.holder(),
            max: self.max_places,
        })
    }

    /// Forgets, every few seconds until `cancel` fires, the addresses whose
    /// allowance is full again, so the limiter's memory stays bounded by the
    /// addresses seen in the last few seconds.
    pub async fn housekeeping(self: Arc<Self>, cancel: CancellationToken) {
        let Some(joins) = &self.joins else {
            return;
        };
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(FORGET_EVERY) => {}
            }
            joins.retain_recent();
            joins.shrink_to_fit();
            tracing::debug!(addresses = joins.len(), "join limiter pruned");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    const SECRET: &str = "edge-secret-0123456789";

    #[test]
    fn the_exact_address_only_where_the_key_holds_it_whole() {
        let v4: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(ClientKey::of(v4, 64).exact_ip(), Some(v4));
        let mapped: IpAddr = "::ffff:203.0.113.9".parse().unwrap();
        assert_eq!(ClientKey::of(mapped, 64).exact_ip(), Some(v4));
        let v6: IpAddr = "2001:db8::7".parse().unwrap();
        assert_eq!(ClientKey::of(v6, 64).exact_ip(), None);
        assert_eq!(ClientKey::of(v6, 128).exact_ip(), Some(v6));
    }

    #[test]
    fn a_trusted_proxy_names_the_client_others_do_not() {
        let policy =
            ClientPolicy::new(None, 0, 0).with_trusted_proxies(vec!["127.0.0.1".parse().unwrap()]);
        let proxy = Some("127.0.0.1:5000".parse().unwrap());
        let stranger = Some("10.0.0.1:5000".parse().unwrap());
        let forwarded = headers(&[(FORWARDED_FOR_HEADER, "1.2.3.4, 203.0.113.9")]);
        // The proxy's own entry (the last one) counts, not what the client wrote.
        assert_eq!(
            policy.client_of(&forwarded, proxy).to_string(),
            "203.0.113.9"
        );
        assert_eq!(
            policy.client_of(&forwarded, stranger).to_string(),
            "10.0.0.1"
        );
        assert_eq!(
            policy.client_of(&headers(&[]), proxy).to_string(),
            "127.0.0.1"
        );
        let junk = headers(&[(FORWARDED_FOR_HEADER, "203.0.113.9, nonsense")]);
        assert_eq!(policy.client_of(&junk, proxy).to_string(), "127.0.0.1");
    }

    #[test]
    fn the_edge_alone_names_the_client() {
        let policy = ClientPolicy::new(Some(SECRET), 0, 0);
        let peer = Some("10.0.0.1:5000".parse().unwrap());
        let key = |h: &HeaderMap| policy.client_of(h, peer).to_string();
        assert_eq!(key(&headers(&[])), "10.0.0.1");
        assert_eq!(
            key(&headers(&[(CLIENT_IP_HEADER, "203.0.113.9")])),
            "10.0.0.1"
        );
        assert_eq!(
            key(&headers(&[
                (CLIENT_IP_HEADER, "203.0.113.9"),
                (EDGE_HEADER, "wrong-secret-0123456789")
            ])),
            "10.0.0.1"
        );
        assert_eq!(
            key(&headers(&[
                (CLIENT_IP_HEADER, "203.0.113.9"),
                (EDGE_HEADER, SECRET)
            ])),
            "203.0.113.9"
        );
        assert_eq!(
            key(&headers(&[
                (CLIENT_IP_HEADER, "not an ip"),
                (EDGE_HEADER, SECRET)
            ])),
            "10.0.0.1"
        );
        // Without an edge secret configured, nobody is trusted.
        let open = ClientPolicy::new(None, 0, 0);
        assert_eq!(
            open.client_of(
                &headers(&[(CLIENT_IP_HEADER, "203.0.113.9"), (EDGE_HEADER, SECRET)]),
                peer
            )
            .to_string(),
            "10.0.0.1"
        );
    }

    fn key(ip: &str, prefix: u8) -> ClientKey {
        ClientKey::of(ip.parse().unwrap(), prefix)
    }

    #[test]
    fn ipv6_counts_by_its_network() {
        let a = key("2001:db8:1:2:aaaa::1", 64);
        let b = key("2001:db8:1:2:bbbb::2", 64);
        let c = key("2001:db8:1:3::1", 64);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.to_string(), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:3::1", 48), key("2001:db8:1:2:aaaa::1", 48));
        assert_eq!(key("2001:db8:1:3::1", 48).to_string(), "2001:db8:1::/48");
        assert_ne!(key("2001:db8:1:3::1", 48), key("2001:db8:2::1", 48));
        assert_eq!(key("2001:db8:ffff::1", 32).to_string(), "2001:db8::/32");
        assert_eq!(key("2001:db8::1", 128).to_string(), "2001:db8::1/128");
        assert_ne!(key("2001:db8::1", 128), key("2001:db8::2", 128));
        // Out of range is held to the range.
        assert_eq!(key("2001:db8:ffff::1", 8), key("2001:db8::1", 32));
        let mapped = key("::ffff:192.0.2.1", 48);
        assert_eq!(mapped.to_string(), "192.0.2.1");
        assert_eq!(mapped, key("192.0.2.1", 64));
    }

    #[test]
    fn the_holder_is_short_and_never_shared_across_families() {
        assert_eq!(key("127.0.0.1", 64).holder(), "fwAAAQ");
        assert_eq!(key("255.255.255.255", 64).holder(), "_____w");
        assert_eq!(key("2001:db8:5:6:7::9", 64).holder(), "QCABDbgABQAG");
        assert_eq!(key("2001:db8:5:6:7::9", 48).holder(), "MCABDbgABQ");
        assert_eq!(key("2001:db8::1", 128).holder().len(), 23);
        // A /32 has the 4 bytes an IPv4 address has; its key does not.
        assert_ne!(
            key("2001:db8::1", 32).holder(),
            key("32.1.13.184", 32).holder()
        );
        assert_eq!(key("2001:db8::1", 32).holder().len(), 7);
    }

    #[test]
    fn join_rate_per_address() {
        let policy = ClientPolicy::new(None, 2, 0);
        let a = key("192.0.2.1", 64);
        let b = key("192.0.2.2", 64);
        assert!(policy.check_join(&a).is_ok());
        assert!(policy.check_join(&a).is_ok());
        match policy.check_join(&a) {
            Err(ApiError::RateLimited { retry_after_secs }) => assert_eq!(retry_after_secs, 1),
            other => panic!("{other:?}"),
        }
        assert!(policy.check_join(&b).is_ok());
        assert!(ClientPolicy::new(None, 0, 0).check_join(&a).is_ok());
    }

    #[test]
    fn join_rate_per_ipv6_network() {
        let policy = ClientPolicy::new(None, 2, 0).with_ipv6_prefix(48);
        let peer = |ip: &str| Some(SocketAddr::new(ip.parse().unwrap(), 4000));
        let none = HeaderMap::new();
        for ip in ["2001:db8:7:1::1", "2001:db8:7:2::1"] {
            assert!(
                policy
                    .check_join(&policy.client_of(&none, peer(ip)))
                    .is_ok()
            );
        }
        let third = policy.client_of(&none, peer("2001:db8:7:3::1"));
        assert!(matches!(
            policy.check_join(&third),
            Err(ApiError::RateLimited { .. })
        ));
        let elsewhere = policy.client_of(&none, peer("2001:db8:8::1"));
        assert!(policy.check_join(&elsewhere).is_ok());
    }

    #[test]
    fn place_limit_only_when_set() {
        let a = key("192.0.2.1", 64);
        assert_eq!(ClientPolicy::new(None, 0, 0).place_limit(&a), None);
        assert_eq!(
            ClientPolicy::new(None, 0, 3).place_limit(&a),
            Some(PlaceLimit {
                holder: "wAACAQ".into(),
                max: 3
            })
        );
    }
}
