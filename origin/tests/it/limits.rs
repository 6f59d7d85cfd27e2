//! Abuse limits: through a real server on a loopback port (so the TCP peer
//! is real), joins per second per address, `CF-Connecting-IP` trusted only
//! with the edge secret, and the place cap handed to the store with the
//! client's address; on the store itself, the cap counts places held now
//! (freed by leaving, abandonment and the session's end) and forgets an
//! address that holds nothing.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::recording::Recording;
use crate::common::*;
use origin::limits::clients::ClientPolicy;
use origin::queue::redis::RoomKeys;
use origin::queue::{Joined, PlaceLimit, QueueStore, Standing};
use origin::room::{RoomId, RoomSettings, RoomState};
use reqwest::StatusCode;

const EDGE_SECRET: &str = "edge-secret-for-tests-0123456789";

async fn join(
    http: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, serde_json::Value) {
    let mut req = http.post(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    let h = r.headers().clone();
    (status, h, r.json().await.unwrap_or_default())
}

#[tokio::test]
async fn joins_over_the_rate_are_429_and_take_no_place() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "busy", RoomSettings::default()).await;
    let server = spawn(
        state(t.store.clone()).with_clients(ClientPolicy::new(Some(EDGE_SECRET), 2, 0)),
        None,
    )
    .await;
    let http = reqwest::Client::new();
    let url = server.url("/queue/busy/join");

    for _ in 0..2 {
        let (status, _, body) = join(&http, &url, &[]).await;
        assert_eq!(status, 200, "{body}");
    }
    let given = store.figures(&room).await.unwrap().places_given;
    assert_eq!(given, 2);
    let (status, headers, body) = join(&http, &url, &[]).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    assert_eq!(store.figures(&room).await.unwrap().places_given, given);

    // A client address is not taken from the request without the edge's secret...
    for proof in [None, Some("wrong-secret-0123456789abcdef")] {
        let mut h = vec![("cf-connecting-ip", "203.0.113.7")];
        if let Some(p) = proof {
            h.push(("waiting-room-edge", p));
        }
        let (status, _, body) = join(&http, &url, &h).await;
        assert_eq!(status, 429, "{proof:?}: {body}");
    }
    // ...and is with it: that address has its own allowance.
    let edge = [
        ("cf-connecting-ip", "203.0.113.7"),
        ("waiting-room-edge", EDGE_SECRET),
    ];
    for _ in 0..2 {
        let (status, _, body) = join(&http, &url, &edge).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, _, body) = join(&http, &url, &edge).await;
    assert_eq!(status, 429, "{body}");
    let (status, _, _) = join(
        &http,
        &url,
        &[
            ("cf-connecting-ip", "203.0.113.8"),
            ("waiting-room-edge", EDGE_SECRET),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(store.figures(&room).await.unwrap().places_given, 5);

    // The allowance comes back with time.
    // (The scenario: a real server refilling on the real clock, which has no hook.)
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, _, body) = join(&http, &url, &[]).await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn no_rate_limit_when_off() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "open", RoomSettings::default()).await;
    let server = spawn(state(t.store.clone()), None).await;
    let http = reqwest::Client::new();
    for _ in 0..20 {
        let (status, _, body) = join(&http, &server.url("/queue/open/join"), &[]).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(t.store.figures(&room).await.unwrap().places_given, 20);
    server.stop().await;
}

