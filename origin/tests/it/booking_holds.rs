//! Booking on both databases: performances and their replacement, the
//! seat listing, and holds under contention (many visitors on few seats,
//! one hot seat, overlapping multi-seat holds), their end by time, release,
//! session end and sweep. Confirmation has `booking_confirm.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::common::booking::*;
use origin::booking::{BookingError, SeatState};
use sqlx::Connection;

both!(
    performances_and_listing,
    replace_refuses_seats_in_use,
    hold_rules,
    release_end_session_and_sweep,
    many_visitors_few_seats,
    one_hot_seat,
    overlapping_multi_seat_holds,
    another_instance_changes_the_map,
    one_live_hold_per_visitor_and_room,
    two_holds_at_once_on_two_performances,
    duplicate_live_holds_end_when_the_key_moves_to_the_room,
    two_paying_holds_of_one_visitor_survive_the_migration,
);

async fn performances_and_listing(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let perf = store
        .put_performance(
            "concert",
            "night-1",
            &spec(&[("A", 2, 3, 5000), ("B", 1, 2, 3000)]),
            T0,
        )
        .await
        .unwrap();
    assert_eq!(
        (perf.counts.available, perf.counts.held, perf.counts.booked),
        (8, 0, 0)
    );
    let json = serde_json::to_value(&perf).unwrap();
    assert_eq!(json["id"], "night-1");
    assert_eq!(json["available"], 8);
    assert_eq!(json["sections"][0]["name"], "A");
    assert_eq!(json["starts_at"], "2030-03-18T21:33:20Z");

    let map = store.seats("concert", "night-1", T0).await.unwrap();
    let ids: Vec<&str> = map.seats.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "A-1-1", "A-1-2", "A-1-3", "A-2-1", "A-2-2", "A-2-3", "B-1-1", "B-1-2"
        ]
    );
    assert_eq!(map.seats[6].price, 3000);
    let json = serde_json::to_value(&map).unwrap();
    assert_eq!(
        json["seats"][0],
        serde_json::json!({
            "id": "A-1-1", "section": "A", "row": 1, "number": 1, "price": 5000, "state": "available"
        })
    );
    assert!(json.get("tag").is_none());

    // The tag moves with a hold, and again when it ends by time alone.
    let tag0 = store.seats_tag("concert", "night-1", T0).await.unwrap();
    assert_eq!(tag0, map.tag);
    let hold = store
        .hold(
            "concert",
            "night-1",
            1,
            None,
            &seats(&["A-1-2"]),
            T0 + 3_600_000,
            T0,
        )
        .await
        .unwrap();
    let tag1 = store.seats_tag("concert", "night-1", T0).await.unwrap();
    assert_ne!(tag0, tag1);
    let held = store.seats("concert", "night-1", T0 + 1).await.unwrap();
    assert_eq!(held.seats[1].state, SeatState::Held);
    let after = hold.expires_at;
    let tag2 = store.seats_tag("concert", "night-1", after).await.unwrap();
    assert_ne!(tag1, tag2);
    let ended = store.seats("concert", "night-1", after).await.unwrap();
    assert_eq!(ended.seats[1].state, SeatState::Available);

    store
        .put_performance("concert", "night-0", &spec(&[("A", 1, 1, 1)]), T0)
        .await
        .unwrap();
    let mut early = spec(&[("A", 1, 1, 1)]);
    early.starts_at = time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
    store
        .put_performance("concert", "matinee", &early, T0)
        .await
        .unwrap();
    let list = store.list_performances("concert", T0).await.unwrap();
    let ids: Vec<&str> = list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["matinee", "night-0", "night-1"]);
    assert_eq!(list[2].counts.held, 1);
    assert!(
        store
            .list_performances("other", T0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.room_seats("other", T0).await.unwrap(), None);
    let room = store.room_seats("concert", T0).await.unwrap().unwrap();
    assert_eq!(
        (room.total, room.held, room.available, room.booked),
        (10, 1, 9, 0)
    );

    for (room, perf) in [
        ("concert", "nope"),
        ("concert", "Bad"),
        ("other", "night-1"),
    ] {
        assert_eq!(
            store.get_performance(room, perf, T0).await.unwrap_err(),
            BookingError::UnknownPerformance
        );
        assert_eq!(
            store.seats(room, perf, T0).await.unwrap_err(),
            BookingError::UnknownPerformance
        );
    }
    for bad in ["Bad", "-x", &"a".repeat(65)] {
        assert!(matches!(
            store
                .put_performance("concert", bad, &spec(&[("A", 1, 1, 1)]), T0)
                .await,
            Err(BookingError::Invalid(_))
        ));
    }
    assert!(matches!(
        store
            .put_performance("concert", "huge", &spec(&[("A", 1000, 1000, 1)]), T0)
            .await,
        Err(BookingError::Invalid(_))
    ));
}

