//! Booking on both databases: confirming holds with idempotency keys (20
//! duplicates at once, reuse, a remembered decline), bookings and their
//! cancellation, races between a confirm, the hold's end and the sweeper,
//! and recovery after the process dies between payment and booking (a
//! child process aborted or SIGKILLed at that point).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::common::booking::*;
use crate::common::eventually;
use async_trait::async_trait;
use origin::booking::{
    BookingError, BookingStatus, BookingStore, Faults, Hold, IDEMPOTENCY_TTL,
    MAX_DECLINES_PER_HOLD, Payment, PaymentError, PruneReport, SeatState,
};

both!(
    same_key_twenty_times,
    decline_is_remembered_and_the_hold_stays,
    confirm_rules,
    confirm_races_hold_end,
    sweeper_races_paying_hold,
    crash_after_payment_recorded,
    crash_during_payment,
    good_card_after_a_decline,
    good_card_after_a_dropped_decline,
    decline_and_good_card_at_once,
    recovery_beside_decline_then_good_card,
    recovery_under_a_slower_clock,
    a_hold_takes_five_declines,
    rows_past_their_time_go,
);

const HOUR: u64 = 3_600_000;

async fn same_key_twenty_times(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(100)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "idem";
    store
        .put_performance(room, "p", &spec(&[("A", 1, 10, 2500)]), T0)
        .await
        .unwrap();
    let hold = store
        .hold(
            room,
            "p",
            9,
            None,
            &seats(&["A-1-1", "A-1-2"]),
            T0 + HOUR,
            T0,
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..20u64 {
        let store = store.clone();
        let hold_id = hold.hold_id.clone();
        tasks.push(tokio::spawn(async move {
            store
                .confirm(room, 9, &hold_id, "key-1", "tok_ok", T0 + 1000 + i)
                .await
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let first = answers[0].clone().expect("a booking");
    for a in &answers {
        assert_eq!(a.as_ref(), Ok(&first), "20 identical answers");
    }
    assert_eq!(pay.charges(), 1, "one payment");
    assert_eq!(first.seats, seats(&["A-1-1", "A-1-2"]));
    assert_eq!(first.total, 5000);
    assert_eq!(first.status, BookingStatus::Confirmed);
    assert_eq!(
        uuid::Uuid::parse_str(&first.booking_id)
            .unwrap()
            .get_version_num(),
        7
    );
    let json = serde_json::to_value(&first).unwrap();
    assert_eq!(json["status"], "confirmed");
    assert_eq!(json["performance"], "p");

    // Later repeats too; another body or hold under the key is refused.
    let again = store
        .confirm(room, 9, &hold.hold_id, "key-1", "tok_ok", T0 + 9000)
        .await;
    assert_eq!(again, Ok(first.clone()));
    assert_eq!(
        store
            .confirm(room, 9, &hold.hold_id, "key-1", "tok_other", T0 + 9000)
            .await,
        Err(BookingError::IdempotencyKeyReused)
    );
    let other = store
        .hold(room, "p", 9, None, &seats(&["A-1-5"]), T0 + HOUR, T0 + 9000)
        .await
        .unwrap();
    assert_eq!(
        store
            .confirm(room, 9, &other.hold_id, "key-1", "tok_ok", T0 + 9000)
            .await,
        Err(BookingError::IdempotencyKeyReused)
    );
    // A new key on the confirmed hold: it has ended.
    assert_eq!(
        store
            .confirm(room, 9, &hold.hold_id, "key-2", "tok_ok", T0 + 9000)
            .await,
        Err(BookingError::HoldExpired)
    );
    assert_eq!(pay.charges(), 1);

    // Exactly one booking: no seat sold twice, counts agree.
    let counts = store.room_seats(room, T0 + 9000).await.unwrap().unwrap();
    assert_eq!((counts.booked, counts.held, counts.available), (2, 1, 7));
    let map = store.seats(room, "p", T0 + 9000).await.unwrap();
    assert_eq!(map.seats[0].state, SeatState::Booked);

    // The booking is the visitor's; cancelling returns the seats.
    assert_eq!(
        store.get_booking(room, 9, &first.booking_id).await,
        Ok(first.clone())
    );
    assert_eq!(
        store.get_booking(room, 8, &first.booking_id).await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store.get_booking("other", 9, &first.booking_id).await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store.get_booking(room, 9, "x").await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store
            .cancel_booking(room, 8, &first.booking_id, T0 + 9000)
            .await,
        Err(BookingError::NotFound)
    );
    store
        .cancel_booking(room, 9, &first.booking_id, T0 + 9000)
        .await
        .unwrap();
    store
        .cancel_booking(room, 9, &first.booking_id, T0 + 9000)
        .await
        .unwrap();
    let cancelled = store.get_booking(room, 9, &first.booking_id).await.unwrap();
    assert_eq!(cancelled.status, BookingStatus::Cancelled);
    let counts = store.room_seats(room, T0 + 9000).await.unwrap().unwrap();
    assert_eq!((counts.booked, counts.available), (0, 9));
    // The sold seats can be held and sold again.
    store
        .release_hold(room, 9, &other.hold_id, T0 + 9000)
        .await
        .unwrap();
    let h = store
        .hold(
            room,
            "p",
            10,
            None,
            &seats(&["A-1-1"]),
            T0 + HOUR,
            T0 + 9000,
        )
        .await
        .unwrap();
    let b = store
        .confirm(room, 10, &h.hold_id, "k", "tok_ok", T0 + 9001)
        .await
        .unwrap();
    assert_eq!(b.seats, seats(&["A-1-1"]));
}

async fn decline_is_remembered_and_the_hold_stays(db: &TestDb) {
    let (store, pay) = db.store_counting().await;
    let room = "decline";
    let hold = one_seat_held(&store, room).await;
    for _ in 0..3 {
        assert_eq!(
            store
                .confirm(room, 1, &hold.hold_id, "k1", "tok_decline", T0 + 10)
                .await,
            Err(BookingError::PaymentDeclined)
        );
    }
    assert_eq!(pay.charges(), 1, "a declined key is not paid again");
    let map = store.seats(room, "p", T0 + 10).await.unwrap();
    assert_eq!(map.seats[0].state, SeatState::Held, "the hold stays");
    assert_eq!(
        store
            .hold(room, "p", 2, None, &seats(&["A-1-1"]), T0 + HOUR, T0 + 10)
            .await
            .unwrap_err(),
        BookingError::SeatUnavailable {
            seats: seats(&["A-1-1"])
        }
    );
    let b = store
        .confirm(room, 1, &hold.hold_id, "k2", "tok_ok", T0 + 20)
        .await
        .unwrap();
    assert_eq!(b.seats, seats(&["A-1-1"]));
    assert_eq!(pay.charges(), 2);
}

async fn confirm_rules(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(300)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "rules";
    let mut s = spec(&[("A", 1, 8, 100)]);
    s.hold_seconds = 60;
    store.put_performance(room, "p", &s, T0).await.unwrap();
    let hold = store
        .hold(room, "p", 1, None, &seats(&["A-1-1"]), T0 + HOUR, T0)
        .await
        .unwrap();

    assert!(matches!(
        store
            .confirm(room, 1, &hold.hold_id, "", "tok_ok", T0)
            .await,
        Err(BookingError::Invalid(_))
    ));
    assert!(matches!(
        store
            .confirm(room, 1, &hold.hold_id, "has space", "tok_ok", T0)
            .await,
        Err(BookingError::Invalid(_))
    ));
    assert!(matches!(
        store.confirm(room, 1, &hold.hold_id, "k", "", T0).await,
        Err(BookingError::Invalid(_))
    ));
    // Another visitor's hold, an unknown one, another room: not found,
    // and remembered as such under the key.
    assert_eq!(
        store
            .confirm(room, 2, &hold.hold_id, "k", "tok_ok", T0)
            .await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store
            .confirm(room, 2, &hold.hold_id, "k", "tok_ok", T0)
            .await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store
            .confirm(
                room,
                1,
                "0190aaaa-0000-7000-8000-000000000000",
                "k",
                "tok_ok",
                T0
            )
            .await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store
            .confirm("elsewhere", 1, &hold.hold_id, "k", "tok_ok", T0)
            .await,
        Err(BookingError::NotFound)
    );

    // While one key pays, another key on the same hold is refused.
    let charged = pay.charges();
    let paying = {
        let store = store.clone();
        let id = hold.hold_id.clone();
        tokio::spawn(async move { store.confirm(room, 1, &id, "k1", "tok_ok", T0 + 10).await })
    };
    eventually("the charge started", Duration::from_secs(5), || async {
        pay.charges() > charged
    })
    .await;
    assert_eq!(
        store
            .confirm(room, 1, &hold.hold_id, "k2", "tok_ok", T0 + 10)
            .await,
        Err(BookingError::PaymentInProgress)
    );
    assert_eq!(
        store.release_hold(room, 1, &hold.hold_id, T0 + 10).await,
        Err(BookingError::PaymentInProgress)
    );
    assert_eq!(
        store.end_session(room, 1, T0 + 10).await,
        Ok(0),
        "a paying hold is not ended"
    );
    assert!(paying.await.unwrap().is_ok());
    assert_eq!(pay.charges(), 1);

    // An ended hold: 409, remembered, nothing charged.
    let late = store
        .hold(room, "p", 3, None, &seats(&["A-1-2"]), T0 + HOUR, T0)
        .await
        .unwrap();
    for _ in 0..2 {
        assert_eq!(
            store
                .confirm(room, 3, &late.hold_id, "k", "tok_ok", T0 + 60_000)
                .await,
            Err(BookingError::HoldExpired)
        );
    }
    let released = store
        .hold(room, "p", 4, None, &seats(&["A-1-3"]), T0 + HOUR, T0)
        .await
        .unwrap();
    store
        .release_hold(room, 4, &released.hold_id, T0 + 1)
        .await
        .unwrap();
    assert_eq!(
        store
            .confirm(room, 4, &released.hold_id, "k", "tok_ok", T0 + 2)
            .await,
        Err(BookingError::HoldExpired)
    );
    assert_eq!(pay.charges(), 1);
}

/// Holds ending at `end`; for each, at once: a confirm whose clock says
/// just before, another visitor's claim and a sweep whose clocks say the
/// end. Whoever wins, a seat is sold at most once and every charge ends in
/// a booking or a refund.
async fn confirm_races_hold_end(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(20)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "race";
    let mut s = spec(&[("A", 1, 30, 100)]);
    s.hold_seconds = 10;
    store.put_performance(room, "p", &s, T0).await.unwrap();
    let end = T0 + 10_000;
    let mut holds = Vec::new();
    for v in 0..30u128 {
        let seat = format!("A-1-{}", v + 1);
        holds.push(
            store
                .hold(room, "p", v, None, &[seat], T0 + HOUR, T0)
                .await
                .unwrap(),
        );
    }
    let mut tasks = Vec::new();
    for (v, h) in holds.iter().enumerate() {
        let v = v as u128;
        let (s1, s2, s3) = (store.clone(), store.clone(), store.clone());
        let (id, seat) = (h.hold_id.clone(), h.seats.clone());
        tasks.push(tokio::spawn(async move {
            // Half the time the confirm starts first, half the rival.
            let (lead, lag) = (Duration::ZERO, Duration::from_millis(2 + v as u64 % 3));
            let (dc, dr) = if v.is_multiple_of(2) {
                (lead, lag)
            } else {
                (lag, lead)
            };
            let confirm = async {
                // The scenario: the race's head start.
                tokio::time::sleep(dc).await;
                s1.confirm(room, v, &id, "k", "tok_ok", end - 1 - (v as u64 % 3))
                    .await
            };
            let rival = async {
                // The scenario: the race's head start.
                tokio::time::sleep(dr).await;
                s2.hold(room, "p", 1000 + v, None, &seat, T0 + HOUR, end)
                    .await
            };
            let sweep = s3.sweep(end);
            let (c, r, _) = tokio::join!(confirm, rival, sweep);
            (c, r)
        }));
    }
    let mut sold = 0;
    let mut rivals = 0;
    for t in tasks {
        let (c, r) = t.await.unwrap();
        match &c {
            Ok(_) => sold += 1,
            Err(BookingError::HoldExpired | BookingError::PaymentFailed) => {}
            Err(e) => panic!("confirm: {e:?}"),
        }
        match &r {
            Ok(_) => rivals += 1,
            Err(BookingError::SeatUnavailable { .. }) => {}
            Err(e) => panic!("rival: {e:?}"),
        }
        assert!(
            !(c.is_ok() && r.is_ok()),
            "a seat both sold and held by a rival"
        );
    }
    let counts = store.room_seats(room, end).await.unwrap().unwrap();
    assert_eq!(counts.booked, sold);
    assert_eq!(counts.held, rivals);
    assert_eq!(
        pay.charges(),
        sold + pay.refunds(),
        "every charge is a booking or a refund"
    );
    println!(
        "[{:?}] confirm vs hold end: {sold} sold, {rivals} taken by rivals",
        db.kind
    );
}

/// A sweep (and rivals) while a hold pays past its own end: the seats stay
/// its, and the booking completes. A sweep past the paying window gives the
/// attempt up: refunded, no ticket sold, never both.
async fn sweeper_races_paying_hold(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(400)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "paying";
    let mut s = spec(&[("A", 1, 4, 100)]);
    s.hold_seconds = 1;
    store.put_performance(room, "p", &s, T0).await.unwrap();

    let hold = store
        .hold(room, "p", 1, None, &seats(&["A-1-1"]), T0 + HOUR, T0)
        .await
        .unwrap();
    let charged = pay.charges();
    let confirm = {
        let (store, id) = (store.clone(), hold.hold_id.clone());
        tokio::spawn(async move { store.confirm(room, 1, &id, "k", "tok_ok", T0 + 500).await })
    };
    eventually("the charge started", Duration::from_secs(5), || async {
        pay.charges() > charged
    })
    .await;
    let after_end = T0 + 5_000;
    let swept = store.sweep(after_end).await.unwrap();
    assert_eq!(swept.expired, 0, "a paying hold is not swept");
    assert_eq!(
        store
            .hold(room, "p", 2, None, &seats(&["A-1-1"]), T0 + HOUR, after_end)
            .await
            .unwrap_err(),
        BookingError::SeatUnavailable {
            seats: seats(&["A-1-1"])
        }
    );
    assert_eq!(
        store
            .room_seats(room, after_end)
            .await
            .unwrap()
            .unwrap()
            .held,
        1
    );
    let booking = confirm.await.unwrap().unwrap();
    assert_eq!(booking.seats, seats(&["A-1-1"]));

    // Past the paying window (payment timeout 10 s + 60 s margin) a sweep
    // settles the attempt while the charge is still running: the charge is
    // refunded and the confirm answers payment_failed.
    let hold = store
        .hold(room, "p", 3, None, &seats(&["A-1-2"]), T0 + HOUR, T0)
        .await
        .unwrap();
    let charged = pay.charges();
    let confirm = {
        let (store, id) = (store.clone(), hold.hold_id.clone());
        tokio::spawn(async move { store.confirm(room, 3, &id, "k", "tok_ok", T0 + 500).await })
    };
    eventually("the charge started", Duration::from_secs(5), || async {
        pay.charges() > charged
    })
    .await;
    let much_later = T0 + 500 + 71_000;
    let swept = store.sweep(much_later).await.unwrap();
    assert_eq!(swept.recovery.refunded, 1);
    assert_eq!(confirm.await.unwrap(), Err(BookingError::PaymentFailed));
    assert_eq!(
        store
            .confirm(room, 3, &hold.hold_id, "k", "tok_ok", much_later)
            .await,
        Err(BookingError::PaymentFailed)
    );
    let counts = store.room_seats(room, much_later).await.unwrap().unwrap();
    assert_eq!((counts.booked, counts.held), (1, 0));
    assert_eq!(pay.charges(), 2);
    assert!(pay.refunds() >= 1, "the late charge was refunded");
}

/// The test process re-runs itself as a child for the crash tests; in the
/// parent's own run this test does nothing.
#[tokio::test]
async fn crash_child() {
    let Ok(mode) = std::env::var("WR_BOOKING_CRASH") else {
        return;
    };
    let url = std::env::var("WR_BOOKING_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let path = std::env::var("WR_BOOKING_SQLITE").unwrap();
    let hold_id = std::env::var("WR_BOOKING_HOLD").unwrap();
    let payment: Arc<dyn Payment> = match mode.as_str() {
        "after_payment" => Arc::new(CountingPayment::new(Duration::ZERO)),
        _ => Arc::new(Hanging),
    };
    let mut config = origin::booking::BookingConfig::new(url, path);
    config.payment = payment;
    config.payment_timeout = Duration::from_secs(10);
    let store = origin::booking::BookingStore::connect(&config, T0)
        .await
        .unwrap();
    let store = store.with_faults(Faults {
        after_payment_recorded: Some(Arc::new(|| {
            println!("PAID");
            std::process::abort();
        })),
    });
    let r = store
        .confirm("crash", 5, &hold_id, "key", "tok_ok", T0 + 100)
        .await;
    panic!("the child should have died, got {r:?}");
}

/// A payment that says it is charging and never answers.
struct Hanging;

#[async_trait]
impl Payment for Hanging {
    async fn charge(&self, _: &str, _: &str, _: u64) -> Result<String, PaymentError> {
        println!("CHARGING");
        // The scenario: a payment that never answers (the child is killed).
        tokio::time::sleep(Duration::from_secs(120)).await;
        Err(PaymentError::Failed("never".into()))
    }

    async fn refund(&self, _: &str, _: u64) -> Result<(), PaymentError> {
        Ok(())
    }
}

/// Prepares a hold of visitor 5 on `crash/p`, runs the child in `mode`,
/// and waits for it to die (killing it at "CHARGING" with SIGKILL).
async fn crash_child_run(db: &TestDb, mode: &str) -> String {
    let (store, _) = db.store_counting().await;
    store
        .put_performance("crash", "p", &spec(&[("A", 1, 4, 700)]), T0)
        .await
        .unwrap();
    // Made in session 42 of the room's queue.
    let session = origin::booking::Session {
        seq: Some(42),
        ends_ms: T0 + HOUR,
    };
    let hold = store
        .hold_in_session(
            "crash",
            "p",
            5,
            None,
            &seats(&["A-1-1", "A-1-2"]),
            session,
            T0,
        )
        .await
        .unwrap();
    store.close().await;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "booking_confirm::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("WR_BOOKING_CRASH", mode)
        .env("WR_BOOKING_URL", db.url.clone().unwrap_or_default())
        .env("WR_BOOKING_SQLITE", &db.sqlite_path)
        .env("WR_BOOKING_HOLD", &hold.hold_id)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mode = mode.to_owned();
    let status = tokio::task::spawn_blocking(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap_or_default();
            if line.contains("CHARGING") && mode == "during_payment" {
                child.kill().unwrap();
                break;
            }
        }
        child.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(!status.success(), "the child died");
    hold.hold_id
}

async fn crash_after_payment_recorded(db: &TestDb) {
    let hold_id = crash_child_run(db, "after_payment").await;
    // The next start completes the paid booking.
    let (store, pay) = db.store_counting().await;
    let counts = store.room_seats("crash", T0 + 200).await.unwrap().unwrap();
    assert_eq!((counts.booked, counts.held), (2, 0));
    // Its session is handed on to be ended, once.
    assert_eq!(store.take_booked_sessions(), vec![("crash".to_owned(), 42)]);
    assert_eq!(store.take_booked_sessions(), vec![]);
    let booking = store
        .confirm("crash", 5, &hold_id, "key", "tok_ok", T0 + 300)
        .await
        .unwrap();
    assert_eq!(booking.seats, seats(&["A-1-1", "A-1-2"]));
    assert_eq!(booking.total, 1400);
    assert_eq!(pay.charges(), 0, "recovery does not charge again");
    assert_eq!(
        store.get_booking("crash", 5, &booking.booking_id).await,
        Ok(booking)
    );
    assert_eq!(store.recover(T0 + HOUR).await.unwrap().completed, 0);
}

async fn crash_during_payment(db: &TestDb) {
    let hold_id = crash_child_run(db, "during_payment").await;
    // Within the paying window the hold keeps its seats (its confirm might
    // be running elsewhere)...
    let (store, pay) = db.store_counting().await;
    let soon = T0 + 1000;
    assert_eq!(
        store
            .hold("crash", "p", 6, None, &seats(&["A-1-1"]), T0 + HOUR, soon)
            .await
            .unwrap_err(),
        BookingError::SeatUnavailable {
            seats: seats(&["A-1-1"])
        }
    );
    assert_eq!(store.sweep(soon).await.unwrap().recovery.refunded, 0);
    // ...after it, the unknown attempt is refunded and the hold is back.
    let later = T0 + 100 + 71_000;
    let swept = store.sweep(later).await.unwrap();
    assert_eq!(swept.recovery.refunded, 1);
    assert_eq!(pay.refunds(), 1);
    let counts = store.room_seats("crash", later).await.unwrap().unwrap();
    assert_eq!(
        (counts.booked, counts.held),
        (0, 2),
        "the hold has its own hour left"
    );
    assert_eq!(
        store
            .confirm("crash", 5, &hold_id, "key", "tok_ok", later)
            .await,
        Err(BookingError::PaymentFailed)
    );
    let booking = store
        .confirm("crash", 5, &hold_id, "key-2", "tok_ok", later)
        .await
        .unwrap();
    assert_eq!(booking.seats.len(), 2);
}

/// `room`'s performance `p` with one row of four seats, and visitor 1's
/// hold on its first seat for an hour.
async fn one_seat_held(store: &BookingStore, room: &str) -> Hold {
    store
        .put_performance(room, "p", &spec(&[("A", 1, 4, 100)]), T0)
        .await
        .unwrap();
    store
        .hold(room, "p", 1, None, &seats(&["A-1-1"]), T0 + HOUR, T0)
        .await
        .unwrap()
}

/// The rehearsal's declined-first visitor: a decline under one key, then
/// the good card under another is a new attempt and books (201), with the
/// payment fast and slowed.
async fn good_card_after_a_decline(db: &TestDb) {
    for (i, latency) in [0u64, 300].into_iter().enumerate() {
        let pay = Arc::new(CountingPayment::new(Duration::from_millis(latency)));
        let store = db.store(pay.clone(), T0).await;
        let room = format!("again{i}");
        let room = room.as_str();
        let hold = one_seat_held(&store, room).await;
        let declined = store
            .confirm(
                room,
                1,
                &hold.hold_id,
                "r-1-declined",
                "tok_decline",
                T0 + 10,
            )
            .await;
        assert_eq!(declined, Err(BookingError::PaymentDeclined), "{latency} ms");
        let booked = store
            .confirm(room, 1, &hold.hold_id, "r-1", "tok_ok", T0 + 20)
            .await;
        assert_eq!(
            booked.map(|b| b.seats),
            Ok(seats(&["A-1-1"])),
            "{latency} ms"
        );
        assert_eq!(pay.charges(), 2);
        assert_eq!(pay.refunds(), 0);
    }
}

/// The declined confirm's client goes away mid-payment (its request future
/// dropped, as the server drops a handler whose connection closed): the
/// hold stays paying for the abandoned attempt, so the good card is 409
/// `payment_in_progress` (never 402) until recovery gives that attempt up
/// after the paying window; then it books.
async fn good_card_after_a_dropped_decline(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(1500)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "dropped";
    let hold = one_seat_held(&store, room).await;
    let charged = pay.charges();
    let declined = {
        let (store, id) = (store.clone(), hold.hold_id.clone());
        tokio::spawn(async move {
            store
                .confirm(room, 1, &id, "r-1-declined", "tok_decline", T0 + 10)
                .await
        })
    };
    eventually("the charge started", Duration::from_secs(5), || async {
        pay.charges() > charged
    })
    .await;
    declined.abort();
    assert!(declined.await.unwrap_err().is_cancelled());
    assert_eq!(
        store
            .confirm(room, 1, &hold.hold_id, "r-1", "tok_ok", T0 + 20)
            .await,
        Err(BookingError::PaymentInProgress)
    );
    assert_eq!(store.sweep(T0 + 1000).await.unwrap().recovery.refunded, 0);
    let later = T0 + 10 + 71_000;
    assert_eq!(store.sweep(later).await.unwrap().recovery.refunded, 1);
    let booked = store
        .confirm(room, 1, &hold.hold_id, "r-1", "tok_ok", later)
        .await;
    assert_eq!(booked.map(|b| b.seats), Ok(seats(&["A-1-1"])));
    // The abandoned key has an answer too, never a booking.
    assert_eq!(
        store
            .confirm(room, 1, &hold.hold_id, "r-1-declined", "tok_decline", later)
            .await,
        Err(BookingError::PaymentFailed)
    );
}

/// The decline and the good card at once, payment slowed: whichever starts
/// second is 409 `payment_in_progress` (its key not kept), and the good
/// card, sent again under its key, books.
async fn decline_and_good_card_at_once(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(300)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "atonce";
    let hold = one_seat_held(&store, room).await;
    let send = |key: &'static str, token: &'static str, at: u64| {
        let (store, id) = (store.clone(), hold.hold_id.clone());
        tokio::spawn(async move { store.confirm(room, 1, &id, key, token, at).await })
    };
    let declined = send("r-1-declined", "tok_decline", T0 + 10);
    let good = send("r-1", "tok_ok", T0 + 10);
    let declined = declined.await.unwrap();
    let good = good.await.unwrap();
    assert!(
        matches!(
            declined,
            Err(BookingError::PaymentDeclined | BookingError::PaymentInProgress)
        ),
        "{declined:?}"
    );
    let booking = match good {
        Ok(b) => b,
        Err(BookingError::PaymentInProgress) => store
            .confirm(room, 1, &hold.hold_id, "r-1", "tok_ok", T0 + 1000)
            .await
            .expect("the good card books once the decline is settled"),
        other => panic!("good card: {other:?}"),
    };
    assert_eq!(booking.seats, seats(&["A-1-1"]));
    let counts = store.room_seats(room, T0 + 1000).await.unwrap().unwrap();
    assert_eq!((counts.booked, counts.held), (1, 0));
}

/// The sweeper running all along (as every 500 ms in the origin) while
/// visitors decline then pay with the good card: every good card books,
/// is charged once and never refunded, and nothing is left paying. Each
/// hold takes as many declines as it may before the good card.
async fn recovery_beside_decline_then_good_card(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(20)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "beside";
    store
        .put_performance(room, "p", &spec(&[("A", 4, 10, 100)]), T0)
        .await
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sweeper = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut errors = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if store.sweep(T0 + 5_000).await.is_err() {
                    errors += 1;
                }
            }
            errors
        })
    };
    let mut visitors = Vec::new();
    for v in 0..16u32 {
        let store = store.clone();
        visitors.push(tokio::spawn(async move {
            let seat = format!("A-{}-{}", v / 10 + 1, v % 10 + 1);
            let visitor = u128::from(v) + 1;
            let hold = store
                .hold(room, "p", visitor, None, &[seat], T0 + HOUR, T0)
                .await
                .unwrap();
            let rounds = u64::from(MAX_DECLINES_PER_HOLD) - 1;
            for round in 0..rounds {
                let at = T0 + 100 + round;
                let declined = format!("r-{v}-{round}-declined");
                let good = format!("r-{v}-{round}");
                let d = store
                    .confirm(room, visitor, &hold.hold_id, &declined, "tok_decline", at)
                    .await;
                assert_eq!(d, Err(BookingError::PaymentDeclined), "visitor {v}");
                if round + 1 < rounds {
                    continue;
                }
                let b = store
                    .confirm(room, visitor, &hold.hold_id, &good, "tok_ok", at + 1)
                    .await;
                assert!(b.is_ok(), "visitor {v}: {b:?}");
            }
        }));
    }
    for v in visitors {
        v.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(sweeper.await.unwrap(), 0, "no sweep failed");
    let counts = store.room_seats(room, T0 + 5_000).await.unwrap().unwrap();
    assert_eq!((counts.booked, counts.held), (16, 0));
    assert_eq!(pay.charges(), 16 * u64::from(MAX_DECLINES_PER_HOLD));
    assert_eq!(pay.refunds(), 0, "no good card charged and given back");
}

/// Instances' clocks differ: the good card's attempt starts under a clock
/// behind the decline's. A sweep while it pays must leave it paying (the
/// decline is settled), and it books.
async fn recovery_under_a_slower_clock(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(400)));
    let store = Arc::new(db.store(pay.clone(), T0).await);
    let room = "skew";
    let hold = one_seat_held(&store, room).await;
    let declined = store
        .confirm(
            room,
            1,
            &hold.hold_id,
            "r-1-declined",
            "tok_decline",
            T0 + 2_000,
        )
        .await;
    assert_eq!(declined, Err(BookingError::PaymentDeclined));
    let charged = pay.charges();
    let good = {
        let (store, id) = (store.clone(), hold.hold_id.clone());
        tokio::spawn(async move {
            store
                .confirm(room, 1, &id, "r-1", "tok_ok", T0 + 1_000)
                .await
        })
    };
    eventually("the charge started", Duration::from_secs(5), || async {
        pay.charges() > charged
    })
    .await;
    let swept = store.sweep(T0 + 2_100).await.unwrap();
    assert_eq!(swept.recovery, Default::default(), "nothing to recover");
    let booked = good.await.unwrap();
    assert_eq!(booked.map(|b| b.seats), Ok(seats(&["A-1-1"])));
    assert_eq!(pay.refunds(), 0);
}

/// A hold takes a bounded number of declined cards: each of the first four
/// leaves it held; the fifth is still 402 but ends it, its seat free at
/// once; a confirm after that, even with a good card, is 409
/// `hold_expired` and pays nothing.
async fn a_hold_takes_five_declines(db: &TestDb) {
    let (store, pay) = db.store_counting().await;
    let room = "declines";
    let hold = one_seat_held(&store, room).await;
    assert_eq!(MAX_DECLINES_PER_HOLD, 5);
    for i in 1..=MAX_DECLINES_PER_HOLD {
        let now = T0 + u64::from(i) * 10;
        assert_eq!(
            store
                .confirm(room, 1, &hold.hold_id, &format!("k{i}"), "tok_decline", now)
                .await,
            Err(BookingError::PaymentDeclined),
            "decline {i}"
        );
        let map = store.seats(room, "p", now).await.unwrap();
        let held = i < MAX_DECLINES_PER_HOLD;
        assert_eq!(
            map.seats[0].state,
            if held {
                SeatState::Held
            } else {
                SeatState::Available
            },
            "after decline {i}"
        );
    }
    // The key of the last decline keeps its answer.
    assert_eq!(
        store
            .confirm(room, 1, &hold.hold_id, "k5", "tok_decline", T0 + 100)
            .await,
        Err(BookingError::PaymentDeclined)
    );
    assert_eq!(
        store
            .confirm(room, 1, &hold.hold_id, "good", "tok_ok", T0 + 100)
            .await,
        Err(BookingError::HoldExpired)
    );
    assert_eq!(pay.charges(), 5, "nothing charged after the hold ended");
    // The visitor's live slot is free: it may hold again.
    store
        .hold(room, "p", 1, None, &seats(&["A-1-1"]), T0 + HOUR, T0 + 100)
        .await
        .unwrap();
}

/// Keys, declined attempts and holds that ended without a sale live a day
/// (`IDEMPOTENCY_TTL`) and the sweep deletes them after; younger ones, and
/// the booking's hold and payment, stay. Shown with a pinned clock.
async fn rows_past_their_time_go(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = "rows";
    let ttl = IDEMPOTENCY_TTL.as_millis() as u64;
    assert_eq!(ttl, 24 * HOUR);
    let hold = one_seat_held(&store, room).await;
    let made_up = "01a219e2-cbb3-77d2-ac5e-3a99d57638c1";
    // At T0: a made-up hold's key (404), a declined card, then the sale.
    assert_eq!(
        store
            .confirm(room, 1, made_up, "old-404", "tok_ok", T0)
            .await,
        Err(BookingError::NotFound)
    );
    assert_eq!(
        store
            .confirm(room, 1, &hold.hold_id, "old-declined", "tok_decline", T0)
            .await,
        Err(BookingError::PaymentDeclined)
    );
    store
        .confirm(room, 1, &hold.hold_id, "old-booked", "tok_ok", T0)
        .await
        .unwrap();
    // A released hold (visitor 2) at T0, and one (visitor 3) that ends by
    // time an hour on and is swept then.
    let released = store
        .hold(room, "p", 2, None, &seats(&["A-1-2"]), T0 + HOUR / 2, T0)
        .await
        .unwrap();
    store
        .release_hold(room, 2, &released.hold_id, T0)
        .await
        .unwrap();
    store
        .hold(room, "p", 3, None, &seats(&["A-1-3"]), T0 + 60_000, T0)
        .await
        .unwrap();
    assert_eq!(store.sweep(T0 + HOUR).await.unwrap().expired, 1);
    // Half a day on: a young key and a young declined hold of visitor 4.
    let half = T0 + 12 * HOUR;
    assert_eq!(
        store
            .confirm(room, 1, made_up, "young-404", "tok_ok", half)
            .await,
        Err(BookingError::NotFound)
    );
    let young = store
        .hold(room, "p", 4, None, &seats(&["A-1-4"]), half + HOUR, half)
        .await
        .unwrap();
    assert_eq!(
        store
            .confirm(
                room,
                4,
                &young.hold_id,
                "young-declined",
                "tok_decline",
                half
            )
            .await,
        Err(BookingError::PaymentDeclined)
    );
    store
        .release_hold(room, 4, &young.hold_id, half)
        .await
        .unwrap();
    let before = (
        db.rows("booking_idempotency").await,
        db.rows("booking_payments").await,
        db.rows("booking_holds").await,
    );
    assert_eq!(before, (5, 3, 4));

    // Just under a day: nothing goes.
    let swept = store.sweep(T0 + ttl - 1).await.unwrap();
    assert_eq!(swept.pruned, PruneReport::default());
    // A day and two hours on: T0's keys and declined attempt go, and the
    // holds of visitors 2 and 3 (ended an hour on at the latest); the
    // booked hold and its payment stay, and so does all that is younger.
    let later = T0 + ttl + 2 * HOUR;
    let swept = store.sweep(later).await.unwrap();
    assert_eq!(
        swept.pruned,
        PruneReport {
            keys: 3,
            declined_payments: 1,
            ended_holds: 2,
        }
    );
    assert_eq!(
        (
            db.rows("booking_idempotency").await,
            db.rows("booking_payments").await,
            db.rows("booking_holds").await,
        ),
        (2, 2, 2)
    );
    // A gone key is new again: the same key with another hold is no longer
    // refused as reused; a young one still is.
    assert_eq!(
        store
            .replay(room, 1, made_up, "old-404", "tok_ok")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .replay(room, 1, &hold.hold_id, "young-404", "tok_ok")
            .await
            .unwrap(),
        Some(Err(BookingError::IdempotencyKeyReused))
    );
    // The booking is intact.
    let booking = store
        .replay(room, 1, &hold.hold_id, "old-booked", "tok_ok")
        .await
        .unwrap();
    assert_eq!(booking, None, "its key has gone too");
    assert_eq!(
        store.sweep(later).await.unwrap().pruned,
        PruneReport::default()
    );
    // The sweep prunes once a minute: the young keys, a day old 10 s after
    // a prune that found nothing, wait for the next one.
    let before_day = half + ttl - 10_000;
    assert_eq!(
        store.sweep(before_day).await.unwrap().pruned,
        PruneReport::default()
    );
    let swept = store.sweep(before_day + 30_000).await.unwrap();
    assert_eq!(swept.pruned, PruneReport::default());
    assert_eq!(db.rows("booking_idempotency").await, 2, "not pruned yet");
    // Past the young ones' day they go too; the sale's hold and payment stay.
    let swept = store.sweep(half + ttl + 2 * HOUR).await.unwrap();
    assert_eq!(
        swept.pruned,
        PruneReport {
            keys: 2,
            declined_payments: 1,
            ended_holds: 1,
        }
    );
    assert_eq!(db.rows("booking_bookings").await, 1);
    assert_eq!(db.rows("booking_payments").await, 1);
    assert_eq!(db.rows("booking_holds").await, 1);
}

/// A first start on a MySQL server without the database creates it, and
/// the store works (a new user's `WR_DATABASE_URL=mysql://…/shop`).
#[tokio::test]
async fn a_missing_mysql_database_is_created() {
    let db = TestDb::missing_mysql();
    let (store, _) = db.store_counting().await;
    assert!(
        store
            .list_performances("concert", T0)
            .await
            .unwrap()
            .is_empty()
    );
}
