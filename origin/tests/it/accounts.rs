//! One place per room and account, on the store: a join with an account
//! gets the place the account holds (in line or inside) exactly as a
//! rejoin with that place's ticket would, however many joins of it arrive
//! at once (in one batch, in many); the account is forgotten whenever its
//! place ends (leave, abandonment, session end or expiry) and its next join
//! takes a new place at the back; a ticket's standing place wins over the
//! account's; and getting the account's place back charges the per-address
//! cap nothing.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common::*;
use origin::queue::joins::Joins;
use origin::queue::redis::RoomKeys;
use origin::queue::{
    JoinRequest, Joined, PlaceLimit, Proof, QueueStore, SaleSignal, SeatsLeft, Snapshot, Standing,
};
use origin::room::{AccountHash, RoomId, RoomSettings, RoomState};

fn account(n: u8) -> AccountHash {
    AccountHash([n, 0xa5, n, 1, 2, 3, 4, n])
}

fn with(account: AccountHash) -> JoinRequest {
    JoinRequest {
        account: Some(account),
        ..JoinRequest::default()
    }
}

/// One join, as a batch of one.
async fn join(store: &dyn QueueStore, room: &RoomId, request: JoinRequest) -> Joined {
    let mut answers = store
        .join_many(room, std::slice::from_ref(&request))
        .await
        .unwrap();
    assert_eq!(answers.len(), 1);
    answers.pop().unwrap()
}

/// The answer of a join of `account` alone.
async fn join_as(store: &dyn QueueStore, room: &RoomId, account: AccountHash) -> Snapshot {
    join(store, room, with(account)).await.answer().unwrap()
}

fn seq(snap: &Snapshot) -> u64 {
    snap.seq.expect("a place")
}

/// A store on a pinned clock, started now.
fn pinned() -> (TestStore, Arc<AtomicU64>) {
    let clock = Arc::new(AtomicU64::new(unix_now() * 1000));
    (pinned_store(STORE, clock.clone()), clock)
}

/// Steps the clock by `ms` in half-second steps, ticking after each, as the
/// promoter would.
async fn run_for(store: &dyn QueueStore, room: &RoomId, clock: &AtomicU64, ms: u64) {
    let mut left = ms;
    while left > 0 {
        let step = left.min(500);
        clock.fetch_add(step, Ordering::SeqCst);
        store.tick(room).await.unwrap();
        left -= step;
    }
}

/// On Redis, the keys of the account index under the test's prefix.
async fn index_keys(t: &TestStore, room: &RoomId) -> Vec<String> {
    if t.kind != Store::Redis {
        return Vec::new();
    }
    let mut conn = redis_conn().await;
    redis::cmd("KEYS")
        .arg(format!("{}wr:{{{room}}}:acct*", t.prefix))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Nothing of the account index is left: no account counted, and on Redis
/// no key.
async fn index_is_empty(t: &TestStore, room: &RoomId) {
    assert_eq!(t.store.figures(room).await.unwrap().accounts, 0);
    assert_eq!(index_keys(t, room).await, Vec::<String>::new());
}

/// A hundred joins of one account, in one batch, in a hundred concurrent
/// batches of one, and through an instance's grouping of joins, give that
/// account one place; other accounts get places of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_joins_of_one_account_give_one_place() {
    let t = test_store(STORE);
    let store = t.store.clone();
    let room = make_paused_room(store.as_ref(), "many", settings(10)).await;

    let batch = vec![with(account(1)); 100];
    let answers = store.join_many(&room, &batch).await.unwrap();
    let first = seq(&answers[0].answer().unwrap());
    for (i, a) in answers.iter().enumerate() {
        let snap = a.answer().unwrap();
        assert_eq!(snap.seq, Some(first), "join {i}");
        assert_eq!(snap.standing, Standing::Waiting { position: Some(1) });
        assert_eq!(snap.line.waiting, 1, "join {i}");
    }

    let calls: Vec<_> = (0..100)
        .map(|_| {
            let (store, room) = (store.clone(), room.clone());
            tokio::spawn(async move { join_as(store.as_ref(), &room, account(2)).await })
        })
        .collect();
    let mut seqs = Vec::new();
    for call in calls {
        seqs.push(seq(&call.await.unwrap()));
    }
    seqs.dedup();
    assert_eq!(seqs.len(), 1, "one place: {seqs:?}");
    assert_ne!(seqs[0], first);

    let joins = Joins::new(store.clone(), Duration::from_millis(2));
    let calls: Vec<_> = (0..100)
        .map(|_| {
            let (joins, room) = (joins.clone(), room.clone());
            tokio::spawn(async move { joins.join(&room, with(account(3))).await })
        })
        .collect();
    let mut grouped = Vec::new();
    for call in calls {
        grouped.push(seq(&call.await.unwrap().unwrap().answer().unwrap()));
    }
    grouped.dedup();
    assert_eq!(grouped.len(), 1, "one place: {grouped:?}");

    let f = store.figures(&room).await.unwrap();
    assert_eq!(
        (f.waiting, f.places_given, f.accounts),
        (3, 3, 3),
        "three accounts, three places"
    );
}

