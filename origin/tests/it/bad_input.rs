//! Bad input through the real router: every malformed request gets the
//! contract's JSON error with the right status, nothing panics, and the
//! room's state is untouched.

use super::STORE;
use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use origin::room::RoomSettings;

#[tokio::test]
async fn malformed_requests_get_json_errors_and_change_nothing() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "strict", RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    let ticket = api.join(&room, None).await.ticket();
    let before = t.store.figures(&room).await.unwrap();

    let join = |body: &'static str| {
        Request::post("/queue/strict/join")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let big_header = "x".repeat(20_000);
    let cases: Vec<(Request<Body>, u16, &str)> = vec![
        (join("{"), 400, "malformed_json"),
        (join("{\"a\":"), 400, "malformed_json"),
        (join("nul"), 400, "malformed_json"),
        (join("\n"), 400, "malformed_json"),
        (join("  "), 400, "malformed_json"),
        (join("\x0c"), 400, "malformed_json"),
        (join("[]"), 422, "invalid_body"),
        (join("{\"seat\": 1}"), 422, "invalid_body"),
        (join("42"), 422, "invalid_body"),
        (
            Request::post("/queue/strict/join")
                .body(Body::from(vec![b' '; 4096]))
                .unwrap(),
            413,
            "body_too_large",
        ),
        (
            Request::post("/queue/strict/join")
                .header("x-padding", big_header.as_str())
                .body(Body::empty())
                .unwrap(),
            431,
            "headers_too_large",
        ),
        (
            Request::post("/queue/nosuchroom/join")
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::post("/queue/Strict/join")
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::post("/queue/-strict/join")
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::post("/queue/str%7Bict%7D/join")
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::post("/queue/str%00ict/join")
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::post(format!("/queue/{}/join", "a".repeat(65)))
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::get("/queue/nosuchroom/status")
                .header("authorization", format!("Bearer {ticket}"))
                .body(Body::empty())
                .unwrap(),
            404,
            "unknown_room",
        ),
        (
            Request::get("/queue/strict/join")
                .body(Body::empty())
                .unwrap(),
            405,
            "method_not_allowed",
        ),
        (
            Request::delete("/queue/strict/status")
                .body(Body::empty())
                .unwrap(),
            405,
            "method_not_allowed",
        ),
        (
            Request::get("/queue/strict").body(Body::empty()).unwrap(),
            404,
            "not_found",
        ),
        (
            Request::get("/nowhere").body(Body::empty()).unwrap(),
            404,
            "not_found",
        ),
        (
            Request::get("/queue/strict/status")
                .body(Body::empty())
                .unwrap(),
            401,
            "missing_ticket",
        ),
        (
            Request::post("/queue/strict/leave")
                .body(Body::empty())
                .unwrap(),
            401,
            "missing_ticket",
        ),
        (
            Request::get("/queue/strict/status")
                .header("authorization", "Bearer ")
                .body(Body::empty())
                .unwrap(),
            401,
            "invalid_ticket",
        ),
        (
            Request::get("/queue/strict/status")
                .header("cookie", format!("wr_ticket_strict={}", "A".repeat(9_000)))
                .body(Body::empty())
                .unwrap(),
            401,
            "invalid_ticket",
        ),
        (
            Request::get("/queue/strict/status")
                .header("authorization", b"Bearer \xff\xfe".as_slice())
                .body(Body::empty())
                .unwrap(),
            401,
            "invalid_ticket",
        ),
    ];
    for (request, status, code) in cases {
        let what = format!("{} {}", request.method(), request.uri());
        let r = api.send(request).await;
        assert_eq!(r.status.as_u16(), status, "{what}: {}", r.json);
        assert_eq!(r.error_code(), code, "{what}");
    }
    assert_eq!(
        t.store.figures(&room).await.unwrap(),
        before,
        "state untouched"
    );
}

#[tokio::test]
async fn an_empty_object_or_empty_body_joins() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "lenient", RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    for body in ["", "{}", " { } \n"] {
        let r = api
            .send(
                Request::post(format!("/queue/{room}/join"))
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, 200, "{body:?}: {}", r.json);
        assert_eq!(r.json["state"], "waiting");
    }
}

#[tokio::test]
async fn an_unreachable_store_is_503_not_a_hang_or_a_500() {
    // A Redis fault; the embedded store cannot be unreachable.
    if STORE == Store::Memory {
        return;
    }
    let store = std::sync::Arc::new(
        origin::queue::redis::RedisStore::connect(&origin::queue::redis::RedisConfig {
            url: "redis://127.0.0.1:1".into(), // nothing listens on port 1
            prefix: unique_prefix(),
            timeout: std::time::Duration::from_millis(200),
            cluster: false,
        })
        .unwrap(),
    );
    let api = Api::new(state(store));
    let r = api.join(&room("any"), None).await;
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.error_code(), "store_unavailable");
    assert!(r.headers.contains_key("retry-after"));
    let ready = api.call("GET", "/readyz", None).await;
    assert_eq!(ready.status, 503);
    let health = api.call("GET", "/healthz", None).await;
    assert_eq!(health.status, 200);
}

#[tokio::test]
async fn a_percent_encoded_room_is_the_room_it_spells() {
    // The room is read from the path in place unless it is encoded; an
    // encoded one is the decoded room (as axum decodes it), on every
    // route that takes one.
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "spelled", RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    let joined = api.call("POST", "/queue/%73pelled/join", None).await;
    assert_eq!(joined.status, 200, "{}", joined.json);
    assert_eq!(joined.json["room"]["id"], "spelled");
    let ticket = joined.ticket();
    let plain = api.status(&room, &ticket).await;
    let encoded = api
        .call("GET", "/queue/spell%65d/status", Some(&ticket))
        .await;
    assert_eq!(encoded.status, 200, "{}", encoded.json);
    assert_eq!(encoded.json["position"], plain.json["position"]);
    assert_eq!(t.store.figures(&room).await.unwrap().waiting, 1);
}
