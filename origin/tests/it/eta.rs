//! The ETA a status shows, from the schedule the store's tick sums up, on
//! the suite's store: capacity-bound turns come with the sessions ending,
//! and measured early leaves bring them forward.
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
    // 4 every 5 s: the 5th to 8th at 5 s, the 9th to 12th at 10 s, ...
    assert_eq!(eta(store, &room, seqs[4]).await, Some(5));
    assert_eq!(eta(store, &room, seqs[11]).await, Some(10));
    assert_eq!(eta(store, &room, seqs[23]).await, Some(25));
    clock.fetch_add(2_000, Ordering::SeqCst);
    assert_eq!(
        eta(store, &room, seqs[11]).await,
        Some(8),
        "counted from the tick"
    );

    // Every second, the one let in first leaves at once: the tick measures
    // the early leaves and the far turns come sooner.
    let mut inside: Vec<u64> = seqs[..4].to_vec();
    for _ in 0..10 {
        store.leave(&room, inside.remove(0)).await.unwrap();
        clock.fetch_add(1_000, Ordering::SeqCst);
        inside.extend(store.tick(&room).await.unwrap().admitted);
    }
    let last = *seqs.last().unwrap();
    let sooner = eta(store, &room, last).await.unwrap();
    // Sessions run to their end would put the 10th in line at 12 s.
    assert!(
        sooner <= 10,
        "the measured leaves shorten the wait: {sooner}"
    );
}
