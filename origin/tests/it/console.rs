//! The operator's console on the server side: the page at `/admin/` (HTML
//! that holds nothing: every figure comes from the admin API behind the key)
//! and the rooms' history, fed by the metrics loop's own reads, bounded in
//! memory over hours of samples, and served by
//! `GET /admin/rooms/{room}/history` behind the admin key. The browser side
//! is tests/origin/console.test.mjs.

use super::STORE;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use std::time::Duration;

use crate::common::*;
use origin::clock::Clock;
use origin::history::{History, RESOLUTION_MS, SAMPLES, SPAN_MS, Sample};
use origin::queue::QueueStore;
use origin::queue::memory::MemoryStore;
use origin::sessions::Sessions;
use origin::telemetry;

/// 100 rooms sampled by the metrics loop for four hours of a clock the
/// test moves: each room keeps 30 minutes of samples, and the
/// rings take no more memory after the first 30 minutes than after four
/// hours.
#[tokio::test]
async fn memory_stays_bounded_with_100_rooms_over_hours() {
    let store: Arc<dyn QueueStore> = Arc::new(MemoryStore::new());
    for n in 0..100 {
        make_room(store.as_ref(), &format!("room-{n}"), settings(10)).await;
    }
    let clock = Clock::manual(1_800_000_000_000);
    let (history, sessions) = (History::default(), Sessions::default());
    let mut after_span = 0;
    let span_slices = SPAN_MS / RESOLUTION_MS;
    // Four hours, read once per sample slice (the loop reads every second;
    // reads within a slice keep nothing more, which the unit tests show).
    for slice in 1..=4 * 3600 * 1000 / RESOLUTION_MS {
        clock.advance(Duration::from_millis(RESOLUTION_MS));
        telemetry::refresh(store.as_ref(), &sessions, &history, clock.now_ms())
            .await
            .unwrap();
        if slice == span_slices {
            after_span = history.ring_bytes();
        }
    }
    assert_eq!(history.rooms(), 100);
    let bound = 100 * SAMPLES * std::mem::size_of::<Sample>();
    assert!(
        after_span > 0 && after_span <= bound,
        "{after_span} > {bound}"
    );
    assert_eq!(history.ring_bytes(), after_span, "no growth after the span");
    assert!(bound < 4 << 20, "100 rooms take {bound} bytes");
    let samples = history
        .samples(&room("room-42"), 0, clock.now_ms())
        .unwrap();
    assert_eq!(samples.len(), SAMPLES);
    assert!(
        samples
            .windows(2)
            .all(|w| w[1].at_ms - w[0].at_ms == RESOLUTION_MS)
    );
    assert!(samples[0].at_ms > clock.now_ms() - SPAN_MS);
    assert_eq!(samples[0].capacity, 10);
}

/// The console costs the store nothing, open or not: the history is
/// written from the metrics loop's own reads (the room list once, each
/// room's figures once), the reads `/metrics` has always needed.
#[tokio::test]
async fn the_history_adds_no_store_reads() {
    let inner: Arc<dyn QueueStore> = Arc::new(MemoryStore::new());
    for n in 0..3 {
        make_room(inner.as_ref(), &format!("quiet-{n}"), settings(10)).await;
    }
    let store = recording::Recording::new(inner);
    let (history, sessions) = (History::default(), Sessions::default());
    let now = 1_800_000_000_000;
    telemetry::refresh(&store, &sessions, &history, now)
        .await
        .unwrap();
    assert_eq!(store.room_lists(), 1);
    assert_eq!(store.figures_reads(), 3);
    assert_eq!(history.rooms(), 3);
    let samples = history.samples(&room("quiet-1"), 0, now).unwrap();
    assert_eq!(samples.len(), 1);
}

