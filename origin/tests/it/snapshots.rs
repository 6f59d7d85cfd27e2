//! Status snapshots (`queue::snapshot`): two origin instances on one store,
//! each answering far-back polls from its own per-room view, while the line
//! moves under joins, leaves, abandonment and admissions. What must hold:
//! a position from a view is never below the true one, and within max(10,
//! 1%) of it right after a tick; a left ticket reads `expired` on either
//! instance from the next tick on; marks flushed once a tick keep a waiter
//! who polls as told, and one who stops is dropped within the abandon time
//! plus a tick; an admitted visitor learns it on its next poll; random rooms
//! never answer from a view.
//!
//! The store's clock is pinned and stepped (the promoter's tick is called by
//! the test: `store.tick` then each instance's observation), so the runs
//! are exact and fast on both stores.

use super::STORE;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common::{Api, Store, TestStore, keys, pinned_store, redis_url, test_store, unix_now};
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::queue::snapshot::Snapshots;
use origin::queue::{QueueStore, SaleSignal, SeatsLeft, Standing, Watch};
use origin::room::{QueueingMethod, RoomId, RoomSettings, Window};
use origin::state::AppState;
use rand::{RngExt, SeedableRng};
use token::{Claims, Kind};

/// The instances' tick: long, so a view never ages out between the test's
/// steps (the test ticks by hand).
const TICK: Duration = Duration::from_secs(2);

/// One origin instance: its own store handle (its own Redis connection) and
/// state with snapshots on.
struct Instance {
    store: Arc<dyn QueueStore>,
    state: AppState,
    api: Api,
}

fn instance(store: Arc<dyn QueueStore>) -> Instance {
    let state = AppState::new(store.clone(), keys()).with_status_snapshots(TICK);
    Instance {
        store,
        api: Api::new(state.clone()),
        state,
    }
}

/// A second handle on the pinned store `t` (another instance), on the same
/// clock.
fn second_handle(t: &TestStore, clock: &Arc<AtomicU64>) -> Arc<dyn QueueStore> {
    if STORE == Store::Memory {
        return t.store.clone();
    }
    Arc::new(
        RedisStore::connect(&RedisConfig {
            url: redis_url(),
            prefix: t.prefix.clone(),
            timeout: Duration::from_secs(5),
            cluster: false,
        })
        .unwrap()
        .with_fixed_clock(clock.clone()),
    )
}

fn ticket(room: &RoomId, seq: u64) -> String {
    let now = unix_now();
    keys().sign(&Claims {
        kind: Kind::Ticket,
        room: room.to_string(),
        visitor: u128::from(seq),
        seq,
        issued_at: now,
        expires_at: now + 3600,
        account: None,
    })
}

/// The promoter's step on every instance: one tick of the room (as any of
/// them may run it), then each instance's observation.
async fn tick(instances: &[Instance], room: &RoomId) -> Vec<u64> {
    let report = instances[0].store.tick(room).await.unwrap();
    for i in instances {
        i.state
            .snapshots
            .refresh(i.store.as_ref(), room)
            .await
            .unwrap();
    }
    report.admitted
}

/// Where `seq` truly stands, asked of the store (which also records a poll:
/// only ever asked of visitors who are polling anyway).
async fn truth(store: &dyn QueueStore, room: &RoomId, seq: u64) -> Standing {
    store.status(room, seq).await.unwrap().standing
}

/// Joins `n` visitors; returns those placed in line (the first may be let
/// in at once).
async fn join_many(store: &dyn QueueStore, room: &RoomId, n: usize) -> Vec<u64> {
    let mut seqs = Vec::with_capacity(n);
    for _ in 0..n {
        let snap = store
            .join(room, None, None)
            .await
            .unwrap()
            .answer()
            .unwrap();
        if let Standing::Waiting { .. } = snap.standing {
            seqs.push(snap.seq.unwrap());
        }
    }
    seqs
}

