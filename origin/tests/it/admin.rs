//! The admin API through the real router on the real Redis: changes take
//! effect on the next tick, pause stops admissions, close answers `closed`,
//! and a missing or wrong key, or bad settings, change nothing.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common::*;
use axum::body::Body;
use origin::clock::Clock;
use origin::queue::{QueueStore, RoomFigures};
use origin::room::{RoomId, RoomSettings, RoomState};
use serde_json::{Value, json};

/// The figures, minus what moves with the clock alone.
async fn figures(store: &dyn QueueStore, room: &RoomId) -> RoomFigures {
    let mut f = store.figures(room).await.unwrap();
    f.oldest_wait_seconds = None;
    f
}

/// A store and an admin API on a clock the test moves.
fn pinned() -> (TestStore, Api, Arc<AtomicU64>) {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let state = admin_state(t.store.clone()).with_clock(Clock::Manual(clock.clone()));
    (t, Api::new(state), clock)
}

/// Ticks once, after moving the clock far enough for the admission budget
/// to refill.
async fn next_tick(store: &dyn QueueStore, room: &RoomId, clock: &AtomicU64) -> Vec<u64> {
    clock.fetch_add(20, Ordering::SeqCst);
    store.tick(room).await.unwrap().admitted
}

#[tokio::test]
async fn a_capacity_change_takes_effect_on_the_next_tick() {
    let (t, api, clock) = pinned();
    let store = t.store.as_ref();
    let room = make_room(store, "grow", settings(1)).await;
    let mut seqs = Vec::new();
    for _ in 0..4 {
        let r = api.join(&room, None).await;
        assert_eq!(r.status, 200, "{}", r.json);
        seqs.push(seq_of(&r.ticket(), &room));
    }
    assert!(
        next_tick(store, &room, &clock).await.is_empty(),
        "capacity 1 is full"
    );

    let r = api
        .admin("PATCH", "/admin/rooms/grow", r#"{"capacity": 3}"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["capacity"], 3);
    assert_eq!(
        r.json["settings"]["admit_per_second"], 1000.0,
        "the rest is kept"
    );
    assert_eq!(r.json["live"]["waiting"], 3);
    assert_eq!(r.json["live"]["active"], 1);

    assert_eq!(next_tick(store, &room, &clock).await, seqs[1..3].to_vec());
    assert_eq!(store.figures(&room).await.unwrap().active, 3);
}

#[tokio::test]
async fn pause_stops_admissions_and_resume_restarts_them() {
    let (t, api, clock) = pinned();
    let store = t.store.as_ref();
    let room = make_room(store, "hold", settings(10)).await;

    let r = api.admin("POST", "/admin/rooms/hold/pause", "").await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["state"], "paused");
    for _ in 0..3 {
        let r = api.join(&room, None).await;
        assert_eq!(r.json["state"], "waiting", "{}", r.json);
    }
    assert!(next_tick(store, &room, &clock).await.is_empty());
    assert!(next_tick(store, &room, &clock).await.is_empty());

    let r = api.admin("POST", "/admin/rooms/hold/resume", "").await;
    assert_eq!(r.json["state"], "open");
    assert_eq!(next_tick(store, &room, &clock).await.len(), 3);
}

#[tokio::test]
async fn close_answers_joins_and_waiters_closed() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "shut", settings(10)).await;
    let api = Api::new(admin_state(t.store.clone()));
    let waiter = api.join(&room, None).await.ticket();

    let r = api.admin("POST", "/admin/rooms/shut/close", "").await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["state"], "closed");
    let given = store.figures(&room).await.unwrap().places_given;

    let r = api.join(&room, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["state"], "closed", "{}", r.json);
    assert!(r.json.get("ticket").is_none(), "no place, no ticket");
    assert_eq!(store.figures(&room).await.unwrap().places_given, given);
    assert_eq!(api.status(&room, &waiter).await.json["state"], "closed");
    assert_eq!(store.figures(&room).await.unwrap().state, RoomState::Closed);
}