#[tokio::test]
async fn the_place_cap_goes_to_the_store_with_the_client_address() {
    let t = test_store(STORE);
    make_paused_room(t.store.as_ref(), "capped", RoomSettings::default()).await;
    // The store itself refuses a holder at its cap; the recording shows what
    // the origin handed it.
    let capped = Arc::new(Recording::new(t.store.clone()));
    let server = spawn(
        state(capped.clone()).with_clients(ClientPolicy::new(Some(EDGE_SECRET), 0, 2)),
        None,
    )
    .await;
    let http = reqwest::Client::new();
    let url = server.url("/queue/capped/join");
    for _ in 0..2 {
        let (status, _, body) = join(&http, &url, &[]).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, headers, body) = join(&http, &url, &[]).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "too_many_places");
    assert!(headers.contains_key("retry-after"));
    assert!(body.get("ticket").is_none());
    let edge = [
        ("cf-connecting-ip", "2001:db8:5:6:7::9"),
        ("waiting-room-edge", EDGE_SECRET),
    ];
    let (status, _, body) = join(&http, &url, &edge).await;
    assert_eq!(status, 200, "{body}");

    let holders: Vec<(String, u32)> = capped
        .join_limits()
        .into_iter()
        .map(|l| {
            let l = l.expect("every join carries the cap");
            (l.holder, l.max)
        })
        .collect();
    assert_eq!(
        holders,
        [
            // 127.0.0.1 and 2001:db8:5:6::/64, as the short keys the store
            // keeps beside each place.
            ("fwAAAQ".to_owned(), 2),
            ("fwAAAQ".to_owned(), 2),
            ("fwAAAQ".to_owned(), 2),
            ("QCABDbgABQAG".to_owned(), 2),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn addresses_of_one_ipv6_network_share_one_cap() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "v6", RoomSettings::default()).await;
    let policy = |bits| ClientPolicy::new(Some(EDGE_SECRET), 0, 2).with_ipv6_prefix(bits);
    // 60 addresses, each in a /64 of its own, all in 2001:db8:7::/48.
    let from = |i: usize| format!("2001:db8:7:{i:x}::1");
    let http = reqwest::Client::new();
    let places = |server: &crate::common::Running, addresses: Vec<String>| {
        let (http, url) = (http.clone(), server.url("/queue/v6/join"));
        async move {
            let mut given = 0;
            for ip in addresses {
                let edge = [
                    ("cf-connecting-ip", ip.as_str()),
                    ("waiting-room-edge", EDGE_SECRET),
                ];
                let (status, _, body) = join(&http, &url, &edge).await;
                match status.as_u16() {
                    200 => given += 1,
                    429 => assert_eq!(body["error"]["code"], "too_many_places"),
                    other => panic!("{other}: {body}"),
                }
            }
            given
        }
    };
    let server = spawn(state(t.store.clone()).with_clients(policy(48)), None).await;
    assert_eq!(places(&server, (0..60).map(from).collect()).await, 2);
    // Another /48 has its own cap.
    assert_eq!(places(&server, vec!["2001:db8:8::1".into(); 3]).await, 2);
    server.stop().await;
    let f = t.store.figures(&room).await.unwrap();
    assert_eq!((f.capped_clients, f.capped_places), (2, 4));

    // Counted by /64 (the default), each of them is a client of its own.
    let server = spawn(state(t.store.clone()).with_clients(policy(64)), None).await;
    assert_eq!(places(&server, (100..110).map(from).collect()).await, 10);
    server.stop().await;
}

#[tokio::test]
async fn no_place_cap_when_off() {
    let t = test_store(STORE);
    make_paused_room(t.store.as_ref(), "uncapped", RoomSettings::default()).await;
    let capped = Arc::new(Recording::new(t.store.clone()));
    let api = Api::new(state(capped.clone()));
    for _ in 0..3 {
        assert_eq!(api.join(&room("uncapped"), None).await.status, 200);
    }
    assert!(capped.join_limits().iter().all(Option::is_none));
}

/// A cap of two places for `holder`.
fn cap(holder: &str) -> PlaceLimit {
    PlaceLimit {
        holder: holder.into(),
        max: 2,
    }
}

/// A new place for `limit`'s holder: its sequence number, or `None` when the
/// cap refused it.
async fn place(store: &dyn QueueStore, room: &RoomId, limit: &PlaceLimit) -> Option<u64> {
    match store.join(room, None, Some(limit)).await.unwrap() {
        Joined::Answer(snap) => Some(snap.seq.expect("a place")),
        Joined::TooManyPlaces | Joined::ChallengeNeeded => None,
    }
}