async fn replace_refuses_seats_in_use(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = "replace";
    store
        .put_performance(room, "p", &spec(&[("A", 2, 2, 100), ("B", 1, 2, 50)]), T0)
        .await
        .unwrap();
    store
        .hold(room, "p", 7, None, &seats(&["A-2-2"]), T0 + 3_600_000, T0)
        .await
        .unwrap();
    let before = store.seats(room, "p", T0).await.unwrap();

    // Removing the held seat (A has one row now) or repricing A: refused.
    for bad in [
        spec(&[("A", 1, 2, 100), ("B", 1, 2, 50)]),
        spec(&[("A", 2, 2, 120), ("B", 1, 2, 50)]),
        spec(&[("B", 1, 2, 50)]),
    ] {
        let err = store
            .put_performance(room, "p", &bad, T0)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            BookingError::SeatsInUse {
                seats: seats(&["A-2-2"])
            }
        );
    }
    let after = store.seats(room, "p", T0).await.unwrap();
    assert_eq!(
        before.seats, after.seats,
        "a refused replacement changes nothing"
    );
    let perf = store.get_performance(room, "p", T0).await.unwrap();
    assert_eq!(perf.spec.sections.len(), 2);

    // Free seats may go and change price; new ones come; the title changes.
    let mut next = spec(&[("A", 2, 3, 100), ("B", 1, 1, 70)]);
    next.title = "Renamed".into();
    let perf = store.put_performance(room, "p", &next, T0).await.unwrap();
    assert_eq!(perf.spec.title, "Renamed");
    assert_eq!((perf.counts.available, perf.counts.held), (6, 1));
    let map = store.seats(room, "p", T0).await.unwrap();
    let ids: Vec<&str> = map.seats.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "A-1-1", "A-1-2", "A-1-3", "A-2-1", "A-2-2", "A-2-3", "B-1-1"
        ]
    );
    assert_eq!(map.seats[6].price, 70);
    assert_eq!(map.seats[4].state, SeatState::Held);

    // Once the hold ended, the seat may go.
    let later = T0 + 420_000;
    store
        .put_performance(room, "p", &spec(&[("A", 1, 1, 1)]), later)
        .await
        .unwrap();
    assert_eq!(store.seats(room, "p", later).await.unwrap().seats.len(), 1);
}