#[tokio::test]
async fn far_back_positions_hold_under_joins_leaves_abandonment_and_admissions() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let instances = [
        instance(t.store.clone()),
        instance(second_handle(&t, &clock)),
    ];
    let settings = RoomSettings {
        capacity: 20,
        admit_per_second: 4.0,
        session_seconds: 30,
        abandon_seconds: 20,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "snap", settings).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);

    // seq -> polls (true) or stopped polling (false)
    let mut waiters: BTreeMap<u64, bool> = join_many(t.store.as_ref(), &room, 1000)
        .await
        .into_iter()
        .map(|s| (s, true))
        .collect();
    let mut left: BTreeSet<u64> = BTreeSet::new();
    let mut admitted: BTreeSet<u64> = BTreeSet::new();
    let mut dropped: BTreeSet<u64> = BTreeSet::new();
    let (mut from_view, mut checked) = (0u64, 0u64);

    for round in 0..30 {
        // The line moves: joins behind, leaves anywhere (through either
        // instance), some waiters stop polling, time passes, a tick admits.
        for seq in join_many(t.store.as_ref(), &room, rng.random_range(0..30)).await {
            waiters.insert(seq, true);
        }
        let polling: Vec<u64> = waiters
            .iter()
            .filter(|(_, p)| **p)
            .map(|(s, _)| *s)
            .collect();
        for _ in 0..rng.random_range(0..15) {
            let seq = polling[rng.random_range(0..polling.len())];
            if waiters.remove(&seq).is_some() {
                let by = &instances[rng.random_range(0..2)];
                assert_eq!(by.api.leave(&room, &ticket(&room, seq)).await.status, 204);
                left.insert(seq);
            }
        }
        if round < 5 {
            for _ in 0..10 {
                let seq = polling[rng.random_range(0..polling.len())];
                if let Some(p) = waiters.get_mut(&seq) {
                    *p = false;
                }
            }
        }
        // A second or two between rounds.
        clock.fetch_add(rng.random_range(1_100..2_500), Ordering::SeqCst);
        for seq in tick(&instances, &room).await {
            waiters.remove(&seq);
            admitted.insert(seq);
        }

        // Right after the tick, every poller polls one instance or the other.
        // A third of them are never asked of the store by the test: only
        // the marks the views flush keep them in line.
        for (&seq, &polls) in &waiters.clone() {
            if !polls {
                continue;
            }
            let inst = &instances[rng.random_range(0..2)];
            let answered_by_view = inst.state.snapshots.answer(&room, seq);
            let reply = inst.api.status(&room, &ticket(&room, seq)).await;
            assert_eq!(reply.status, 200, "{}", reply.json);
            let state = reply.json["state"].as_str().unwrap().to_owned();
            if seq % 3 == 0 {
                assert_eq!(state, "waiting", "round {round}: {}", reply.json);
                continue;
            }
            let Standing::Waiting {
                position: Some(true_pos),
            } = truth(inst.store.as_ref(), &room, seq).await
            else {
                panic!(
                    "round {round}: a poller {seq} is not waiting: {}",
                    reply.json
                );
            };
            assert_eq!(state, "waiting", "round {round}: {}", reply.json);
            let shown = reply.json["position"].as_u64().unwrap();
            assert!(
                shown >= true_pos,
                "round {round}: {seq} shown {shown} < true {true_pos}"
            );
            let slack = (true_pos / 100).max(10);
            assert!(
                shown <= true_pos + slack,
                "round {round}: {seq} shown {shown} > true {true_pos} + {slack}"
            );
            if let Some(view) = answered_by_view {
                from_view += 1;
                let Standing::Waiting { position: Some(p) } = view.standing else {
                    panic!("a view answers only waiting with a position");
                };
                // A loaded machine can age the view out between the two
                // reads; the handler then asks the store, which is exact.
                let aged = inst.state.snapshots.answer(&room, seq).is_none();
                assert!(
                    p == shown || (aged && shown == true_pos),
                    "the handler answers as the view does: view {p}, handler {shown}, true {true_pos}"
                );
            }
            checked += 1;
        }

        // A left ticket reads expired on both instances from the tick after
        // its leave on.
        for &seq in &left {
            for inst in &instances {
                let reply = inst.api.status(&room, &ticket(&room, seq)).await;
                assert_eq!(reply.json["state"], "expired", "left {seq}: {}", reply.json);
            }
        }
        // Admitted visitors learn it on their next poll, on either instance.
        for &seq in admitted.iter().rev().take(5) {
            let reply = instances[rng.random_range(0..2)]
                .api
                .status(&room, &ticket(&room, seq))
                .await;
            let state = reply.json["state"].as_str().unwrap();
            assert!(
                state == "admitted" || state == "expired",
                "admitted {seq}: {}",
                reply.json
            );
        }
        // Those who stopped polling are gone once the abandon time (20 s; 30
        // rounds are 33 s at least)
        // and a tick have passed; asked only then, so asking does not
        // count as a poll.
        if round == 29 {
            for (&seq, _) in waiters.iter().filter(|(_, p)| !**p) {
                assert!(matches!(
                    truth(t.store.as_ref(), &room, seq).await,
                    Standing::Gone | Standing::Admitted { .. }
                ));
                dropped.insert(seq);
            }
        }
    }
    assert!(!dropped.is_empty());
    // Most far-back polls were answered from a view.
    assert!(
        from_view * 2 > checked,
        "only {from_view} of {checked} polls answered from a view"
    );
}

