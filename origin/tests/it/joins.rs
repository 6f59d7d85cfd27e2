//! Joins in groups: a batch of joins gives each caller exactly what a lone
//! join would have given, in arrival order, and many concurrent clients on
//! two instances get one contiguous run of places, and a batch Redis stops
//! half-way never gives a place twice.

use super::STORE;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use crate::common::*;
use axum::http::StatusCode;
use origin::queue::joins::Joins;
use origin::queue::{JoinRequest, Joined, PlaceLimit, Proof, QueueStore, Standing, StoreError};
use origin::room::{RoomId, RoomSettings, RoomState};
use tokio::task::JoinHandle;

/// What an answer says, with the sequence number made relative to the
/// room's first place so two rooms can be compared.
fn outcome(joined: &Joined, base: u64) -> (Option<u64>, Option<Standing>, u64) {
    match joined {
        Joined::TooManyPlaces | Joined::ChallengeNeeded => (None, None, 0),
        Joined::Answer(snap) => {
            let standing = match snap.standing {
                Standing::Admitted { .. } => Standing::Admitted { until_ms: 0 },
                other => other,
            };
            (
                snap.seq.map(|s| s - base),
                Some(standing),
                snap.line.waiting,
            )
        }
    }
}

/// The seq one below the room's first place (its base), found by a join.
async fn base_of(store: &dyn QueueStore, room: &RoomId) -> u64 {
    let probe = store.join(room, None, None).await.unwrap();
    let seq = probe.answer().unwrap().seq.unwrap();
    store.leave(room, seq).await.unwrap();
    seq - 1
}

/// The same joins, once as one batch and once one by one on a twin room:
/// the same answers, cap, tickets, admit-at-once and refusals included.
#[tokio::test]
async fn a_batch_answers_each_join_as_a_lone_join_would() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let cap = |holder: &str| {
        Some(PlaceLimit {
            holder: holder.into(),
            max: 2,
        })
    };
    let mut cases: Vec<(RoomSettings, Option<RoomState>)> = vec![
        // Admit at once while the line is empty and capacity lasts.
        (settings(3), None),
        // A paused room: every join takes a place.
        (settings(3), Some(RoomState::Paused)),
        // A line capped at four places: the rest read sold_out.
        (
            RoomSettings {
                max_line: Some(4),
                ..settings(0)
            },
            None,
        ),
    ];
    cases.push((settings(1), Some(RoomState::Closed)));
    for (i, (s, state)) in cases.into_iter().enumerate() {
        let lone = make_room(store, &format!("lone{i}"), s.clone()).await;
        let batched = make_room(store, &format!("batch{i}"), s).await;
        let (lone_base, batch_base) = if state == Some(RoomState::Closed) {
            (0, 0)
        } else {
            (base_of(store, &lone).await, base_of(store, &batched).await)
        };
        if let Some(state) = state {
            store.set_state(&lone, state).await.unwrap();
            store.set_state(&batched, state).await.unwrap();
        }
        // The probe took member 1 of each room: an existing ticket naming
        // it is gone, so that join takes a new place.
        let mut requests = vec![
            JoinRequest {
                existing: None,
                limit: cap("a"),
                account: None,
                proof: Proof::NotAsked,
            },
            JoinRequest {
                existing: None,
                limit: cap("a"),
                account: None,
                proof: Proof::NotAsked,
            },
            JoinRequest {
                existing: None,
                limit: cap("a"),
                account: None,
                proof: Proof::NotAsked,
            },
            JoinRequest {
                existing: None,
                limit: cap("b"),
                account: None,
                proof: Proof::NotAsked,
            },
        ];
        // A visitor rejoining with the ticket of the second place above
        // (member 3), and one with the probe's gone ticket (member 1).
        for member in [3, 1] {
            requests.push(JoinRequest {
                existing: Some(member),
                limit: None,
                account: None,
                proof: Proof::NotAsked,
            });
        }
        requests.push(JoinRequest {
            existing: None,
            limit: None,
            account: None,
            proof: Proof::NotAsked,
        });
        let mut lone_answers = Vec::new();
        for r in &requests {
            let existing = r.existing.map(|m| m + lone_base);
            let answer = store.join(&lone, existing, r.limit.as_ref()).await.unwrap();
            lone_answers.push(outcome(&answer, lone_base));
        }
        let shifted: Vec<JoinRequest> = requests
            .iter()
            .map(|r| JoinRequest {
                existing: r.existing.map(|m| m + batch_base),
                ..r.clone()
            })
            .collect();
        let batch_answers: Vec<_> = store
            .join_many(&batched, &shifted)
            .await
            .unwrap()
            .iter()
            .map(|a| outcome(a, batch_base))
            .collect();
        assert_eq!(batch_answers, lone_answers, "case {i}");
        let (lone_f, batch_f) = (
            store.figures(&lone).await.unwrap(),
            store.figures(&batched).await.unwrap(),
        );
        assert_eq!(
            (batch_f.waiting, batch_f.active, batch_f.places_given),
            (lone_f.waiting, lone_f.active, lone_f.places_given),
            "case {i}"
        );
        assert_eq!(
            (batch_f.capped_clients, batch_f.capped_places),
            (lone_f.capped_clients, lone_f.capped_places),
            "case {i}"
        );
    }
}