/// An account's place is given back in line and inside, with the very answer
/// a rejoin with that place's ticket gets: its position, its session's end,
/// sold out and closed alike.
#[tokio::test]
async fn the_account_gets_its_place_as_its_ticket_would() {
    let (t, _clock) = pinned();
    let store = t.store.as_ref();
    // Capacity 1: the first is let in at once, the second waits.
    let room = make_room(store, "kept", settings(1)).await;
    let (a, b) = (account(1), account(2));
    let inside = join_as(store, &room, a).await;
    assert!(matches!(inside.standing, Standing::Admitted { .. }));
    let waiter = join_as(store, &room, b).await;
    assert_eq!(waiter.standing, Standing::Waiting { position: Some(1) });
    assert_eq!(store.figures(&room).await.unwrap().accounts, 2);

    // Any number of times, in any state of the room or the sale.
    for round in 0..3 {
        match round {
            1 => {
                let sold_out = SaleSignal {
                    seats: SeatsLeft::SoldOut,
                    ..SaleSignal::AVAILABLE
                };
                store.set_sale(&room, sold_out).await.unwrap();
            }
            2 => {
                store.set_sale(&room, SaleSignal::AVAILABLE).await.unwrap();
                store.set_state(&room, RoomState::Closed).await.unwrap();
            }
            _ => {}
        }
        for (who, place) in [(a, &inside), (b, &waiter)] {
            let again = join_as(store, &room, who).await;
            assert_eq!(again.seq, place.seq, "round {round}");
            let by_ticket = store.join(&room, place.seq, None).await.unwrap();
            assert_eq!(Some(again), by_ticket.answer(), "round {round}");
        }
    }
    let closed = join_as(store, &room, b).await;
    assert_eq!(closed.standing, Standing::Closed);
    assert!(matches!(
        join_as(store, &room, a).await.standing,
        Standing::Admitted { .. }
    ));
    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.places_given, f.accounts), (2, 2), "no place given again");
}

/// Whatever ends a place forgets its account: leaving the line, being
/// dropped for not polling, leaving from inside, the session running out
/// (ticked or not yet); the account's next join takes a new place at the
/// back.
#[tokio::test]
async fn an_ended_place_frees_its_account() {
    let (t, clock) = pinned();
    let store = t.store.as_ref();
    let s = RoomSettings {
        session_seconds: 5,
        abandon_seconds: 6,
        ..settings(1)
    };
    let room = make_paused_room(store, "ended", s).await;
    let (a, b, c) = (account(1), account(2), account(3));

    // Leaving the line.
    store.join(&room, None, None).await.unwrap();
    let a1 = join_as(store, &room, a).await;
    assert_eq!(a1.standing, Standing::Waiting { position: Some(2) });
    assert!(store.leave(&room, seq(&a1)).await.unwrap());
    index_is_empty(&t, &room).await;
    let a2 = join_as(store, &room, a).await;
    assert!(seq(&a2) > seq(&a1));
    assert_eq!(a2.standing, Standing::Waiting { position: Some(2) });
    assert_eq!(store.figures(&room).await.unwrap().accounts, 1);

    // Dropped for not polling (paused rooms too): nobody polls here.
    let b1 = join_as(store, &room, b).await;
    assert_eq!(store.figures(&room).await.unwrap().accounts, 2);
    run_for(store, &room, &clock, 8_000).await;
    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.waiting, f.abandoned_total), (0, 3), "all dropped");
    index_is_empty(&t, &room).await;
    let b2 = join_as(store, &room, b).await;
    assert!(seq(&b2) > seq(&b1));
    assert_eq!(b2.standing, Standing::Waiting { position: Some(1) });
    assert!(store.leave(&room, seq(&b2)).await.unwrap());

    // Leaving from inside (the site ends the session).
    store.set_state(&room, RoomState::Open).await.unwrap();
    let c1 = join_as(store, &room, c).await;
    assert!(matches!(c1.standing, Standing::Admitted { .. }));
    assert!(store.leave(&room, seq(&c1)).await.unwrap());
    index_is_empty(&t, &room).await;
    let c2 = join_as(store, &room, c).await;
    assert!(seq(&c2) > seq(&c1));
    assert!(matches!(c2.standing, Standing::Admitted { .. }));

    // The session runs out, and a tick ends it.
    run_for(store, &room, &clock, 5_500).await;
    assert_eq!(store.figures(&room).await.unwrap().active, 0);
    index_is_empty(&t, &room).await;
    let c3 = join_as(store, &room, c).await;
    assert!(seq(&c3) > seq(&c2));
    assert!(matches!(c3.standing, Standing::Admitted { .. }));

    // The session runs out and no tick has ended it yet: ended all the
    // same, so a new place, and the index names that one alone.
    clock.fetch_add(5_500, Ordering::SeqCst);
    let c4 = join_as(store, &room, c).await;
    assert!(seq(&c4) > seq(&c3));
    assert!(matches!(c4.standing, Standing::Admitted { .. }));
    assert_eq!(store.figures(&room).await.unwrap().accounts, 1);
    store.tick(&room).await.unwrap();
    assert_eq!(join_as(store, &room, c).await.seq, c4.seq);
    assert_eq!(store.figures(&room).await.unwrap().accounts, 1);
    assert!(store.leave(&room, seq(&c4)).await.unwrap());
    index_is_empty(&t, &room).await;
}