#[tokio::test]
async fn random_rooms_and_the_front_of_the_line_always_ask_the_store() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let instances = [instance(t.store.clone())];
    for (id, method) in [
        ("lottery", QueueingMethod::Random),
        ("line", QueueingMethod::Fifo),
    ] {
        let settings = RoomSettings {
            capacity: 1,
            admit_per_second: 1.0,
            method,
            ..RoomSettings::default()
        };
        let room = crate::common::make_room(t.store.as_ref(), id, settings).await;
        let seqs = join_many(t.store.as_ref(), &room, 400).await;
        for &seq in &seqs {
            instances[0]
                .state
                .snapshots
                .saw(&room, seq, Standing::Waiting { position: None });
        }
        clock.fetch_add(100, Ordering::SeqCst);
        tick(&instances, &room).await;
        let answered: Vec<u64> = seqs
            .iter()
            .copied()
            .filter(|&s| instances[0].state.snapshots.answer(&room, s).is_some())
            .collect();
        match method {
            QueueingMethod::Random => assert!(answered.is_empty()),
            _ => {
                // The front (what the budget could admit before the next
                // view, doubled, plus 100) asks the store; the rest need not.
                assert!(!answered.is_empty());
                let first = seqs.iter().position(|s| *s == answered[0]).unwrap();
                assert!(first >= 100, "position {} answered from a view", first + 1);
            }
        }
    }
}

/// A lottery admits from anywhere in the line, so whom a view saw waiting
/// while the room was `random` may be inside by the time the room is `fifo`
/// again (a window's end, an operator's change): such a visitor must learn
/// it on its next poll, not read `waiting` from the view, which only knows
/// that nobody ahead of the front has been admitted.
#[tokio::test]
async fn a_visitor_let_in_by_a_lottery_is_not_answered_from_a_view_once_the_room_is_fifo() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let views = Snapshots::new(TICK);
    let lottery = RoomSettings {
        capacity: 10_000,
        admit_per_second: 20.0,
        method: QueueingMethod::Random,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "drawn", lottery.clone()).await;
    let seqs = join_many(t.store.as_ref(), &room, 2_000).await;
    // Everyone polled (through the store, as a random room's polls go) and
    // was observed in line.
    for &seq in &seqs {
        views.saw(&room, seq, Standing::Waiting { position: None });
    }
    views.refresh(t.store.as_ref(), &room).await.unwrap();
    // A draw lets some in, from anywhere in the line.
    let drawn = drawn_far_back(t.store.as_ref(), &clock, &room, &seqs).await;
    // The room turns fifo; the next observation sees the line in order.
    let fifo = RoomSettings {
        method: QueueingMethod::Fifo,
        ..lottery
    };
    fifo_again_the_drawn_asks_the_store(t.store.as_ref(), &clock, &views, &room, &fifo, drawn)
        .await;
}

/// The same when no observation of the view fell in the lottery: the room
/// turned `random` and back to `fifo` between two of its observations (an
/// operator's two changes made elsewhere, a short window, observations that
/// failed meanwhile). The store counts the ticks that drew a lottery, and a
/// view that sees the count move forgets whom it saw in line.
#[tokio::test]
async fn a_lottery_between_two_observations_is_not_missed() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let views = Snapshots::new(TICK);
    let fifo = RoomSettings {
        capacity: 10_000,
        admit_per_second: 20.0,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "unseen-draw", fifo.clone()).await;
    let seqs = join_many(t.store.as_ref(), &room, 2_000).await;
    // Everyone polled and was observed in line, in a fifo room.
    for &seq in &seqs {
        views.saw(&room, seq, Standing::Waiting { position: Some(1) });
    }
    views.refresh(t.store.as_ref(), &room).await.unwrap();
    views.refresh(t.store.as_ref(), &room).await.unwrap();
    let far = *seqs.last().unwrap();
    assert!(
        views.answer(&room, far).is_some(),
        "the view answers far back before the lottery"
    );
    // Elsewhere: a lottery, one tick of draws, and fifo again, unobserved.
    let lottery = RoomSettings {
        method: QueueingMethod::Random,
        ..fifo.clone()
    };
    t.store.put_room(&room, &lottery).await.unwrap();
    let drawn = drawn_far_back(t.store.as_ref(), &clock, &room, &seqs).await;
    // A tick that draws nobody (the budget is spent) is not counted.
    assert!(t.store.tick(&room).await.unwrap().admitted.is_empty());
    let watch = Watch {
        polled: Vec::new(),
        since_ms: 0,
        samples: false,
    };
    let lottery_ticks = t.store.observe(&room, &watch).await.unwrap().lottery_ticks;
    assert_eq!(lottery_ticks, 1, "the store counts the ticks that drew");
    fifo_again_the_drawn_asks_the_store(t.store.as_ref(), &clock, &views, &room, &fifo, drawn)
        .await;
}