async fn hold_rules(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = "rules";
    let mut s = spec(&[("A", 3, 5, 1000)]);
    s.hold_seconds = 60;
    store.put_performance(room, "p", &s, T0).await.unwrap();
    let end = T0 + 3_600_000;

    let h = store
        .hold(room, "p", 1, None, &seats(&["A-1-2", "A-1-1"]), end, T0)
        .await
        .unwrap();
    assert_eq!(h.seats, seats(&["A-1-1", "A-1-2"]));
    assert_eq!(h.total, 2000);
    assert_eq!(h.expires_at, T0 + 60_000);
    let id = uuid::Uuid::parse_str(&h.hold_id).unwrap();
    assert_eq!(id.get_version_num(), 7);
    let json = serde_json::to_value(&h).unwrap();
    assert_eq!(json["performance"], "p");
    assert!(json["expires_at"].as_str().unwrap().ends_with('Z'));

    // One live hold per visitor and room.
    assert_eq!(
        store
            .hold(room, "p", 1, None, &seats(&["A-3-1"]), end, T0)
            .await
            .unwrap_err(),
        BookingError::HoldExists
    );
    // Taken seats are listed; nothing is held.
    assert_eq!(
        store
            .hold(
                room,
                "p",
                2,
                None,
                &seats(&["A-1-2", "A-2-1", "A-1-1"]),
                end,
                T0
            )
            .await
            .unwrap_err(),
        BookingError::SeatUnavailable {
            seats: seats(&["A-1-1", "A-1-2"])
        }
    );
    assert_eq!(
        store.seats(room, "p", T0).await.unwrap().seats[5].state,
        SeatState::Available
    );
    assert_eq!(
        store
            .hold(room, "p", 2, None, &[], end, T0)
            .await
            .unwrap_err(),
        BookingError::NoSeats
    );
    assert_eq!(
        store
            .hold(
                room,
                "p",
                2,
                None,
                &seats(&["A-2-1", "A-2-2", "A-2-3", "A-2-4", "A-2-5"]),
                end,
                T0
            )
            .await
            .unwrap_err(),
        BookingError::TooManySeats { max: 4 }
    );
    assert_eq!(
        store
            .hold(
                room,
                "p",
                2,
                None,
                &seats(&["A-2-1", "A-9-1", "Z-1-1", "A-02-1"]),
                end,
                T0
            )
            .await
            .unwrap_err(),
        BookingError::UnknownSeat(seats(&["A-02-1", "A-9-1", "Z-1-1"]))
    );
    assert!(matches!(
        store
            .hold(room, "p", 2, None, &seats(&["A-2-1", "A-2-1"]), end, T0)
            .await,
        Err(BookingError::Invalid(_))
    ));
    assert_eq!(
        store
            .hold(room, "nope", 2, None, &seats(&["A-2-1"]), end, T0)
            .await
            .unwrap_err(),
        BookingError::UnknownPerformance
    );
    // The session's end caps the hold; an ended session holds nothing.
    let short = store
        .hold(room, "p", 3, None, &seats(&["A-3-3"]), T0 + 5_000, T0)
        .await
        .unwrap();
    assert_eq!(short.expires_at, T0 + 5_000);
    assert_eq!(
        store
            .hold(room, "p", 4, None, &seats(&["A-3-4"]), T0, T0)
            .await
            .unwrap_err(),
        BookingError::SessionEnded
    );

    // The hold ends by time: its seats are free, and the visitor may hold
    // again, without any sweep.
    let later = T0 + 60_000;
    let again = store
        .hold(room, "p", 2, None, &seats(&["A-1-1"]), end, later)
        .await
        .unwrap();
    let mine = store
        .hold(room, "p", 1, None, &seats(&["A-1-2"]), end, later)
        .await
        .unwrap();
    assert_ne!(again.hold_id, mine.hold_id);

    // Another visitor's hold does not exist for them.
    assert_eq!(
        store
            .release_hold(room, 2, &mine.hold_id, later)
            .await
            .unwrap_err(),
        BookingError::NotFound
    );
    assert_eq!(
        store
            .release_hold("other", 1, &mine.hold_id, later)
            .await
            .unwrap_err(),
        BookingError::NotFound
    );
    assert_eq!(
        store
            .release_hold(room, 1, "not-a-uuid", later)
            .await
            .unwrap_err(),
        BookingError::NotFound
    );
    store
        .release_hold(room, 1, &mine.hold_id, later)
        .await
        .unwrap();
    store
        .release_hold(room, 1, &mine.hold_id, later)
        .await
        .unwrap();
}

