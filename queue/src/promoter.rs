//! The promoter: a background loop in every origin instance that runs one
//! store tick per room, every `interval`.
//!
//! Each tick admits k = min(budget, capacity - active, waiting), ends expired
//! sessions, drops waiters who stopped polling and records the achieved rate,
//! all in one atomic store step. The admission budget lives in the store, so
//! any number of instances can promote the same room without over-admitting;
//! more instances only make ticks more frequent.
//!
//! After its ticks, each instance observes every room once for its status
//! snapshots ([`Snapshots::refresh`]), which also writes the "still
//! polling" marks gathered since the last tick in one call per room.
//!
//! A store that cannot list the rooms, or fails every room's tick, is down:
//! the promoter backs off. One room that fails (its tick or its
//! observation: a reply too slow for a huge line, a key another program
//! wrote) is logged when it starts and stops failing, and the other rooms
//! keep their ticks: a backoff for all would slow every room's admission
//! and, past half an abandon time between ticks, read as an outage that
//! keeps whole lines from being dropped.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use room::RoomId;

use crate::snapshot::Snapshots;
use crate::store::{QueueStore, ROOMS_REFRESH_TICKS, StoreError, TickReport};

/// Longest pause between attempts while the store is failing.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// One pass of ticks: the rooms ticked, and those whose tick failed.
#[derive(Debug, Default)]
pub struct Ticked {
    /// Each ticked room and what its tick did.
    pub reports: Vec<(RoomId, TickReport)>,
    /// Each room whose tick failed, and why.
    pub failed: Vec<(RoomId, StoreError)>,
}

/// One tick over every room in `rooms`; rooms that vanished are skipped.
/// A room whose tick fails is among [`Ticked::failed`], unless the store
/// itself is down (the error): it does not answer a ping after the first
/// failure (a store that is down fails every room, each after its
/// timeout), or every room failed.
pub async fn tick_rooms(store: &dyn QueueStore, rooms: &[RoomId]) -> Result<Ticked, StoreError> {
    let mut ticked = Ticked {
        reports: Vec::with_capacity(rooms.len()),
        failed: Vec::new(),
    };
    for room in rooms {
        match store.tick(room).await {
            Ok(report) => ticked.reports.push((room.clone(), report)),
            Err(StoreError::UnknownRoom) => {}
            Err(e) => {
                if ticked.failed.is_empty() && store.ping().await.is_err() {
                    return Err(e);
                }
                ticked.failed.push((room.clone(), e));
            }
        }
    }
    if ticked.reports.is_empty()
        && let Some((_, e)) = ticked.failed.pop()
    {
        return Err(e);
    }
    Ok(ticked)
}

/// Runs until `cancel` fires. A failing store is logged once when it starts
/// failing and once when it recovers, not on every tick, and retried with
/// growing pauses.
pub async fn run(
    store: Arc<dyn QueueStore>,
    snapshots: Arc<Snapshots>,
    interval: Duration,
    cancel: CancellationToken,
) {
    let mut rooms: Vec<RoomId> = Vec::new();
    let mut ticks: u32 = 0;
    let mut failing = false;
    // Rooms whose tick or observation failed last time (logged once).
    let mut failing_rooms: HashSet<RoomId> = HashSet::new();
    let mut pause = interval;
    loop {
        let step = async {
            if ticks.is_multiple_of(ROOMS_REFRESH_TICKS) || failing {
                let asked = std::time::Instant::now();
                rooms = store.rooms().await?;
                snapshots.retain(&rooms, asked);
                failing_rooms.retain(|room| rooms.contains(room));
            }
            let Ticked {
                reports,
                mut failed,
            } = tick_rooms(store.as_ref(), &rooms).await?;
            for (room, _) in &reports {
                match snapshots.refresh(store.as_ref(), room).await {
                    Ok(()) | Err(StoreError::UnknownRoom) => {}
                    Err(e) => failed.push((room.clone(), e)),
                }
            }
            for (room, e) in &failed {
                if failing_rooms.insert(room.clone()) {
                    tracing::warn!(%room, error = %e, "a room's tick or observation fails; the other rooms go on");
                }
            }
            for (room, _) in &reports {
                if !failed.iter().any(|(r, _)| r == room) && failing_rooms.remove(room) {
                    tracing::info!(%room, "the room's tick and observation work again");
                }
            }
            Ok::<_, StoreError>(reports)
        };
        match step.await {
            Ok(reports) => {
                if failing {
                    tracing::info!("store reachable again; promoter resumes");
                    failing = false;
                }
                pause = interval;
                for (room, r) in reports.iter().filter(|(_, r)| !r.admitted.is_empty()) {
                    tracing::debug!(%room, admitted = r.admitted.len(), active = r.active, waiting = r.waiting, "tick");
                }
            }
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, "promoter cannot reach the store; backing off");
                    failing = true;
                }
                pause = (pause * 2).min(MAX_BACKOFF);
            }
        }
        ticks = ticks.wrapping_add(1);
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(pause) => {}
        }
    }
    tracing::info!("promoter stopped");
}
