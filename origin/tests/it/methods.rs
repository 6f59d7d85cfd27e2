//! Queueing methods, scheduled windows, the line cap and the per-client
//! place cap, on the real Redis.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::*;
use origin::clock::Clock;
use origin::queue::{Joined, PlaceLimit, Standing};
use origin::room::{QueueingMethod, RoomSettings, RoomState, Window};
use serde_json::Value;
use time::OffsetDateTime;

fn with_method(capacity: u32, method: QueueingMethod) -> RoomSettings {
    RoomSettings {
        capacity,
        admit_per_second: 1_000.0,
        method,
        ..Default::default()
    }
}

#[tokio::test]
async fn random_admits_a_lottery_draw_within_capacity() {
    let t = test_store(STORE);
    let room = make_paused_room(
        t.store.as_ref(),
        "lottery",
        with_method(1_000, QueueingMethod::Random),
    )
    .await;
    let api = Api::new(state(t.store.clone()));
    for _ in 0..200 {
        let r = api.join(&room, None).await;
        assert_eq!(r.json["state"], "waiting");
        assert!(r.json["position"].is_null(), "a lottery has no places");
        assert!(r.json["eta_seconds"].is_null());
    }
    t.store.set_state(&room, RoomState::Open).await.unwrap();
    let order = promote(t.store.as_ref(), &room, 200, 1_000).await;
    // Sequence numbers run from the room's base + 1, in order of joining.
    let first = *order.iter().min().unwrap();
    let in_order: Vec<u64> = (first..first + 200).collect();
    assert_ne!(order, in_order, "drawn, not first come");
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, in_order, "everyone drawn exactly once");

    // Capacity still bounds a lottery.
    let small = make_paused_room(
        t.store.as_ref(),
        "small-lottery",
        with_method(5, QueueingMethod::Random),
    )
    .await;
    for _ in 0..20 {
        t.store.join(&small, None, None).await.unwrap();
    }
    t.store.set_state(&small, RoomState::Open).await.unwrap();
    let report = t.store.tick(&small).await.unwrap();
    assert_eq!(
        (report.admitted.len(), report.active, report.waiting),
        (5, 5, 15)
    );
}

#[tokio::test]
async fn passthrough_admits_everyone_and_empties_the_line() {
    let t = test_store(STORE);
    let room = make_room(
        t.store.as_ref(),
        "open-door",
        with_method(2, QueueingMethod::Fifo),
    )
    .await;
    let api = Api::new(state(t.store.clone()));
    let mut waiting = 0;
    for _ in 0..6 {
        if api.join(&room, None).await.json["state"] == "waiting" {
            waiting += 1;
        }
    }
    assert_eq!(waiting, 4);
    // Switched live: the next tick lets the whole line in, and joins pass at once.
    t.store
        .put_room(&room, &with_method(2, QueueingMethod::Passthrough))
        .await
        .unwrap();
    let report = t.store.tick(&room).await.unwrap();
    assert_eq!((report.admitted.len(), report.waiting), (4, 0));
    for _ in 0..5 {
        assert_eq!(api.join(&room, None).await.json["state"], "admitted");
    }
    assert_eq!(
        t.store.figures(&room).await.unwrap().active,
        11,
        "the gate is off"
    );
}

#[tokio::test]
async fn reject_takes_no_places_and_tells_waiters_but_keeps_those_inside() {
    let t = test_store(STORE);
    let room = make_room(
        t.store.as_ref(),
        "no-entry",
        with_method(1, QueueingMethod::Fifo),
    )
    .await;
    let api = Api::new(state(t.store.clone()));
    let inside = api.join(&room, None).await;
    let waiter = api.join(&room, None).await;
    assert_eq!(waiter.json["state"], "waiting");

    t.store
        .put_room(&room, &with_method(1, QueueingMethod::Reject))
        .await
        .unwrap();
    let r = api.join(&room, None).await;
    assert_eq!(r.json["state"], "closed");
    assert!(r.json.get("ticket").is_none());
    assert_eq!(
        api.status(&room, &waiter.ticket()).await.json["state"],
        "closed"
    );
    assert_eq!(
        api.join(&room, Some(&waiter.ticket())).await.json["state"],
        "closed"
    );
    assert_eq!(
        api.status(&room, &inside.ticket()).await.json["state"],
        "admitted"
    );
    api.leave(&room, &inside.ticket()).await;
    assert!(
        t.store.tick(&room).await.unwrap().admitted.is_empty(),
        "nobody is let in"
    );
    assert_eq!(t.store.figures(&room).await.unwrap().places_given, 2);
}

