//! The room follows its seats: the sale signal the promoter writes
//! (`QueueStore::set_sale`) on the suite's store. No seat available admits
//! nobody; every seat booked takes no place and tells waiters `sold_out`
//! while keeping their places; a rate factor slows admission.
//!
//! Time is a pinned clock stepped by the test, so tick counts are exact.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::*;
use origin::queue::{QueueStore, SaleSignal, SeatsLeft, StoreError};
use origin::room::{RoomSettings, RoomState};

fn signal(seats: SeatsLeft) -> SaleSignal {
    SaleSignal {
        seats,
        rate_factor: 1.0,
    }
}

/// A pinned clock at the real now, so tickets and entry tokens the HTTP
/// layer signs on the system clock agree with the store's.
fn clock() -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(unix_now() * 1000))
}

fn step(clock: &AtomicU64, ms: u64) {
    clock.fetch_add(ms, Ordering::SeqCst);
}

#[tokio::test]
async fn no_seat_available_admits_nobody_until_seats_come_back() {
    let clock = clock();
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let room = make_room(store, "all-held", settings(100)).await;
    let api = Api::new(state(t.store.clone()));
    store
        .set_sale(&room, signal(SeatsLeft::NoneAvailable))
        .await
        .unwrap();

    // An empty room with free capacity: still a place in line, not entry.
    let first = api.join(&room, None).await;
    assert_eq!(first.json["state"], "waiting", "{}", first.json);
    assert_eq!(first.json["position"], 1);
    assert!(first.json["eta_seconds"].is_null());
    for _ in 0..2 {
        assert_eq!(api.join(&room, None).await.json["state"], "waiting");
    }

    let rate = store.figures(&room).await.unwrap().admit_rate;
    for _ in 0..10 {
        step(&clock, 100);
        let report = store.tick(&room).await.unwrap();
        assert_eq!((report.admitted.len(), report.waiting), (0, 3));
    }
    let status = api.status(&room, &first.ticket()).await;
    assert_eq!(status.json["state"], "waiting");
    assert_eq!(status.json["position"], 1);
    assert!(status.json["eta_seconds"].is_null(), "{}", status.json);
    let f = store.figures(&room).await.unwrap();
    assert_eq!(
        f.admit_rate, rate,
        "the achieved rate waits, as when paused"
    );
    assert_eq!(f.sale, signal(SeatsLeft::NoneAvailable));

    store
        .set_sale(&room, signal(SeatsLeft::Available))
        .await
        .unwrap();
    step(&clock, 100);
    let report = store.tick(&room).await.unwrap();
    assert_eq!((report.admitted.len(), report.waiting), (3, 0));
    let status = api.status(&room, &first.ticket()).await;
    assert_eq!(status.json["state"], "admitted");
}

#[tokio::test]
async fn sold_out_takes_no_place_and_tells_waiters_who_keep_their_places() {
    let clock = clock();
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let room = make_room(store, "booked-up", settings(2)).await;
    let api = Api::new(state(t.store.clone()));
    let inside = api.join(&room, None).await;
    assert_eq!(inside.json["state"], "admitted");
    store.set_state(&room, RoomState::Paused).await.unwrap();
    let waiters = [api.join(&room, None).await, api.join(&room, None).await];
    store.set_state(&room, RoomState::Open).await.unwrap();
    store
        .set_sale(&room, signal(SeatsLeft::SoldOut))
        .await
        .unwrap();

    let late = api.join(&room, None).await;
    assert_eq!(late.json["state"], "sold_out", "{}", late.json);
    assert!(late.json.get("ticket").is_none(), "sold out takes no place");
    assert_eq!(store.figures(&room).await.unwrap().places_given, 3);
    for w in &waiters {
        let status = api.status(&room, &w.ticket()).await;
        assert_eq!(status.json["state"], "sold_out", "{}", status.json);
        assert!(status.json["position"].is_null());
    }
    let again = api.join(&room, Some(&waiters[0].ticket())).await;
    assert_eq!(again.json["state"], "sold_out");
    assert_eq!(
        seq_of(&again.ticket(), &room),
        seq_of(&waiters[0].ticket(), &room),
        "a rejoin keeps the place"
    );
    assert_eq!(
        api.status(&room, &inside.ticket()).await.json["state"],
        "admitted",
        "those inside stay inside"
    );
    // A free slot and a full budget, yet nobody is let in.
    step(&clock, 1_000);
    let report = store.tick(&room).await.unwrap();
    assert_eq!((report.admitted.len(), report.waiting), (0, 2));

    // A cancellation: seats again, and the line as it was.
    store
        .set_sale(&room, signal(SeatsLeft::Available))
        .await
        .unwrap();
    for (i, w) in waiters.iter().enumerate() {
        let status = api.status(&room, &w.ticket()).await;
        assert_eq!(status.json["state"], "waiting", "{}", status.json);
        assert_eq!(status.json["position"], i + 1);
    }
    step(&clock, 100);
    let report = store.tick(&room).await.unwrap();
    assert_eq!(
        report.admitted,
        vec![seq_of(&waiters[0].ticket(), &room)],
        "one slot free"
    );
}

