//! The abandonment rule with coarse "still polling" marks: a waiter that
//! polls exactly as `poll_after_ms` says is never dropped, however long it
//! waits, and one that stops polling is dropped within the abandon time
//! plus a tick (and not much before it: the marks' generations are a sixth
//! of the abandon time). On a pinned clock, stepped tick by tick.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::*;
use origin::clock::Clock;
use origin::room::{RoomId, RoomSettings};

/// The promoter's tick in this test (ms).
const TICK: u64 = 100;

/// A paused room on a store and an API whose clock is pinned, at `start`
/// (now), and stepped by the test.
struct Pinned {
    start: u64,
    clock: Arc<AtomicU64>,
    t: TestStore,
    room: RoomId,
    api: Api,
}

async fn pinned_room(name: &str, abandon_seconds: u32) -> Pinned {
    let start = unix_now() * 1000;
    let clock = Arc::new(AtomicU64::new(start));
    let t = pinned_store(STORE, clock.clone());
    let settings = RoomSettings {
        abandon_seconds,
        ..settings(1)
    };
    let room = make_paused_room(t.store.as_ref(), name, settings).await;
    let api = Api::new(state(t.store.clone()).with_clock(Clock::Manual(clock.clone())));
    Pinned {
        start,
        clock,
        t,
        room,
        api,
    }
}

async fn polling_waiter_stays_and_silent_one_goes(abandon_seconds: u32) {
    let Pinned {
        start,
        clock,
        t,
        room,
        api,
    } = pinned_room(&format!("paced{abandon_seconds}"), abandon_seconds).await;
    let store = t.store.clone();
    let abandon = u64::from(abandon_seconds) * 1000;

    let silent = api.join(&room, None).await;
    let polling = api.join(&room, None).await;
    assert_eq!(polling.json["state"], "waiting");
    let ticket = polling.ticket();
    let mut next_poll = start + polling.json["poll_after_ms"].as_u64().unwrap();
    let mut next_tick = start + TICK;
    let mut dropped_at = None;
    let mut polls = 0;
    let end = start + 5 * abandon;
    while next_tick <= end {
        // Whatever comes first: the client's next poll as told, or a tick.
        let now = next_poll.min(next_tick);
        clock.store(now, Ordering::SeqCst);
        if now == next_poll {
            let reply = api.status(&room, &ticket).await;
            assert_eq!(
                reply.json["state"],
                "waiting",
                "polled as told, dropped at +{} ms",
                now - start
            );
            let after = reply.json["poll_after_ms"].as_u64().unwrap();
            assert!(after <= abandon / 3, "{after}");
            next_poll = now + after;
            polls += 1;
        }
        if now == next_tick {
            let report = store.tick(&room).await.unwrap();
            if report.abandoned > 0 {
                assert_eq!(report.abandoned, 1, "only the silent one");
                assert!(dropped_at.is_none());
                dropped_at = Some(now - start);
            }
            next_tick += TICK;
        }
    }
    assert!(polls >= 15, "{polls} polls over five abandon times");
    let dropped_at = dropped_at.expect("the silent waiter was dropped");
    assert!(
        dropped_at <= abandon + TICK,
        "dropped {dropped_at} ms after its last poll, abandon {abandon}"
    );
    assert!(
        dropped_at + abandon.div_ceil(6) > abandon,
        "dropped {dropped_at} ms after its last poll: before abandon - abandon/6"
    );
    assert_eq!(
        api.status(&room, &silent.ticket()).await.json["state"],
        "expired"
    );
    let figures = store.figures(&room).await.unwrap();
    assert_eq!((figures.waiting, figures.abandoned_total), (1, 1));
}

#[tokio::test]
async fn a_waiter_polling_as_told_is_never_dropped_and_a_silent_one_is_within_abandon_plus_a_tick()
{
    for abandon_seconds in [3, 7, 60] {
        polling_waiter_stays_and_silent_one_goes(abandon_seconds).await;
    }
}

/// A new abandon time counts every waiter as polling from the moment it is
/// set (the marks' generations are renumbered then, on both stores), not
/// from whichever poll or tick comes next: a silent waiter is then dropped
/// within the new abandon time plus a tick of the change. Shorter or
/// longer: a longer one numbers the generations lower than those already
/// swept, and the sweep must start again from them.
#[tokio::test]
async fn a_new_abandon_time_counts_the_line_as_polling_from_when_it_is_set() {
    // Silent for 50 s of its 60, then 6 s; silent for 3 s of its 6, then 9.
    for (from, silent_for, to) in [(60, 50_000, 6), (6, 3_000, 9)] {
        silent_waiter_under_a_new_abandon_time(from, silent_for, to).await;
    }
}