/// `n` plain joins of `room` through `joins`, started at once, each a task
/// of its own.
fn spawn_joins(
    joins: &Joins,
    room: &RoomId,
    n: usize,
) -> Vec<JoinHandle<Result<Joined, StoreError>>> {
    (0..n)
        .map(|_| {
            let joins = joins.clone();
            let room = room.clone();
            tokio::spawn(async move { joins.join(&room, JoinRequest::default()).await })
        })
        .collect()
}

/// A batch to a room that does not exist fails each caller alike.
#[tokio::test]
async fn a_failing_batch_fails_each_caller_with_the_same_error() {
    let t = test_store(STORE);
    let joins = Joins::new(t.store.clone(), Duration::from_millis(5));
    let room = room("nowhere");
    let calls = spawn_joins(&joins, &room, 32);
    for call in calls {
        assert!(matches!(call.await.unwrap(), Err(StoreError::UnknownRoom)));
    }
}

/// Polls `future` once, in the calling task's context.
async fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *future).poll(cx))).await
}

/// A batch's leader whose request is cancelled during its yield still sends
/// the batch: the joins gathered behind it do not wait for a window that
/// was never timed (a minute here), and the leader's own join takes its
/// place all the same, as a lone join cancelled mid-call would.
#[tokio::test]
async fn a_cancelled_leader_still_sends_its_batch() {
    let t = test_store(STORE);
    if !t.store.round_trips() {
        return; // the embedded store takes every join alone
    }
    let joins = Joins::new(t.store.clone(), Duration::from_secs(60));
    let room = make_paused_room(t.store.as_ref(), "leader", settings(10)).await;
    let mut leader = Box::pin(joins.join(&room, JoinRequest::default()));
    let mut follower = Box::pin(joins.join(&room, JoinRequest::default()));
    // Each polled once on this one thread: the leader yields, the follower
    // joins its batch.
    assert!(poll_once(&mut leader).await.is_pending());
    assert!(poll_once(&mut follower).await.is_pending());
    drop(leader);
    let joined = tokio::time::timeout(Duration::from_secs(10), follower)
        .await
        .expect("the follower is answered long before the window")
        .unwrap();
    let snap = joined.answer().unwrap();
    assert_eq!(snap.standing, Standing::Waiting { position: Some(2) });
    assert_eq!(snap.line.waiting, 2, "the cancelled leader kept its place");
}

/// Joins that arrive in one burst go to the store together: a leader yields
/// once, so 32 joins started in the same turn of the scheduler make one
/// store call, not a lone call and then the rest.
#[tokio::test]
async fn a_burst_of_joins_makes_one_store_call() {
    let t = test_store(STORE);
    if !t.store.round_trips() {
        return;
    }
    let joins = Joins::new(t.store.clone(), Duration::from_secs(60));
    let room = make_paused_room(t.store.as_ref(), "burst", settings(10)).await;
    let before = joins.stats();
    let calls = spawn_joins(&joins, &room, 32);
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let stats = joins.stats().since(before);
    assert_eq!((stats.batches, stats.joins, stats.alone), (1, 32, 0));
}