/// The route: admin key first, 404 for unknown rooms, an empty history for a
/// room not sampled yet, the samples after `since_ms`, 400 for a bad one.
#[tokio::test]
async fn the_route_serves_the_samples_behind_the_admin_key() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let clock = Clock::manual(1_800_000_000_000);
    let state = admin_state(t.store.clone()).with_clock(clock.clone());
    let history = state.history.clone();
    let api = Api::new(state);
    let r = make_room(store, "hist", settings(2)).await;

    let empty = api.admin("GET", "/admin/rooms/hist/history", "").await;
    assert_eq!(empty.status, 200, "{}", empty.json);
    assert_eq!(empty.json["room"], "hist");
    assert_eq!(empty.json["resolution_seconds"], RESOLUTION_MS / 1000);
    assert_eq!(empty.json["span_seconds"], SPAN_MS / 1000);
    assert_eq!(empty.json["samples"], serde_json::json!([]));

    for _ in 0..3 {
        api.join(&r, None).await;
    }
    let sessions = Sessions::default();
    for _ in 0..4 {
        telemetry::refresh(store, &sessions, &history, clock.now_ms())
            .await
            .unwrap();
        clock.advance(Duration::from_millis(RESOLUTION_MS));
    }
    let all = api.admin("GET", "/admin/rooms/hist/history", "").await;
    assert_eq!(all.status, 200, "{}", all.json);
    let samples = all.json["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 4);
    let first = &samples[0];
    assert_eq!(first["state"], "open");
    assert_eq!(first["capacity"], 2);
    assert_eq!(first["admit_per_second"], 1000.0);
    assert_eq!(first["seats"], serde_json::Value::Null);
    assert_eq!(
        first["waiting"].as_u64().unwrap() + first["active"].as_u64().unwrap(),
        3
    );
    let second_at = samples[1]["at_ms"].as_u64().unwrap();
    let newer = api
        .admin(
            "GET",
            &format!("/admin/rooms/hist/history?since_ms={second_at}"),
            "",
        )
        .await;
    assert_eq!(newer.json["samples"].as_array().unwrap().len(), 2);

    let bad = api
        .admin("GET", "/admin/rooms/hist/history?since_ms=yesterday", "")
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.error_code(), "invalid_query");
    let unknown = api.admin("GET", "/admin/rooms/nope/history", "").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.error_code(), "unknown_room");
    let anonymous = api
        .admin_as(None, "GET", "/admin/rooms/hist/history", "")
        .await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.error_code(), "missing_admin_key");
    let wrong = api
        .admin_as(
            Some("not-the-key-0123456789"),
            "GET",
            "/admin/rooms/hist/history",
            "",
        )
        .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.error_code(), "invalid_admin_key");
}

/// The page: HTML under its own CSP, never cached, in the language asked
/// for, with no room and no figure in it (those come from the API, behind
/// the key), whether or not the origin has an admin key.
#[tokio::test]
async fn the_page_holds_nothing_but_the_console() {
    let t = test_store(STORE);
    make_room(t.store.as_ref(), "secret-room", settings(7)).await;
    for state in [admin_state(t.store.clone()), state(t.store.clone())] {
        let api = Api::new(state);
        let req = Request::builder()
            .uri("/admin/")
            .header("accept-language", "ko-KR,ko;q=0.9")
            .body(Body::empty())
            .unwrap();
        let r = api.send(req).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.headers["content-type"], "text/html; charset=utf-8");
        assert_eq!(r.headers["cache-control"], "no-store");
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'none'"), "{csp}");
        assert!(csp.contains("connect-src 'self'"), "{csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        let body = r.json.as_str().expect("HTML");
        assert!(body.contains("<html lang=\"ko\">"));
        assert!(body.contains("운영자 콘솔"));
        assert!(!body.contains("secret-room"));
        assert!(!body.contains(ADMIN_KEY));
        let english = api.call("GET", "/admin/?lang=en", None).await;
        assert!(
            english
                .json
                .as_str()
                .unwrap()
                .contains("<html lang=\"en\">")
        );
        let post = api.call("POST", "/admin/", None).await;
        assert_eq!(post.status, 405);
        assert_eq!(post.error_code(), "method_not_allowed");
    }
}