async fn silent_waiter_under_a_new_abandon_time(from: u32, silent_for: u64, to: u32) {
    let Pinned {
        start,
        clock,
        t,
        room,
        api,
    } = pinned_room(&format!("renumbered{from}to{to}"), from).await;
    let store = t.store.clone();
    let silent = api.join(&room, None).await;
    assert_eq!(silent.json["state"], "waiting");

    let changed = start + silent_for;
    clock.store(changed, Ordering::SeqCst);
    assert_eq!(store.tick(&room).await.unwrap().abandoned, 0);
    let new = RoomSettings {
        abandon_seconds: to,
        ..settings(1)
    };
    store.put_room(&room, &new).await.unwrap();
    let abandon = u64::from(to) * 1000;

    // Counted as polling at the change: kept until 5/6 of the new time
    // (ticked as a promoter does: a gap between ticks of half the abandon
    // time would read as an outage)...
    let mut now = changed;
    while now < changed + abandon * 5 / 6 - TICK {
        now += TICK;
        clock.store(now, Ordering::SeqCst);
        assert_eq!(
            store.tick(&room).await.unwrap().abandoned,
            0,
            "{from} s to {to} s: dropped {} ms after the change",
            now - changed
        );
    }
    // ...and dropped by the new time plus a tick after it.
    let mut dropped = 0;
    while now < changed + abandon + TICK {
        now += TICK;
        clock.store(now, Ordering::SeqCst);
        dropped += store.tick(&room).await.unwrap().abandoned;
    }
    assert_eq!(
        dropped, 1,
        "{from} s to {to} s: dropped within {to} s and a tick of the change"
    );
    assert_eq!(
        api.status(&room, &silent.ticket()).await.json["state"],
        "expired"
    );
}

/// An outage longer than the abandon time (Redis away, or every promoter),
/// during which polls are refused rather than marked, drops nobody for it:
/// the first tick after it counts the whole line as polling, so a waiter
/// that polls again as told stays, and a silent one goes within the
/// abandon time plus a tick of the outage's end.
#[tokio::test]
async fn an_outage_longer_than_the_abandon_time_drops_nobody_for_it() {
    let Pinned {
        start,
        clock,
        t,
        room,
        api,
    } = pinned_room("outage", 6).await;
    let store = t.store.clone();
    let abandon = 6_000;
    let silent = api.join(&room, None).await;
    let polling = api.join(&room, None).await;
    let ticket = polling.ticket();
    // Ticks as a promoter's for a second, with a poll at its end.
    let mut now = start;
    while now < start + 1_000 {
        now += TICK;
        clock.store(now, Ordering::SeqCst);
        assert_eq!(store.tick(&room).await.unwrap().abandoned, 0);
    }
    assert_eq!(api.status(&room, &ticket).await.json["state"], "waiting");
    // Nothing for 20 s: no tick, and no poll reaches the store.
    now += 20_000;
    clock.store(now, Ordering::SeqCst);
    let back = now;
    assert_eq!(
        store.tick(&room).await.unwrap().abandoned,
        0,
        "the first tick after the outage dropped waiters for it"
    );
    // From here the promoter ticks and the waiter polls as told again.
    let reply = api.status(&room, &ticket).await;
    assert_eq!(reply.json["state"], "waiting");
    let mut next_poll = now + reply.json["poll_after_ms"].as_u64().unwrap();
    let mut dropped_at = None;
    while now < back + 3 * abandon {
        now += TICK;
        clock.store(now, Ordering::SeqCst);
        if now >= next_poll {
            let reply = api.status(&room, &ticket).await;
            assert_eq!(reply.json["state"], "waiting", "polled as told, dropped");
            next_poll = now + reply.json["poll_after_ms"].as_u64().unwrap();
        }
        let report = store.tick(&room).await.unwrap();
        if report.abandoned > 0 {
            assert_eq!(report.abandoned, 1, "only the silent one");
            dropped_at = Some(now - back);
        }
    }
    let dropped_at = dropped_at.expect("the silent waiter was dropped");
    assert!(
        dropped_at <= abandon + TICK,
        "dropped {dropped_at} ms after the outage, abandon {abandon}"
    );
    assert_eq!(
        api.status(&room, &silent.ticket()).await.json["state"],
        "expired"
    );
}