/// One tick of the lottery in `room`, a second on: the one it let in with
/// the most of `seqs` still waiting ahead of it (more than 1,000).
async fn drawn_far_back(
    store: &dyn QueueStore,
    clock: &AtomicU64,
    room: &RoomId,
    seqs: &[u64],
) -> u64 {
    clock.fetch_add(1_000, Ordering::SeqCst);
    let admitted: BTreeSet<u64> = store
        .tick(room)
        .await
        .unwrap()
        .admitted
        .into_iter()
        .collect();
    assert!(!admitted.is_empty());
    let drawn = *admitted.iter().next_back().unwrap();
    let ahead = seqs
        .iter()
        .filter(|&&s| s < drawn && !admitted.contains(&s))
        .count();
    assert!(ahead > 1_000, "only {ahead} wait ahead of {drawn}");
    drawn
}

/// `room` turns `fifo` and `views` observes it: `drawn`, let in by a
/// lottery, is inside and the view does not answer for it.
async fn fifo_again_the_drawn_asks_the_store(
    store: &dyn QueueStore,
    clock: &AtomicU64,
    views: &Snapshots,
    room: &RoomId,
    fifo: &RoomSettings,
    drawn: u64,
) {
    store.put_room(room, fifo).await.unwrap();
    clock.fetch_add(100, Ordering::SeqCst);
    views.refresh(store, room).await.unwrap();
    assert!(matches!(
        truth(store, room, drawn).await,
        Standing::Admitted { .. }
    ));
    assert_eq!(
        views.answer(room, drawn).map(|s| s.standing),
        None,
        "a visitor let in by a lottery was answered from the view"
    );
}

/// In a sold-out room the front of the line still asks the store: seats
/// may come back (another instance's sale loop writes them, or a write
/// races this view's observation) and the next tick let the front in while
/// the view still reads `sold_out`, which would send it away for a third of
/// the abandon time. Far back, the view answers `sold_out`.
#[tokio::test]
async fn the_front_of_a_sold_out_line_asks_the_store() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let views = Snapshots::new(TICK);
    let settings = RoomSettings {
        capacity: 100,
        admit_per_second: 1.0,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "sold", settings).await;
    let seqs = join_many(t.store.as_ref(), &room, 400).await;
    let (front, back) = (seqs[0], *seqs.last().unwrap());
    let sale = |seats| SaleSignal {
        seats,
        rate_factor: 1.0,
    };
    t.store
        .set_sale(&room, sale(SeatsLeft::SoldOut))
        .await
        .unwrap();
    for seq in [front, back] {
        views.saw(&room, seq, Standing::SoldOut);
    }
    views.refresh(t.store.as_ref(), &room).await.unwrap();
    assert_eq!(
        views.answer(&room, back).map(|s| s.standing),
        Some(Standing::SoldOut)
    );
    assert_eq!(
        views.answer(&room, front).map(|s| s.standing),
        None,
        "the front of a sold-out line was answered from the view"
    );
    // Seats come back through the store alone (another instance), and a
    // tick lets the front in before this view is refreshed.
    t.store
        .set_sale(&room, sale(SeatsLeft::Available))
        .await
        .unwrap();
    clock.fetch_add(1_000, Ordering::SeqCst);
    let admitted = t.store.tick(&room).await.unwrap().admitted;
    assert!(admitted.contains(&front), "{admitted:?}");
    assert_eq!(views.answer(&room, front).map(|s| s.standing), None);
}