#[tokio::test]
async fn put_creates_with_defaults_and_get_and_list_show_it() {
    let t = test_store(STORE);
    let api = Api::new(admin_state(t.store.clone()));

    let r = api
        .admin(
            "PUT",
            "/admin/rooms/fresh",
            r#"{"capacity": 5, "opens_at": "2030-01-01T12:00:00Z", "max_line": 100}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let expected = json!({
        "id": "fresh",
        "state": "open",
        "settings": {
            "capacity": 5, "admit_per_second": 10.0, "session_seconds": 420,
            "abandon_seconds": 60, "opens_at": "2030-01-01T12:00:00Z", "max_line": 100,
            "method": "fifo", "windows": [], "entry_seconds": 60, "max_session_addresses": 3,
            "identity": "off", "challenge": "off", "challenge_bits": 20, "challenge_fail": "closed"
        },
        "live": {
            "waiting": 0, "active": 0, "admitted_total": 0, "abandoned_total": 0,
            "places_given": 0, "admit_rate": 10.0, "oldest_wait_seconds": null,
            "rate_factor": 1.0, "seats": null
        }
    });
    assert_eq!(r.json, expected);
    assert_eq!(
        api.admin("GET", "/admin/rooms/fresh", "").await.json,
        expected
    );

    // PUT replaces the settings (missing fields back to defaults) and keeps the line.
    let visitor = api.join(&room("fresh"), None).await;
    assert_eq!(visitor.json["state"], "waiting", "{}", visitor.json);
    let r = api
        .admin("PUT", "/admin/rooms/fresh", r#"{"capacity": 6}"#)
        .await;
    assert_eq!(r.json["settings"]["capacity"], 6);
    assert_eq!(r.json["settings"]["opens_at"], Value::Null);
    assert_eq!(r.json["settings"]["max_line"], Value::Null);
    assert_eq!(r.json["live"]["waiting"], 1);

    // An empty body is all defaults.
    let r = api.admin("PUT", "/admin/rooms/other", "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["settings"]["capacity"], 100);

    let list = api.admin("GET", "/admin/rooms", "").await;
    assert_eq!(list.status, 200);
    let ids: Vec<&str> = list.json["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["fresh", "other"]);
}

#[tokio::test]
async fn patch_merges_and_null_clears() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    make_room(
        store,
        "tune",
        RoomSettings {
            max_line: Some(50),
            session_seconds: 60,
            ..settings(4)
        },
    )
    .await;
    let api = Api::new(admin_state(t.store.clone()));
    let r = api
        .admin(
            "PATCH",
            "/admin/rooms/tune",
            r#"{"admit_per_second": 2.5, "max_line": null}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let s = &r.json["settings"];
    assert_eq!(
        (&s["capacity"], &s["session_seconds"]),
        (&json!(4), &json!(60))
    );
    assert_eq!(s["admit_per_second"], 2.5);
    assert_eq!(s["max_line"], Value::Null);
    let stored = store.figures(&room("tune")).await.unwrap().settings;
    assert_eq!(
        (stored.admit_per_second, stored.max_line, stored.capacity),
        (2.5, None, 4)
    );

    // The largest line cap the store keeps exactly round-trips.
    let r = api
        .admin(
            "PATCH",
            "/admin/rooms/tune",
            r#"{"max_line": 9007199254740991}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["max_line"], 9_007_199_254_740_991_u64);

    let r = api
        .admin("PATCH", "/admin/rooms/nosuchroom", r#"{"capacity": 3}"#)
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), "unknown_room");
}

/// Every admin operation the document lists, with a body that would change
/// something if it were let through.
fn admin_operations() -> Vec<(String, String)> {
    let doc = serde_json::to_value(origin::http::openapi()).unwrap();
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        // `/admin/` is the console page: public, it holds nothing and asks
        // for the key the API calls carry.
        if !path.starts_with("/admin/") || path == "/admin/" {
            continue;
        }
        for method in item.as_object().unwrap().keys() {
            let path = path
                .replace("{room}", "guarded")
                .replace("{performance}", "evening");
            ops.push((method.to_uppercase(), path));
        }
    }
    // The room routes, the room history, the performance routes and the
    // payment knob (guarded even while the knob is off).
    assert_eq!(ops.len(), 12, "{ops:?}");
    ops
}

#[tokio::test]
async fn a_missing_or_wrong_admin_key_is_401_and_changes_nothing() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "guarded", settings(4)).await;
    let api = Api::new(admin_state(t.store.clone()));
    api.join(&room, None).await.ticket();
    let before = figures(store, &room).await;

    let body = r#"{"capacity": 9}"#;
    for (method, uri) in admin_operations() {
        let attempts: Vec<(Option<String>, &str)> = vec![
            (None, "missing_admin_key"),
            (
                Some("wrong-key-0123456789abcdef".into()),
                "invalid_admin_key",
            ),
            (
                Some(ADMIN_KEY[..ADMIN_KEY.len() - 1].into()),
                "invalid_admin_key",
            ),
            (Some(format!("{ADMIN_KEY}x")), "invalid_admin_key"),
            (Some(String::new()), "invalid_admin_key"),
        ];
        for (key, code) in attempts {
            let r = api.admin_as(key.as_deref(), &method, &uri, body).await;
            assert_eq!(r.status, 401, "{method} {uri} {key:?}: {}", r.json);
            assert_eq!(r.error_code(), code, "{method} {uri}");
            assert!(r.headers.contains_key("www-authenticate"));
        }
        // Another scheme with the right key is still refused.
        let r = api
            .send(
                axum::http::Request::builder()
                    .method(method.as_str())
                    .uri(&uri)
                    .header("authorization", format!("Basic {ADMIN_KEY}"))
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, 401, "{method} {uri}");
    }
    // Without --admin-key, every call is refused, the right key included.
    let off = Api::new(state(t.store.clone()));
    for (method, uri) in admin_operations() {
        let r = off.admin(&method, &uri, body).await;
        assert_eq!(r.status, 401, "{method} {uri}");
        assert_eq!(r.error_code(), "admin_disabled");
    }
    // A room that does not exist is not created either.
    let r = api
        .admin_as(None, "PUT", "/admin/rooms/intruder", body)
        .await;
    assert_eq!(r.status, 401);
    assert!(store.figures(&room_id("intruder")).await.is_err());

    assert_eq!(figures(store, &room).await, before, "nothing changed");
    // The key is accepted in any scheme case, as HTTP says.
    let r = api
        .send(
            axum::http::Request::get("/admin/rooms/guarded")
                .header("authorization", format!("bearer {ADMIN_KEY}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
}

fn room_id(id: &str) -> RoomId {
    room(id)
}

#[tokio::test]
async fn bad_settings_are_refused_and_change_nothing() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_room(store, "strict", settings(4)).await;
    let api = Api::new(admin_state(t.store.clone()));
    api.join(&room, None).await;
    let before = figures(store, &room).await;

    let huge = format!(r#"{{"capacity": 5, "x": "{}"}}"#, "a".repeat(70 * 1024));
    let cases: Vec<(String, u16, &str)> = vec![
        ("{".into(), 400, "malformed_json"),
        (r#"{"capacity": 3"#.into(), 400, "malformed_json"),
        ("capacity=3".into(), 400, "malformed_json"),
        ("\x0c".into(), 400, "malformed_json"),
        ("[]".into(), 422, "invalid_body"),
        ("3".into(), 422, "invalid_body"),
        ("null".into(), 422, "invalid_body"),
        (r#"{"capacity": -1}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": 0}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": 1.5}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": 1000001}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": 99999999999}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": "3"}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": null}"#.into(), 422, "invalid_body"),
        (r#"{"capacty": 3}"#.into(), 422, "invalid_body"),
        (r#"{"capacity": 3, "colour": "red"}"#.into(), 422, "invalid_body"),
        (r#"{"admit_per_second": 0}"#.into(), 422, "invalid_body"),
        (r#"{"admit_per_second": -2.5}"#.into(), 422, "invalid_body"),
        (r#"{"admit_per_second": 1e300}"#.into(), 422, "invalid_body"),
        (r#"{"session_seconds": 0}"#.into(), 422, "invalid_body"),
        (r#"{"session_seconds": 86401}"#.into(), 422, "invalid_body"),
        (r#"{"abandon_seconds": 2}"#.into(), 422, "invalid_body"),
        (r#"{"opens_at": "tomorrow"}"#.into(), 422, "invalid_body"),
        (r#"{"opens_at": "1970-01-01T00:00:00Z"}"#.into(), 422, "invalid_body"),
        (r#"{"opens_at": 1893499200}"#.into(), 422, "invalid_body"),
        (r#"{"max_line": 0}"#.into(), 422, "invalid_body"),
        (r#"{"max_line": -5}"#.into(), 422, "invalid_body"),
        (r#"{"max_line": 9007199254740992}"#.into(), 422, "invalid_body"),
        (r#"{"max_line": 9223372036854775808}"#.into(), 422, "invalid_body"),
        (r#"{"method": "lifo"}"#.into(), 422, "invalid_body"),
        (
            r#"{"windows": [{"starts_at": "2030-01-02T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"}]}"#
                .into(),
            422,
            "invalid_body",
        ),
        (
            r#"{"windows": [{"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-01-02T00:00:00Z", "capacity": 0}]}"#
                .into(),
            422,
            "invalid_body",
        ),
        (
            r#"{"windows": [{"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-01-02T00:00:00Z", "extra": 1}]}"#
                .into(),
            422,
            "invalid_body",
        ),
        (huge, 413, "body_too_large"),
    ];
    for method in ["PUT", "PATCH"] {
        for (body, status, code) in &cases {
            let r = api.admin(method, "/admin/rooms/strict", body.clone()).await;
            let shown = &body[..body.len().min(80)];
            assert_eq!(r.status.as_u16(), *status, "{method} {shown}: {}", r.json);
            assert_eq!(r.error_code(), *code, "{method} {shown}");
        }
    }
    for uri in [
        "/admin/rooms/Strict",
        "/admin/rooms/-x",
        "/admin/rooms/a%7Bb%7D",
    ] {
        let r = api.admin("PUT", uri, r#"{"capacity": 3}"#).await;
        assert_eq!(r.status, 404, "{uri}");
        assert_eq!(r.error_code(), "unknown_room");
    }
    assert_eq!(figures(store, &room).await, before, "nothing changed");
}

#[tokio::test]
async fn unknown_rooms_are_404_on_every_admin_route() {
    let t = test_store(STORE);
    let api = Api::new(admin_state(t.store.clone()));
    for (method, uri) in [
        ("GET", "/admin/rooms/ghost"),
        ("PATCH", "/admin/rooms/ghost"),
        ("POST", "/admin/rooms/ghost/pause"),
        ("POST", "/admin/rooms/ghost/resume"),
        ("POST", "/admin/rooms/ghost/close"),
    ] {
        let r = api.admin(method, uri, "").await;
        assert_eq!(r.status, 404, "{method} {uri}: {}", r.json);
        assert_eq!(r.error_code(), "unknown_room");
    }
    assert!(t.store.rooms().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_unreachable_store_is_503_on_admin_routes_after_the_key_check() {
    let store = std::sync::Arc::new(
        origin::queue::redis::RedisStore::connect(&origin::queue::redis::RedisConfig {
            url: "redis://127.0.0.1:1".into(), // nothing listens on port 1
            prefix: unique_prefix(),
            timeout: Duration::from_millis(200),
            cluster: false,
        })
        .unwrap(),
    );
    let api = Api::new(admin_state(store));
    for (method, uri, body) in [
        ("GET", "/admin/rooms", ""),
        ("GET", "/admin/rooms/any", ""),
        ("PUT", "/admin/rooms/any", r#"{"capacity": 3}"#),
        ("PATCH", "/admin/rooms/any", r#"{"capacity": 3}"#),
        ("POST", "/admin/rooms/any/pause", ""),
    ] {
        let r = api.admin(method, uri, body).await;
        assert_eq!(r.status, 503, "{method} {uri}: {}", r.json);
        assert_eq!(r.error_code(), "store_unavailable");
        assert!(r.headers.contains_key("retry-after"));
        let r = api.admin_as(None, method, uri, body).await;
        assert_eq!(r.status, 401, "the key is checked first");
    }
}