#[tokio::test]
async fn scheduled_windows_replace_the_settings_while_they_run() {
    let now = OffsetDateTime::now_utc();
    let clock = Arc::new(AtomicU64::new(
        u64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap(),
    ));
    let t = pinned_store(STORE, clock.clone());
    let phase_two = now + Duration::from_millis(1_500);
    let settings = RoomSettings {
        windows: vec![
            Window {
                starts_at: now - Duration::from_secs(1),
                ends_at: phase_two,
                capacity: Some(3),
                admit_per_second: None,
                session_seconds: None,
                method: None,
            },
            Window {
                starts_at: phase_two,
                ends_at: now + Duration::from_secs(600),
                capacity: None,
                admit_per_second: None,
                session_seconds: None,
                method: Some(QueueingMethod::Reject),
            },
        ],
        ..with_method(1, QueueingMethod::Fifo)
    };
    settings.validate().unwrap();
    let room = make_room(t.store.as_ref(), "phases", settings.clone()).await;
    let api = Api::new(state(t.store.clone()).with_clock(Clock::Manual(clock.clone())));
    let states: Vec<Value> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(api.join(&room, None).await.json["state"].clone());
        }
        v
    };
    assert_eq!(
        states,
        ["admitted", "admitted", "admitted", "waiting"],
        "phase one: capacity 3"
    );
    clock.fetch_add(1_600, Ordering::SeqCst);
    assert_eq!(
        api.join(&room, None).await.json["state"],
        "closed",
        "phase two: reject"
    );
    assert_eq!(
        t.store.figures(&room).await.unwrap().settings,
        settings,
        "stored as given"
    );
}

#[test]
fn windows_are_validated() {
    let now = OffsetDateTime::now_utc();
    let w = |from: i64, to: i64, capacity: Option<u32>| Window {
        starts_at: now + time::Duration::seconds(from),
        ends_at: now + time::Duration::seconds(to),
        capacity,
        admit_per_second: None,
        session_seconds: None,
        method: None,
    };
    for windows in [
        vec![w(10, 5, None)],
        vec![w(0, 10, None), w(5, 20, None)],
        vec![w(0, 10, Some(0))],
    ] {
        let s = RoomSettings {
            windows,
            ..Default::default()
        };
        assert!(s.validate().is_err(), "{s:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_line_cap_gives_exactly_max_line_places_to_the_first_comers() {
    let t = test_store(STORE);
    let settings = RoomSettings {
        max_line: Some(100),
        ..with_method(10, QueueingMethod::Fifo)
    };
    let room = make_paused_room(t.store.as_ref(), "first-100", settings).await;
    let server = spawn(state(t.store.clone()), None).await;
    let attempts = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..64 {
        let attempts = attempts.clone();
        let url = server.url(&format!("/queue/{room}/join"));
        let room = room.clone();
        clients.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let (mut placed, mut sold_out) = (Vec::new(), 0);
            while attempts.fetch_add(1, Ordering::Relaxed) < 400 {
                let r: Value = http.post(&url).send().await.unwrap().json().await.unwrap();
                match r["state"].as_str().unwrap() {
                    "waiting" => placed.push(seq_of(r["ticket"].as_str().unwrap(), &room)),
                    "sold_out" => {
                        assert!(r.get("ticket").is_none(), "sold out takes no place");
                        sold_out += 1;
                    }
                    other => panic!("unexpected {other}"),
                }
            }
            (placed, sold_out)
        }));
    }
    let (mut placed, mut sold_out) = (Vec::new(), 0);
    for c in clients {
        let (p, s) = c.await.unwrap();
        placed.extend(p);
        sold_out += s;
    }
    placed.sort_unstable();
    // The first 100 numbers the room gave (from its base + 1, no gaps); with
    // places_given == 100 below, nobody else got one.
    let first = placed[0];
    assert_eq!(
        placed,
        (first..first + 100).collect::<Vec<u64>>(),
        "exactly the first 100 sequence numbers"
    );
    assert_eq!(sold_out, 300);
    let f = t.store.figures(&room).await.unwrap();
    assert_eq!((f.places_given, f.waiting), (100, 100));
    server.stop().await;
}