async fn release_end_session_and_sweep(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = "sweep";
    store
        .put_performance(room, "p", &spec(&[("A", 1, 10, 10)]), T0)
        .await
        .unwrap();
    store
        .put_performance(room, "q", &spec(&[("A", 1, 10, 10)]), T0)
        .await
        .unwrap();
    let end = T0 + 3_600_000;
    let a = store
        .hold(room, "p", 1, None, &seats(&["A-1-1", "A-1-2"]), end, T0)
        .await
        .unwrap();
    store
        .hold(room, "p", 2, None, &seats(&["A-1-3"]), end, T0)
        .await
        .unwrap();
    let counts = store.room_seats(room, T0).await.unwrap().unwrap();
    assert_eq!((counts.held, counts.available), (3, 17));

    // Released, visitor 1 may hold on another performance.
    store.release_hold(room, 1, &a.hold_id, T0).await.unwrap();
    assert_eq!(store.room_seats(room, T0).await.unwrap().unwrap().held, 1);
    store
        .hold(room, "q", 1, None, &seats(&["A-1-1"]), end, T0)
        .await
        .unwrap();
    assert_eq!(store.room_seats(room, T0).await.unwrap().unwrap().held, 2);
    // Visitor 1's session ends: their hold on q ends too, not visitor 2's.
    assert_eq!(store.end_session(room, 1, T0).await.unwrap(), 1);
    assert_eq!(store.end_session(room, 1, T0).await.unwrap(), 0);
    let counts = store.room_seats(room, T0).await.unwrap().unwrap();
    assert_eq!((counts.held, counts.available), (1, 19));
    assert_eq!(store.end_session("Bad room", 1, T0).await.unwrap(), 0);

    // Ended holds read as available at once; the sweep marks them.
    let later = T0 + 420_000;
    assert_eq!(
        store.room_seats(room, later).await.unwrap().unwrap().held,
        0
    );
    let tag = store.seats_tag(room, "p", later).await.unwrap();
    let swept = store.sweep(later).await.unwrap();
    assert_eq!(swept.expired, 1);
    assert_ne!(store.seats_tag(room, "p", later).await.unwrap(), tag);
    assert_eq!(store.sweep(later).await.unwrap().expired, 0);
}

/// 2,000 hold attempts from 500 visitors on 100 seats, all at once.
async fn many_visitors_few_seats(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    let room = "crowd";
    let mut s = spec(&[("A", 10, 10, 100)]);
    s.max_seats_per_hold = 1;
    store.put_performance(room, "p", &s, T0).await.unwrap();
    let end = T0 + 3_600_000;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for attempt in 0..2000u64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let visitor = u128::from(attempt % 500);
            // Each visitor tries four different seats; each seat is asked
            // for 20 times.
            let idx = (attempt + attempt / 500 * 17) % 100;
            let seat = format!("A-{}-{}", idx / 10 + 1, idx % 10 + 1);
            let r = store.hold(room, "p", visitor, None, &[seat], end, T0).await;
            (visitor, r)
        }));
    }
    let mut held: HashMap<String, u128> = HashMap::new();
    let mut holders = HashMap::new();
    for t in tasks {
        let (visitor, r) = t.await.unwrap();
        match r {
            Ok(h) => {
                assert!(
                    holders.insert(visitor, h.hold_id.clone()).is_none(),
                    "two live holds"
                );
                for seat in h.seats {
                    assert!(held.insert(seat, visitor).is_none(), "seat held twice");
                }
            }
            Err(BookingError::SeatUnavailable { .. } | BookingError::HoldExists) => {}
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
    println!(
        "[{:?}] 2000 attempts, 500 visitors, 100 seats: {} held in {:?}",
        db.kind,
        held.len(),
        started.elapsed()
    );
    let counts = store.room_seats(room, T0).await.unwrap().unwrap();
    assert_eq!(counts.held as usize, held.len());
    let map = store.seats(room, "p", T0).await.unwrap();
    let held_listed = map
        .seats
        .iter()
        .filter(|s| s.state == SeatState::Held)
        .count();
    assert_eq!(held_listed, held.len());
    // Every seat is asked for many times over: all 100 end up held.
    assert_eq!(held.len(), 100);

    // The holds end: all 100 available again, before and after a sweep.
    let later = T0 + 420_000;
    assert_eq!(
        store
            .room_seats(room, later)
            .await
            .unwrap()
            .unwrap()
            .available,
        100
    );
    let swept = store.sweep(later).await.unwrap();
    assert_eq!(swept.expired, 100);
    let counts = store.room_seats(room, later).await.unwrap().unwrap();
    assert_eq!((counts.available, counts.held), (100, 0));
    let map = store.seats(room, "p", later).await.unwrap();
    assert!(map.seats.iter().all(|s| s.state == SeatState::Available));
}

/// 1,000 visitors on one seat at once: one winner, the rest told quickly.
async fn one_hot_seat(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    let room = "hot";
    store
        .put_performance(room, "p", &spec(&[("A", 1, 5, 100)]), T0)
        .await
        .unwrap();
    let end = T0 + 3_600_000;
    let mut tasks = Vec::new();
    for visitor in 0..1000u128 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let r = store
                .hold(room, "p", visitor, None, &seats(&["A-1-3"]), end, T0)
                .await;
            (r, t.elapsed())
        }));
    }
    let mut winners = 0;
    let mut losers = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (Ok(_), _) => winners += 1,
            (Err(BookingError::SeatUnavailable { seats }), took) => {
                assert_eq!(seats, ["A-1-3"]);
                losers.push(took);
            }
            (Err(e), _) => panic!("unexpected error {e:?}"),
        }
    }
    assert_eq!(winners, 1);
    assert_eq!(losers.len(), 999);
    let p50 = percentile(&mut losers, 50.0);
    let p99 = percentile(&mut losers, 99.0);
    println!(
        "[{:?}] hot seat: 1 winner, 999 losers; loser latency p50 {p50:?} p99 {p99:?}",
        db.kind
    );
}

