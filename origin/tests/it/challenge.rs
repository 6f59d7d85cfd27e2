//! The join challenge through the real router, proof of work: a join
//! without an answer is 428 with a seed, every wrong answer 403 with
//! nothing changed, one solution one place however many browsers send it,
//! and a standing place (a ticket's, an account's) needs no new solution.

use super::STORE;
use std::sync::Arc;

use crate::common::*;
use origin::queue::QueueStore;
use origin::room::{ChallengeKind, RoomId, RoomSettings};
use serde_json::Value;

/// A room asking proof of work at `bits`, `capacity`, paused when `paused`.
async fn pow_room(
    store: &dyn QueueStore,
    id: &str,
    bits: u8,
    capacity: u32,
    paused: bool,
) -> RoomId {
    let s = RoomSettings {
        challenge: ChallengeKind::Pow,
        challenge_bits: bits,
        ..settings(capacity)
    };
    if paused {
        make_paused_room(store, id, s).await
    } else {
        make_room(store, id, s).await
    }
}

/// `seed` solved for `bits`.
fn solve(seed: &str, bits: u8) -> String {
    let (nonce, _) = token::solve(seed, bits, 0).expect("a nonce");
    format!("{seed}.{nonce}")
}

/// The seed of a 428 answer, after checking its shape.
fn asked_seed(r: &Reply, bits: u8) -> String {
    assert_eq!(r.status, 428, "{}", r.json);
    assert_eq!(r.json["error"]["code"], "challenge_required");
    let c = &r.json["challenge"];
    assert_eq!(c["kind"], "pow");
    assert_eq!(c["bits"], u64::from(bits));
    let expires = c["expires_at"].as_str().expect("expires_at");
    let at = time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339)
        .expect("RFC 3339");
    let left = at.unix_timestamp() - i64::try_from(unix_now()).unwrap();
    assert!(
        (60..=600).contains(&left),
        "a seed good for minutes: {left} s"
    );
    assert!(r.cookies().is_empty(), "a 428 sets no cookie");
    c["seed"].as_str().expect("seed").to_owned()
}

/// (waiting, places given) of the room.
async fn figures(store: &dyn QueueStore, room: &RoomId) -> (u64, u64) {
    let f = store.figures(room).await.unwrap();
    (f.waiting, f.places_given)
}

fn code(r: &Reply) -> &Value {
    &r.json["error"]["code"]
}

#[tokio::test]
async fn a_join_without_an_answer_is_asked_and_takes_nothing() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    let room = pow_room(t.store.as_ref(), "pow-ask", 10, 10, true).await;
    let r = api.join_answering(&room, None, None).await;
    let seed = asked_seed(&r, 10);
    assert_eq!(figures(t.store.as_ref(), &room).await, (0, 0));
    // Each ask is a fresh seed.
    let again = asked_seed(&api.join_answering(&room, None, None).await, 10);
    assert_ne!(seed, again);
    // A solved one takes a place.
    let r = api
        .join_answering(&room, None, Some(&solve(&seed, 10)))
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["state"], "waiting");
    assert_eq!(figures(t.store.as_ref(), &room).await, (1, 1));
}

#[tokio::test]
async fn every_wrong_answer_is_403_and_changes_nothing() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    let room = pow_room(t.store.as_ref(), "pow-wrong", 16, 10, true).await;
    let other = pow_room(t.store.as_ref(), "pow-other", 16, 10, true).await;
    let seed = asked_seed(&api.join_answering(&room, None, None).await, 16);
    let elsewhere = asked_seed(&api.join_answering(&other, None, None).await, 16);
    let now = unix_now();
    let expired = keys().sign_seed(room.as_str(), now - 1, [1; 12]);
    let foreign = token::Keyring::parse("k1:some-other-secret-0123456789")
        .unwrap()
        .sign_seed(room.as_str(), now + 300, [1; 12]);
    // A nonce with fewer than 16 zero bits (most have none).
    let weak = (0..)
        .map(|n| format!("{seed}.{n}"))
        .find(|s| {
            keys().check_solution(s, room.as_str(), 16, now)
                == Err(token::ChallengeError::TooFewBits)
        })
        .unwrap();
    let mut flipped = seed.clone().into_bytes();
    let last = flipped.len() - 3;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    let cases = [
        ("other room's seed", solve(&elsewhere, 16)),
        ("expired seed", solve(&expired, 16)),
        ("seed of another key", solve(&foreign, 16)),
        ("forged seed", solve(&flipped, 16)),
        ("too few bits", weak),
        ("no nonce", seed.clone()),
        ("empty nonce", format!("{seed}.")),
        ("bad nonce", format!("{seed}.12%34")),
        ("garbage", "not a solution at all".to_owned()),
        ("huge", "a".repeat(10_000)),
    ];
    for (what, answer) in cases {
        let r = api.join_answering(&room, None, Some(&answer)).await;
        assert_eq!(r.status, 403, "{what}: {}", r.json);
        assert_eq!(code(&r), "challenge_failed", "{what}");
        assert!(r.cookies().is_empty(), "{what}: no cookie");
        assert_eq!(figures(t.store.as_ref(), &room).await, (0, 0), "{what}");
    }
    assert_eq!(figures(t.store.as_ref(), &other).await, (0, 0));
}

