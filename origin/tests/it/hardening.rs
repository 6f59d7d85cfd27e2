//! Small defences of the operator surface, each against what an attacker
//! would try: cookies whose `Secure` flag a client can talk the origin out
//! of, admin keys guessed at speed, `/metrics` read by anyone, and a
//! sibling subdomain's page riding on the visitor's cookies.

use std::time::Duration;

use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use serde_json::Value;

const METRICS_KEY: &str = "metrics-key-0123456789";

fn join_from(room: &str, host: &str) -> Request<Body> {
    Request::post(format!("/queue/{room}/join"))
        .header("host", host)
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn secure_comes_from_configuration_not_from_the_host_header() {
    let t = test_store(Store::Redis);
    let room = make_room(t.store.as_ref(), "secure", settings(5)).await;
    // A local proxy in front of an https site sends `Host: localhost:8080`.
    let secure = Api::new(state(t.store.clone()).with_secure_cookies(true));
    for host in ["localhost:8080", "127.0.0.1:8080", "[::1]"] {
        let r = secure.send(join_from(room.as_str(), host)).await;
        assert_eq!(r.status, 200);
        let cookies = r.cookies();
        assert!(!cookies.is_empty());
        assert!(
            cookies.iter().all(|c| c.contains("; Secure")),
            "{host}: {cookies:?}"
        );
    }
    // And a plain-http loopback origin does not start sending Secure
    // because a request claims another host or https.
    let plain = Api::new(state(t.store.clone()));
    let mut request = join_from(room.as_str(), "tickets.example.com");
    request
        .headers_mut()
        .insert("x-forwarded-proto", "https".parse().unwrap());
    let r = plain.send(request).await;
    assert!(
        r.cookies().iter().all(|c| !c.contains("Secure")),
        "{:?}",
        r.cookies()
    );
}

#[tokio::test]
async fn failed_admin_calls_from_one_address_are_throttled() {
    let t = test_store(Store::Redis);
    // Through the edge, for a client out on the internet.
    let edge = "edge-secret-for-tests-0123456789";
    let state = admin_state(t.store.clone())
        .with_clients(origin::limits::clients::ClientPolicy::new(Some(edge), 0, 0));
    let server = spawn(state, None).await;
    let http = reqwest::Client::new();
    let call = |key: &'static str| {
        http.get(server.url("/admin/rooms"))
            .bearer_auth(key)
            .header("waiting-room-edge", edge)
            .header("cf-connecting-ip", "203.0.113.9")
            .send()
    };
    for _ in 0..5 {
        let r = call("wrong-key-0123456789abcdef").await.unwrap();
        assert_eq!(r.status(), 401);
        assert!(r.headers().get("retry-after").is_none());
    }
    // Throttled: still 401 (a wrong key is 401, as the contract says), now
    // with Retry-After, and the key is no longer compared.
    let r = call("wrong-key-0123456789abcdef").await.unwrap();
    assert_eq!(r.status(), 401);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=5).contains(&wait), "{wait}");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_admin_key");
    // While throttled even the right key is refused: a lucky guess learns nothing.
    let r = call(ADMIN_KEY).await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().get("retry-after").is_some());
    // The throttle leaks: after a while the right key works again.
    // (The scenario: a real server refilling on the real clock, which has no hook.)
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let r = call(ADMIN_KEY).await.unwrap();
    assert_eq!(r.status(), 200);
    server.stop().await;
}