/// Many visitors holding overlapping runs of seats: each hold is whole or
/// absent, no seat twice, and no deadlock surfaces as an error.
async fn overlapping_multi_seat_holds(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    let room = "overlap";
    store
        .put_performance(room, "p", &spec(&[("A", 1, 40, 100)]), T0)
        .await
        .unwrap();
    let end = T0 + 3_600_000;
    let mut tasks = Vec::new();
    for visitor in 0..400u128 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            // Runs of 2 to 4 seats, in both orders, overlapping their neighbours.
            let start = (visitor * 7 % 38) as u32 + 1;
            let len = (visitor % 3) as u32 + 2;
            let mut want: Vec<String> = (start..(start + len).min(41))
                .map(|n| format!("A-1-{n}"))
                .collect();
            if visitor % 2 == 1 {
                want.reverse();
            }
            (
                want.clone(),
                store.hold(room, "p", visitor, None, &want, end, T0).await,
            )
        }));
    }
    let mut owner: HashMap<String, String> = HashMap::new();
    let mut won = 0;
    for t in tasks {
        let (want, r) = t.await.unwrap();
        match r {
            Ok(h) => {
                won += 1;
                assert_eq!(h.seats.len(), want.len(), "a hold is whole");
                for seat in h.seats {
                    assert!(
                        owner.insert(seat, h.hold_id.clone()).is_none(),
                        "seat held twice"
                    );
                }
            }
            Err(BookingError::SeatUnavailable { seats }) => assert!(!seats.is_empty()),
            Err(e) => panic!("unexpected error (a deadlock surfacing?) {e:?}"),
        }
    }
    // What the database says matches what the winners were told.
    let map = store.seats(room, "p", T0).await.unwrap();
    for seat in &map.seats {
        assert_eq!(
            seat.state == SeatState::Held,
            owner.contains_key(&seat.id),
            "{}",
            seat.id
        );
    }
    println!(
        "[{:?}] overlapping holds: {won} whole holds, {} seats",
        db.kind,
        owner.len()
    );
}

