//! Small defences of the operator surface, each against what an attacker
//! would try: cookies whose `Secure` flag a client can talk the origin out
//! of, admin keys guessed at speed, and `/metrics` read by anyone.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use common::*;
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
    let t = test_store();
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
    let t = test_store();
    let server = spawn(admin_state(t.store.clone()), None).await;
    let http = reqwest::Client::new();
    let call = |key: &'static str| http.get(server.url("/admin/rooms")).bearer_auth(key).send();
    for _ in 0..5 {
        let r = call("wrong-key-0123456789abcdef").await.unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = call("wrong-key-0123456789abcdef").await.unwrap();
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=5).contains(&wait), "{wait}");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    // While throttled even the right key is refused: a lucky guess learns nothing.
    let r = call(ADMIN_KEY).await.unwrap();
    assert_eq!(r.status(), 429);
    // The throttle leaks: after a while the right key works again.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let r = call(ADMIN_KEY).await.unwrap();
    assert_eq!(r.status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn metrics_take_an_optional_bearer_key() {
    let t = test_store();
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
