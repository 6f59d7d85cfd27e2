//! Abuse limits through a real server on a loopback port (so the TCP peer is
//! real): joins per second per address, `CF-Connecting-IP` trusted only with
//! the edge secret, and the place cap handed to the store with the client's
//! address.

mod common;

use std::sync::Arc;

use common::recording::Recording;
use common::*;
use origin::http::client::ClientPolicy;
use origin::room::RoomSettings;
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
    let t = test_store();
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
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, _, body) = join(&http, &url, &[]).await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn no_rate_limit_when_off() {
    let t = test_store();
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
    let t = test_store();
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
            ("127.0.0.1".to_owned(), 2),
            ("127.0.0.1".to_owned(), 2),
            ("127.0.0.1".to_owned(), 2),
            ("2001:db8:5:6::/64".to_owned(), 2),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn no_place_cap_when_off() {
    let t = test_store();
    make_paused_room(t.store.as_ref(), "uncapped", RoomSettings::default()).await;
    let capped = Arc::new(Recording::new(t.store.clone()));
    let api = Api::new(state(capped.clone()));
    for _ in 0..3 {
        assert_eq!(api.join(&room("uncapped"), None).await.status, 200);
    }
    assert!(capped.join_limits().iter().all(Option::is_none));
}