#[tokio::test]
async fn joining_and_leaving_never_locks_an_address_out() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "revolving", RoomSettings::default()).await;
    let nat = cap("198.51.100.1");
    for round in 0..10 {
        let a = place(store, &room, &nat).await;
        let b = place(store, &room, &nat).await;
        assert!(a.is_some() && b.is_some(), "round {round}: refused");
        assert_eq!(place(store, &room, &nat).await, None, "round {round}");
        for seq in [a, b].into_iter().flatten() {
            assert!(store.leave(&room, seq).await.unwrap());
        }
    }
    assert_eq!(store.figures(&room).await.unwrap().places_given, 20);
}

#[tokio::test]
async fn a_cap_of_two_holds_two_places_and_frees_one_when_a_place_ends() {
    const T0: u64 = 1_800_000_000_000;
    let clock = Arc::new(AtomicU64::new(T0));
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let step = |ms: u64| clock.fetch_add(ms, Ordering::SeqCst);
    let room = make_paused_room(
        store,
        "capped",
        RoomSettings {
            capacity: 10,
            admit_per_second: 1_000.0,
            session_seconds: 5,
            abandon_seconds: 3,
            ..RoomSettings::default()
        },
    )
    .await;
    let nat = cap("198.51.100.1");
    let other = cap("198.51.100.2");

    // Two places in line, and no third.
    let a = place(store, &room, &nat).await.unwrap();
    let b = place(store, &room, &nat).await.unwrap();
    assert_eq!(place(store, &room, &nat).await, None);
    assert!(place(store, &room, &other).await.is_some());

    // Leaving frees one.
    assert!(store.leave(&room, a).await.unwrap());
    let c = place(store, &room, &nat).await.unwrap();
    assert_eq!(place(store, &room, &nat).await, None);

    // So does abandonment: b stops polling, c goes on.
    step(2_000);
    store.status(&room, c).await.unwrap();
    step(2_000);
    assert_eq!(
        store.tick(&room).await.unwrap().abandoned,
        2,
        "b and other's"
    );
    assert_eq!(
        store.status(&room, b).await.unwrap().standing,
        Standing::Gone
    );
    let d = place(store, &room, &nat).await.unwrap();
    assert_eq!(place(store, &room, &nat).await, None);

    // Admitted visitors still hold their places...
    store.set_state(&room, RoomState::Open).await.unwrap();
    let admitted = store.tick(&room).await.unwrap().admitted;
    assert_eq!(admitted, [c, d]);
    assert_eq!(place(store, &room, &nat).await, None);

    // ...until their sessions end: swept by a join at the cap or by a tick.
    step(5_000);
    let e = place(store, &room, &nat)
        .await
        .expect("ended sessions hold nothing");
    assert!(matches!(
        store.status(&room, e).await.unwrap().standing,
        Standing::Admitted { .. }
    ));
    let f = place(store, &room, &nat).await.unwrap();
    assert_eq!(place(store, &room, &nat).await, None);

    // Leaving a session (as a confirmed booking does) frees its place too.
    assert!(store.leave(&room, e).await.unwrap());
    let g = place(store, &room, &nat).await.unwrap();
    assert_eq!(place(store, &room, &nat).await, None);

    for seq in [f, g] {
        assert!(store.session_active(&room, seq).await.unwrap());
    }
    step(5_000);
    assert_eq!(store.tick(&room).await.unwrap().expired, 2, "f and g");
    assert!(place(store, &room, &nat).await.is_some());
    assert!(place(store, &room, &nat).await.is_some());
    assert_eq!(place(store, &room, &nat).await, None);
}

