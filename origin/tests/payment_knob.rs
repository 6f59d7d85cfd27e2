//! The operator's knob on the simulated payment (`GET`/`PUT /admin/payment`,
//! on with `--payment-knob`): absent unless asked for, admin key only,
//! refuses bad bodies changing nothing, and changes the latency of the
//! charges that follow.

mod common;
#[path = "common/booking.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use common::{Api, admin_state, test_store, unix_now};
use origin::booking::SimulatedPayment;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_knob_is_off_unless_asked_for() {
    let db = TestDb::new(Kind::Sqlite).await;
    let t = test_store();
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
    let t = test_store();
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