/// One solution sent by a hundred browsers at once: one place, and every
/// answer a ticket for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_solution_from_a_hundred_browsers_is_one_place() {
    let t = test_store(STORE);
    let api = Arc::new(Api::new(state(t.store.clone())));
    let room = pow_room(t.store.as_ref(), "pow-crowd", 12, 10, true).await;
    let seed = asked_seed(&api.join_answering(&room, None, None).await, 12);
    let answer = Arc::new(solve(&seed, 12));
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let (api, room, answer) = (api.clone(), room.clone(), answer.clone());
            tokio::spawn(async move {
                let r = api.join_answering(&room, None, Some(&answer)).await;
                assert_eq!(r.status, 200, "join {i}: {}", r.json);
                assert_eq!(r.json["state"], "waiting", "join {i}");
                seq_of(&r.ticket(), &room)
            })
        })
        .collect();
    let mut seqs = Vec::new();
    for call in calls {
        seqs.push(call.await.unwrap());
    }
    seqs.dedup();
    assert_eq!(seqs.len(), 1, "one place: {seqs:?}");
    assert_eq!(figures(t.store.as_ref(), &room).await, (1, 1));
    // A second solution is a second place.
    let seed2 = asked_seed(&api.join_answering(&room, None, None).await, 12);
    let r = api
        .join_answering(&room, None, Some(&solve(&seed2, 12)))
        .await;
    assert_eq!(r.status, 200);
    assert_ne!(seq_of(&r.ticket(), &room), seqs[0]);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 2));
}

/// A ticket's standing place comes back without a solution; once the
/// place is gone, a rejoin with that ticket is asked again, the old
/// solution is spent (from any browser: `expired`, no place), and a new
/// one gives a new place.
#[tokio::test]
async fn a_standing_place_needs_no_new_solution() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    let room = pow_room(t.store.as_ref(), "pow-rejoin", 10, 10, true).await;
    let seed = asked_seed(&api.join_answering(&room, None, None).await, 10);
    let answer = solve(&seed, 10);
    let first = api.join_answering(&room, None, Some(&answer)).await;
    assert_eq!(first.status, 200);
    let ticket = first.ticket();
    let seq = seq_of(&ticket, &room);
    let again = api.join_answering(&room, Some(&ticket), None).await;
    assert_eq!(again.status, 200, "{}", again.json);
    assert_eq!(seq_of(&again.ticket(), &room), seq);
    assert_eq!(api.leave(&room, &ticket).await.status, 204);
    let r = api.join_answering(&room, Some(&ticket), None).await;
    asked_seed(&r, 10);
    assert_eq!(figures(t.store.as_ref(), &room).await.0, 0);
    for ticket in [Some(ticket.as_str()), None] {
        let r = api.join_answering(&room, ticket, Some(&answer)).await;
        assert_eq!(r.status, 200, "{}", r.json);
        assert_eq!(r.json["state"], "expired", "a spent solution: {}", r.json);
        assert!(r.json["ticket"].is_null());
        assert_eq!(figures(t.store.as_ref(), &room).await, (0, 1));
    }
    let seed = asked_seed(&api.join_answering(&room, None, None).await, 10);
    let r = api
        .join_answering(&room, None, Some(&solve(&seed, 10)))
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_ne!(seq_of(&r.ticket(), &room), seq, "a new place");
    assert_eq!(figures(t.store.as_ref(), &room).await, (1, 2));
}

/// An open room with space admits a solved join at once; a room without a
/// challenge ignores the header.
#[tokio::test]
async fn solved_joins_are_admitted_and_rooms_without_a_challenge_ignore_it() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    let room = pow_room(t.store.as_ref(), "pow-open", 8, 10, false).await;
    let seed = asked_seed(&api.join_answering(&room, None, None).await, 8);
    let r = api
        .join_answering(&room, None, Some(&solve(&seed, 8)))
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["state"], "admitted");
    assert!(r.json["entry_token"].is_string());

    let plain = make_room(t.store.as_ref(), "pow-none", settings(10)).await;
    for answer in [None, Some("garbage"), Some(solve(&seed, 8).as_str())] {
        let r = api.join_answering(&plain, None, answer).await;
        assert_eq!(r.status, 200, "{answer:?}: {}", r.json);
    }
}