/// An operator's change through this instance's admin API (a lottery, a
/// closed room, a rate raised past the front zone) takes this instance's
/// view out of use at once: the store answers until the next observation,
/// which sees the change.
#[tokio::test]
async fn an_operator_change_here_sends_every_status_to_the_store_until_the_next_view() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let state = crate::common::admin_state(t.store.clone()).with_status_snapshots(TICK);
    let api = Api::new(state.clone());
    let views = &state.snapshots;
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "operated", settings).await;
    let seqs = join_many(t.store.as_ref(), &room, 400).await;
    let last = *seqs.last().unwrap();
    let changes = [
        (
            "PATCH",
            format!("/admin/rooms/{room}"),
            r#"{"method":"random"}"#,
        ),
        (
            "PATCH",
            format!("/admin/rooms/{room}"),
            r#"{"method":"fifo"}"#,
        ),
        ("POST", format!("/admin/rooms/{room}/close"), ""),
    ];
    for (method, uri, body) in changes {
        views.saw(&room, last, Standing::Waiting { position: None });
        views.refresh(t.store.as_ref(), &room).await.unwrap();
        views.saw(&room, last, Standing::Waiting { position: None });
        views.refresh(t.store.as_ref(), &room).await.unwrap();
        let before = views.answer(&room, last).is_some();
        let r = api.admin(method, &uri, body).await;
        assert_eq!(r.status, 200, "{method} {uri}: {}", r.json);
        assert_eq!(
            views.answer(&room, last).map(|s| s.standing),
            None,
            "{method} {uri} {body}: answered from the view before the next observation"
        );
        // The first change was made on a fifo room the view answered for.
        if body.contains("random") {
            assert!(before, "the fifo room's view answered before the change");
        }
    }
}

/// A refused ticket is 401 and an unknown room 404; telling them apart asks
/// the store for the room, unless this instance observed it within a
/// view's life: a flood of forged or missing tickets for a live room then
/// costs no store call each.
#[tokio::test]
async fn refused_tickets_for_an_observed_room_cost_no_store_call() {
    let t = test_store(STORE);
    let store = Arc::new(crate::common::recording::Recording::new(t.store.clone()));
    let state = AppState::new(store.clone(), keys()).with_status_snapshots(TICK);
    let api = Api::new(state.clone());
    let room = crate::common::make_room(store.as_ref(), "forged", RoomSettings::default()).await;
    state
        .snapshots
        .refresh(store.as_ref(), &room)
        .await
        .unwrap();
    let before = store.figures_reads();
    for _ in 0..50 {
        let r = api.status(&room, "forged.ticket").await;
        assert_eq!(r.status, 401);
        let r = api.leave(&room, "forged.ticket").await;
        assert_eq!(r.status, 401);
        let r = api
            .call("GET", &format!("/queue/{room}/status"), None)
            .await;
        assert_eq!(r.status, 401);
    }
    assert_eq!(store.figures_reads() - before, 0, "the store was asked");
    // A room nobody observed is asked about: unknown, 404.
    let unknown = origin::room::RoomId::parse("nowhere").unwrap();
    let r = api.status(&unknown, "forged.ticket").await;
    assert_eq!(r.status, 404);
    assert_eq!(store.figures_reads() - before, 1);
}

/// Refused or missing tickets for rooms that do not exist cost no store
/// call either, once the promoter has listed the rooms within a listing's
/// life: a room with no view then does not exist, or was made since that
/// listing (on another instance), which reading the list again, once a
/// tick at most, tells. A listed room not yet observed is still 401.
#[tokio::test]
async fn refused_tickets_for_unknown_rooms_cost_no_store_call_once_the_rooms_are_listed() {
    let t = test_store(STORE);
    let store = Arc::new(crate::common::recording::Recording::new(t.store.clone()));
    let state = AppState::new(store.clone(), keys()).with_status_snapshots(TICK);
    let api = Api::new(state.clone());
    let room = crate::common::make_room(store.as_ref(), "listed", RoomSettings::default()).await;
    // As the promoter does on each listing.
    state
        .snapshots
        .retain(std::slice::from_ref(&room), std::time::Instant::now());
    let before = store.figures_reads();
    for i in 0..50 {
        let unknown = origin::room::RoomId::parse(&format!("nowhere-{i}")).unwrap();
        let r = api.status(&unknown, "forged.ticket").await;
        assert_eq!(r.status, 404, "{}", r.json);
        let r = api
            .call("GET", &format!("/queue/{unknown}/status"), None)
            .await;
        assert_eq!(r.status, 404, "{}", r.json);
        // The pages check the room the same way.
        for page in [
            format!("/book/{unknown}/"),
            format!("/waiting-room/{unknown}"),
        ] {
            let r = api.call("GET", &page, None).await;
            assert_eq!(r.status, 404, "{page}: {}", r.json);
        }
    }
    let r = api.status(&room, "forged.ticket").await;
    assert_eq!(r.status, 401, "{}", r.json);
    let r = api
        .call("GET", &format!("/waiting-room/{room}"), None)
        .await;
    assert_eq!(r.status, 200, "a listed room's page");
    assert_eq!(store.figures_reads() - before, 0, "the store was asked");
    let lists = store.room_lists();
    assert!(lists <= 1, "the list was read {lists} times for the flood");
    // A room made elsewhere since the listing: known once the list is read
    // again, a tick after the last reading.
    let elsewhere =
        crate::common::make_room(t.store.as_ref(), "made-elsewhere", RoomSettings::default()).await;
    crate::common::eventually("the room made elsewhere is known", TICK * 3, || async {
        api.status(&elsewhere, "forged.ticket").await.status == 401
    })
    .await;
    assert_eq!(store.figures_reads() - before, 0, "the store was asked");
}