/// What an answer says, with the sequence number made relative to the
/// room's base so two rooms can be compared.
fn outcome(joined: &Joined, base: u64) -> Option<(Option<u64>, Standing, u64)> {
    joined.answer().map(|snap| {
        let standing = match snap.standing {
            Standing::Admitted { .. } => Standing::Admitted { until_ms: 0 },
            other => other,
        };
        (snap.seq.map(|s| s - base), standing, snap.line.waiting)
    })
}

/// The seq one below the room's first place (its base), found by a join
/// that then leaves.
async fn base_of(store: &dyn QueueStore, room: &RoomId) -> u64 {
    let probe = store.join(room, None, None).await.unwrap();
    let seq = probe.answer().unwrap().seq.unwrap();
    store.leave(room, seq).await.unwrap();
    seq - 1
}

/// Joins of accounts in one batch get exactly what they get one by one: a
/// second join of an account in the batch gets the first's place (let in at
/// once, waiting, or refused alike), with tickets and caps mixed in. In a
/// room nobody is let into, the line stands from the first join, so new
/// accounts take places the way most joins of an on-sale do.
#[tokio::test]
async fn a_batch_of_account_joins_answers_as_lone_joins_would() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let cases: Vec<(RoomSettings, Option<RoomState>)> = vec![
        (settings(1), None),
        (settings(0), None),
        (settings(3), Some(RoomState::Paused)),
        (
            RoomSettings {
                max_line: Some(3),
                ..settings(0)
            },
            None,
        ),
        (settings(1), Some(RoomState::Closed)),
    ];
    let cap = Some(PlaceLimit {
        holder: "h".into(),
        max: 2,
    });
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
        // Relative seqs: member 2 is the first place given below.
        let requests = vec![
            with(account(1)),
            with(account(2)),
            with(account(1)),
            JoinRequest::default(),
            JoinRequest {
                limit: cap.clone(),
                ..with(account(1))
            },
            JoinRequest {
                limit: cap.clone(),
                ..with(account(3))
            },
            // The ticket of account 2's place, with account 1: the ticket wins.
            JoinRequest {
                existing: Some(3),
                ..with(account(1))
            },
            // The probe's gone ticket, with account 2: the account's place.
            JoinRequest {
                existing: Some(1),
                ..with(account(2))
            },
            with(account(3)),
            with(account(4)),
            with(account(4)),
            with(account(5)),
        ];
        let mut lone_answers = Vec::new();
        for r in &requests {
            let shifted = JoinRequest {
                existing: r.existing.map(|m| m + lone_base),
                ..r.clone()
            };
            lone_answers.push(outcome(&join(store, &lone, shifted).await, lone_base));
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
        if state != Some(RoomState::Closed) {
            let seq_of = |k: usize| batch_answers[k].and_then(|a| a.0);
            assert_eq!(seq_of(0), seq_of(2), "case {i}: one place for account 1");
            assert_eq!(seq_of(0), seq_of(4), "case {i}: one place for account 1");
            assert_eq!(seq_of(1), seq_of(6), "case {i}: the ticket wins");
            assert_eq!(seq_of(1), seq_of(7), "case {i}: account 2's place");
            assert_eq!(seq_of(5), seq_of(8), "case {i}: one place for account 3");
            assert_eq!(seq_of(9), seq_of(10), "case {i}: one place for account 4");
        }
        let (lone_f, batch_f) = (
            store.figures(&lone).await.unwrap(),
            store.figures(&batched).await.unwrap(),
        );
        assert_eq!(
            (
                batch_f.waiting,
                batch_f.active,
                batch_f.places_given,
                batch_f.accounts,
                batch_f.capped_places
            ),
            (
                lone_f.waiting,
                lone_f.active,
                lone_f.places_given,
                lone_f.accounts,
                lone_f.capped_places
            ),
            "case {i}"
        );
    }
}