/// Behind a proxy on the same host every request comes from loopback: the
/// machine itself is throttled like anyone (never exempt), and with the
/// proxy trusted each client behind it is told apart by the address the
/// proxy appended to `X-Forwarded-For`.
#[tokio::test]
async fn admin_calls_through_a_local_proxy_are_throttled_per_client() {
    let t = test_store(Store::Redis);
    let proxied = admin_state(t.store.clone()).with_clients(
        origin::limits::clients::ClientPolicy::default()
            .with_trusted_proxies(vec!["127.0.0.1".parse().unwrap()]),
    );
    let server = spawn(proxied, None).await;
    let http = reqwest::Client::new();
    let call = |key: &'static str, client: &'static str| {
        http.get(server.url("/admin/rooms"))
            .bearer_auth(key)
            // What the client wrote first, then what the proxy appended.
            .header("x-forwarded-for", format!("10.9.9.9, {client}"))
            .send()
    };
    for _ in 0..6 {
        call("wrong-key-0123456789abcdef", "203.0.113.9")
            .await
            .unwrap();
    }
    let r = call(ADMIN_KEY, "203.0.113.9").await.unwrap();
    assert_eq!(r.status(), 401, "the guesser is throttled");
    assert!(r.headers().get("retry-after").is_some());
    let r = call(ADMIN_KEY, "198.51.100.7").await.unwrap();
    assert_eq!(r.status(), 200, "another client behind the proxy is not");
    server.stop().await;

    // No proxy configured: loopback is one client, and it is throttled.
    let plain = spawn(admin_state(t.store.clone()), None).await;
    for _ in 0..6 {
        let r = http
            .get(plain.url("/admin/rooms"))
            .bearer_auth("wrong-key-0123456789abcdef")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = http
        .get(plain.url("/admin/rooms"))
        .bearer_auth(ADMIN_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "loopback is not exempt");
    assert!(r.headers().get("retry-after").is_some());
    plain.stop().await;
}

/// Every answer that sets a cookie (a ticket, a renewed entry) is private
/// and never stored: a CDN rule that caches everything must not hand one
/// visitor's place or entry to another.
#[tokio::test]
async fn answers_that_set_cookies_are_never_stored_by_shared_caches() {
    let t = test_store(Store::Redis);
    let room = make_room(t.store.as_ref(), "private", settings(5)).await;
    let api = Api::new(state(t.store.clone()));
    let r = api.join(&room, None).await;
    assert!(!r.cookies().is_empty());
    assert_eq!(r.headers["cache-control"], "private, no-store");
    let entry = r.json["entry_token"].as_str().unwrap().to_owned();
    // The seat page renews the entry cookie.
    let r = api
        .send(
            Request::get(format!("/book/{room}/"))
                .header("host", "127.0.0.1:8080")
                .header("entry-token", entry)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(!r.cookies().is_empty(), "the entry is renewed");
    assert_eq!(r.headers["cache-control"], "private, no-store");
}

#[tokio::test]
async fn metrics_take_an_optional_bearer_key() {
    let t = test_store(Store::Redis);
    let open = Api::new(state(t.store.clone()));
    assert_eq!(open.call("GET", "/metrics", None).await.status, 200);

    let guarded = Api::new(state(t.store.clone()).with_metrics_key(METRICS_KEY));
    for key in [None, Some("wrong-metrics-key-0123"), Some(ADMIN_KEY)] {
        let r = guarded.call("GET", "/metrics", key).await;
        assert_eq!(r.status, 401, "{key:?}");
        assert_eq!(r.error_code(), "invalid_metrics_key");
        assert!(r.headers.contains_key("www-authenticate"));
    }
    let r = guarded.call("GET", "/metrics", Some(METRICS_KEY)).await;
    assert_eq!(r.status, 200);
}

/// A page on a sibling subdomain (user content, a forum) is `same-site` to
/// the browser, which sends the visitor's SameSite=Lax cookies along; its
/// `Origin` is not the site's own, so it may neither join nor leave for the
/// visitor (403 `cross_site`, nothing changed), unless the operator lists
/// it. The site's own page (`same-origin`) is fine even when a proxy
/// renamed `Host`.
#[tokio::test]
async fn a_sibling_subdomain_cannot_join_or_leave_for_the_visitor() {
    let t = test_store(Store::Redis);
    let room = make_room(t.store.as_ref(), "sibling", settings(0)).await;
    let api = Api::new(state(t.store.clone()));
    let ticket = api.join(&room, None).await.json["ticket"]
        .as_str()
        .unwrap()
        .to_owned();
    let from = |path: &str, site: &str, origin: &str| {
        Request::post(format!("/queue/{room}/{path}"))
            .header("host", "tickets.example")
            .header("sec-fetch-site", site)
            .header("origin", origin)
            .header("cookie", format!("wr_ticket_{room}={ticket}"))
            .body(Body::empty())
            .unwrap()
    };
    for path in ["leave", "join"] {
        let r = api
            .send(from(path, "same-site", "https://ugc.tickets.example"))
            .await;
        assert_eq!(
            (r.status.as_u16(), r.error_code()),
            (403, "cross_site"),
            "{path}"
        );
    }
    assert_eq!(api.status(&room, &ticket).await.json["state"], "waiting");
    // The site's own page, behind a proxy that sends another Host.
    let own = Request::post(format!("/queue/{room}/join"))
        .header("host", "origin.internal")
        .header("sec-fetch-site", "same-origin")
        .header("origin", "https://tickets.example")
        .header("cookie", format!("wr_ticket_{room}={ticket}"))
        .body(Body::empty())
        .unwrap();
    let r = api.send(own).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(
        seq_of(r.json["ticket"].as_str().unwrap(), &room),
        seq_of(&ticket, &room),
        "its own place back"
    );
    // Listed by the operator, the sibling may.
    let listed = Api::new(
        state(t.store.clone()).with_allowed_origins(vec!["https://ugc.tickets.example".into()]),
    );
    let r = listed
        .send(from("leave", "same-site", "https://ugc.tickets.example"))
        .await;
    assert_eq!(r.status, 204, "{}", r.json);
}