/// An observation asked before an operator's change here, and back after
/// it, does not put the old view back in use: the store answers until an
/// observation asked after the change.
#[tokio::test]
async fn an_observation_in_flight_across_an_operator_change_is_not_installed() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let store = Arc::new(crate::common::recording::Recording::new(t.store.clone()));
    let state = crate::common::admin_state(store.clone()).with_status_snapshots(TICK);
    let api = Api::new(state.clone());
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(store.as_ref(), "inflight", settings).await;
    let seqs = join_many(store.as_ref(), &room, 400).await;
    let last = *seqs.last().unwrap();
    for _ in 0..2 {
        state
            .snapshots
            .saw(&room, last, Standing::Waiting { position: None });
        state
            .snapshots
            .refresh(store.as_ref(), &room)
            .await
            .unwrap();
    }
    assert!(state.snapshots.answer(&room, last).is_some());
    store.delay_observations(300);
    let observed = store.observations_of(&room);
    let refresh = {
        let (views, store, room) = (state.snapshots.clone(), store.clone(), room.clone());
        tokio::spawn(async move { views.refresh(store.as_ref(), &room).await })
    };
    crate::common::eventually(
        "the store has answered the observation in flight",
        Duration::from_secs(5),
        || async { store.observations_of(&room) > observed },
    )
    .await;
    let r = api
        .admin(
            "PATCH",
            &format!("/admin/rooms/{room}"),
            r#"{"method":"random"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    refresh.await.unwrap().unwrap();
    assert_eq!(
        state.snapshots.answer(&room, last).map(|s| s.standing),
        None,
        "the view from before the change answered"
    );
}

/// A view counts its age from when it was asked for, not from when it
/// arrived: an observation that took longer than a view may live (two
/// ticks) to come back answers nobody, since the line may have moved by
/// more than the front zone allows for meanwhile.
#[tokio::test]
async fn an_observation_that_came_back_late_answers_nobody() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let store = Arc::new(crate::common::recording::Recording::new(t.store.clone()));
    // A tick long enough that a loaded machine answers well inside a fresh
    // view's life (two ticks).
    let views = Snapshots::new(Duration::from_secs(1));
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "late", settings).await;
    let seqs = join_many(t.store.as_ref(), &room, 400).await;
    let last = *seqs.last().unwrap();
    views.saw(&room, last, Standing::Waiting { position: None });
    views.refresh(store.as_ref(), &room).await.unwrap();
    assert!(views.answer(&room, last).is_some(), "a fresh view answers");
    store.delay_observations(2_500);
    views.refresh(store.as_ref(), &room).await.unwrap();
    assert!(
        views.answer(&room, last).is_none(),
        "a view whose figures are 2.5 s old, on a 1 s tick, answered"
    );
}

/// A failed observation may have been carried out all the same (a reply
/// that timed out): the marks it carried go to the next observation once,
/// not with every failure, or a client that stopped polling would stay in
/// line for as long as the failures last. Here every observation after the
/// polls fails that way: the waiters who stopped are dropped within the
/// abandon time and three ticks of their last poll (the mark's first send,
/// its one retry, the tick).
#[tokio::test]
async fn marks_of_a_failed_observation_are_sent_again_once() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    let store = Arc::new(crate::common::recording::Recording::new(t.store.clone()));
    let views = Snapshots::new(TICK);
    let settings = RoomSettings {
        abandon_seconds: 6,
        ..RoomSettings::default()
    };
    let room = crate::common::make_paused_room(t.store.as_ref(), "retried", settings).await;
    let seqs = join_many(t.store.as_ref(), &room, 300).await;
    for &seq in &seqs {
        views.saw(&room, seq, Standing::Waiting { position: None });
    }
    views.refresh(store.as_ref(), &room).await.unwrap();
    // The last poll of each: answered from the view (the far back) or by
    // the store (the front zone).
    for &seq in &seqs {
        if views.answer(&room, seq).is_none() {
            truth(t.store.as_ref(), &room, seq).await;
            views.saw(&room, seq, Standing::Waiting { position: None });
        }
    }
    let last_poll = clock.load(Ordering::SeqCst);
    store.observe_then_fail_of(&room);
    const STEP: u64 = 100;
    let mut now = last_poll;
    while now < last_poll + 6_000 + 10 * STEP {
        now += STEP;
        clock.store(now, Ordering::SeqCst);
        t.store.tick(&room).await.unwrap();
        assert!(views.refresh(store.as_ref(), &room).await.is_err());
        if t.store.figures(&room).await.unwrap().waiting == 0 {
            break;
        }
    }
    assert_eq!(
        t.store.figures(&room).await.unwrap().waiting,
        0,
        "marks sent again with every failed observation kept them in line"
    );
    assert!(
        now <= last_poll + 6_000 + 3 * STEP,
        "dropped {} ms after the last poll",
        now - last_poll
    );
}