/// The per-address cap counts an account's place once: joins that get it
/// back are never refused by the cap nor charged to it.
#[tokio::test]
async fn getting_the_account_place_back_charges_no_cap() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "capped", settings(5)).await;
    let capped = |n: u8| JoinRequest {
        limit: Some(PlaceLimit {
            holder: "h".into(),
            max: 1,
        }),
        ..with(account(n))
    };
    let first = join(store, &room, capped(1)).await.answer().unwrap();
    for _ in 0..3 {
        let again = join(store, &room, capped(1)).await;
        assert_eq!(again.answer().map(|s| s.seq), Some(first.seq));
    }
    let batch = store
        .join_many(&room, &[capped(1), capped(1), capped(2), capped(1)])
        .await
        .unwrap();
    assert_eq!(batch[0].answer().unwrap().seq, first.seq);
    assert_eq!(batch[1].answer().unwrap().seq, first.seq);
    assert_eq!(batch[2], Joined::TooManyPlaces, "the cap holds for others");
    assert_eq!(batch[3].answer().unwrap().seq, first.seq);
    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.capped_clients, f.capped_places), (1, 1));
    assert_eq!((f.places_given, f.accounts), (1, 1));

    assert!(store.leave(&room, seq(&first)).await.unwrap());
    let f = store.figures(&room).await.unwrap();
    assert_eq!((f.capped_clients, f.capped_places, f.accounts), (0, 0, 0));
    let other = join(store, &room, capped(2)).await.answer().unwrap();
    assert!(seq(&other) > seq(&first));
}

/// A valid ticket's standing place wins over the account's; when it is gone
/// the account's place is given, and when both are gone a new one, which
/// the account then holds.
#[tokio::test]
async fn a_standing_ticket_wins_over_the_account() {
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "both", settings(5)).await;
    let a = account(1);
    let x = seq(&store
        .join(&room, None, None)
        .await
        .unwrap()
        .answer()
        .unwrap());
    let y = seq(&join_as(store, &room, a).await);
    let both = |existing| JoinRequest {
        existing: Some(existing),
        ..with(a)
    };
    assert_eq!(
        join(store, &room, both(x)).await.answer().unwrap().seq,
        Some(x)
    );
    assert_eq!(join_as(store, &room, a).await.seq, Some(y), "still y's");
    store.leave(&room, x).await.unwrap();
    assert_eq!(
        join(store, &room, both(x)).await.answer().unwrap().seq,
        Some(y)
    );
    store.leave(&room, y).await.unwrap();
    let z = join(store, &room, both(x)).await.answer().unwrap();
    assert!(seq(&z) > y);
    assert_eq!(z.standing, Standing::Waiting { position: Some(1) });
    assert_eq!(join_as(store, &room, a).await.seq, z.seq);
    assert_eq!(store.figures(&room).await.unwrap().accounts, 1);
}

/// On Redis: the room's own keys go (what its account index or solutions
/// left stays), and the room named `name` is created again a moment later
/// (a new base); one visitor with nothing joins it, member 1 of the new
/// life. Returns the new room and that visitor's seq.
async fn new_life(store: &dyn QueueStore, keys: &RoomKeys, name: &str) -> (RoomId, u64) {
    let mut conn = redis_conn().await;
    let () = redis::cmd("DEL")
        .arg(keys.all())
        .query_async(&mut conn)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let room = make_paused_room(store, name, settings(5)).await;
    let anonymous = seq(&store
        .join(&room, None, None)
        .await
        .unwrap()
        .answer()
        .unwrap());
    (room, anonymous)
}