/// Two instances on one database: the first caches the performance row for
/// its holds; the second reprices and reshapes the map. The first's holds
/// right after charge the new prices and see the new seats, cache or not.
async fn another_instance_changes_the_map(db: &TestDb) {
    let (a, _) = db.store_counting().await;
    let (b, _) = db.store_counting().await;
    let room = "instances";
    a.put_performance(
        room,
        "p",
        &spec(&[("A", 1, 2, 100), ("B", 1, 2, 50), ("C", 1, 2, 30)]),
        T0,
    )
    .await
    .unwrap();
    let h = a
        .hold(room, "p", 1, None, &seats(&["A-1-1"]), T0 + 3_600_000, T0)
        .await
        .unwrap();
    assert_eq!(h.total, 100);
    // B gives section B a second row: A's cached map lacks it.
    b.put_performance(
        room,
        "p",
        &spec(&[("A", 1, 2, 100), ("B", 2, 2, 50), ("C", 1, 2, 30)]),
        T0,
    )
    .await
    .unwrap();
    let h = a
        .hold(room, "p", 2, None, &seats(&["B-2-2"]), T0 + 3_600_000, T0)
        .await
        .unwrap();
    assert_eq!(h.total, 50, "a seat added by another instance is known");
    // B reprices section C (no seat of it in use): A's cache has 30.
    b.put_performance(
        room,
        "p",
        &spec(&[("A", 1, 2, 100), ("B", 2, 2, 50), ("C", 1, 2, 40)]),
        T0,
    )
    .await
    .unwrap();
    let h = a
        .hold(room, "p", 3, None, &seats(&["C-1-1"]), T0 + 3_600_000, T0)
        .await
        .unwrap();
    assert_eq!(h.total, 40, "a stale cached price must not reach a hold");
}

/// One admission buys once, so it holds once: a visitor with a live hold on
/// one of five performances is refused on every other (409 `hold_exists`,
/// nothing held there); released, it may hold elsewhere; a hold that ended
/// by time frees the visitor as well, and another visitor is not affected.
async fn one_live_hold_per_visitor_and_room(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = "one-hold";
    let mut s = spec(&[("A", 1, 4, 10)]);
    s.hold_seconds = 60;
    let perfs = ["p1", "p2", "p3", "p4", "p5"];
    for p in perfs {
        store.put_performance(room, p, &s, T0).await.unwrap();
    }
    let end = T0 + 3_600_000;
    let four = seats(&["A-1-1", "A-1-2", "A-1-3", "A-1-4"]);
    let first = store
        .hold(room, "p1", 7, None, &four, end, T0)
        .await
        .unwrap();
    for p in &perfs[1..] {
        assert_eq!(
            store
                .hold(room, p, 7, None, &four, end, T0)
                .await
                .unwrap_err(),
            BookingError::HoldExists,
            "{p}"
        );
    }
    let counts = store.room_seats(room, T0).await.unwrap().unwrap();
    assert_eq!(
        (counts.held, counts.available),
        (4, 16),
        "one hold, not five"
    );
    // Another visitor holds anywhere; the same visitor in another room too.
    store
        .hold(room, "p2", 8, None, &four, end, T0)
        .await
        .unwrap();
    store
        .put_performance("other-room", "p1", &s, T0)
        .await
        .unwrap();
    store
        .hold("other-room", "p1", 7, None, &four, end, T0)
        .await
        .unwrap();

    store
        .release_hold(room, 7, &first.hold_id, T0)
        .await
        .unwrap();
    let second = store
        .hold(room, "p3", 7, None, &four, end, T0)
        .await
        .unwrap();
    assert_eq!(
        store
            .hold(room, "p1", 7, None, &four, end, T0)
            .await
            .unwrap_err(),
        BookingError::HoldExists
    );
    // Its time up (no sweep), the visitor holds on another performance, and
    // the ended hold's seats are free on its own.
    let later = T0 + 60_000;
    store
        .hold(room, "p4", 7, None, &four, end, later)
        .await
        .unwrap();
    let p3 = store.seats(room, "p3", later).await.unwrap();
    assert!(p3.seats.iter().all(|x| x.state == SeatState::Available));
    assert_eq!(
        store.release_hold(room, 7, &second.hold_id, later).await,
        Ok(()),
        "releasing an ended hold is fine"
    );
    let counts = store.room_seats(room, later).await.unwrap().unwrap();
    assert_eq!(counts.held, 4, "only the hold on p4 (p2's ended too)");
}