/// A scheduled window that starts (or ends) within a view's horizon may
/// switch the room to `passthrough` or `random`, or raise its rate, and
/// another instance's tick may then let in whom this view would still call
/// waiting: near a window's edge every status asks the store. Windows far
/// off change nothing.
#[tokio::test]
async fn a_window_about_to_start_sends_every_status_to_the_store() {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    let t = pinned_store(STORE, clock.clone());
    // A view lives two ticks; its horizon is that and a second (3 s here).
    let views = Snapshots::new(Duration::from_secs(1));
    let now_ms = clock.load(Ordering::SeqCst);
    let at = |ms: u64| {
        time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap()
    };
    for (id, starts_in_ms, answered) in [("soon", 500, false), ("later", 3_600_000, true)] {
        let settings = RoomSettings {
            capacity: 1,
            admit_per_second: 1.0,
            windows: vec![Window {
                starts_at: at(now_ms + starts_in_ms),
                ends_at: at(now_ms + starts_in_ms + 60_000),
                capacity: None,
                admit_per_second: None,
                session_seconds: None,
                method: Some(QueueingMethod::Passthrough),
            }],
            ..RoomSettings::default()
        };
        settings.validate().unwrap();
        let room = crate::common::make_room(t.store.as_ref(), id, settings).await;
        let seqs = join_many(t.store.as_ref(), &room, 400).await;
        let last = *seqs.last().unwrap();
        views.saw(&room, last, Standing::Waiting { position: None });
        views.refresh(t.store.as_ref(), &room).await.unwrap();
        assert_eq!(
            views.answer(&room, last).is_some(),
            answered,
            "{id}: a window starting in {starts_in_ms} ms"
        );
    }
}