#[tokio::test]
async fn one_client_holds_at_most_its_cap_of_places() {
    let t = test_store(STORE);
    let room = make_paused_room(
        t.store.as_ref(),
        "capped",
        with_method(10, QueueingMethod::Fifo),
    )
    .await;
    let limit = PlaceLimit {
        holder: "203.0.113.7".into(),
        max: 2,
    };
    let join = |limit: &PlaceLimit, existing: Option<u64>| {
        let (store, room, limit) = (t.store.clone(), room.clone(), limit.clone());
        async move { store.join(&room, existing, Some(&limit)).await.unwrap() }
    };
    let first = join(&limit, None).await.answer().unwrap();
    join(&limit, None).await.answer().unwrap();
    assert_eq!(join(&limit, None).await, Joined::TooManyPlaces);
    // A kept place is not a new one; another client is not affected.
    let again = join(&limit, first.seq).await.answer().unwrap();
    assert_eq!(again.seq, first.seq);
    let other = PlaceLimit {
        holder: "198.51.100.1".into(),
        max: 2,
    };
    let r = join(&other, None).await.answer().unwrap();
    assert!(matches!(r.standing, Standing::Waiting { .. }));
    assert_eq!(t.store.figures(&room).await.unwrap().places_given, 3);
}

#[tokio::test]
async fn the_front_of_the_line_reports_how_long_it_has_waited() {
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(unix_now() * 1_000));
    let t = pinned_store(STORE, clock.clone());
    let room = make_paused_room(t.store.as_ref(), "patient", RoomSettings::default()).await;
    assert_eq!(
        t.store.figures(&room).await.unwrap().oldest_wait_seconds,
        None
    );
    t.store.join(&room, None, None).await.unwrap();
    clock.fetch_add(1_100, Ordering::SeqCst);
    t.store.join(&room, None, None).await.unwrap();
    let f = t.store.figures(&room).await.unwrap();
    assert_eq!(f.oldest_wait_seconds, Some(1));
    t.store.set_state(&room, RoomState::Open).await.unwrap();
    t.store.tick(&room).await.unwrap();
    let f = t.store.figures(&room).await.unwrap();
    assert_eq!((f.waiting, f.oldest_wait_seconds), (0, None));
}

#[tokio::test]
async fn numbers_from_an_earlier_life_of_a_room_never_name_a_new_place() {
    // The room is lost (a restart without persistence, or the embedded
    // store's process restarting) and created again: its new line must not
    // honour the old line's tickets.
    let clock = Arc::new(AtomicU64::new(unix_now() * 1_000));
    let before = pinned_store(STORE, clock.clone());
    let room = make_paused_room(before.store.as_ref(), "reborn", RoomSettings::default()).await;
    let old = before
        .store
        .join(&room, None, None)
        .await
        .unwrap()
        .answer()
        .unwrap();
    // The room comes back a moment later, on a later clock.
    clock.fetch_add(5, Ordering::SeqCst);
    let after = pinned_store(STORE, clock.clone());
    make_paused_room(after.store.as_ref(), "reborn", RoomSettings::default()).await;
    for _ in 0..3 {
        after.store.join(&room, None, None).await.unwrap();
    }
    let seq = old.seq.unwrap();
    let status = after.store.status(&room, seq).await.unwrap();
    assert_eq!(
        status.standing,
        Standing::Gone,
        "an old number is gone, not someone's place"
    );
    assert!(
        !after.store.leave(&room, seq).await.unwrap(),
        "and frees nobody's place"
    );
    assert!(!after.store.session_active(&room, seq).await.unwrap());
    assert_eq!(after.store.figures(&room).await.unwrap().waiting, 3);
}