#[tokio::test]
async fn the_cap_forgets_every_address_once_the_line_empties() {
    const T0: u64 = 1_800_000_000_000;
    let clock = Arc::new(AtomicU64::new(T0));
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let step = |ms: u64| clock.fetch_add(ms, Ordering::SeqCst);
    let room = make_paused_room(
        store,
        "emptied",
        RoomSettings {
            capacity: 40,
            admit_per_second: 1_000.0,
            session_seconds: 5,
            abandon_seconds: 3,
            ..RoomSettings::default()
        },
    )
    .await;
    // 60 addresses, two places each: a third of the places are left, a third
    // abandoned, a third admitted and their sessions run out.
    let mut seqs = Vec::new();
    for i in 0..60 {
        let limit = cap(&format!("192.0.2.{i}"));
        for _ in 0..2 {
            seqs.push(place(store, &room, &limit).await.unwrap());
        }
    }
    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.capped_clients, f.capped_places), (60, 120));
    for &seq in &seqs[..40] {
        assert!(store.leave(&room, seq).await.unwrap());
    }
    step(2_000);
    for &seq in &seqs[80..] {
        store.status(&room, seq).await.unwrap();
    }
    step(2_000);
    assert_eq!(store.tick(&room).await.unwrap().abandoned, 40);
    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.capped_clients, f.capped_places), (20, 40));
    store.set_state(&room, RoomState::Open).await.unwrap();
    assert_eq!(store.tick(&room).await.unwrap().admitted.len(), 40);
    let f = store.figures(&room).await.unwrap();
    assert_eq!(
        (f.capped_clients, f.capped_places),
        (20, 40),
        "inside still holds"
    );
    step(6_000);
    let report = store.tick(&room).await.unwrap();
    assert_eq!((report.expired, report.waiting, report.active), (40, 0, 0));

    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.capped_clients, f.capped_places), (0, 0));
    if STORE != Store::Memory {
        let keys = RoomKeys::new(&t.prefix, &room);
        let mut redis = redis_conn().await;
        let left: u32 = redis::cmd("EXISTS")
            .arg(&keys.holders)
            .arg(&keys.held_by)
            .query_async(&mut redis)
            .await
            .unwrap();
        assert_eq!(left, 0, "the cap's hashes are gone from Redis");
    }
}

/// What the cap costs in Redis per waiter, by `MEMORY USAGE` of every key
/// of a room of 20,000 waiters, without the cap and with it (each waiter
/// its own IPv4 address, its own IPv6 /64, or two waiters per address).
/// Redis only: `cargo test -p origin --test it -- limits::what_the_cap --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: prints bytes per waiter"]
async fn what_the_cap_costs_in_redis_per_waiter() {
    use origin::limits::clients::ClientKey;
    const N: u32 = 20_000;
    let t = test_store(Store::Redis);
    let mut redis = redis_conn().await;
    /// The holder key of waiter `i`, if the cap is on.
    type Holder = fn(u32) -> Option<String>;
    let cases: [(&str, Holder); 4] = [
        ("no cap", |_| None),
        ("cap, an IPv4 address each", |i| {
            Some(ClientKey::of(std::net::Ipv4Addr::from(0x0a00_0000 + i).into(), 64).holder())
        }),
        ("cap, an IPv6 /64 each", |i| {
            let ip = std::net::Ipv6Addr::from(0x2001_0db8_u128 << 96 | u128::from(i) << 64 | 1);
            Some(ClientKey::of(ip.into(), 64).holder())
        }),
        ("cap, two per IPv4 address", |i| {
            Some(ClientKey::of(std::net::Ipv4Addr::from(0x0a00_0000 + i / 2).into(), 64).holder())
        }),
    ];
    let mut baseline = 0.0;
    for (n, (name, holder)) in cases.into_iter().enumerate() {
        let room = make_paused_room(
            t.store.as_ref(),
            &format!("cost-{n}"),
            RoomSettings::default(),
        )
        .await;
        for i in 0..N {
            let limit = holder(i).map(|holder| PlaceLimit { holder, max: 2 });
            let joined = t.store.join(&room, None, limit.as_ref()).await.unwrap();
            assert!(joined.answer().is_some());
        }
        let keys = RoomKeys::new(&t.prefix, &room);
        let mut bytes = 0u64;
        let mut line = String::new();
        for key in keys.all() {
            let used: Option<u64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut redis)
                .await
                .unwrap();
            let used = used.unwrap_or(0);
            bytes += used;
            line += &format!(" {}={used}", key.rsplit(':').next().unwrap());
        }
        let per = bytes as f64 / f64::from(N);
        if n == 0 {
            baseline = per;
        }
        println!(
            "{name}: {per:.1} B/waiter ({:+.1} for the cap);{line}",
            per - baseline
        );
    }
}