/// Two real origins (servers and promoters, ticking every 50 ms) on one
/// store, under concurrent joins (64 at once, on both), leaves and polls on
/// both: every position either shows is at least the true one, measured
/// right after (a waiter's true position only falls), and a ticket left on
/// one reads expired on the other after a few ticks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_running_instances_stay_exact_under_concurrent_load() {
    let t = crate::common::test_store(STORE);
    let tick = Duration::from_millis(50);
    let stores = [t.store.clone(), t.connect()];
    let states: Vec<AppState> = stores
        .iter()
        .map(|s| AppState::new(s.clone(), keys()).with_status_snapshots(tick))
        .collect();
    let settings = RoomSettings {
        capacity: 20,
        admit_per_second: 20.0,
        session_seconds: 600,
        abandon_seconds: 60,
        ..RoomSettings::default()
    };
    let room = crate::common::make_room(t.store.as_ref(), "busy", settings).await;
    let waiters = join_many(t.store.as_ref(), &room, 600).await;
    let servers = [
        crate::common::spawn(states[0].clone(), Some(tick)).await,
        crate::common::spawn(states[1].clone(), Some(tick)).await,
    ];
    let apis: Arc<Vec<Api>> = Arc::new(states.iter().cloned().map(Api::new).collect());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);

    let mut tasks = tokio::task::JoinSet::new();
    // 64 joiners, on both instances.
    for j in 0..64 {
        let (apis, room) = (apis.clone(), room.clone());
        tasks.spawn(async move {
            while tokio::time::Instant::now() < deadline {
                let reply = apis[j % 2].join(&room, None).await;
                assert_eq!(reply.status, 200, "{}", reply.json);
                // The joiners' pace for the length of the load.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            0u64
        });
    }
    // Leaves on one instance, then polls of the same ticket on the other.
    {
        let (apis, room, leavers) = (apis.clone(), room.clone(), waiters[300..340].to_vec());
        tasks.spawn(async move {
            for (i, seq) in leavers.into_iter().enumerate() {
                let ticket = ticket(&room, seq);
                assert_eq!(apis[i % 2].leave(&room, &ticket).await.status, 204);
                // The bound under test: expired on the other after a few ticks.
                tokio::time::sleep(Duration::from_millis(160)).await;
                let reply = apis[(i + 1) % 2].status(&room, &ticket).await;
                assert_eq!(reply.json["state"], "expired", "left {seq}: {}", reply.json);
            }
            0
        });
    }
    // Pollers: each poll's position, then the truth from the store.
    for p in 0..4 {
        let (apis, room, store) = (apis.clone(), room.clone(), stores[p % 2].clone());
        let mine: Vec<u64> = waiters[340..].iter().copied().skip(p).step_by(4).collect();
        tasks.spawn(async move {
            let mut from_view = 0;
            while tokio::time::Instant::now() < deadline {
                for &seq in &mine {
                    let reply = apis[(seq % 2) as usize]
                        .status(&room, &ticket(&room, seq))
                        .await;
                    assert_eq!(reply.json["state"], "waiting", "{}", reply.json);
                    let shown = reply.json["position"].as_u64().unwrap();
                    let Standing::Waiting {
                        position: Some(true_pos),
                    } = truth(store.as_ref(), &room, seq).await
                    else {
                        panic!("{seq} is not waiting");
                    };
                    assert!(shown >= true_pos, "{seq}: shown {shown} < true {true_pos}");
                    if shown != true_pos {
                        from_view += 1;
                    }
                }
            }
            from_view
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    for s in servers {
        s.stop().await;
    }
}

/// One observation takes the marks of thousands of polls (more than one
/// command's worth) and samples the whole line, pre-queue draws ahead:
/// every sample is the waiter the store puts at that position, the draws
/// and the gone are told apart, and every marked waiter is kept by the
/// abandonment rule while the unmarked are dropped.
#[tokio::test]
async fn one_observation_marks_thousands_and_samples_the_line_behind_the_draws() {
    const T0: u64 = 1_800_000_000_000;
    let clock = Arc::new(AtomicU64::new(T0));
    let t = pinned_store(STORE, clock.clone());
    let store = t.store.as_ref();
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        abandon_seconds: 60,
        opens_at: Some(
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(T0 + 1_000) * 1_000_000)
                .unwrap(),
        ),
        ..RoomSettings::default()
    };
    let room = crate::common::make_paused_room(store, "marks", settings).await;
    let mut draws = Vec::new();
    for _ in 0..30u64 {
        let snap = store
            .join(&room, None, None)
            .await
            .unwrap()
            .answer()
            .unwrap();
        draws.push(snap.seq.unwrap());
    }
    clock.store(T0 + 2_000, Ordering::SeqCst);
    let line = join_many(store, &room, 4_000).await;
    let left: Vec<u64> = line.iter().copied().step_by(7).collect();
    for &seq in &left {
        assert!(store.leave(&room, seq).await.unwrap());
    }
    // The last ten never poll again; everyone else polled this instance.
    let (polling, silent) = line.split_at(line.len() - 10);
    clock.store(T0 + 50_000, Ordering::SeqCst);
    let watch = Watch {
        polled: draws.iter().chain(polling).copied().collect(),
        since_ms: T0,
        samples: true,
    };
    let obs = store.observe(&room, &watch).await.unwrap();
    let mut sorted_draws = draws.clone();
    sorted_draws.sort_unstable();
    assert_eq!(obs.drawn, sorted_draws);
    let gone: Vec<u64> = left
        .iter()
        .copied()
        .filter(|s| !silent.contains(s))
        .collect();
    assert_eq!(obs.gone, gone);
    assert!(obs.samples.len() > 200, "{} samples", obs.samples.len());
    for sample in &obs.samples {
        match sample.seq {
            None => assert!(sample.position <= 30, "{sample:?}"),
            // Asking the store records a poll: the silent stay unasked.
            Some(seq) if silent.contains(&seq) => {}
            Some(seq) => {
                let Standing::Waiting { position } = truth(store, &room, seq).await else {
                    panic!("{sample:?} is not waiting");
                };
                assert_eq!(position, Some(sample.position), "{sample:?}");
            }
        }
    }
    // The joins' own marks are dead by now; the observation's are not.
    clock.store(T0 + 70_000, Ordering::SeqCst);
    store.tick(&room).await.unwrap();
    for &seq in silent {
        assert_eq!(truth(store, &room, seq).await, Standing::Gone, "{seq}");
    }
    for &seq in polling.iter().step_by(97) {
        let standing = truth(store, &room, seq).await;
        if left.contains(&seq) {
            assert_eq!(standing, Standing::Gone);
        } else {
            assert!(
                matches!(standing, Standing::Waiting { .. }),
                "{seq}: {standing:?}"
            );
        }
    }
}