/// Two holds of one visitor on two performances at the same moment: the
/// schema's unique key decides, exactly one is held and the other holds
/// nothing. Repeated, so the two often meet inside their transactions.
async fn two_holds_at_once_on_two_performances(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    let room = "race";
    for p in ["p", "q"] {
        store
            .put_performance(room, p, &spec(&[("A", 1, 2, 10)]), T0)
            .await
            .unwrap();
    }
    for visitor in 1..=20u128 {
        // Each visitor's holds end at once, so the seats are free again.
        let now = T0 + visitor as u64 * 10_000;
        let one = seats(&["A-1-1"]);
        let (a, b) = tokio::join!(
            store.hold(room, "p", visitor, None, &one, now + 5_000, now),
            store.hold(room, "q", visitor, None, &one, now + 5_000, now),
        );
        let won = [&a, &b].iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "visitor {visitor}: {a:?} / {b:?}");
        for r in [&a, &b] {
            if let Err(e) = r {
                assert_eq!(*e, BookingError::HoldExists, "visitor {visitor}");
            }
        }
        let counts = store.room_seats(room, now).await.unwrap().unwrap();
        assert_eq!(counts.held, 1, "visitor {visitor}: the loser holds nothing");
    }
}

/// A database made while the live key was per performance may hold several
/// live holds of one visitor in a room; the migration to the per-room key
/// ends all but one first (never a paying one: its payment decides it),
/// frees their seats, and cannot fail on such data.
/// Two paying holds of one visitor in a room (possible under the old key)
/// do not stop the migration: both stay paying, one keeps the live place.
async fn two_paying_holds_of_one_visitor_survive_the_migration(db: &TestDb) {
    db.migrate_before(20261127090000).await;
    let mut conn = db.raw().await;
    const V: &str = "0000000000000000000000000000000a";
    for (pkey, hold) in [
        (1i64, "00000000-0000-7000-8000-000000000001"),
        (2, "00000000-0000-7000-8000-000000000002"),
    ] {
        sqlx::query(
            "INSERT INTO booking_holds (hold_id, pkey, room, visitor, live_visitor, seats, \
             total, state, created_at, expires_at, paying_until) \
             VALUES (?, ?, 'mig', ?, ?, 'A-1-1', 10, 'paying', 0, 1, 1)",
        )
        .bind(hold)
        .bind(pkey)
        .bind(V)
        .bind(V)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.ok();
    db.migrate_before(i64::MAX).await;
    let mut conn = db.raw().await;
    let after: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT hold_id, state, live_visitor FROM booking_holds ORDER BY hold_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    conn.close().await.ok();
    let states: Vec<&str> = after.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(states, ["paying", "paying"], "their payments decide them");
    assert_eq!(after[0].2, None);
    assert_eq!(after[1].2.as_deref(), Some(V), "the newest keeps the place");
}

async fn duplicate_live_holds_end_when_the_key_moves_to_the_room(db: &TestDb) {
    db.migrate_before(20261127090000).await;
    let mut conn = db.raw().await;
    let run = |sql: &'static str| sqlx::query(sql);
    for (pkey, perf) in [(1i64, "p"), (2, "q")] {
        run("INSERT INTO booking_performances (pkey, room, performance, title, starts_at, \
             hold_ms, max_seats_per_hold, total_seats, sections) \
             VALUES (?, 'mig', ?, 't', 0, 420000, 4, 2, '[{\"name\":\"A\",\"rows\":1,\"seats_per_row\":2,\"price\":10}]')")
            .bind(pkey)
            .bind(perf)
            .execute(&mut conn)
            .await
            .unwrap();
        run("INSERT INTO booking_counters (pkey, shard, changes, booked) VALUES (?, 0, 0, 0)")
            .bind(pkey)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let until = (T0 + 600_000) as i64;
    // Visitors 10 and 11 as the store writes them.
    const V: &str = "0000000000000000000000000000000a";
    const W: &str = "0000000000000000000000000000000b";
    // (hold, performance key, visitor, state)
    let holds = [
        ("00000000-0000-7000-8000-000000000001", 1i64, V, "held"),
        ("00000000-0000-7000-8000-000000000002", 2, V, "held"),
        ("00000000-0000-7000-8000-000000000003", 1, W, "paying"),
        ("00000000-0000-7000-8000-000000000004", 2, W, "held"),
    ];
    // Each performance has one seat per visitor: V's A-1-1, W's A-1-2.
    for (i, (hold, pkey, visitor, state)) in holds.iter().enumerate() {
        let number: i64 = if i < 2 { 1 } else { 2 };
        run(
            "INSERT INTO booking_seats (pkey, seat, section, row_no, number, price, hold_id, \
             held_until, booking_id) VALUES (?, ?, 'A', 1, ?, 10, ?, ?, NULL)",
        )
        .bind(*pkey)
        .bind(format!("A-1-{number}"))
        .bind(number)
        .bind(*hold)
        .bind(if *state == "paying" {
            i64::MAX / 2
        } else {
            until
        })
        .execute(&mut conn)
        .await
        .unwrap();
        run(
            "INSERT INTO booking_holds (hold_id, pkey, room, visitor, live_visitor, seats, \
             total, state, created_at, expires_at, paying_until) \
             VALUES (?, ?, 'mig', ?, ?, ?, 10, ?, ?, ?, ?)",
        )
        .bind(*hold)
        .bind(*pkey)
        .bind(*visitor)
        .bind(*visitor)
        .bind(format!("A-1-{number}"))
        .bind(*state)
        .bind(T0 as i64)
        .bind(until)
        .bind(if *state == "paying" { until } else { 0 })
        .execute(&mut conn)
        .await
        .unwrap();
    }
    run(
        "INSERT INTO booking_payments (attempt_id, hold_id, amount, state, reference, \
         created_at, updated_at) VALUES ('00000000-0000-7000-8000-0000000000a3', \
         '00000000-0000-7000-8000-000000000003', 10, 'started', NULL, ?, ?)",
    )
    .bind(T0 as i64)
    .bind(T0 as i64)
    .execute(&mut conn)
    .await
    .unwrap();

    let (store, _) = db.store_counting().await;
    let mut after: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT hold_id, state, live_visitor FROM booking_holds ORDER BY hold_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    after.iter_mut().for_each(|h| h.0 = h.0[35..].to_owned());
    let live = |s: &str| Some(s.to_owned());
    assert_eq!(
        after,
        [
            ("1".into(), "expired".into(), None),
            ("2".into(), "held".into(), live(V)),
            ("3".into(), "paying".into(), live(W)),
            ("4".into(), "expired".into(), None),
        ],
        "the newest stays, or the paying one"
    );
    let freed: Vec<(i64, String, Option<String>, i64)> = sqlx::query_as(
        "SELECT pkey, seat, hold_id, held_until FROM booking_seats ORDER BY pkey, seat",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(freed[0].2, None, "hold 1's seat is free: {freed:?}");
    assert_eq!(freed[0].3, 0);
    assert_eq!(freed[3].2, None, "hold 4's seat is free: {freed:?}");
    assert!(freed[1].2.is_some() && freed[2].2.is_some(), "{freed:?}");
    conn.close().await.ok();
    // The new key holds: each visitor's one live hold refuses another.
    let one = seats(&["A-1-2"]);
    for visitor in [10u128, 11] {
        assert_eq!(
            store
                .hold("mig", "q", visitor, None, &one, T0 + 600_000, T0)
                .await
                .unwrap_err(),
            BookingError::HoldExists,
            "visitor {visitor}"
        );
    }
}
