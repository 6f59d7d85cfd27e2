//! The operator's knob on the simulated payment (`GET`/`PUT /admin/payment`,
//! on with `--payment-knob`): absent unless asked for, admin key only,
//! refuses bad bodies changing nothing, and changes the latency of the
//! charges that follow; with payment slowed through it, a declined card then
//! the good one under a new key books.

use std::sync::Arc;
use std::time::Duration;

use crate::common::booking::*;
use crate::common::{Api, Reply, Store, admin_state, make_room, settings, test_store, unix_now};
use axum::body::Body;
use axum::http::Request;
use origin::booking::SimulatedPayment;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_knob_is_off_unless_asked_for() {
    let db = TestDb::new(Kind::Sqlite).await;
    let t = test_store(Store::Redis);
    let sim = Arc::new(SimulatedPayment::new(Duration::ZERO, 0.0));
    let store = db.store(sim.clone(), unix_now() * 1000).await;
    let api = Api::new(admin_state(t.store.clone()).with_booking(Arc::new(store)));
    let r = api.admin("GET", "/admin/payment", "").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), "not_found");
    let r = api
        .admin("PUT", "/admin/payment", r#"{"latency_ms": 5}"#)
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(sim.latency(), Duration::ZERO);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_operator_turns_the_knob() {
    let db = TestDb::new(Kind::Sqlite).await;
    let t = test_store(Store::Redis);
    let sim = Arc::new(SimulatedPayment::new(Duration::from_millis(7), 0.0).adjustable());
    let store = db.store(sim.clone(), unix_now() * 1000).await;
    let api = Api::new(admin_state(t.store.clone()).with_booking(Arc::new(store)));
    let body = r#"{"latency_ms": 250}"#;

    for key in [None, Some("not-the-admin-key-0123456789")] {
        let r = api.admin_as(key, "PUT", "/admin/payment", body).await;
        assert_eq!(r.status, 401, "{key:?}");
        assert!(r.error_code().ends_with("admin_key"), "{key:?}");
    }
    for bad in [
        r#"{"latency_ms": 60001}"#,
        r#"{"latency_ms": -1}"#,
        r#"{"latency_ms": 5, "failure_rate": 1.0}"#,
        r#"{}"#,
        "not json",
    ] {
        let r = api.admin("PUT", "/admin/payment", bad).await;
        assert!(
            matches!(r.status.as_u16(), 400 | 422),
            "{bad}: {}",
            r.status
        );
        r.error_code();
    }
    assert_eq!(
        sim.latency(),
        Duration::from_millis(7),
        "refusals change nothing"
    );

    let r = api.admin("GET", "/admin/payment", "").await;
    assert_eq!(
        (r.status.as_u16(), r.json["latency_ms"].as_u64()),
        (200, Some(7))
    );
    let r = api.admin("PUT", "/admin/payment", body).await;
    assert_eq!(
        (r.status.as_u16(), r.json["latency_ms"].as_u64()),
        (200, Some(250))
    );
    assert_eq!(sim.latency(), Duration::from_millis(250));
    let r = api.admin("GET", "/admin/payment", "").await;
    assert_eq!(r.json["latency_ms"].as_u64(), Some(250));
}

/// The rehearsal's declined-first visitor over HTTP, payment slowed with
/// the knob and the sweeper running all along: the decline is 402 (again
/// under its key), the good card under a new key 201 (again under its key),
/// one seat booked, on both databases.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_good_card_books_after_a_decline_with_payment_slowed() {
    for kind in [Kind::MySql, Kind::Sqlite] {
        let db = TestDb::new(kind).await;
        let t = test_store(Store::Redis);
        let sim = Arc::new(SimulatedPayment::new(Duration::ZERO, 0.0).adjustable());
        let store = Arc::new(db.store(sim.clone(), unix_now() * 1000).await);
        let api = Api::new(admin_state(t.store.clone()).with_booking(store.clone()));
        let r = api
            .admin("PUT", "/admin/payment", r#"{"latency_ms": 300}"#)
            .await;
        assert_eq!(r.status, 200, "{}", r.json);
        let sweeping = {
            let store = store.clone();
            tokio::spawn(async move {
                loop {
                    let _ = store.sweep(unix_now() * 1000).await;
                    // The sweeper's pace, as the sale loop's.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };

        let room = make_room(t.store.as_ref(), "knobdecline", settings(50)).await;
        let night = json_body(serde_json::json!({
            "title": "Night", "starts_at": "2030-05-01T19:00:00Z", "hold_seconds": 420,
            "max_seats_per_hold": 4,
            "sections": [{"name": "A", "rows": 1, "seats_per_row": 4, "price": 5000}]
        }));
        let r = api
            .admin(
                "PUT",
                &format!("/admin/rooms/{room}/performances/night"),
                night,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.json);
        let r = api.join(&room, None).await;
        let entry = r.json["entry_token"].as_str().expect("admitted").to_owned();
        let send = |uri: String, key: Option<&str>, body: serde_json::Value| {
            let mut req = Request::builder()
                .method("POST")
                .uri(uri)
                .header("host", "127.0.0.1:8080")
                .header("entry-token", entry.as_str());
            if let Some(key) = key {
                req = req.header("idempotency-key", key);
            }
            api.send(req.body(json_body(body)).unwrap())
        };
        let r: Reply = send(
            format!("/api/{room}/performances/night/holds"),
            None,
            serde_json::json!({"seats": ["A-1-1"]}),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.json);
        let confirm = format!(
            "/api/{room}/holds/{}/confirm",
            r.json["hold_id"].as_str().unwrap()
        );
        let declined = serde_json::json!({"payment_token": "tok_decline"});
        let good = serde_json::json!({"payment_token": "tok_rehearsal"});
        for _ in 0..2 {
            let r = send(
                confirm.clone(),
                Some("rehearsal-1-declined"),
                declined.clone(),
            )
            .await;
            assert_eq!(
                (r.status.as_u16(), r.error_code()),
                (402, "payment_declined")
            );
        }
        let first = send(confirm.clone(), Some("rehearsal-1"), good.clone()).await;
        assert_eq!(first.status, 201, "{}", first.json);
        let again = send(confirm.clone(), Some("rehearsal-1"), good.clone()).await;
        assert_eq!((again.status, &again.json), (first.status, &first.json));
        sweeping.abort();
        let counts = store
            .room_seats(room.as_str(), unix_now() * 1000)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((counts.booked, counts.held), (1, 0), "{kind:?}");
    }
}

fn json_body(v: serde_json::Value) -> Body {
    Body::from(v.to_string())
}
