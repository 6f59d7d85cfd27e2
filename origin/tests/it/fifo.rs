//! Order and bounds under concurrency, on the real Redis: the order of
//! admission is the order of join, and neither concurrent joins nor several
//! promoters ever let in more than capacity and rate allow.

use super::STORE;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::*;
use origin::queue::promoter;
use origin::room::{RoomSettings, RoomState};
use serde_json::Value;

const VISITORS: usize = 5_000;
const CLIENTS: usize = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_thousand_joins_from_64_clients_are_admitted_in_sequence_order() {
    let t = test_store(STORE);
    let capacity = 1_000;
    let settings = RoomSettings {
        capacity,
        admit_per_second: 2_000.0,
        session_seconds: 1,
        abandon_seconds: 600,
        ..Default::default()
    };
    // Paused while the line forms, so every visitor queues (none is let in at
    // join) and the whole admission order comes from the promoter's ticks.
    let room = make_paused_room(t.store.as_ref(), "fifo", settings).await;
    let server = spawn(state(t.store.clone()), None).await;

    let next = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let next = next.clone();
        let url = server.url(&format!("/queue/{room}/join"));
        let room = room.clone();
        clients.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut seqs = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < VISITORS {
                let reply: Value = http.post(&url).send().await.unwrap().json().await.unwrap();
                assert_eq!(reply["state"], "waiting", "{reply}");
                assert!(reply["position"].as_u64().unwrap() >= 1);
                seqs.push(seq_of(reply["ticket"].as_str().unwrap(), &room));
            }
            seqs
        }));
    }
    let mut joined = Vec::new();
    for c in clients {
        joined.extend(c.await.unwrap());
    }
    joined.sort_unstable();
    // Sequence numbers follow the room's base (set at its creation), in steps of one.
    let base = joined[0] - 1;
    let expected: Vec<u64> = (1..=VISITORS as u64).map(|n| base + n).collect();
    assert_eq!(
        joined, expected,
        "every join got one distinct sequence number"
    );

    t.store.set_state(&room, RoomState::Open).await.unwrap();
    let order = promote(t.store.as_ref(), &room, VISITORS, u64::from(capacity)).await;
    assert_eq!(order, expected, "admitted exactly in sequence order");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_joins_to_an_empty_room_never_admit_past_capacity() {
    let t = test_store(STORE);
    let settings = RoomSettings {
        capacity: 10,
        admit_per_second: 1_000.0,
        ..Default::default()
    };
    let room = make_room(t.store.as_ref(), "burst", settings).await;
    let server = spawn(state(t.store.clone()), None).await;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let url = server.url(&format!("/queue/{room}/join"));
        clients.push(tokio::spawn(async move {
            let reply: Value = reqwest::Client::new()
                .post(&url)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            reply
        }));
    }
    let mut admitted = 0;
    let mut positions = HashSet::new();
    for c in clients {
        let reply = c.await.unwrap();
        match reply["state"].as_str().unwrap() {
            "admitted" => {
                admitted += 1;
                assert!(reply["entry_token"].is_string());
            }
            "waiting" => assert!(positions.insert(reply["position"].as_u64().unwrap())),
            other => panic!("unexpected state {other}"),
        }
    }
    assert_eq!(admitted, 10, "exactly capacity admitted at once");
    assert_eq!(positions.len(), CLIENTS - 10);
    let figures = t.store.figures(&room).await.unwrap();
    assert_eq!(
        (figures.active, figures.waiting),
        (10, (CLIENTS - 10) as u64)
    );
    server.stop().await;
}

/// Samples a room until `done`, asserting every sample stays within capacity
/// and the admissions since `start` within the rate (plus one second's burst).
async fn watch_bounds(
    store: Arc<dyn origin::queue::QueueStore>,
    room: origin::room::RoomId,
    capacity: u64,
    rate: f64,
    for_how_long: Duration,
) -> u64 {
    let start = Instant::now();
    let mut samples = 0;
    let mut last = 0;
    while start.elapsed() < for_how_long {
        let f = store.figures(&room).await.unwrap();
        let allowed = rate.max(1.0) + rate * start.elapsed().as_secs_f64();
        assert!(
            f.active <= capacity,
            "{room}: active {} > {capacity}",
            f.active
        );
        assert!(
            f.admitted_total as f64 <= allowed + 1.0,
            "{room}: {} admitted in {:?}, rate allows {allowed}",
            f.admitted_total,
            start.elapsed()
        );
        last = f.admitted_total;
        samples += 1;
        // The sampling pace over a fixed window: the bounds hold all along.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(samples > 100, "too few samples ({samples})");
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_origins_promoting_one_room_never_over_admit() {
    let t = test_store(STORE);
    // One room bound by capacity, one by rate; both promoted by two origin
    // instances, each with its own connection and a 5 ms tick.
    let by_capacity = RoomSettings {
        capacity: 20,
        admit_per_second: 500.0,
        session_seconds: 1,
        abandon_seconds: 600,
        ..Default::default()
    };
    let by_rate = RoomSettings {
        capacity: 10_000,
        admit_per_second: 40.0,
        abandon_seconds: 600,
        ..Default::default()
    };
    let a = make_paused_room(t.store.as_ref(), "by-capacity", by_capacity).await;
    let b = make_paused_room(t.store.as_ref(), "by-rate", by_rate).await;
    for room in [&a, &b] {
        for _ in 0..400 {
            t.store.join(room, None, None).await.unwrap();
        }
    }
    let stores = [
        Arc::new(recording::Recording::new(t.connect())),
        Arc::new(recording::Recording::new(t.connect())),
    ];
    let one = spawn(state(stores[0].clone()), Some(Duration::from_millis(5))).await;
    let two = spawn(state(stores[1].clone()), Some(Duration::from_millis(5))).await;
    eventually(
        "both promoters tick both rooms",
        Duration::from_secs(5),
        || async {
            stores
                .iter()
                .all(|s| s.ticks_of(&a) > 0 && s.ticks_of(&b) > 0)
        },
    )
    .await;

    for room in [&a, &b] {
        t.store.set_state(room, RoomState::Open).await.unwrap();
    }
    let watch_a = tokio::spawn(watch_bounds(
        t.store.clone(),
        a.clone(),
        20,
        500.0,
        Duration::from_secs(3),
    ));
    let watch_b = tokio::spawn(watch_bounds(
        t.store.clone(),
        b.clone(),
        10_000,
        40.0,
        Duration::from_secs(3),
    ));
    let admitted_a = watch_a.await.unwrap();
    let admitted_b = watch_b.await.unwrap();
    // They did work: capacity frees 20 a second, rate admits 40 a second.
    assert!(
        admitted_a >= 40,
        "capacity-bound room admitted only {admitted_a}"
    );
    assert!(
        admitted_b >= 80,
        "rate-bound room admitted only {admitted_b}"
    );
    one.stop().await;
    two.stop().await;
}

#[tokio::test]
async fn the_promoters_tick_skips_rooms_that_vanished() {
    let t = test_store(STORE);
    let room = make_room(t.store.as_ref(), "here", RoomSettings::default()).await;
    let gone = crate::common::room("gone");
    let ticked = promoter::tick_rooms(t.store.as_ref(), &[gone, room.clone()])
        .await
        .unwrap();
    assert!(ticked.failed.is_empty());
    let reports = ticked.reports;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].0, room);
}