/// 64 clients join at once, each several times, through two origin
/// instances over one store: every join gets its own place, the places are
/// one contiguous run, each client's joins are in the order it made them,
/// and each answer's position is its place (nobody leaves or is admitted).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batched_joins_keep_exact_contiguous_order_across_two_instances() {
    const CLIENTS: usize = 64;
    const EACH: usize = 8;
    let t = test_store(STORE);
    let other = t.connect();
    let room = make_paused_room(t.store.as_ref(), "crowd", settings(10)).await;
    let states = [state(t.store.clone()), state(other)];
    let apis: Arc<Vec<Api>> = Arc::new(states.iter().cloned().map(Api::new).collect());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let apis = apis.clone();
            let room = room.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                for j in 0..EACH {
                    let reply = apis[(c + j) % 2].join(&room, None).await;
                    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
                    let seq = seq_of(&reply.ticket(), &room);
                    let position = reply.json["position"].as_u64().unwrap();
                    got.push((seq, position));
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for client in clients {
        let got = client.await.unwrap();
        // One client's joins, one after another: later ones later in line.
        assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "{got:?}");
        all.extend(got);
    }
    all.sort();
    let first = all[0].0;
    for (i, &(seq, position)) in all.iter().enumerate() {
        assert_eq!(seq, first + i as u64, "places are contiguous");
        assert_eq!(position, i as u64 + 1, "seq {seq}: its place in line");
    }
    let by_seq: HashMap<u64, u64> = all.iter().copied().collect();
    assert_eq!(by_seq.len(), CLIENTS * EACH, "no place given twice");
    let figures = t.store.figures(&room).await.unwrap();
    assert_eq!(figures.waiting, (CLIENTS * EACH) as u64);
    let (a, b) = (states[0].joins.stats(), states[1].joins.stats());
    assert_eq!(a.joins + b.joins, (CLIENTS * EACH) as u64);
    // On Redis the joins did go in groups; the embedded store, with no
    // round trip to share, takes each alone (a batch there only added the
    // wait and the hand-over).
    if STORE == Store::Memory {
        assert_eq!(a.batches + b.batches, a.joins + b.joins, "{a:?} {b:?}");
    } else {
        assert!(
            a.batches + b.batches < a.joins + b.joins,
            "no batch formed: {a:?} {b:?}"
        );
    }
}

/// A batch that Redis stops half-way with an error keeps the writes it made
/// before it (a script is not rolled back), a visitor let in at once among
/// them; no later join is given that visitor's place. The error is forced
/// by making the place cap's hash another type.
#[tokio::test]
async fn a_batch_stopped_half_way_never_gives_a_place_twice() {
    if STORE == Store::Memory {
        // The embedded store's batch is one step under one lock.
        return;
    }
    let t = test_store(STORE);
    let room = make_room(t.store.as_ref(), "half-way", settings(100)).await;
    let key = |kind: &str| format!("{}wr:{{{room}}}:{kind}", t.prefix);
    let mut redis = redis::Client::open(redis_url())
        .unwrap()
        .get_connection()
        .unwrap();
    let free = JoinRequest {
        existing: None,
        limit: None,
        account: None,
        proof: Proof::NotAsked,
    };
    let capped = JoinRequest {
        limit: Some(PlaceLimit {
            holder: "client".into(),
            max: 5,
        }),
        ..free.clone()
    };
    let () = redis::cmd("SET")
        .arg(key("holding"))
        .arg("not a hash")
        .query(&mut redis)
        .unwrap();
    // The line is empty and there is room: the first is let in at once,
    // then the second's cap check fails.
    assert!(
        t.store
            .join_many(&room, &[free.clone(), capped])
            .await
            .is_err()
    );
    let () = redis::cmd("DEL")
        .arg(key("holding"))
        .query(&mut redis)
        .unwrap();
    let inside: Vec<u64> = redis::cmd("ZRANGE")
        .arg(key("active"))
        .arg(0)
        .arg(-1)
        .query(&mut redis)
        .unwrap();
    assert_eq!(
        inside.len(),
        1,
        "the first join was let in before the error"
    );
    let base: u64 = redis::cmd("HGET")
        .arg(key("room"))
        .arg("base")
        .query(&mut redis)
        .unwrap();
    for _ in 0..3 {
        let joined = t
            .store
            .join_many(&room, std::slice::from_ref(&free))
            .await
            .unwrap();
        let seq = joined[0].answer().unwrap().seq.unwrap();
        assert!(
            !inside.contains(&(seq - base)),
            "place {} given twice",
            seq - base
        );
    }
}
