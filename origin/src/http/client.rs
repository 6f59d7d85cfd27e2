//! Who a client is, for the abuse limits, and what it may do: how many joins
//! per second one address may make (`--ip-join-rate`) and how many places it
//! may hold in a room (`--ip-max-places`).
//!
//! The address is the TCP peer's, or the edge's `CF-Connecting-IP` when the
//! request proves it came through the edge (`Waiting-Room-Edge` carries the
//! `--edge-secret`); any other `CF-Connecting-IP` is ignored, so a client
//! cannot pick its own address. IPv6 clients are counted by their /64, the
//! block one subscriber usually holds, so rotating addresses within it gains
//! nothing. Nothing here touches the store.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::queue::PlaceLimit;
use token::{EDGE_HEADER, Secret};

use crate::state::AppState;

/// The header the edge names the client address in.
pub const CLIENT_IP_HEADER: &str = "cf-connecting-ip";
/// How often addresses that are back to a full allowance are forgotten.
const FORGET_EVERY: Duration = Duration::from_secs(10);

/// A client as the abuse limits count it: an IPv4 address, or an IPv6 /64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The key for `ip`: IPv4 (also when mapped into IPv6) as is, IPv6 cut to its /64.
    pub fn of(ip: IpAddr) -> ClientKey {
        match ip {
            IpAddr::V4(v4) => ClientKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey(IpAddr::V4(v4)),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    ClientKey(IpAddr::V6(Ipv6Addr::from(prefix)))
                }
            },
        }
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// The operator's abuse settings and the join rate limiter's state.
#[derive(Default)]
pub struct ClientPolicy {
    edge_secret: Option<Secret>,
    joins: Option<DefaultKeyedRateLimiter<ClientKey>>,
    max_places: u32,
}

impl fmt::Debug for ClientPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientPolicy")
            .field("edge_secret", &self.edge_secret.is_some())
            .field("join_rate", &self.joins.is_some())
            .field("max_places", &self.max_places)
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
        }
    }

    /// Whether the join limiter is on (and so needs its housekeeping).
    pub fn limits_joins(&self) -> bool {
        self.joins.is_some()
    }

    /// The client behind a request: the edge's `CF-Connecting-IP` when the
    /// request carries the edge secret, else the TCP peer. `peer` is `None`
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
        let ip = named
            .or(peer.map(|p| p.ip()))
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        ClientKey::of(ip)
    }

    /// Counts one join by `client`; over the rate, 429 with the time to wait.
    pub fn check_join(&self, client: &ClientKey) -> Result<(), ApiError> {
        let Some(joins) = &self.joins else {
            return Ok(());
        };
        joins.check_key(client).map_err(|not_until| {
            let wait = not_until.wait_time_from(joins.clock().now());
            metrics::counter!(crate::telemetry::JOINS_RATE_LIMITED).increment(1);
            ApiError::RateLimited {
                retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
            }
        })
    }

    /// The cap on places `client` may hold in a room, if there is one.
    pub fn place_limit(&self, client: &ClientKey) -> Option<PlaceLimit> {
        (self.max_places > 0).then(|| PlaceLimit {
            holder: client.to_string(),
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

/// The client behind the request (see [`ClientPolicy::client_of`]).
pub struct Client(pub ClientKey);

impl FromRequestParts<AppState> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| *addr);
        Ok(Client(state.clients.client_of(&parts.headers, peer)))
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

    #[test]
    fn ipv6_counts_by_64() {
        let a = ClientKey::of("2001:db8:1:2:aaaa::1".parse().unwrap());
        let b = ClientKey::of("2001:db8:1:2:bbbb::2".parse().unwrap());
        let c = ClientKey::of("2001:db8:1:3::1".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.to_string(), "2001:db8:1:2::/64");
        let mapped = ClientKey::of("::ffff:192.0.2.1".parse().unwrap());
        assert_eq!(mapped.to_string(), "192.0.2.1");
    }

    #[test]
    fn join_rate_per_address() {
        let policy = ClientPolicy::new(None, 2, 0);
        let a = ClientKey::of("192.0.2.1".parse().unwrap());
        let b = ClientKey::of("192.0.2.2".parse().unwrap());
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
    fn place_limit_only_when_set() {
        let a = ClientKey::of("192.0.2.1".parse().unwrap());
        assert_eq!(ClientPolicy::new(None, 0, 0).place_limit(&a), None);
        assert_eq!(
            ClientPolicy::new(None, 0, 3).place_limit(&a),
            Some(PlaceLimit {
                holder: "192.0.2.1".into(),
                max: 3
            })
        );
    }
}