/// On Redis: the index is where `RoomKeys` says (account -> member in small
/// hashes, member -> account in strings of 8 bytes a member), and a room
/// created anew (its hash gone,
/// say) never reads an earlier life's entries as its own places.
#[tokio::test]
async fn redis_keeps_the_index_where_keys_say_and_per_life() {
    if STORE != Store::Redis {
        return;
    }
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "lives", settings(5)).await;
    let keys = RoomKeys::new(&t.prefix, &room);
    let mut conn = redis_conn().await;
    let (a, b) = (account(1), account(2));
    let first = seq(&join_as(store, &room, a).await);
    let base = first - 1;
    let member: Option<String> = redis::cmd("HGET")
        .arg(keys.account(&a))
        .arg(&a.as_bytes()[..])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(member.as_deref(), Some("1"));
    let back: Vec<u8> = redis::cmd("GETRANGE")
        .arg(keys.account_of(base, 1))
        .arg(8)
        .arg(15)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(back, a.as_bytes());
    let encoding: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(keys.account(&a))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(encoding, "listpack");

    // Member 1 of the new life given to nobody's account (the member the
    // old entry of `a` names), and another account indexed.
    let (room, anonymous) = new_life(store, &keys, "lives").await;
    let b1 = seq(&join_as(store, &room, b).await);
    assert_eq!(b1, anonymous + 1);
    let again = join_as(store, &room, a).await;
    assert_eq!(again.seq, Some(b1 + 1), "a new place, not the old life's");
    assert_eq!(again.standing, Standing::Waiting { position: Some(3) });
    assert_eq!(store.figures(&room).await.unwrap().accounts, 2);
}

/// On Redis: a solution remembered by a room's earlier life (its hash gone
/// and created anew, a new base) is not read as a place of the new one.
/// The solutions' hashes name their room's base, and their entries are
/// short members, which a new life gives again.
#[tokio::test]
async fn redis_reads_solutions_per_life() {
    if STORE != Store::Redis {
        return;
    }
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "sol-lives", settings(5)).await;
    let keys = RoomKeys::new(&t.prefix, &room);
    let solved = JoinRequest {
        proof: Proof::Solved {
            key: [3, 1, 4, 1, 5, 9, 2, 6],
            expires_at_ms: (unix_now() + 300) * 1000,
        },
        ..JoinRequest::default()
    };
    let first = join(store, &room, solved.clone()).await.answer().unwrap();
    assert_eq!(
        join(store, &room, solved.clone())
            .await
            .answer()
            .unwrap()
            .seq,
        first.seq
    );

    // Member 1 of the new life, given to a join without the solution: the
    // member the old entry names.
    let (room, anonymous) = new_life(store, &keys, "sol-lives").await;
    let again = join(store, &room, solved).await.answer().unwrap();
    assert_eq!(
        again.seq,
        Some(anonymous + 1),
        "a new place, not the old life's"
    );
    assert_eq!(again.standing, Standing::Waiting { position: Some(2) });
}

/// On Redis: a place that ends clears its account's reverse entry, and a
/// reverse string left all zero is deleted (the index keeps nothing for
/// places that ended).
#[tokio::test]
async fn redis_drops_reverse_strings_once_empty() {
    if STORE != Store::Redis {
        return;
    }
    let t = test_store(STORE);
    let store = t.store.as_ref();
    let room = make_paused_room(store, "empties", settings(5)).await;
    let keys = RoomKeys::new(&t.prefix, &room);
    let conn = redis_conn().await;
    let (a, b) = (account(1), account(2));
    let x = seq(&join_as(store, &room, a).await);
    let y = seq(&join_as(store, &room, b).await);
    let reverse = keys.account_of(x - 1, 1);
    let read = || {
        let mut conn = conn.clone();
        let cmd = redis::cmd("GET").arg(&reverse).clone();
        async move { cmd.query_async::<Option<Vec<u8>>>(&mut conn).await.unwrap() }
    };
    let mut both = vec![0u8; 8];
    both.extend_from_slice(a.as_bytes());
    both.extend_from_slice(b.as_bytes());
    assert_eq!(read().await, Some(both));
    store.leave(&room, x).await.unwrap();
    let mut left = vec![0u8; 16];
    left.extend_from_slice(b.as_bytes());
    assert_eq!(read().await, Some(left));
    store.leave(&room, y).await.unwrap();
    assert_eq!(read().await, None, "an all-zero string is deleted");
    assert_eq!(store.figures(&room).await.unwrap().accounts, 0);
}