#[tokio::test]
async fn sold_out_waiters_who_stop_polling_are_still_dropped() {
    let clock = clock();
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let room = make_paused_room(store, "gone-quiet", RoomSettings::default()).await;
    let a = store
        .join(&room, None, None)
        .await
        .unwrap()
        .answer()
        .unwrap();
    store.join(&room, None, None).await.unwrap();
    store
        .set_sale(&room, signal(SeatsLeft::SoldOut))
        .await
        .unwrap();
    step(&clock, 40_000);
    store.status(&room, a.seq.unwrap()).await.unwrap(); // a keeps polling
    step(&clock, 30_000);
    let report = store.tick(&room).await.unwrap();
    assert_eq!((report.abandoned, report.waiting), (1, 1));
}

/// Admissions over three seconds of 100 ms ticks, 200 waiting, at the
/// room's rate of 10 a second scaled by `factor`.
async fn admitted_in_three_seconds(
    store: &dyn QueueStore,
    clock: &AtomicU64,
    id: &str,
    factor: f64,
) -> usize {
    let s = RoomSettings {
        capacity: 1_000,
        admit_per_second: 10.0,
        abandon_seconds: 600,
        ..Default::default()
    };
    let room = make_paused_room(store, id, s).await;
    for _ in 0..200 {
        store.join(&room, None, None).await.unwrap();
    }
    store
        .set_sale(
            &room,
            SaleSignal {
                seats: SeatsLeft::Available,
                rate_factor: factor,
            },
        )
        .await
        .unwrap();
    store.set_state(&room, RoomState::Open).await.unwrap();
    let mut admitted = store.tick(&room).await.unwrap().admitted.len();
    for _ in 0..30 {
        step(clock, 100);
        admitted += store.tick(&room).await.unwrap().admitted.len();
    }
    // A long gap banks at most one second of the scaled rate.
    step(clock, 5_000);
    let burst = store.tick(&room).await.unwrap().admitted.len();
    assert_eq!(burst as f64, 10.0 * factor, "the one-second cap scales too");
    admitted
}

#[tokio::test]
async fn a_rate_factor_of_one_half_halves_admissions() {
    let clock = clock();
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    // The first tick spends the one second banked at the start; then each
    // 100 ms brings 1 (or 0.5) more.
    let full = admitted_in_three_seconds(store, &clock, "full-speed", 1.0).await;
    let half = admitted_in_three_seconds(store, &clock, "half-speed", 0.5).await;
    assert_eq!((full, half), (40, 20));
}

#[tokio::test]
async fn the_signal_is_kept_by_put_room_and_checked() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_room(store, "kept", settings(10)).await;
    assert_eq!(
        store.figures(&room).await.unwrap().sale,
        SaleSignal::AVAILABLE,
        "a new room sells as usual"
    );
    let slow = SaleSignal {
        seats: SeatsLeft::SoldOut,
        rate_factor: 0.25,
    };
    store.set_sale(&room, slow).await.unwrap();
    store.put_room(&room, &settings(20)).await.unwrap();
    assert_eq!(store.figures(&room).await.unwrap().sale, slow);

    for bad in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        let r = store
            .set_sale(
                &room,
                SaleSignal {
                    seats: SeatsLeft::Available,
                    rate_factor: bad,
                },
            )
            .await;
        assert!(matches!(r, Err(StoreError::Protocol(_))), "{bad}: {r:?}");
    }
    assert_eq!(store.figures(&room).await.unwrap().sale, slow, "unchanged");

    let nowhere = crate::common::room("nowhere");
    let r = store.set_sale(&nowhere, SaleSignal::AVAILABLE).await;
    assert!(matches!(r, Err(StoreError::UnknownRoom)), "{r:?}");
}
