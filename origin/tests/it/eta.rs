//! The ETA a status shows, from the schedule the store's tick sums up, on
//! the suite's store: capacity-bound turns come with the sessions ending,
//! no number while nothing says how long sessions last, measured early
//! leaves bring turns forward, and the measure is carried across a pause.
//!
//! Time is a pinned clock stepped by the test, so every figure is exact.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::*;
use origin::queue::{QueueStore, Standing, pacing};
use origin::room::{RoomId, RoomSettings, RoomState};

async fn eta(store: &dyn QueueStore, room: &RoomId, seq: u64) -> Option<u64> {
    let snap = store.status(room, seq).await.unwrap();
    assert!(matches!(snap.standing, Standing::Waiting { .. }));
    pacing::eta_seconds(snap.standing, &snap.line)
}

#[tokio::test]
async fn capacity_bound_turns_follow_the_sessions_inside_and_early_leaves() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let s = RoomSettings {
        capacity: 4,
        admit_per_second: 20.0,
        session_seconds: 5,
        ..Default::default()
    };
    let room = make_paused_room(store, "turns", s).await;
    let mut seqs = Vec::new();
    for _ in 0..24 {
        let snap = store.join(&room, None, None).await.unwrap().answer();
        seqs.push(snap.unwrap().seq.unwrap());
    }
    assert_eq!(eta(store, &room, seqs[10]).await, None, "paused");
    store.set_state(&room, RoomState::Open).await.unwrap();
    assert_eq!(store.tick(&room).await.unwrap().admitted.len(), 4);
    // Nobody was ever inside: whether sessions run 5 s or end at once is
    // not known, and a place the slots hold back gets no number yet.
    assert_eq!(eta(store, &room, seqs[23]).await, None, "nothing seen");
    // Four sessions seen for 4 s, none ending early: they run their length.
    for _ in 0..4 {
        clock.fetch_add(1_000, Ordering::SeqCst);
        assert!(store.tick(&room).await.unwrap().admitted.is_empty());
    }
    // 4 every 5 s, from 1 s on: the 5th to 8th at 1 s, the 9th to 12th at
    // 6 s, ... (the tick sees the ends to an eighth of a session: 1.25 s)
    assert_eq!(eta(store, &room, seqs[4]).await, Some(2));
    assert_eq!(eta(store, &room, seqs[11]).await, Some(7));
    assert_eq!(eta(store, &room, seqs[23]).await, Some(22));
    clock.fetch_add(1_000, Ordering::SeqCst);
    assert_eq!(
        eta(store, &room, seqs[11]).await,
        Some(6),
        "counted from the tick"
    );

    // Every second, the one let in first leaves at once: the tick measures
    // the early leaves and the far turns come sooner.
    let mut inside: Vec<u64> = seqs[..4].to_vec();
    for _ in 0..10 {
        inside.extend(store.tick(&room).await.unwrap().admitted);
        store.leave(&room, inside.remove(0)).await.unwrap();
        clock.fetch_add(1_000, Ordering::SeqCst);
    }
    store.tick(&room).await.unwrap();
    let last = *seqs.last().unwrap();
    let sooner = eta(store, &room, last).await.unwrap();
    // Sessions run to their end would put the 10th in line at 12 s.
    assert!(
        sooner <= 10,
        "the measured leaves shorten the wait: {sooner}"
    );
}

/// A room whose visitors book in seconds: a minute's sessions, everyone
/// done 3 s after being let in. Its measure of the stays is carried across
/// a long pause, in the store (a second instance reads the same), so the
/// reopening's first statuses, before and after the first tick, already
/// play the line at a turnover of seconds rather than a minute.
#[tokio::test]
async fn the_measured_stays_are_carried_across_a_pause() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let s = RoomSettings {
        capacity: 10,
        admit_per_second: 10.0,
        session_seconds: 60,
        ..Default::default()
    };
    let room = make_room(store, "carried", s).await;
    // A minute of sale: 10 let in a second, each leaving 3 s later.
    let mut inside: Vec<(u64, u64)> = Vec::new();
    let mut at = 0;
    for _ in 0..60 {
        for _ in 0..10 {
            let snap = store.join(&room, None, None).await.unwrap().answer();
            let snap = snap.unwrap();
            if matches!(snap.standing, Standing::Admitted { .. }) {
                inside.push((at + 3_000, snap.seq.unwrap()));
            }
        }
        for seq in store.tick(&room).await.unwrap().admitted {
            inside.push((at + 3_000, seq));
        }
        clock.fetch_add(1_000, Ordering::SeqCst);
        at += 1_000;
        while inside.first().is_some_and(|&(end, _)| end <= at) {
            store.leave(&room, inside.remove(0).1).await.unwrap();
        }
    }
    // Paused for ten minutes, the promoter ticking all along: the last
    // ones inside leave and nobody is inside after.
    store.set_state(&room, RoomState::Paused).await.unwrap();
    for _ in 0..600 {
        store.tick(&room).await.unwrap();
        clock.fetch_add(1_000, Ordering::SeqCst);
        at += 1_000;
        while inside.first().is_some_and(|&(end, _)| end <= at) {
            store.leave(&room, inside.remove(0).1).await.unwrap();
        }
    }
    let mut line = Vec::new();
    for _ in 0..200 {
        let snap = store.join(&room, None, None).await.unwrap().answer();
        line.push(snap.unwrap().seq.unwrap());
    }
    store.tick(&room).await.unwrap();
    clock.fetch_add(50, Ordering::SeqCst);
    store.set_state(&room, RoomState::Open).await.unwrap();
    // Before the first tick after the opening: the paused tick's schedule
    // (the budget full again), at the measured stays. 10 at once, then 10
    // per mean stay of 3 s: the 200th in 19 stays, about 57 s (a minute's
    // sessions run their length would say 19 minutes; 10/s alone, 20 s).
    let other = t.connect_pinned(clock.clone());
    for view in [store, other.as_ref()] {
        let first = eta(view, &room, line[199]).await.expect("known at once");
        assert!((45..=70).contains(&first), "{first}");
    }
    store.tick(&room).await.unwrap();
    let after = eta(store, &room, line[199]).await.expect("known");
    assert!((45..=70).contains(&after), "{after}");
}
